import Foundation
import Glibc
import RecSyncTestSupport
import Testing

@testable import RecSyncGit

/// References moved by compare-and-swap, read loose, packed and symbolic, and the lock files
/// beside them (`lockFiles`, `referenceLock`, `GitLockFile.remove`).
@Suite struct GitReferenceTests {
    let alice = GitSignature(name: "Alice", email: "alice@example.com", time: 1_767_225_600)

    /// A repository with two commits, the second on the first.
    func history(_ name: String) throws -> (TempDirectory, GitRepository, GitOID, GitOID) {
        let dir = TempDirectory(name)
        let repo = try GitRepository.initBare(at: dir.file("s.git"))
        let tree = try repo.updateTree(base: nil, updates: [])
        let first = try repo.createCommit(tree: tree, parents: [], author: alice, message: "first\n")
        let second = try repo.createCommit(tree: tree, parents: [first], author: alice, message: "second\n")
        return (dir, repo, first, second)
    }

    /// A reference another writer holds the lock of is a lost race (false), not an error; once
    /// the lock is gone the same update goes through.
    @Test func aLockedReferenceIsNotMovedAndTheUpdateReportsALostRace() throws {
        let (dir, repo, first, second) = try history("git-ref-locked")
        defer { _ = dir }
        let ref = "refs/heads/main"
        #expect(try repo.updateReference(ref, to: first, expected: nil, logMessage: "create"))
        let lockPath = dir.file("s.git/refs/heads/main.lock")
        try GitLockFileTests.writeLock(lockPath, "\(second.hex)\n")
        #expect(try !repo.updateReference(ref, to: second, expected: first, logMessage: "move"))
        #expect(try repo.referenceTarget(ref) == first)
        let lock = try #require(repo.referenceLock(ref))
        #expect(lock.path == lockPath && repo.lockFiles() == [lock])
        #expect(try lock.remove())
        #expect(repo.referenceLock(ref) == nil && repo.lockFiles().isEmpty)
        #expect(try repo.updateReference(ref, to: second, expected: first, logMessage: "move"))
        #expect(try git(["rev-parse", ref], in: repo.path) == second.hex)
    }

    /// The references under a prefix, loose and packed, deeper ones included, sorted by name;
    /// a symbolic reference and the references beside the prefix are not listed.
    @Test func referencesUnderAPrefixAreListedLooseAndPacked() throws {
        let (dir, repo, first, second) = try history("git-ref-list")
        defer { _ = dir }
        for (name, target) in [("refs/recsync/zones/bob/b", first), ("refs/recsync/zones/alice/a", second), ("refs/heads/main", first)] {
            #expect(try repo.updateReference(name, to: target, expected: nil, logMessage: "create"))
        }
        _ = try git(["pack-refs", "--all"], in: repo.path)
        #expect(try repo.updateReference("refs/recsync/zones/alice/c%2Ed", to: first, expected: nil, logMessage: "create"))
        _ = try git(["symbolic-ref", "refs/recsync/zones/alice/link", "refs/heads/main"], in: repo.path)
        let listed = try repo.references(under: "refs/recsync/zones/")
        #expect(listed.map(\.name) == ["refs/recsync/zones/alice/a", "refs/recsync/zones/alice/c%2Ed", "refs/recsync/zones/bob/b"])
        #expect(listed.map(\.target) == [second, first, first])
        #expect(try repo.references(under: "refs/recsync/zones/bob/").map(\.name) == ["refs/recsync/zones/bob/b"])
        #expect(try repo.references(under: "refs/recsync/none/").isEmpty)
    }

    @Test func lockFilesAreFoundUnderRefsAndBesideTheRepositorysOwnFiles() throws {
        let (dir, repo, _, _) = try history("git-ref-locks")
        defer { _ = dir }
        let root = repo.path
        try FileManager.default.createDirectory(atPath: "\(root)/refs/heads/team/x", withIntermediateDirectories: true)
        let locks = ["packed-refs.lock", "HEAD.lock", "config.lock", "refs/heads/team/x/y.lock", "refs/tags/v1.lock"]
        for lock in locks { try GitLockFileTests.writeLock("\(root)/\(lock)", "") }
        // Not locks: a reference named like one's start, and a lock outside the reference area.
        try GitLockFileTests.writeLock("\(root)/refs/heads/lock", "")
        try GitLockFileTests.writeLock("\(root)/index.lock", "")
        #expect(Set(repo.lockFiles().map(\.path)) == Set(locks.map { "\(root)/\($0)" }))
        // A path given with a trailing slash names the same files.
        let slashed = try GitRepository.open(at: root + "/")
        #expect(Set(slashed.lockFiles().map(\.path)) == Set(locks.map { "\(root)/\($0)" }))
        #expect(slashed.referenceLock("refs/tags/v1")?.path == "\(root)/refs/tags/v1.lock")
    }

