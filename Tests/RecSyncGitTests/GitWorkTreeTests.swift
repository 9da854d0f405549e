import Foundation
import RecSyncTestSupport
import Testing

@testable import RecSyncGit

/// Repositories with a work tree (`openOrInitWorkTree`), what `stageOnly` puts in a tree and
/// `commitOnHead`, checked with the real git.
@Suite struct GitWorkTreeTests {
    let alice = GitSignature(name: "Alice", email: "alice@example.com", time: 1_767_225_600)

    func write(_ text: String, to path: String) throws {
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    @Test func aWorkTreeRepositoryIsMadeOnceAndOpenedAfter() throws {
        let dir = TempDirectory("git-worktree-init")
        let path = dir.file("project")
        let made = try GitRepository.openOrInitWorkTree(at: path)
        #expect(FileManager.default.fileExists(atPath: "\(path)/.git/HEAD"))
        #expect(
            made.workTreeRoot.map { URL(fileURLWithPath: $0).resolvingSymlinksInPath().path }
                == URL(fileURLWithPath: path).resolvingSymlinksInPath().path)
        #expect(try made.headCommit() == nil && made.headBranch() == "refs/heads/main")
        #expect(try git(["rev-parse", "--is-bare-repository"], in: path) == "false")
        let tree = try made.updateTree(base: nil, updates: [])
        let commit = try #require(try made.commitOnHead(tree: tree, author: alice, message: "first\n"))
        // Opened again, not made again: the commit is there.
        let opened = try GitRepository.openOrInitWorkTree(at: path)
        #expect(try opened.headCommit() == commit)
        #expect(try GitRepository.open(at: dir.file("project/.git")).workTreeRoot != nil)
    }

    /// A directory inside someone else's repository gets a repository of its own rather than
    /// snapshots landing in the enclosing one.
    @Test func aDirectoryInsideAnotherRepositoryGetsItsOwn() throws {
        let dir = TempDirectory("git-worktree-nested")
        try GitCLI.run(["init", "-q", dir.file("outer")], in: dir.path)
        let inner = dir.file("outer/sub/inner")
        try FileManager.default.createDirectory(atPath: inner, withIntermediateDirectories: true)
        let repo = try GitRepository.openOrInitWorkTree(at: inner)
        #expect(FileManager.default.fileExists(atPath: "\(inner)/.git/HEAD"))
        #expect(try git(["rev-parse", "--show-toplevel"], in: inner).hasSuffix("/outer/sub/inner"))
        #expect(try repo.headCommit() == nil)
    }

    @Test func aBareRepositoryIsNotTakenForAWorkTree() throws {
        let dir = TempDirectory("git-worktree-bare")
        let path = dir.file("s.git")
        _ = try GitRepository.initBare(at: path)
        let error = try gitError { _ = try GitRepository.openOrInitWorkTree(at: path) }
        #expect(error.message.contains("without a work tree"), "\(error)")
        #expect(!FileManager.default.fileExists(atPath: "\(path)/.git"), "nothing was made inside it")
    }

    /// Only the given directories go into the tree (as `git add -A` stages them, .gitignore
    /// honoured); whatever else the user staged stays staged, out of the commit.
    @Test func stagingTakesTheGivenDirectoriesAndLeavesTheUsersIndexAlone() throws {
        let dir = TempDirectory("git-worktree-stage")
        let path = dir.file("w")
        let repo = try GitRepository.openOrInitWorkTree(at: path)
        try write("*.tmp\n", to: "\(path)/.gitignore")
        try write("a\n", to: "\(path)/snap/a.json")
        try write("b\n", to: "\(path)/snap/deep/b.json")
        try write("scratch\n", to: "\(path)/snap/c.tmp")
        try write("user\n", to: "\(path)/notes/todo.txt")
        try write("similar\n", to: "\(path)/snapshot-not/x")
        try git(["add", "notes/todo.txt"], in: path)
        let tree = try repo.stageOnly(["snap"])
        #expect(try git(["ls-tree", "-r", "--name-only", tree.hex], in: path) == "snap/a.json\nsnap/deep/b.json")
        let commit = try #require(try repo.commitOnHead(tree: tree, author: alice, message: "snapshot\n"))
        #expect(try git(["rev-parse", "HEAD"], in: path) == commit.hex)
        // The user's staged file is still staged, and still not committed.
        #expect(try git(["diff", "--cached", "--name-only"], in: path) == "notes/todo.txt")
        // A deleted file leaves the next tree; nothing changed gives no commit.
        try FileManager.default.removeItem(atPath: "\(path)/snap/deep/b.json")
        let next = try repo.stageOnly(["snap"])
        #expect(try git(["ls-tree", "-r", "--name-only", next.hex], in: path) == "snap/a.json")
        let second = try #require(try repo.commitOnHead(tree: next, author: alice, message: "removed b\n"))
        #expect(try repo.commit(second).parents == [commit])
        #expect(try repo.commitOnHead(tree: try repo.stageOnly(["snap"]), author: alice, message: "same\n") == nil)
        #expect(try git(["rev-list", "--count", "HEAD"], in: path) == "2")
    }

