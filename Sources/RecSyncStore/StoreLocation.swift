import Foundation
import RecSyncGit
import RecSyncModel
import RecSyncSystem

/// Where a store is: a path on this machine, a `file://` URL (opened directly, like a path),
/// or a network URL (`ssh://`, `[user@]host:path`, `https://`, `http://`, `git://`) reached
/// through a mirror. One answer for the command line and for programs that embed recsync;
/// the URL grammar is `GitRemoteURL`'s.
public enum StoreLocation {
    /// Whether a location names a network store, reached through a mirror (`GitStore.open(remote:…)`).
    /// A `file://` URL is not one: recsync opens it in place, as a path.
    public static func isNetwork(_ location: String) -> Bool {
        guard let url = GitRemoteURL(location) else { return false }
        return url.transport != .file
    }

    /// The file-system path of the store a local location names.
    public static func storePath(_ location: String, relativeTo base: String) throws(RecSyncError) -> String {
        if location.hasPrefix("file://") {
            let rest = String(location.dropFirst("file://".count))
            let path = rest.removingPercentEncoding ?? rest
            guard path.hasPrefix("/") else {
                throw .invalidArguments("'\(location)' is not an absolute file URL; write file:///absolute/path or give a plain path")
            }
            return path
        }
        if isNetwork(location) {
            throw .unsupported("'\(GitRemoteURL.shown(location))' is a network remote; this needs a store on this machine (or a shared disk)")
        }
        if let scheme = location.range(of: "://") {
            throw .unsupported(
                """
                '\(GitRemoteURL.shown(location))': recsync does not know the scheme\
                 '\(location[..<scheme.lowerBound])'; give a path, file://, ssh://, [user@]host:path, https://,\
                 http:// or git://
                """
            )
        }
        return absolute(location, relativeTo: base)
    }

    /// The form of a location kept in a workspace's config: a network or file:// URL as
    /// given, a path made absolute.
    public static func normalized(_ location: String, relativeTo base: String) throws(RecSyncError) -> String {
        if isNetwork(location) { return location }
        if location.hasPrefix("file://") {
            _ = try storePath(location, relativeTo: base)
            return location
        }
        return try storePath(location, relativeTo: base)
    }

    /// The directory name `clone` picks: the last path component without `.git`.
    public static func defaultDirectoryName(_ location: String) -> String {
        var trimmed = location
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed.removeLast() }
        var name = (trimmed as NSString).lastPathComponent
        if name.hasSuffix(".git") { name = String(name.dropLast(4)) }
        return name
    }

    /// `path` made absolute against `base`, with `.` and `..` resolved.
    public static func absolute(_ path: String, relativeTo base: String) -> String {
        let full = path.hasPrefix("/") ? path : "\(base)/\(path)"
        return URL(fileURLWithPath: full).standardizedFileURL.path
    }
}

extension StoreActor {
    /// This process's user name in the password database (the login name when `USER` and
    /// `LOGNAME` are unset), as the ssh transport picks it too.
    public static func accountName() -> String? { GitNetworkOptions.accountName() }
}

/// What can be done with a store by its location, whatever kind of store is there: the
/// engine and the command line go through these and never name the git backend
/// (`scripts/check-layers.sh` keeps it so).
extension StoreLocation {
    /// `location` as a message may show it: no password, and a query string as `?…`.
    public static func shown(_ location: String) -> String { GitStore.shown(location) }

    /// `location` without the password a network address may carry: the form to keep on disk.
    public static func withoutPassword(_ location: String) -> String { GitStore.withoutPassword(location) }

    /// Whether `location` carries a password (which is never kept on disk).
    public static func carriesPassword(_ location: String) -> Bool { withoutPassword(location) != location }

    /// Hands the user name and password in a network address to git's credential helpers;
    /// false when it carries none or no helper took it (see `GitStore.rememberCredentials`).
    @discardableResult
    public static func rememberCredentials(of location: String) -> Bool { GitStore.rememberCredentials(of: location) }

    /// Opens the store at `location` as `actor`: a path or `file://` URL in place, relative to
    /// `base`; a network URL through the bare mirror at `mirror` (a new temporary directory
    /// when nil). `lookingNow: false` leaves the first fetch to the first call.
    public static func open(
        _ location: String, relativeTo base: String, actor: StoreActor, mirror: String? = nil, lookingNow: Bool = true
    ) throws(RecSyncError) -> GitStore {
        try GitStore.open(location: location, relativeTo: base, actor: actor, mirror: mirror, lookingNow: lookingNow)
    }

