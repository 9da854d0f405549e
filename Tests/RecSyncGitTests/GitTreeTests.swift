import Foundation
import RecSyncTestSupport
import Testing

@testable import RecSyncGit

/// Trees built by `GitRepository.updateTree` and read back by path, compared with what git
/// builds and lists itself.
@Suite struct GitTreeTests {
    func repository(_ name: String) throws -> (TempDirectory, GitRepository) {
        let dir = TempDirectory(name)
        return (dir, try GitRepository.initBare(at: dir.file("s.git")))
    }

    /// The tree git's own index writes for `files` (path, contents).
    func gitTree(_ files: [(String, String)], in repo: String, scratch: TempDirectory) throws -> String {
        var env = GitCLI.hermeticEnvironment
        env["GIT_INDEX_FILE"] = scratch.file("index-\(UUID().uuidString)")
        for (path, text) in files {
            let oid = try Subprocess.run("/usr/bin/git", ["-C", repo, "hash-object", "-w", "--stdin"], in: "/", environment: env, input: text)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            _ = try Subprocess.run(
                "/usr/bin/git", ["-C", repo, "update-index", "--add", "--cacheinfo", "100644,\(oid),\(path)"], in: "/", environment: env)
        }
        return try Subprocess.run("/usr/bin/git", ["-C", repo, "write-tree"], in: "/", environment: env).trimmingCharacters(
            in: .whitespacesAndNewlines)
    }

    @Test func manyUpdatesInOneCallBuildTheTreeGitBuilds() throws {
        let (dir, repo) = try repository("git-tree-many")
        let files = (0..<40).map { ("zones/z\($0 % 5)/records/r\($0).json", "{\"n\":\($0)}\n") } + [("README", "top\n"), ("a.b/c", "c\n")]
        let updates = try files.map { GitTreeUpdate.upsertBlob(path: $0.0, oid: try repo.createBlob(Array($0.1.utf8))) }
        let tree = try repo.updateTree(base: nil, updates: updates.shuffled())
        #expect(tree.hex == (try gitTree(files, in: repo.path, scratch: dir)))
        // Removing some again gives what git builds from the files that are left.
        let removed = files.enumerated().filter { $0.offset % 3 == 0 }.map(\.element)
        let kept = files.enumerated().filter { $0.offset % 3 != 0 }.map(\.element)
        let smaller = try repo.updateTree(base: tree, updates: removed.map { .remove(path: $0.0) })
        #expect(smaller.hex == (try gitTree(kept, in: repo.path, scratch: dir)))
    }

    @Test func anUpdateRewritesOnlyTheTreesOnItsPath() throws {
        let (dir, repo) = try repository("git-tree-shared")
        defer { _ = dir }
        let one = try repo.createBlob(Array("1".utf8))
        let two = try repo.createBlob(Array("2".utf8))
        let base = try repo.updateTree(
            base: nil, updates: [.upsertBlob(path: "a/x/f", oid: one), .upsertBlob(path: "a/y/f", oid: one), .upsertBlob(path: "b/f", oid: one)])
        let next = try repo.updateTree(base: base, updates: [.upsertBlob(path: "a/x/f", oid: two)])
        #expect(try repo.entry(atPath: "a/x/f", inTree: next)?.oid == two)
        #expect(try repo.entry(atPath: "a/y", inTree: next) == repo.entry(atPath: "a/y", inTree: base), "a sibling tree is shared")
        #expect(try repo.entry(atPath: "b", inTree: next) == repo.entry(atPath: "b", inTree: base))
        #expect(try repo.entry(atPath: "a", inTree: next)?.oid != repo.entry(atPath: "a", inTree: base)?.oid)
        // Writing the same blob again changes nothing at all.
        #expect(try repo.updateTree(base: next, updates: [.upsertBlob(path: "a/x/f", oid: two)]) == next)
    }

    /// libgit2 will not put a file where a directory is (nor the reverse) in one upsert: the
    /// directory has to be removed first, else the whole update fails and changes nothing.
    @Test func aFileTakesADirectorysNameOnlyOnceTheDirectoryIsRemoved() throws {
        let (dir, repo) = try repository("git-tree-replace")
        defer { _ = dir }
        let blob = try repo.createBlob(Array("f".utf8))
        let withDirectory = try repo.updateTree(base: nil, updates: [.upsertBlob(path: "p/inner", oid: blob)])
        let refused = try gitError { _ = try repo.updateTree(base: withDirectory, updates: [.upsertBlob(path: "p", oid: blob)]) }
        #expect(refused.message.contains("cannot replace 'tree' with 'blob'"), "\(refused)")
        let emptied = try repo.updateTree(base: withDirectory, updates: [.remove(path: "p/inner")])
        #expect(try repo.treeEntryCount(emptied) == 0)
        let withFile = try repo.updateTree(base: emptied, updates: [.upsertBlob(path: "p", oid: blob)])
        #expect(try repo.treeEntries(withFile) == [GitTreeEntry(name: "p", oid: blob, kind: .blob)])
        let through = try gitError { _ = try repo.updateTree(base: withFile, updates: [.upsertBlob(path: "p/inner", oid: blob)]) }
        #expect(through.function == "git_tree_create_updated", "\(through)")
        let back = try repo.updateTree(
            base: try repo.updateTree(base: withFile, updates: [.remove(path: "p")]), updates: [.upsertBlob(path: "p/inner", oid: blob)])
        #expect(back == withDirectory)
        try git(["fsck", "--strict", "--no-dangling"], in: repo.path)
    }

