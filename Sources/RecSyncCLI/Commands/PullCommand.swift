import ArgumentParser
import RecSyncModel
import RecSyncStore

/// `recsync pull`: brings the store's changes into the workspace.
struct PullCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "pull",
        abstract: "Fetch the store's changes into the workspace.",
        discussion:
            """
            Records you edited that also changed on the store become conflicts (exit status 2); zones\
             removed on the store are removed here, with your unpushed edits saved under\
             .recsync/lost+found/. A store that cannot be reached is exit status 5; with --retry or --wait\
             the pull tries again after a pause, saying so on stderr. With --no-assets (or for the zones in\
             the workspace's noAssetZones setting) asset files are not downloaded: the records name them,\
             status counts them unchanged, push sends them unchanged; 'recsync get --asset FIELD RECORD'\
             fetches one, and a pull without --no-assets fetches all that are missing.\n\nEXAMPLES\n \
             recsync pull\n  recsync pull --dry-run\n  recsync pull --no-assets     # records only; assets\
             stay on the store\n  recsync pull --commit\n  recsync pull --retry          # up to 5 more\
             tries over about 15 s\n  recsync pull --wait --quiet   # until the store answers
            """
    )

    @OptionGroup var global: GlobalOptions

    @Flag(
        inversion: .prefixedNo,
        help:
            """
            Commit a snapshot of the workspace (records, sidecars, tokens) into its git repository\
             afterwards (default: the workspace's setting, see 'recsync init --commit-snapshots').
            """
    )
    var commit: Bool?

    @Flag(
        name: [.customShort("n"), .customLong("dry-run")],
        help: "Run the pull with its writes left out: show what it would write, delete and make a conflict; no record file changes.")
    var dryRun = false

    @Flag(help: "Fetch the records without their assets' content (files of ASSET fields); 'recsync get --asset' or a later pull fetches it.")
    var noAssets = false

    @OptionGroup var retry: RetryOptions

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let output = SyncOutput(console: context.console, workspace: try context.workspace())
        if dryRun {
            return output.pullPlan(
                try await retry.policy.run({ () async throws(RecSyncError) in try await context.engine().pullPlan() }, waiting: output.retryWait))
        }
        // The store is opened (a network store fetched) inside each try.
        let (engine, report) = try await retry.policy.run(
            { () async throws(RecSyncError) in
                var engine = try context.engine()
                engine.fetchesAssets = !noAssets
                return (engine, try await engine.pull(events: output.events))
            }, waiting: output.retryWait)
        if commit ?? engine.workspace.config.commitSnapshots ?? false {
            if let snapshot = try await engine.commitSnapshot(after: report) {
                let unpushed = snapshot.unpushed.count
                context.console.info(
                    "committed snapshot \(snapshot.commit.prefix(12)) to the workspace's git repository"
                        + (unpushed == 0 ? "" : " (with \(plural(unpushed, "local edit")) not pushed)"))
            }
        }
        return try output.pull(report)
    }
}
