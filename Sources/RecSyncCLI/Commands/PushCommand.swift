import ArgumentParser
import RecSyncEngine
import RecSyncModel

/// `recsync push`: sends local changes to the store.
struct PushCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "push",
        abstract: "Send new, modified and deleted records (and new zones) to the store.",
        discussion:
            """
            Every file is checked first: if any is malformed, nothing is sent and each problem is listed as\
             'path: problem'. A record the store changed since your last pull becomes a conflict (exit\
             status 2); the other zones still land. A store that cannot be reached is exit status 5 and your\
             edits stay to push later; with --retry or --wait the push tries again after a pause, saying so\
             on stderr.\n\nEXAMPLES\n  recsync push\n  recsync push --dry-run\n  recsync push --json | jq\
             '.saved[].path'\n  recsync push --retry=3\n  recsync push --wait           # on a flaky\
             connection: until the store answers
            """
    )

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Overwrite the store's versions instead of reporting conflicts; each version overwritten that you had not pulled is listed.")
    var force = false

    @Flag(
        name: [.customShort("n"), .customLong("dry-run")],
        help: "Run the push up to sending: show what it would send, and what would conflict if the store can be asked; no record file changes.")
    var dryRun = false

    @OptionGroup var retry: RetryOptions

    func validate() throws {
        if dryRun && retry.given {
            throw ValidationError("--dry-run does not wait for the store (it shows what it can without it); drop --retry or --wait")
        }
    }

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        if dryRun { return try await plan(context) }
        let output = SyncOutput(console: context.console, workspace: try context.workspace())
        // The store is opened (a network store fetched) inside each try.
        let report = try await retry.policy.run(
            { () async throws(RecSyncError) in
                try await context.engine().push(force: force, events: output.events)
            }, waiting: output.retryWait)
        return try output.push(report)
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