    /// `remove` takes away only the very file it describes: a lock a new writer took since
    /// stays.
    @Test func aLockReplacedSinceItWasReadIsNotRemoved() throws {
        let dir = TempDirectory("git-ref-lock-replaced")
        let path = dir.file("main.lock")
        try GitLockFileTests.writeLock(path, "old\n")
        let judged = try #require(GitLockFile(path: path))
        try FileManager.default.removeItem(atPath: path)
        #expect(try !judged.remove(), "gone already")
        try GitLockFileTests.writeLock(path, "new\n")
        #expect(try !judged.remove())
        #expect(FileManager.default.contents(atPath: path) == Data("new\n".utf8))
        #expect(try #require(GitLockFile(path: path)).remove())
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    /// A lock a process holds open is never stale, however old; one nobody holds is, once it
    /// is older than any write takes, even where abandonment cannot be told.
    @Test func aLockHeldOpenIsNeverStaleHoweverOld() throws {
        let dir = TempDirectory("git-ref-lock-age")
        let path = dir.file("main.lock")
        try GitLockFileTests.writeLock(path, "x\n")
        // Opened close-on-exec: a process another test spawns meanwhile must not keep it open.
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        try #require(fd >= 0)
        let held = try #require(GitLockFile(path: path))
        close(fd)
        let later = held.modified.addingTimeInterval(GitLockFile.staleAfter * 10)
        #expect(held.heldOpen == true && !held.isAbandoned(now: later) && !held.isStale(now: later))
        // A process another test spawns at this moment holds every descriptor of this one (close-on-exec
        // ones too) until it executes its program: looked at again while one may.
        var free = try #require(GitLockFile(path: path))
        let deadline = Date().addingTimeInterval(10)
        while free.heldOpen == true, Date() < deadline {
            usleep(20_000)
            free = try #require(GitLockFile(path: path))
        }
        #expect(free.heldOpen == false)
        #expect(!free.isAbandoned(now: free.modified) && !free.isStale(now: free.modified), "just written: a writer may be renaming it")
        #expect(free.isAbandoned(now: free.modified.addingTimeInterval(GitLockFile.abandonedAfter)))
        #expect(free.isStale(now: free.modified.addingTimeInterval(GitLockFile.staleAfter)))
        // A clock behind the file's time gives no negative age.
        #expect(free.age(now: free.modified.addingTimeInterval(-30)) == 0)
        #expect(abs(free.age(now: free.modified.addingTimeInterval(2.5)) - 2.5) < 0.001)
    }

    @Test func aPackedReferenceIsReadAndMovedLikeALooseOne() throws {
        let (dir, repo, first, second) = try history("git-ref-packed")
        defer { _ = dir }
        let ref = "refs/heads/main"
        #expect(try repo.updateReference(ref, to: first, expected: nil, logMessage: "create"))
        try git(["pack-refs", "--all", "--prune"], in: repo.path)
        #expect(!FileManager.default.fileExists(atPath: dir.file("s.git/refs/heads/main")))
        let reopened = try GitRepository.open(at: repo.path)
        #expect(try reopened.referenceTarget(ref) == first)
        #expect(try !reopened.updateReference(ref, to: second, expected: nil, logMessage: "create"), "a packed reference exists too")
        #expect(try !reopened.updateReference(ref, to: first, expected: second, logMessage: "stale"))
        #expect(try reopened.updateReference(ref, to: second, expected: first, logMessage: "move"))
        #expect(try git(["rev-parse", ref], in: repo.path) == second.hex)
    }

    /// HEAD names the branch symbolically: reading it follows the branch, and a branch moved
    /// by plain git is seen by a handle opened before.
    @Test func headFollowsItsBranchAndMovesByGitAreSeen() throws {
        let (dir, repo, first, second) = try history("git-ref-head")
        defer { _ = dir }
        #expect(try repo.referenceTarget("HEAD") == nil, "an unborn branch")
        #expect(try repo.updateReference("refs/heads/main", to: first, expected: nil, logMessage: "create"))
        #expect(try repo.referenceTarget("HEAD") == first)
        try git(["update-ref", "refs/heads/main", second.hex], in: repo.path)
        #expect(try repo.referenceTarget("HEAD") == second && repo.referenceTarget("refs/heads/main") == second)
        #expect(try !repo.updateReference("refs/heads/main", to: first, expected: first, logMessage: "stale"))
    }
}