    @Test func entriesGitWroteKeepTheirKinds() throws {
        let (dir, repo) = try repository("git-tree-kinds")
        defer { _ = dir }
        let blob = try repo.createBlob(Array("x".utf8))
        let sub = try repo.updateTree(base: nil, updates: [.upsertBlob(path: "f", oid: blob)])
        let commit = try repo.createCommit(
            tree: sub, parents: [], author: GitSignature(name: "A", email: "a@example.com", time: 1_767_225_600), message: "m\n")
        let listing = """
            100644 blob \(blob.hex)\tplain
            100755 blob \(blob.hex)\ttool
            120000 blob \(blob.hex)\tlink
            040000 tree \(sub.hex)\tdir
            160000 commit \(commit.hex)\tmodule

            """
        let made = try #require(
            GitOID(hex: try GitCLI.run(["-C", repo.path, "mktree"], in: "/", input: listing).trimmingCharacters(in: .whitespacesAndNewlines)))
        let kinds = Dictionary(uniqueKeysWithValues: try repo.treeEntries(made).map { ($0.name, $0.kind) })
        #expect(kinds == ["plain": .blob, "tool": .executable, "link": .symlink, "dir": .tree, "module": .submodule])
        #expect(try repo.treeEntries(made).map(\.name) == ["dir", "link", "module", "plain", "tool"])
        #expect(try repo.entry(atPath: "dir/f", inTree: made) == GitTreeEntry(name: "f", oid: blob, kind: .blob))
        #expect(try repo.treeEntryCount(made) == 5)
        // An upsert writes an ordinary file, whatever stood there.
        let updated = try repo.updateTree(base: made, updates: [.upsertBlob(path: "tool", oid: blob)])
        #expect(try repo.entry(atPath: "tool", inTree: updated)?.kind == .blob)
        #expect(try git(["ls-tree", updated.hex, "tool"], in: repo.path).hasPrefix("100644 blob"))
    }

    @Test func aPathThroughAFileOrOutsideTheTreeHasNoEntry() throws {
        let (dir, repo) = try repository("git-tree-paths")
        defer { _ = dir }
        let blob = try repo.createBlob(Array("x".utf8))
        let tree = try repo.updateTree(base: nil, updates: [.upsertBlob(path: "dir/file", oid: blob)])
        #expect(try repo.entry(atPath: "dir/file/below", inTree: tree) == nil)
        #expect(try repo.entry(atPath: "dir/fil", inTree: tree) == nil)
        #expect(try repo.entry(atPath: "di", inTree: tree) == nil)
        #expect(try repo.entry(atPath: "DIR/file", inTree: tree) == nil, "names are compared exactly")
        #expect(try repo.entry(atPath: "dir/file", inTree: tree)?.oid == blob)
    }

    @Test func aTreeThatIsNotThereOrIsNoTreeCannotBeRead() throws {
        let (dir, repo) = try repository("git-tree-missing")
        defer { _ = dir }
        let blob = try repo.createBlob(Array("x".utf8))
        let missing = try #require(GitOID(hex: "4444444444444444444444444444444444444444"))
        for oid in [blob, missing] {
            #expect(try gitError { _ = try repo.treeEntries(oid) }.isNotFound)
            #expect(try gitError { _ = try repo.treeEntryCount(oid) }.isNotFound)
            #expect(try gitError { _ = try repo.entry(atPath: "x", inTree: oid) }.isNotFound)
            #expect(try gitError { _ = try repo.updateTree(base: oid, updates: []) }.function == "git_tree_lookup")
        }
    }

    @Test func removingAPathThatIsNotThereIsAnError() throws {
        let (dir, repo) = try repository("git-tree-remove-missing")
        defer { _ = dir }
        let tree = try repo.updateTree(base: nil, updates: [.upsertBlob(path: "a", oid: try repo.createBlob([1]))])
        let error = try gitError { _ = try repo.updateTree(base: tree, updates: [.remove(path: "b")]) }
        #expect(error.function == "git_tree_create_updated", "\(error)")
    }

    /// In bulk mode the pack holds what this handle made: the new blob, and the trees on its
    /// path, not the subtrees it shares with the base.
    @Test func aBulkPackHoldsOnlyTheTreesThatChanged() throws {
        let (dir, loose) = try repository("git-tree-bulk")
        defer { _ = dir }
        let one = try loose.createBlob(Array("1".utf8))
        let base = try loose.updateTree(base: nil, updates: [.upsertBlob(path: "a/x", oid: one), .upsertBlob(path: "b/y", oid: one)])
        let bulk = try GitRepository.open(at: loose.path, bulkWrites: true)
        let two = try bulk.createBlob(Array("2".utf8))
        let next = try bulk.updateTree(base: base, updates: [.upsertBlob(path: "a/z", oid: two)])
        try bulk.writePack()
        // The blob, the tree `a` and the root: `b` was not rewritten.
        #expect(try git(["count-objects", "-v"], in: loose.path).contains("in-pack: 3"))
        #expect(try git(["ls-tree", "-r", "--name-only", next.hex], in: loose.path) == "a/x\na/z\nb/y")
        // A handle that is not in bulk mode has no pack to write.
        try loose.writePack()
        #expect(try git(["count-objects", "-v"], in: loose.path).contains("packs: 1"))
    }
}
