import ArgumentParser
import RecSyncEngine
import RecSyncModel

/// `recsync push`: sends local changes to the store.
struct PushCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "push",
        abstract: "Send new, modified and deleted records (and new zones) to the store.",
        discussion: "Every file is checked first: if any is malformed, nothing is sent and each problem is listed as 'path: problem'. A record the store changed since your last pull becomes a conflict (exit status 2); the other zones still land.\n\nEXAMPLES\n  recsync push\n  recsync push --dry-run\n  recsync push --json | jq '.saved[].path'")

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Overwrite the store's versions instead of reporting conflicts; each version overwritten that you had not pulled is listed.")
    var force = false

    @Flag(name: [.customShort("n"), .customLong("dry-run")], help: "Show what would be sent, and what would conflict if the store can be asked; change nothing.")
    var dryRun = false

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        if dryRun { return try await plan(context) }
        let engine = try context.engine()
        let output = SyncOutput(console: context.console, workspace: engine.workspace)
        return try output.push(try await engine.push(force: force, events: output.events))
    }

    /// --dry-run: the plan, from the workspace alone when the store does not answer.
    func plan(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let ws = try context.workspace()
        let output = SyncOutput(console: context.console, workspace: ws)
        let engine: SyncEngine
        do { engine = try context.engine() } catch let error where SyncEngine.isUnreachable(error) {
            return output.pushPlan(try await SyncEngine.offlinePushPlan(workspace: ws, storeError: error), force: force)
        }
        return output.pushPlan(try await engine.pushPlan(), force: force)
    }
}
