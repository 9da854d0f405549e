import Foundation
import RecSyncGit
import RecSyncTestSupport
import Testing

/// The `GitError` `body` throws; the test fails (and stops) if it throws none.
func gitError(sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) throws -> GitError {
    let thrown = #expect(throws: GitError.self, sourceLocation: sourceLocation) { try body() }
    return try #require(thrown, sourceLocation: sourceLocation)
}

/// The real git's output in `repo`, trimmed.
@discardableResult
func git(_ arguments: [String], in repo: String) throws -> String {
    try GitCLI.run(["-C", repo] + arguments, in: "/").trimmingCharacters(in: .whitespacesAndNewlines)
}

extension GitRepository {
    /// `count` commits, each on the one before, starting on `parent`; the i-th adds the file
    /// `tag/i`.
    func commitLine(_ count: Int, on parent: GitOID?, tag: String, author: GitSignature) throws -> [GitOID] {
        var result: [GitOID] = []
        var tree = try parent.map { try commit($0).tree }
        for i in 0..<count {
            let blob = try createBlob(Array("\(tag) \(i)\n".utf8))
            let next = try updateTree(base: tree, updates: [.upsertBlob(path: "\(tag)/\(i)", oid: blob)])
            tree = next
            let parents = (result.last ?? parent).map { [$0] } ?? []
            result.append(try createCommit(tree: next, parents: parents, author: author, message: "\(tag) \(i)\n"))
        }
        return result
    }
}