    /// Opens the store at `location` for one look, runs `body`, and lets it go (a network
    /// store through a throwaway mirror, removed afterwards).
    public static func withStore<T>(
        at location: String, relativeTo base: String, actor: StoreActor, _ body: (GitStore) async throws(RecSyncError) -> T
    ) async throws(RecSyncError) -> T {
        try await GitStore.withStore(at: location, relativeTo: base, actor: actor, body)
    }

    /// Rewrites the history of the store at `location` before `horizon` into one commit
    /// (`recsync store compact`); `mirror` as in `open`.
    public static func compact(
        _ location: String, relativeTo base: String, actor: StoreActor, mirror: String? = nil,
        horizon: CompactionHorizon, dropDeletedTombstones: Bool
    ) async throws(RecSyncError) -> CompactionReport {
        guard let mirror else {
            return try await withStore(at: location, relativeTo: base, actor: actor) { store throws(RecSyncError) in
                try await store.compact(horizon, dropDeletedTombstones: dropDeletedTombstones)
            }
        }
        return try await open(location, relativeTo: base, actor: actor, mirror: mirror, lookingNow: false)
            .compact(horizon, dropDeletedTombstones: dropDeletedTombstones)
    }

    /// Moves a store's zones onto refs of their own (`recsync store upgrade`,
    /// `GitStore.upgradeToZoneRefs`). Format 2 is not released yet: only with
    /// `RECSYNC_EXPERIMENTAL_STORE_FORMAT=2` set, since no released recsync opens a store
    /// once it is upgraded.
    public static func upgrade(_ location: String, relativeTo base: String, actor: StoreActor, mirror: String? = nil)
        async throws(RecSyncError) -> StoreUpgradeReport
    {
        guard GitStore.experimentalZoneRefs else {
            throw .unsupported(
                """
                store format \(StoreLayout.zoneRefsFormat) (a ref per zone) is not released yet, and no released recsync\
                 opens a store once it is upgraded: to try it on a store only this recsync uses, set\
                 RECSYNC_EXPERIMENTAL_STORE_FORMAT=\(StoreLayout.zoneRefsFormat) for the upgrade and for every command on the store
                """
            )
        }
        guard let mirror else {
            return try await withStore(at: location, relativeTo: base, actor: actor) { store throws(RecSyncError) in
                try await store.upgradeToZoneRefs()
            }
        }
        return try await open(location, relativeTo: base, actor: actor, mirror: mirror, lookingNow: false).upgradeToZoneRefs()
    }

    /// Creates a new, empty store at the path `path` (`recsync store init`).
    public static func create(at path: String, actor: StoreActor) throws(RecSyncError) -> StoreManifest {
        try GitStore.create(
            at: path, actor: actor, format: GitStore.experimentalZoneRefs ? StoreLayout.zoneRefsFormat : StoreLayout.formatVersion)
    }

    /// The locks a killed writer left in the store at the path `path`, removed when stale
    /// and `removeStale` (`recsync store doctor`, `recsync doctor --fix`).
    public static func doctor(at path: String, removeStale: Bool = true) throws(RecSyncError) -> [StoreLockFinding] {
        try GitStore.doctor(at: path, removeStale: removeStale)
    }

    /// The repository on this machine that a workspace's `remote` is kept in: the store itself
    /// for a local remote (relative to `base`, the workspace root), the workspace's `mirror` for
    /// a network one.
    public static func repository(of remote: String, mirror: String, relativeTo base: String) throws(RecSyncError) -> String {
        isNetwork(remote) ? mirror : try storePath(remote, relativeTo: base)
    }

    /// `doctor` on the repository a workspace's `remote` is kept in (see
    /// ``repository(of:mirror:relativeTo:)``). A mirror lies inside the workspace, where a link
    /// could lead the removal of lock files elsewhere: one that holds a link is refused first,
    /// as opening it is.
    public static func doctor(remote: String, mirror: String, relativeTo base: String, removeStale: Bool) throws(RecSyncError)
        -> (repository: String, findings: [StoreLockFinding])
    {
        let path = try repository(of: remote, mirror: mirror, relativeTo: base)
        if isNetwork(remote) { try FileIO.refuseLinks(within: mirror) }
        return (path, try GitStore.doctor(at: path, removeStale: removeStale))
    }
}
