import Foundation

import Glibc

/// A lock file beside a reference (`refs/heads/main.lock`), as git and libgit2 take them:
/// created exclusively, written, then renamed over the reference. One that stays behind is
/// what a writer killed between the create and the rename leaves.
public struct GitLockFile: Sendable, Hashable {
    /// Longer than any reference update takes (a few milliseconds, seconds on a loaded disk):
    /// a lock this old was not taken by a write still under way.
    public static let staleAfter: TimeInterval = 60

    public let path: String
    /// When the lock was last written.
    public let modified: Date
    /// Whether a process on this machine has the file open: true while its writer is still
    /// writing it; nil where this system cannot tell (no `/proc`).
    public let heldOpen: Bool?
    let device: UInt64
    let inode: UInt64

    /// The lock at `path`, nil if there is none.
    public init?(path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        self.path = path
        modified = Date(timeIntervalSince1970: TimeInterval(info.st_mtim.tv_sec) + TimeInterval(info.st_mtim.tv_nsec) / 1e9)
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        heldOpen = Self.isOpenByAnyProcess(device: device, inode: inode)
    }

    /// How long ago the lock was written.
    public func age(now: Date = Date()) -> TimeInterval { max(0, now.timeIntervalSince(modified)) }

    /// Whether the lock was left by a writer that is gone: older than any write takes, and open
    /// in no process on this machine (where that can be told).
    public func isStale(now: Date = Date()) -> Bool { age(now: now) >= Self.staleAfter && heldOpen != true }

    /// Removes the lock if it is still the file this value describes (not one a new writer took
    /// since); false if it was gone or replaced.
    public func remove() throws(GitError) -> Bool {
        guard let current = GitLockFile(path: path), current.device == device, current.inode == inode,
              current.modified == modified else { return false }
        guard unlink(path) == 0 || errno == ENOENT else {
            throw GitError(function: "unlink", code: -1, message: "cannot remove \(path): \(String(cString: strerror(errno)))")
        }
        return true
    }

    /// Whether some process has the file (device, inode) open, looking through `/proc/*/fd`;
    /// nil without `/proc`. Processes of other users are not visible, so false can be wrong
    /// only for a lock some other user's process holds.
    private static func isOpenByAnyProcess(device: UInt64, inode: UInt64) -> Bool? {
        guard let processes = try? FileManager.default.contentsOfDirectory(atPath: "/proc"),
              FileManager.default.fileExists(atPath: "/proc/self/fd") else { return nil }
        for pid in processes where pid.allSatisfy(\.isNumber) {
            guard let fds = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd") else { continue }
            for fd in fds {
                var info = stat()
                if stat("/proc/\(pid)/fd/\(fd)", &info) == 0, UInt64(info.st_dev) == device, UInt64(info.st_ino) == inode {
                    return true
                }
            }
        }
        return false
    }
}

extension GitRepository {
    /// The lock files left in this repository's reference area: `<ref>.lock` under `refs/`,
    /// and `packed-refs.lock`, `HEAD.lock`, `config.lock`.
    public func lockFiles() -> [GitLockFile] {
        let root = path.hasSuffix("/") ? String(path.dropLast()) : path
        var paths = ["packed-refs.lock", "HEAD.lock", "config.lock"].map { "\(root)/\($0)" }
        if let walker = FileManager.default.enumerator(atPath: "\(root)/refs") {
            while let rel = walker.nextObject() as? String {
                if rel.hasSuffix(".lock") { paths.append("\(root)/refs/\(rel)") }
            }
        }
        return paths.compactMap { GitLockFile(path: $0) }
    }

    /// The lock file of reference `name`, nil if it is not locked.
    public func referenceLock(_ name: String) -> GitLockFile? {
        let root = path.hasSuffix("/") ? String(path.dropLast()) : path
        return GitLockFile(path: "\(root)/\(name).lock")
    }
}
