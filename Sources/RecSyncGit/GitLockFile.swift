import CRecSyncSys
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
        onSharedFileSystem = Self.isSharedFileSystem(path)
    }

    /// `statfs` magic numbers of file systems that other machines may write to.
    private static let sharedFileSystems: Set<Int> = [
        0x6969,  // NFS
        0x517B,  // SMB
        0xFF53_4D42,  // CIFS
        0xFE53_4D42,  // SMB2
        0x6573_5546,  // FUSE (sshfs, cloud drives, ...)
        0x00C3_6400,  // Ceph
        0x5346_414F,  // AFS
        0x6B41_4653,  // kAFS
        0x0102_1997,  // 9P
        0x0116_1970,  // GFS2
        0x7461_636F,  // OCFS2
        0x0BD0_0BD0,  // Lustre
        0x7375_7245,  // Coda
        0x0000_564C,  // NCP
    ]

    private static func isSharedFileSystem(_ path: String) -> Bool {
        var type: Int64 = 0
        guard recsync_statfs_type(path, &type) == 0 else { return true }
        // f_type is a signed word: CIFS's 0xFF534D42 may come back sign-extended.
        return sharedFileSystems.contains(Int(UInt32(truncatingIfNeeded: type)))
    }

    /// How long ago the lock was written.
    public func age(now: Date = Date()) -> TimeInterval { max(0, now.timeIntervalSince(modified)) }

    /// How long a lock nobody has open must have stood before it counts as abandoned: a writer
    /// closes its lock file just before renaming it into place, so for microseconds a live
    /// lock is open nowhere.
    public static let abandonedAfter: TimeInterval = 0.5

    /// Whether the lock's file system may be shared with other machines (NFS, SMB/CIFS, FUSE,
    /// cluster file systems), whose processes this machine cannot see; true where `statfs`
    /// fails, so that the cautious rule applies.
    public let onSharedFileSystem: Bool

    /// Whether the lock was left by a writer that is gone: open in no process on this machine
    /// (a live writer holds it open), on a file system no other machine writes to, and not in
    /// the instant between a writer's close and rename (`abandonedAfter`). Such a lock is stale
    /// at once: no write can still finish with it.
    public func isAbandoned(now: Date = Date()) -> Bool {
        heldOpen == false && !onSharedFileSystem && age(now: now) >= Self.abandonedAfter
    }

    /// Whether the lock was left by a writer that is gone: abandoned (`isAbandoned`), or, where
    /// that cannot be told (a shared file system, no `/proc`), older than any write takes and
    /// open in no process on this machine.
    public func isStale(now: Date = Date()) -> Bool {
        isAbandoned(now: now) || (age(now: now) >= Self.staleAfter && heldOpen != true)
    }

    /// Whether the lock is still this very file (not gone, not one a new writer took since)
    /// and stale (`isStale`), looked at again now. A value read a moment ago may describe a
    /// live writer's lock caught between its close and its rename; only the same file found
    /// stale twice is.
    public func isStillStale(now: Date = Date()) -> Bool {
        guard let again = GitLockFile(path: path), again.same(as: self) else { return false }
        return again.isStale(now: now)
    }

    /// Removes the lock if it is abandoned (`isAbandoned`), waiting out `abandonedAfter` for
    /// one nobody has open that is younger; false if it is not abandoned, or is gone or
    /// replaced meanwhile.
    ///
    /// Atomic against other writers doing the same: the file is first renamed to a name of
    /// this process's own beside the repository (only one rename of it can succeed), then
    /// checked to be the very file judged abandoned, and only then removed. Should a new
    /// writer's lock have been taken in between, it is put back.
    public func removeIfAbandoned(repositoryRoot: String) throws(GitError) -> Bool {
        guard heldOpen == false, !onSharedFileSystem else { return false }
        let wait = Self.abandonedAfter - age()
        if wait > 0 { usleep(UInt32(min(wait, Self.abandonedAfter) * 1_000_000) + 1000) }
        guard let again = GitLockFile(path: path), again.same(as: self), again.isAbandoned() else { return false }
        let root = repositoryRoot.hasSuffix("/") ? String(repositoryRoot.dropLast()) : repositoryRoot
        let aside = "\(root)/recsync-abandoned-lock-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        guard rename(path, aside) == 0 else {
            if errno == ENOENT { return false }  // another writer removed it first
            throw GitError(function: "rename", code: -1, message: "cannot move aside \(path): \(String(cString: strerror(errno)))")
        }
        if let moved = GitLockFile(path: aside), moved.same(as: self) {
            unlink(aside)
            return true
        }
        // Not the file judged abandoned: a live writer's. Put it back unless another lock
        // stands there by now (then that writer's update fails and it tries again).
        _ = link(aside, path)
        unlink(aside)
        return false
    }

    private func same(as other: GitLockFile) -> Bool {
        device == other.device && inode == other.inode && modified == other.modified
    }

    /// Removes the lock if it is still the file this value describes (not one a new writer took
    /// since); false if it was gone or replaced.
    public func remove() throws(GitError) -> Bool {
        guard let current = GitLockFile(path: path), current.same(as: self) else { return false }
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
            FileManager.default.fileExists(atPath: "/proc/self/fd")
        else { return nil }
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
