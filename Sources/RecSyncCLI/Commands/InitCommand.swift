import ArgumentParser
import RecSyncModel
import RecSyncStore
import RecSyncWorkspace

/// `recsync init`: makes the current directory (or -C DIR) a workspace.
struct InitCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Make the current directory a workspace.",
        discussion: "Run it again with --remote in a workspace that has no remote yet to set one. It does not pull: run 'recsync pull' next.")

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
        if let existing = try? Workspace.find(from: dir), existing.root == dir, commitSnapshots, remote == nil {
            var config = existing.config
            config.commitSnapshots = true
            try existing.saveConfig(config)
            context.console.document(["command": .string("init"), "root": .string(dir), "commitSnapshots": .bool(true)])
            context.console.info("every pull in \(dir) now commits a snapshot to its git repository")
            return ExitCodes.success
        }
        if let existing = try? Workspace.find(from: dir) {
            // Setting the remote of a workspace made without one.
            guard existing.root == dir, existing.config.remote.isEmpty, remote != nil, let remotePath else {
                throw .invalidArguments(existing.root == dir
                    ? "'\(dir)' is already a recsync workspace"
                    : "'\(dir)' is inside the workspace at '\(existing.root)'; workspaces do not nest")
            }
            _ = try CommandContext.openStore(remotePath, user: existing.user, relativeTo: dir, mirror: "\(existing.stateDir)/mirror")
            var config = existing.config
            config.remote = remotePath
            try existing.saveConfig(config)
            let shown = GitStore.withoutPassword(config.remote)
            context.console.document(["command": .string("init"), "root": .string(dir), "remote": .string(shown), "user": .string(config.user)])
            context.console.info("set the remote of the workspace in \(dir) to \(shown)")
            if shown != config.remote { Self.passwordHint(context) }
            context.console.hint("run 'recsync pull' to fetch the store's records")
            return ExitCodes.success
        }
        let who = try context.user(user)
        var stored = ""
        if let remotePath {
            if !StoreLocation.isNetwork(remotePath) {
                _ = try CommandContext.openStore(remotePath, user: who, relativeTo: dir)  // fail before creating anything
            }
            stored = remotePath
        }
        var config = WorkspaceConfig(user: who, remote: stored)
        if commitSnapshots { config.commitSnapshots = true }
        let ws = try Workspace.create(at: dir, config: config)
        // The store was not opened, so no successful fetch handed the password over: do it now.
        GitStore.rememberCredentials(of: stored)
        stored = GitStore.withoutPassword(stored)
        context.console.document(["command": .string("init"), "root": .string(ws.root), "remote": .string(stored), "user": .string(who)])
        context.console.info("initialized an empty recsync workspace in \(ws.root) for \(who)")
        context.console.hint(stored.isEmpty ? "set a store with 'recsync init --remote PATH'" : "run 'recsync pull' to fetch the store's records")
        if stored != config.remote { Self.passwordHint(context) }
        return ExitCodes.success
    }

    /// Says where the password of the address went (it is not in `.recsync/config`).
    static func passwordHint(_ context: CommandContext) {
        context.console.hint("the password in the address is not kept in .recsync/config; it was handed to git's credential helpers (if none is configured, set RECSYNC_TOKEN for later syncs)")
    }
}
