import Foundation
import RecSyncGit
import RecSyncTestSupport
import Testing

/// Judging and removing a lock file a writer left (`GitLockFile`).
@Suite struct GitLockFileTests {
    /// A lock nobody has open on a local file system is abandoned once it is older than the
    /// instant between a writer's close and rename; removing it leaves nothing behind.
    @Test func anAbandonedLockIsRemovedAndNothingIsLeftAside() throws {
        let dir = TempDirectory("lock-abandoned")
        let path = dir.file("main.lock")
        try Self.writeLock(path, "abc\n")
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -5)], ofItemAtPath: path)
        let lock = try #require(GitLockFile(path: path))
        #expect(lock.heldOpen == false && !lock.onSharedFileSystem && lock.isAbandoned())
        #expect(try lock.removeIfAbandoned(repositoryRoot: dir.path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty)
        // Gone already (another writer won the race): nothing to do.
        #expect(try !lock.removeIfAbandoned(repositoryRoot: dir.path))
    }

    /// A lock replaced since it was judged (a new writer took it) is left alone; so is one a
    /// process has open.
    @Test func aLockReplacedOrHeldOpenIsKept() throws {
        let dir = TempDirectory("lock-kept")
        let path = dir.file("main.lock")
        try Self.writeLock(path, "old\n")
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -5)], ofItemAtPath: path)
        let judged = try #require(GitLockFile(path: path))
        try FileManager.default.removeItem(atPath: path)
        try Self.writeLock(path, "new\n")
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -5)], ofItemAtPath: path)
        #expect(try !judged.removeIfAbandoned(repositoryRoot: dir.path))
        #expect(FileManager.default.contents(atPath: path) == Data("new\n".utf8))

        let held = try #require(FileHandle(forWritingAtPath: path))
        defer { try? held.close() }
        let open = try #require(GitLockFile(path: path))
        #expect(open.heldOpen == true && !open.isAbandoned() && !open.isStale())
        #expect(try !open.removeIfAbandoned(repositoryRoot: dir.path))
        #expect(FileManager.default.fileExists(atPath: path))
    }

    /// A lock judged stale a moment ago counts as stale only if the same file is still there:
    /// one a writer renamed into place since (its close and rename came after the look) or
    /// that a new writer took is not reported as left behind.
    @Test func aLockGoneOrReplacedSinceItWasJudgedIsNotStillStale() throws {
        let dir = TempDirectory("lock-judged")
        let path = dir.file("main.lock")
        try Self.writeLock(path, "one\n")
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -5)], ofItemAtPath: path)
        let judged = try #require(GitLockFile(path: path))
        #expect(judged.isStale() && judged.isStillStale())

        try FileManager.default.removeItem(atPath: path)
        #expect(judged.isStale() && !judged.isStillStale())

        try Self.writeLock(path, "two\n")
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -5)], ofItemAtPath: path)
        #expect(!judged.isStillStale())
    }

    /// Writes a lock file close-on-exec: a process another test spawns meanwhile must not
    /// inherit it and hold it open (Foundation's `Data.write` does not set the flag).
    static func writeLock(_ path: String, _ text: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        try #require(fd >= 0)
        defer { close(fd) }
        let bytes = Array(text.utf8)
        try #require(write(fd, bytes, bytes.count) == bytes.count)
    }
}
