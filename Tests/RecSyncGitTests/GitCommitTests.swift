import Foundation
import RecSyncTestSupport
import Testing

@testable import RecSyncGit

/// Commits written and read by `GitRepository`: authors and committers, parents, copies of
/// commits onto other trees, and ancestry, each checked against the real git.
@Suite struct GitCommitTests {
    let alice = GitSignature(name: "Alice", email: "alice@example.com", time: 1_767_225_600)
    let bob = GitSignature(name: "Bøb Ünïcode", email: "bob@example.org", time: 1_767_312_000)

    func repository(_ name: String) throws -> (TempDirectory, GitRepository) {
        let dir = TempDirectory(name)
        return (dir, try GitRepository.initBare(at: dir.file("s.git")))
    }

    @Test func aCommitKeepsItsCommitterApartFromItsAuthor() throws {
        let (dir, repo) = try repository("git-commit-committer")
        defer { _ = dir }
        let tree = try repo.updateTree(base: nil, updates: [])
        let commit = try repo.createCommit(tree: tree, parents: [], author: alice, committer: bob, message: "both\n")
        #expect(
            try git(["log", "-1", "--format=%an|%ae|%at|%cn|%ce|%ct", commit.hex], in: repo.path)
                == "Alice|alice@example.com|1767225600|Bøb Ünïcode|bob@example.org|1767312000")
        // Without a committer, the author is the committer too.
        let alone = try repo.createCommit(tree: tree, parents: [], author: bob, message: "alone\n")
        #expect(try git(["log", "-1", "--format=%an|%cn|%at|%ct", alone.hex], in: repo.path) == "Bøb Ünïcode|Bøb Ünïcode|1767312000|1767312000")
        // What is read back is the author's.
        let read = try repo.commit(commit)
        #expect(read.authorName == "Alice" && read.authorEmail == "alice@example.com")
        #expect(read.time == bob.time, "a commit's time is its committer's")
    }

    @Test func aMessageIsKeptByteForByte() throws {
        let (dir, repo) = try repository("git-commit-message")
        defer { _ = dir }
        let tree = try repo.updateTree(base: nil, updates: [])
        for message in ["no newline at the end", "subject\n\nbody line 1\nbody line 2\n", "ünïcödé ✓\n", "trailing spaces   \n"] {
            let commit = try repo.createCommit(tree: tree, parents: [], author: alice, message: message)
            #expect(try repo.commit(commit).message == message)
            #expect(try GitCLI.run(["-C", repo.path, "cat-file", "commit", commit.hex], in: "/").hasSuffix("\n\n" + message))
        }
    }

    @Test func aMergeKeepsItsParentsInTheirOrder() throws {
        let (dir, repo) = try repository("git-commit-merge")
        defer { _ = dir }
        let empty = try repo.updateTree(base: nil, updates: [])
        let left = try repo.createCommit(tree: empty, parents: [], author: alice, message: "left\n")
        let right = try repo.createCommit(tree: empty, parents: [], author: alice, message: "right\n")
        let merge = try repo.createCommit(tree: empty, parents: [right, left], author: alice, message: "merge\n")
        #expect(try repo.commit(merge).parents == [right, left])
        #expect(try git(["rev-parse", "\(merge.hex)^1", "\(merge.hex)^2"], in: repo.path) == "\(right.hex)\n\(left.hex)")
        // Both roots are ancestors of the merge; neither root descends from the other.
        #expect(try repo.isDescendantOrEqual(merge, of: left) && repo.isDescendantOrEqual(merge, of: right))
        #expect(try !repo.isDescendantOrEqual(left, of: right) && !repo.isDescendantOrEqual(right, of: left))
        #expect(try !repo.isDescendantOrEqual(left, of: merge))
        try git(["fsck", "--strict", "--no-dangling"], in: repo.path)
    }

    /// A copy is the replay of a commit onto a new base: only its tree and parents change.
    @Test func aCopyKeepsAuthorCommitterTimeZonesAndMessage() throws {
        let (dir, repo) = try repository("git-commit-copy")
        defer { _ = dir }
        // Written by git, with time zones recsync itself never writes.
        let tree = try repo.updateTree(base: nil, updates: [.upsertBlob(path: "a", oid: try repo.createBlob(Array("a".utf8)))])
        let raw = """
            tree \(tree.hex)
            author Carol <carol@example.net> 1700000000 +0530
            committer Dave <dave@example.net> 1700003600 -0800

            subject of the original

            its body

            """
        let original = try #require(
            GitOID(
                hex: try GitCLI.run(["-C", repo.path, "hash-object", "-t", "commit", "-w", "--stdin"], in: "/", input: raw)
                    .trimmingCharacters(in: .whitespacesAndNewlines)))
        let base = try repo.createCommit(tree: try repo.updateTree(base: nil, updates: []), parents: [], author: alice, message: "base\n")
        let newTree = try repo.updateTree(base: tree, updates: [.upsertBlob(path: "b", oid: try repo.createBlob(Array("b".utf8)))])
        let copy = try repo.copyCommit(original, tree: newTree, parents: [base])
        let text = try git(["cat-file", "commit", copy.hex], in: repo.path)
        #expect(text.contains("author Carol <carol@example.net> 1700000000 +0530\n"), "\(text)")
        #expect(text.contains("committer Dave <dave@example.net> 1700003600 -0800\n"), "\(text)")
        #expect(text.hasSuffix("subject of the original\n\nits body"), "\(text)")
        let read = try repo.commit(copy)
        #expect(read.tree == newTree && read.parents == [base] && read.authorName == "Carol")
        // A new message replaces the old; everything else stays.
        let renamed = try repo.copyCommit(original, tree: newTree, parents: [base], message: "another message\n")
        #expect(try repo.commit(renamed).message == "another message\n")
        #expect(try git(["log", "-1", "--format=%ad|%cd", "--date=raw", renamed.hex], in: repo.path) == "1700000000 +0530|1700003600 -0800")
        // The same copy twice is the same commit.
        #expect(try repo.copyCommit(original, tree: newTree, parents: [base]) == copy)
    }

    @Test func aCopyOfACommitThatIsNotThereFails() throws {
        let (dir, repo) = try repository("git-commit-copy-missing")
        defer { _ = dir }
        let missing = try #require(GitOID(hex: "3333333333333333333333333333333333333333"))
        let tree = try repo.updateTree(base: nil, updates: [])
        let error = try gitError { _ = try repo.copyCommit(missing, tree: tree, parents: []) }
        #expect(error.function == "git_commit_lookup" && error.isNotFound)
    }

    @Test func somethingThatIsNoCommitIsNotReadAsOne() throws {
        let (dir, repo) = try repository("git-commit-not")
        defer { _ = dir }
        let blob = try repo.createBlob(Array("x".utf8))
        let tree = try repo.updateTree(base: nil, updates: [.upsertBlob(path: "x", oid: blob)])
        for oid in [blob, tree] {
            let error = try gitError { _ = try repo.commit(oid) }
            #expect(error.function == "git_commit_lookup" && error.isNotFound, "\(error)")
        }
    }

    @Test func aLongHistoryIsWalkedForAncestry() throws {
        let (dir, repo) = try repository("git-commit-history")
        defer { _ = dir }
        let tree = try repo.updateTree(base: nil, updates: [])
        var commits: [GitOID] = []
        for i in 0..<50 {
            commits.append(try repo.createCommit(tree: tree, parents: Array(commits.suffix(1)), author: alice, message: "c\(i)\n"))
        }
        #expect(try repo.isDescendantOrEqual(commits[49], of: commits[0]))
        #expect(try !repo.isDescendantOrEqual(commits[0], of: commits[49]))
        #expect(try repo.isDescendantOrEqual(commits[30], of: commits[29]) && !repo.isDescendantOrEqual(commits[29], of: commits[30]))
        #expect(try git(["rev-list", "--count", commits[49].hex], in: repo.path) == "50")
    }
}
