import ArgumentParser
import RecSyncEngine
import RecSyncModel
import RecSyncStore
import RecSyncWorkspace

/// `recsync init`: makes the current directory (or -C DIR) a workspace.
struct InitCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Make the current directory a workspace.",
        discussion:
            """
            Run it again with --remote in a workspace that has no remote yet to set one. It does not pull:\
             run 'recsync pull' next.\n\nEXAMPLES\n  recsync init\n  recsync init --remote\
             ~/stores/notes.git --user alice\n  recsync pull
            """
    )

    @OptionGroup var global: GlobalOptions

    @Option(help: "The store to sync with: a path, a file:// URL, or a network URL.", completion: .directory)
    var remote: String?

    @Option(help: "Who you are on the store (default: $RECSYNC_USER, else your login name).")
    var user: String?

    @Flag(help: "Make every pull commit a snapshot into the workspace's git repository (also for an existing workspace).")
    var commitSnapshots = false

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let dir = context.directory
        let remotePath = try remote.map { r throws(RecSyncError) in try StoreLocation.normalized(r, relativeTo: dir) }
        let console = context.console
        switch try SyncEngine.initialize(
            at: dir, remote: remotePath, user: { () throws(RecSyncError) in try context.user(user) }, commitSnapshots: commitSnapshots)
        {
        case .snapshotsEnabled:
            console.document(["root": .string(dir), "commitSnapshots": .bool(true)])
            console.info("every pull in \(dir) now commits a snapshot to its git repository")
        case .remoteSet(let ws, let shown):
            console.document(["root": .string(dir), "remote": .string(shown), "user": .string(ws.user)])
            console.info("set the remote of the workspace in \(dir) to \(shown)")
            if shown != remotePath { Self.passwordHint(context) }
            console.hint("run 'recsync pull' to fetch the store's records")
        case .created(let ws, let stored):
            console.document(["root": .string(ws.root), "remote": .string(stored), "user": .string(ws.user)])
            console.info("initialized an empty recsync workspace in \(ws.root) for \(ws.user)")
            console.hint(stored.isEmpty ? "set a store with 'recsync init --remote PATH'" : "run 'recsync pull' to fetch the store's records")
            if stored != (remotePath ?? "") { Self.passwordHint(context) }
        }
        return ExitCodes.success
    }

    /// Says where the password of the address went (it is not in `.recsync/config`).
    static func passwordHint(_ context: CommandContext) {
        context.console.hint(
            """
            the password in the address is not kept in .recsync/config; it was handed to git's credential\
             helpers (if none is configured, set RECSYNC_TOKEN for later syncs)
            """
        )
    }
}
