import Foundation
import RecSyncModel
import RecSyncSnapshots
import RecSyncTestSupport
import RecSyncTestTraits
import RecSyncWorkspace
import Testing

/// `Workspace.commitSnapshot` on its own (the engine's pull-and-commit is in RecSyncEngineTests).
@Suite(.ownThreads) struct SnapshotCommitTests {
    let dir = TempDirectory("snapshots")
    let ws: Workspace
    let environment = [
        "GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com", "GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.com",
    ]

    init() throws {
        ws = try Workspace.create(at: dir.file("ws"), config: WorkspaceConfig(user: "alice", remote: "memory"))
    }

    @Test func aSnapshotCommitsTheRecordsOnceAndNothingWhenNothingChanged() throws {
        try writeFile(ws.recordPath(Build.id("r", in: Build.zone("notes"))), #"{"a": 1}"#)
        let first = try ws.commitSnapshot(message: "one\n", time: 1_700_000_000_000, environment: environment)
        #expect(first?.count == 40)
        #expect(try ws.commitSnapshot(message: "two\n", time: 1_700_000_001_000, environment: environment) == nil)
        let files = try GitCLI.run(["ls-tree", "-r", "--name-only", "HEAD"], in: ws.root)
        #expect(files.contains("private/notes/r.json"))
        #expect(!files.contains(".recsync/index/"), "machine-specific state stays out")
        #expect(try GitCLI.run(["log", "-1", "--format=%an <%ae>"], in: ws.root).contains("Ada <ada@example.com>"))
    }

    @Test func aGitFileInsteadOfADirectoryIsRefused() throws {
        try writeFile("\(ws.root)/.git", "gitdir: /somewhere/else\n")
        #expect {
            _ = try ws.commitSnapshot(message: "x\n", time: 0, environment: environment)
        } throws: { error in
            guard case .fileSystem(let path, _, _) = (error as? RecSyncError)?.reason else { return false }
            return path.hasSuffix("/.git")
        }
    }
}
