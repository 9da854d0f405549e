import ArgumentParser
import RecSyncModel

/// `recsync push`: sends local changes to the store.
struct PushCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "push",
        abstract: "Send new, modified and deleted records (and new zones) to the store.",
        discussion: "Every file is checked first: if any is malformed, nothing is sent and each problem is listed as 'path: problem'. A record the store changed since your last pull becomes a conflict (exit status 2); the other zones still land.")

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Overwrite the store's versions instead of reporting conflicts; each version overwritten that you had not pulled is listed.")
    var force = false

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let engine = try context.engine()
        let output = SyncOutput(console: context.console, workspace: engine.workspace)
        return try output.push(try await engine.push(force: force, events: output.events))
    }
}
