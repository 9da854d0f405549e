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
