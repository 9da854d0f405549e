import ArgumentParser
import RecSyncModel
import RecSyncStore

/// `recsync pull`: brings the store's changes into the workspace.
struct PullCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "pull",
        abstract: "Fetch the store's changes into the workspace.",
        discussion: "Records you edited that also changed on the store become conflicts (exit status 2); zones removed on the store are removed here, with your unpushed edits saved under .recsync/lost+found/.\n\nEXAMPLES\n  recsync pull\n  recsync pull --dry-run\n  recsync pull --commit")

    @OptionGroup var global: GlobalOptions

    @Flag(inversion: .prefixedNo, help: "Commit a snapshot of the workspace (records, sidecars, tokens) into its git repository afterwards (default: the workspace's setting, see 'recsync init --commit-snapshots').")
    var commit: Bool?

    @Flag(name: [.customShort("n"), .customLong("dry-run")], help: "Show what would be written, deleted and become a conflict; change nothing.")
    var dryRun = false

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let engine = try context.engine()
        let output = SyncOutput(console: context.console, workspace: engine.workspace)
        if dryRun { return output.pullPlan(try await engine.pullPlan()) }
        let report = try await engine.pull(events: output.events)
        if commit ?? engine.workspace.config.commitSnapshots ?? false {
            if let snapshot = try engine.commitSnapshot(after: report) {
                context.console.info("committed snapshot \(snapshot.prefix(12)) to the workspace's git repository")
            }
        }
        return try output.pull(report)
    }
}
