import Foundation
import RecSyncGit
import RecSyncModel

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
            throw .invalidArguments("'\(GitRemoteURL.shown(location))' is a network remote; this needs a store on this machine (or a shared disk)")
        }
        if let scheme = location.range(of: "://") {
            throw .invalidArguments("'\(GitRemoteURL.shown(location))': recsync does not know the scheme '\(location[..<scheme.lowerBound])'; give a path, file://, ssh://, [user@]host:path, https://, http:// or git://")
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
