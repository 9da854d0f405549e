import Foundation
import RecSyncGit
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

/// `GitTreeEntry.gitOrder`: the order git keeps a tree's entries in, checked against git itself.
@Suite(.ownThreads) struct GitTreeEntryOrderTests {
    /// Names chosen around '/' (47): a tree sorts as if its name ended in '/', so a tree "a"
    /// comes after "a-b" and "a.b" (45, 46) but before "a0" and "ab" (48, 98).
    let entries: [(name: String, isTree: Bool)] = [
        ("a", true), ("a-b", false), ("a.b", false), ("a0", false), ("ab", false), ("a b", false), ("a!", true),
        ("b", false), ("b-", true), ("b.json", false), ("c", true), ("c.d", true), ("é", false), ("e", false), ("~", false),
    ]

    func sorted(_ list: [(name: String, isTree: Bool)]) -> [String] {
        list.sorted { GitTreeEntry.gitOrder($0.name, aIsTree: $0.isTree, $1.name, bIsTree: $1.isTree) < 0 }.map(\.name)
    }

    @Test func sortsATreeAsIfItsNameEndedInASlash() {
        #expect(GitTreeEntry.gitOrder("a", aIsTree: true, "a.b", bIsTree: false) == 1)
        #expect(GitTreeEntry.gitOrder("a.b", aIsTree: false, "a", bIsTree: true) == -1)
        #expect(GitTreeEntry.gitOrder("a", aIsTree: true, "a-b", bIsTree: false) == 1)
        #expect(GitTreeEntry.gitOrder("a", aIsTree: true, "a0", bIsTree: false) == -1)
        #expect(GitTreeEntry.gitOrder("a0", aIsTree: false, "a", bIsTree: true) == 1)
        #expect(GitTreeEntry.gitOrder("a", aIsTree: false, "a.b", bIsTree: false) == -1)
        #expect(GitTreeEntry.gitOrder("a.b", aIsTree: false, "a", bIsTree: false) == 1)
        // One name is one entry, whatever its kind on either side (a diff pairs them).
        #expect(GitTreeEntry.gitOrder("a", aIsTree: true, "a", bIsTree: false) == 0)
        #expect(GitTreeEntry.gitOrder("a", aIsTree: false, "a", bIsTree: false) == 0)
        // Bytes, not characters: "é" is 0xC3 0xA9, after every ASCII name.
        #expect(GitTreeEntry.gitOrder("é", aIsTree: false, "~", bIsTree: false) == 1)
    }

    @Test func agreesWithTheOrderGitWritesATreeIn() throws {
        let dir = TempDirectory("git-order")
        try GitCLI.run(["init", "-q", "--bare", dir.path], in: dir.path)
        let blob = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"  // the empty blob
        let tree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  // the empty tree
        // mktree sorts what it is given into git's order; ls-tree lists it as stored.
        let input = entries.reversed().map { "\($0.isTree ? "040000 tree \(tree)" : "100644 blob \(blob)")\t\($0.name)\n" }.joined()
        let made = try GitCLI.run(["mktree", "--missing"], in: dir.path, input: input).trimmingCharacters(in: .whitespacesAndNewlines)
        let listed = try GitCLI.run(["-c", "core.quotePath=false", "ls-tree", "--name-only", made], in: dir.path)
            .split(separator: "\n").map(String.init)
        #expect(listed.count == entries.count)
        // Every pair, both ways round: a sort can come out right from a comparator that is not.
        let isTree = Dictionary(uniqueKeysWithValues: entries.map { ($0.name, $0.isTree) })
        for (i, a) in listed.enumerated() {
            for b in listed[(i + 1)...] {
                #expect(GitTreeEntry.gitOrder(a, aIsTree: isTree[a] == true, b, bIsTree: isTree[b] == true) == -1, "\(a) before \(b)")
                #expect(GitTreeEntry.gitOrder(b, aIsTree: isTree[b] == true, a, bIsTree: isTree[a] == true) == 1, "\(b) after \(a)")
            }
        }
        #expect(sorted(entries.shuffled()) == listed)
    }
}
