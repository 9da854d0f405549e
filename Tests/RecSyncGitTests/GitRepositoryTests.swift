import Foundation
import Glibc
import RecSyncTestSupport
import Testing

@testable import RecSyncGit

/// `GitRepository`'s objects, references, trees and commits, read back by the real git.
@Suite struct GitRepositoryTests {
    func git(_ arguments: [String], _ repo: String) throws -> String {
        try GitCLI.run(["-C", repo] + arguments, in: "/").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    let alice = GitSignature(name: "Alice", email: "alice@example.com", time: 1_767_225_600)

    @Test func aBareRepositoryStartsWithAnUnbornBranchAndCannotBeMadeTwice() throws {
        let dir = TempDirectory("git-init")
        let path = dir.file("nested/store.git")
        let repo = try GitRepository.initBare(at: path, initialBranch: "trunk")
        #expect(try git(["rev-parse", "--is-bare-repository"], path) == "true")
        #expect(try git(["symbolic-ref", "HEAD"], path) == "refs/heads/trunk")
        #expect(try repo.referenceTarget("refs/heads/trunk") == nil)
        #expect(try repo.referenceTarget("refs/heads/no-such-branch") == nil)
        #expect(throws: GitError.self) { _ = try GitRepository.initBare(at: path) }
        #expect(throws: GitError.self) { _ = try GitRepository.open(at: dir.file("missing.git")) }
    }

    @Test func aBlobRoundTripsAndGitReadsTheSameBytes() throws {
        let dir = TempDirectory("git-blob")
        let repo = try GitRepository.initBare(at: dir.file("s.git"))
        let bytes = Array("hello\u{0}world\n".utf8)
        let oid = try repo.createBlob(bytes)
        #expect(oid == BlobDigest.of(bytes).oid)
        #expect(try repo.blob(oid) == bytes)
        #expect(try repo.contains(oid))
        #expect(try repo.objectSize(oid) == bytes.count)
        #expect(try repo.blobSize(oid) == Int64(bytes.count))
        #expect(try git(["cat-file", "-t", oid.hex], repo.path) == "blob")
        #expect(try git(["cat-file", "-s", oid.hex], repo.path) == "\(bytes.count)")
        // The empty blob has no bytes, and is a blob all the same.
        let empty = try repo.createBlob([])
        #expect(empty.hex == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391")
        #expect(try repo.blob(empty) == [] && repo.blobSize(empty) == 0)
    }

    @Test func anObjectThatIsMissingOrNoBlobHasNoBlobSize() throws {
        let dir = TempDirectory("git-blob-size")
        let repo = try GitRepository.initBare(at: dir.file("s.git"))
        let missing = try #require(GitOID(hex: "1111111111111111111111111111111111111111"))
        #expect(try !repo.contains(missing))
        #expect(try repo.blobSize(missing) == nil)
        let tree = try repo.updateTree(base: nil, updates: [.upsertBlob(path: "a", oid: try repo.createBlob([1]))])
        #expect(try repo.blobSize(tree) == nil)
        #expect(throws: GitError.self) { _ = try repo.digestBlob(tree) }
        let error = #expect(throws: GitError.self) { _ = try repo.blob(missing) }
        #expect(error?.isNotFound == true)
    }

    @Test func aStreamedBlobIsWhatGitHashesAndWritesBackWhole() throws {
        let dir = TempDirectory("git-blob-stream")
        let repo = try GitRepository.initBare(at: dir.file("s.git"))
        let bytes = (0..<(BlobDigest.chunkSize + 777)).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let source = dir.file("source")
        try Data(bytes).write(to: URL(fileURLWithPath: source))
        let input = open(source, O_RDONLY)
        try #require(input >= 0)
        let stored = try repo.createBlob(fromFD: input, size: Int64(bytes.count), path: source)
        close(input)
        #expect(stored == BlobDigest.of(bytes))
        #expect(stored.oid.hex == (try git(["hash-object", "--no-filters", source], repo.path)))
        #expect(try repo.digestBlob(stored.oid) == stored)
        let target = dir.file("target")
        let output = open(target, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        try #require(output >= 0)
        let written = try repo.writeBlob(stored.oid, toFD: output, path: target)
        close(output)
        #expect(written == stored)
        #expect(try Array(Data(contentsOf: URL(fileURLWithPath: target))) == bytes)
    }

    @Test func aStreamedBlobOfTheWrongSizeIsNotStored() throws {
        let dir = TempDirectory("git-blob-stream-size")
        let repo = try GitRepository.initBare(at: dir.file("s.git"))
        let source = dir.file("source")
        try Data(repeating: 9, count: 100).write(to: URL(fileURLWithPath: source))
        let input = open(source, O_RDONLY)
        try #require(input >= 0)
        defer { close(input) }
        #expect(throws: GitError.self) { _ = try repo.createBlob(fromFD: input, size: 50, path: source) }
        #expect(try git(["count-objects"], repo.path).hasPrefix("0 objects"))
    }

    @Test func aReferenceMovesOnlyFromTheValueTheCallerExpects() throws {
        let dir = TempDirectory("git-ref")
        let repo = try GitRepository.initBare(at: dir.file("s.git"))
        let tree = try repo.updateTree(base: nil, updates: [])
        let first = try repo.createCommit(tree: tree, parents: [], author: alice, message: "first\n")
        let second = try repo.createCommit(tree: tree, parents: [first], author: alice, message: "second\n")
        let ref = "refs/heads/main"
        #expect(try repo.updateReference(ref, to: first, expected: nil, logMessage: "create"))
        #expect(try !repo.updateReference(ref, to: second, expected: nil, logMessage: "create again"), "it exists already")
        #expect(try !repo.updateReference(ref, to: second, expected: second, logMessage: "stale"), "it holds another value")
        #expect(try repo.referenceTarget(ref) == first)
        #expect(try repo.updateReference(ref, to: second, expected: first, logMessage: "move"))
        #expect(try repo.referenceTarget(ref) == second)
        #expect(try git(["rev-parse", ref], repo.path) == second.hex)
    }

    @Test func treesAndCommitsAreWhatGitReads() throws {
        let dir = TempDirectory("git-tree")
        let repo = try GitRepository.initBare(at: dir.file("s.git"))
        let empty = try repo.updateTree(base: nil, updates: [])
        #expect(empty.hex == "4b825dc642cb6eb9a060e54bf8d69288fbee4904")
        #expect(try repo.updateTree(base: empty, updates: []) == empty)
        let a = try repo.createBlob(Array("a".utf8))
        let b = try repo.createBlob(Array("b".utf8))
        let one = try repo.updateTree(base: nil, updates: [.upsertBlob(path: "zones/z/a.json", oid: a), .upsertBlob(path: "top", oid: b)])
        #expect(try repo.treeEntries(one).map(\.name) == ["top", "zones"])
        #expect(try repo.treeEntryCount(one) == 2)
        #expect(try repo.entry(atPath: "zones/z/a.json", inTree: one) == GitTreeEntry(name: "a.json", oid: a, kind: .blob))
        #expect(try repo.entry(atPath: "zones/z", inTree: one)?.kind == .tree)
        #expect(try repo.entry(atPath: "zones/missing", inTree: one) == nil)
        // Removing the last file of a directory removes the directory.
        let two = try repo.updateTree(base: one, updates: [.remove(path: "zones/z/a.json")])
        #expect(try repo.treeEntries(two).map(\.name) == ["top"])
        #expect(try git(["ls-tree", "-r", "--name-only", one.hex], repo.path) == "top\nzones/z/a.json")

        let root = try repo.createCommit(tree: one, parents: [], author: alice, message: "add a\n")
        let child = try repo.createCommit(tree: two, parents: [root], author: alice, message: "remove a\n")
        let read = try repo.commit(child)
        #expect(read.tree == two && read.parents == [root] && read.message == "remove a\n")
        #expect(read.authorName == "Alice" && read.authorEmail == "alice@example.com" && read.time == alice.time)
        #expect(try repo.isDescendantOrEqual(child, of: root))
        #expect(try repo.isDescendantOrEqual(root, of: root))
        #expect(try !repo.isDescendantOrEqual(root, of: child))
        #expect(try git(["log", "--format=%s", child.hex], repo.path) == "remove a\nadd a")
        _ = try git(["fsck", "--strict", "--no-dangling"], repo.path)
    }

    @Test func bulkWritesReachGitOnlyOnceThePackIsWritten() throws {
        let dir = TempDirectory("git-bulk")
        let path = dir.file("s.git")
        _ = try GitRepository.initBare(at: path)
        let repo = try GitRepository.open(at: path, bulkWrites: true)
        let blob = try repo.createBlob(Array("bulk".utf8))
        let tree = try repo.updateTree(base: nil, updates: [.upsertBlob(path: "d/f", oid: blob)])
        let commit = try repo.createCommit(tree: tree, parents: [], author: alice, message: "bulk\n")
        #expect(throws: GitCLI.Failure.self) { _ = try git(["cat-file", "-e", commit.hex], path) }
        try repo.writePack()
        #expect(try git(["cat-file", "-p", "\(commit.hex):d/f"], path) == "bulk")
        #expect(try git(["count-objects", "-v"], path).contains("in-pack: 4"))
        _ = try git(["fsck", "--strict", "--no-dangling", commit.hex], path)
    }
}
