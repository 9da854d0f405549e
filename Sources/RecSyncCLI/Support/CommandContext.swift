import Foundation
import RecSyncEngine
import RecSyncModel
import RecSyncStore
import RecSyncWorkspace

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a command runs in: its directory (after `-C`), the workspace there, and its store.
public struct CommandContext: Sendable {
    /// The absolute directory the command acts in.
    public let directory: String
    public let console: Console
    public let environment: [String: String]

    public init(_ options: GlobalOptions, environment: [String: String] = ProcessInfo.processInfo.environment) throws(RecSyncError) {
        let cwd = FileManager.default.currentDirectoryPath
        var dir = cwd
        if let given = options.directory {
            dir = Paths.absolute(given, relativeTo: cwd)
            guard FileIO.isDirectory(dir) else {
                throw .invalidArguments("-C \(given): no such directory")
            }
        }
        directory = dir
        console = Console(options, environment: environment)
        self.environment = environment
    }

    /// The workspace that contains the directory.
    public func workspace() throws(RecSyncError) -> Workspace {
        try Workspace.find(from: directory)
    }

    /// The workspace's store, opened as the workspace's user (a network remote through the
    /// workspace's mirror in `.recsync/mirror`).
    public func store(for workspace: Workspace) throws(RecSyncError) -> GitStore {
        guard !workspace.config.remote.isEmpty else {
            throw .invalidArguments("this workspace has no remote; set one with 'recsync init --remote URL'")
        }
        let mirror = "\(workspace.stateDir)/mirror"
        try FileIO.refuseLinks(within: mirror)  // libgit2 writes into it by path
        return try Self.openStore(workspace.config.remote, user: workspace.user, relativeTo: workspace.root, mirror: mirror, deviceID: workspace.deviceID())
    }

    /// A sync engine for the workspace that contains the directory.
    public func engine() throws(RecSyncError) -> SyncEngine {
        let ws = try workspace()
        return SyncEngine(workspace: ws, store: try store(for: ws))
    }

    /// Opens the store at a remote as `user`: a path or `file://` URL directly, a network URL
    /// through a bare mirror at `mirror` (a temporary one when nil).
    public static func openStore(_ remote: String, user: String, relativeTo base: String, mirror: String? = nil, deviceID: String? = nil) throws(RecSyncError) -> GitStore {
        let actor = try StoreActor(userRecordName: user, deviceID: deviceID)
        if Remote.isNetwork(remote) {
            let mirrorPath = mirror ?? FileManager.default.temporaryDirectory.appendingPathComponent("recsync-mirror-\(UUID().uuidString.prefix(8))").path
            return try GitStore.open(remote: remote, mirror: mirrorPath, actor: actor)
        }
        return try GitStore(path: try Remote.storePath(remote, relativeTo: base), actor: actor)
    }

    /// The user for a new workspace or a store command: the option, else `RECSYNC_USER`, else
    /// the login name.
    public func user(_ option: String?) throws(RecSyncError) -> String {
        let candidates: [(source: String, name: String?)] = [
            ("--user", option), ("RECSYNC_USER", environment["RECSYNC_USER"]), ("USER", environment["USER"]),
            ("LOGNAME", environment["LOGNAME"]), ("your login name", Self.passwdName()),
        ]
        guard let (source, user) = candidates.compactMap({ c in c.name.map { (c.source, $0) } }).first(where: { !$0.1.isEmpty }) else {
            throw .invalidArguments("cannot tell who you are; pass --user NAME or set RECSYNC_USER")
        }
        do { try NameRules.validateOwnerName(user) } catch {
            throw .invalidArguments("\(source): \(error.message); pass --user NAME or set RECSYNC_USER to a valid user name")
        }
        return user
    }

    static func passwdName() -> String? {
        guard let pw = getpwuid(geteuid()), let name = pw.pointee.pw_name else { return nil }
        return String(cString: name)
    }
}

/// Remote locations: a local path to a store, `file://PATH`, or a network URL (ssh://,
/// user@host:path, https://, http://, git://) reached through a mirror.
public enum Remote {
    /// The file-system path of the store a remote names.
    public static func storePath(_ remote: String, relativeTo base: String) throws(RecSyncError) -> String {
        if remote.hasPrefix("file://") {
            let rest = String(remote.dropFirst("file://".count))
            let path = rest.removingPercentEncoding ?? rest
            guard path.hasPrefix("/") else {
                throw .invalidArguments("'\(remote)' is not an absolute file URL; write file:///absolute/path or give a plain path")
            }
            return path
        }
        if isNetwork(remote) {
            throw .invalidArguments("'\(GitStore.withoutPassword(remote))' is a network remote; this needs a store on this machine (or a shared disk)")
        }
        return Paths.absolute(remote, relativeTo: base)
    }

    /// The form of a remote kept in a workspace's config: a network or file:// URL as given,
    /// a path made absolute.
    public static func normalized(_ remote: String, relativeTo base: String) throws(RecSyncError) -> String {
        if isNetwork(remote) || remote.hasPrefix("file://") {
            if remote.hasPrefix("file://") { _ = try storePath(remote, relativeTo: base) }
            return remote
        }
        return try storePath(remote, relativeTo: base)
    }

    /// Whether a remote names a network location (`scheme://` other than file, or scp-like `host:path`).
    public static func isNetwork(_ remote: String) -> Bool {
        if let scheme = remote.range(of: "://") {
            return remote[..<scheme.lowerBound] != "file"
        }
        // scp-like: `[user@]host:path`, with the colon before any slash.
        if let colon = remote.firstIndex(of: ":") {
            let head = remote[..<colon]
            return !head.isEmpty && !head.contains("/")
        }
        return false
    }

    /// The directory name `clone` picks: the last path component without `.git`.
    public static func defaultDirectoryName(_ remote: String) -> String {
        var trimmed = remote
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed.removeLast() }
        var name = (trimmed as NSString).lastPathComponent
        if name.hasSuffix(".git") { name = String(name.dropLast(4)) }
        return name
    }
}

/// Path helpers.
public enum Paths {
    /// `path` made absolute against `base`, with `.` and `..` resolved.
    public static func absolute(_ path: String, relativeTo base: String) -> String {
        let full = path.hasPrefix("/") ? path : "\(base)/\(path)"
        return URL(fileURLWithPath: full).standardizedFileURL.path
    }
}
