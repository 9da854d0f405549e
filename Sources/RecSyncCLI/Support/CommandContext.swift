import Foundation
import RecSyncEncryption
import RecSyncEngine
import RecSyncModel
import RecSyncStore
import RecSyncSystem
import RecSyncWorkspace

/// What a command runs in: its directory (after `-C`), the workspace there, and its store.
public struct CommandContext: Sendable {
    /// The absolute directory the command acts in.
    public let directory: String
    public let console: Console
    public let environment: [String: String]

    public init(_ options: GlobalOptions, command: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws(RecSyncError) {
        let cwd = FileManager.default.currentDirectoryPath
        var dir = cwd
        if let given = options.directory {
            dir = StoreLocation.absolute(given, relativeTo: cwd)
            guard InputFile.isDirectory(dir) else {
                throw .notFound("-C \(given): no such directory")
            }
        }
        directory = dir
        console = Console(options, command: command, environment: environment)
        self.environment = environment
    }

    /// The workspace that contains the directory.
    public func workspace() throws(RecSyncError) -> Workspace {
        try Workspace.find(from: directory)
    }

    /// The workspace's store, opened as the workspace's user (a network remote through the
    /// workspace's mirror in `.recsync/mirror`), with fields of encrypted zones sealed and
    /// opened on this side.
    public func store(for workspace: Workspace) throws(RecSyncError) -> any RemoteStore {
        try sealedStore(for: workspace)
    }

    /// Where this user's private keys are kept (`$XDG_CONFIG_HOME/recsync/keys`).
    public func keyStore() throws(RecSyncError) -> UserKeyStore {
        try UserKeyStore(environment: environment)
    }

    /// The workspace's store, for reading its history (`log`, `show`), encrypted fields opened.
    public func history(for workspace: Workspace) throws(RecSyncError) -> any StoreHistory {
        try sealedStore(for: workspace)
    }

    private func sealedStore(for workspace: Workspace) throws(RecSyncError) -> EncryptingStore {
        guard !workspace.config.remote.isEmpty else {
            throw .noRemote()
        }
        let actor = try StoreActor(userRecordName: workspace.user, deviceID: workspace.deviceID())
        // The mirror is fetched when the store is first used, not on opening: a push that
        // lands on the mirror's head then needs no fetch at all.
        let store = try StoreLocation.open(
            workspace.config.remote, relativeTo: workspace.root, actor: actor, mirror: workspace.mirrorPath, lookingNow: false)
        let console = console
        store.notices.onNotice { console.warning($0) }
        return EncryptingStore(store, keyStore: try keyStore(), state: workspace)
    }

    /// A sync engine for the workspace that contains the directory.
    public func engine() throws(RecSyncError) -> SyncEngine {
        let ws = try workspace()
        return SyncEngine(workspace: ws, store: try store(for: ws))
    }

    /// Opens the store at a remote as `user`: a path or `file://` URL directly, a network URL
    /// through a bare mirror at `mirror` (a temporary one when nil).
    public static func openStore(_ remote: String, user: String, relativeTo base: String, mirror: String? = nil) throws(RecSyncError)
        -> any RemoteStore
    {
        try StoreLocation.open(remote, relativeTo: base, actor: StoreActor(userRecordName: user), mirror: mirror)
    }

    /// The user for a new workspace or a store command: the option, else `RECSYNC_USER`, else
    /// the login name.
    public func user(_ option: String?) throws(RecSyncError) -> String {
        let candidates: [(source: String, name: String?)] = [
            ("--user", option), ("RECSYNC_USER", environment["RECSYNC_USER"]), ("USER", environment["USER"]),
            ("LOGNAME", environment["LOGNAME"]), ("your login name", StoreActor.accountName()),
        ]
        guard let (source, user) = candidates.compactMap({ c in c.name.map { (c.source, $0) } }).first(where: { !$0.1.isEmpty }) else {
            throw .invalidArguments("cannot tell who you are; pass --user NAME or set RECSYNC_USER")
        }
        do { try NameRules.validateOwnerName(user) } catch {
            throw .invalidArguments("\(source): \(error.message); pass --user NAME or set RECSYNC_USER to a valid user name")
        }
        return user
    }
}