    /// Files the user committed outside the given directories stay in every snapshot's tree.
    @Test func aSnapshotKeepsWhatHeadHasOutsideItsDirectories() throws {
        let dir = TempDirectory("git-worktree-keep")
        let path = dir.file("w")
        let repo = try GitRepository.openOrInitWorkTree(at: path)
        try write("readme\n", to: "\(path)/README")
        try git(["add", "README"], in: path)
        try git(["-c", "user.name=U", "-c", "user.email=u@example.com", "commit", "-q", "-m", "user's commit"], in: path)
        try write("changed but not staged\n", to: "\(path)/README")
        try write("1\n", to: "\(path)/snap/one")
        let tree = try repo.stageOnly(["snap"])
        #expect(try git(["ls-tree", "-r", "--name-only", tree.hex], in: path) == "README\nsnap/one")
        #expect(try git(["cat-file", "-p", "\(tree.hex):README"], in: path) == "readme")
    }

    @Test func aDetachedHeadIsNotCommittedOn() throws {
        let dir = TempDirectory("git-worktree-detached")
        let path = dir.file("w")
        let repo = try GitRepository.openOrInitWorkTree(at: path)
        let empty = try repo.updateTree(base: nil, updates: [])
        let first = try #require(try repo.commitOnHead(tree: empty, author: alice, message: "first\n"))
        try git(["checkout", "-q", "--detach"], in: path)
        let tree = try repo.updateTree(base: empty, updates: [.upsertBlob(path: "f", oid: try repo.createBlob([1]))])
        let error = try gitError { _ = try repo.commitOnHead(tree: tree, author: alice, message: "second\n") }
        #expect(error.message.contains("detached"), "\(error)")
        #expect(try repo.headCommit() == first && repo.referenceTarget("refs/heads/main") == first)
    }

    /// A branch that moved between reading HEAD and moving it is not overwritten.
    @Test func aBranchMovedByAnotherWriterIsNotOverwritten() throws {
        let dir = TempDirectory("git-worktree-moved")
        let path = dir.file("w")
        let repo = try GitRepository.openOrInitWorkTree(at: path)
        let empty = try repo.updateTree(base: nil, updates: [])
        let first = try #require(try repo.commitOnHead(tree: empty, author: alice, message: "first\n"))
        let other = try repo.createCommit(tree: empty, parents: [first], author: alice, message: "elsewhere\n")
        // Hold the branch's lock, as a writer between its read and its rename would.
        try GitLockFileTests.writeLock("\(path)/.git/refs/heads/main.lock", "\(other.hex)\n")
        let tree = try repo.updateTree(base: empty, updates: [.upsertBlob(path: "f", oid: try repo.createBlob([1]))])
        let error = try gitError { _ = try repo.commitOnHead(tree: tree, author: alice, message: "second\n") }
        #expect(error.isModified && error.message.contains("refs/heads/main moved"), "\(error)")
        #expect(try repo.headCommit() == first)
    }

    @Test func configValuesAreReadFromTheRepositorysConfig() throws {
        let dir = TempDirectory("git-worktree-config")
        let path = dir.file("w")
        let repo = try GitRepository.openOrInitWorkTree(at: path)
        try git(["config", "recsync.test", "some value"], in: path)
        try git(["config", "user.name", "Zoë"], in: path)
        #expect(repo.configString("recsync.test") == "some value")
        #expect(repo.configString("user.name") == "Zoë")
        #expect(repo.configString("recsync.missing") == nil)
        #expect(repo.configString("not a key") == nil)
    }
}
