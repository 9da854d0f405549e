import ArgumentParser
import RecSyncModel

/// `recsync pull`: brings the store's changes into the workspace.
struct PullCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "pull",
        abstract: "Fetch the store's changes into the workspace.",
        discussion: "Records you edited that also changed on the store become conflicts (exit status 2); zones removed on the store are removed here, with your unpushed edits saved under .recsync/lost+found/.")

    @OptionGroup var global: GlobalOptions

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let engine = try context.engine()
        let output = SyncOutput(console: context.console, workspace: engine.workspace)
        return try output.pull(try await engine.pull(events: output.events))
    }
}
