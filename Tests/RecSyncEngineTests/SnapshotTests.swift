import Foundation
import RecSyncEngine
import RecSyncEngineFixtures
import RecSyncModel
import RecSyncStore
import RecSyncSubscriptions
import RecSyncTestSupport
import RecSyncTestTraits
import RecSyncWorkspace
import Testing

/// A workspace kept in git: one snapshot commit per pull, and old snapshots pull forward.
@Suite(.ownThreads) struct SnapshotTests {
    /// A workspace made before subscriptions kept cursors and locks has an older
    /// `.recsync/.gitignore`: its first snapshot adds what is missing, keeping the user's lines.
    @Test func aSnapshotKeepsNewerMachineStateOutOfAnOlderWorkspace() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        try laptop.write("notes", "a", "{}")
        _ = try await laptop.push()
        try await laptop.subscribe(Subscription(id: "db", kind: .database(.private)))
        let ignore = "\(laptop.workspace.stateDir)/.gitignore"
        try writeFile(ignore, "# machine-specific state: not part of a snapshot\nindex/\nlock\nmirror/\nwriting*\ndevice\npending-push\nmine\n")
        _ = try laptop.workspace.deviceID()
        let watching = try laptop.deliveryLock(purpose: "watch")
        defer { withExtendedLifetime(watching) {} }
        _ = try #require(try await laptop.commitSnapshot(after: try await laptop.pull()))
        let files = try GitCLI.run(["ls-files", ".recsync"], in: laptop.workspace.root)
        for kept in ["subscriptions/", "watch.lock", "device"] {
            #expect(!files.contains(".recsync/\(kept)"), "\(kept) went into the snapshot:\n\(files)")
        }
        #expect(try String(contentsOfFile: ignore, encoding: .utf8).contains("\nmine\n"))
    }

    @Test func pullsBecomeCommitsAndAnOldSnapshotPullsForward() async throws {
        let f = EngineFixture()
        let alice = try f.store("alice")
        try await alice.createZones([zone("notes")])
        var saved = try await alice.save((0..<5).map { Build.record("r\($0)", in: zone("notes"), ["v": .int64(Int64($0))]) })
        let laptop = try f.device("laptop")

        let first = try await laptop.pull()
        let c1 = try #require(try await laptop.commitSnapshot(after: first))
        #expect(try await laptop.commitSnapshot(after: PullReport()) == nil, "nothing changed: no commit")

        saved[0].fields["v"] = .int64(100)
        _ = try await alice.save([saved[0]])
        _ = try await alice.delete([saved[1]])
        let second = try await laptop.pull()
        let c2 = try #require(try await laptop.commitSnapshot(after: second))
        #expect(c1 != c2)

        let root = laptop.workspace.root
        let log = try GitCLI.run(["log", "--format=%s"], in: root).split(separator: "\n").map(String.init)
        #expect(log == ["recsync pull: 1 written, 1 deleted in 1 zone", "recsync pull: 5 written, 0 deleted in 1 zone"])
        let files = try GitCLI.run(["ls-files"], in: root)
        #expect(files.contains("private/notes/r0.json") && files.contains("private/notes/.system/r0.json"))
        #expect(files.contains(".recsync/tokens/private.token") && files.contains(".recsync/config"))
        #expect(!files.contains(".recsync/index") && !files.contains(".recsync/lock"), "machine-specific state stays out")

        // Check out the first snapshot (as a person would with git) and pull again.
        try GitCLI.run(["checkout", "-q", c1.commit], in: root)
        #expect(try laptop.fields("notes", "r1") != nil && laptop.fields("notes", "r0") == ["v": .int64(0)])
        let forward = try await laptop.pull()
        #expect(forward.conflicts.isEmpty)
        #expect(try laptop.fields("notes", "r0") == ["v": .int64(100)])
        #expect(try laptop.fields("notes", "r1") == nil)
        #expect(try await laptop.status().isClean)
        let reference = try f.device("reference")
        _ = try await reference.pull()
        #expect(try converged(laptop, reference))
    }

    /// Local edits not pushed are in the workspace's files, so a snapshot holds them: its
    /// message says so, and names them.
    @Test func aSnapshotNamesTheLocalEditsNotPushedInIt() async throws {
        let f = EngineFixture()
        let alice = try f.store("alice")
        try await alice.createZones([zone("notes")])
        let saved = try await alice.save((0..<2).map { Build.record("r\($0)", in: zone("notes"), ["v": .int64(Int64($0))]) })
        let laptop = try f.device("laptop")
        let first = try await laptop.pull()
        try laptop.workspace.put(Build.id("r0", in: zone("notes")), fields: ["v": .int64(7)])
        try laptop.workspace.put(Build.id("new", in: zone("notes")), fields: [:])
        let snapshot = try #require(try await laptop.commitSnapshot(after: first))
        #expect(snapshot.unpushed.map(\.path).sorted() == ["private/notes/new.json", "private/notes/r0.json"])
        let message = try GitCLI.run(["log", "-1", "--format=%B"], in: laptop.workspace.root)
        #expect(message.hasPrefix("recsync pull: 2 written, 0 deleted in 1 zone, with 2 local edits not pushed\n"), "\(message)")
        #expect(
            message.contains(
                "local edits not pushed (in this snapshot, not in the store): new private/notes/new.json, modified private/notes/r0.json"))
        // Once pushed, the next snapshot says nothing of them.
        _ = try await laptop.push()
        _ = try await alice.save([Build.record("r1", in: zone("notes"), ["v": .int64(9)], tag: saved[1].changeTag)])
        let next = try #require(try await laptop.commitSnapshot(after: try await laptop.pull()))
        #expect(next.unpushed.isEmpty)
        #expect(try !GitCLI.run(["log", "-1", "--format=%B"], in: laptop.workspace.root).contains("not pushed"))
    }

    /// A `.git` that is a link (or a `gitdir:` file) to a repository elsewhere is refused:
    /// the snapshot would land in that repository, outside the workspace.
    @Test func aSnapshotNeverCommitsThroughALinkedGitDirectory() async throws {
        let f = EngineFixture()
        let alice = try f.store("alice")
        try await alice.createZones([zone("notes")])
        _ = try await alice.save([Build.record("r0", in: zone("notes"), ["v": .int64(0)])])
        let other = f.directory.file("other")
        try FileManager.default.createDirectory(atPath: other, withIntermediateDirectories: true)
        try GitCLI.run(["init", "-q"], in: other)
        let laptop = try f.device("laptop")
        let root = laptop.workspace.root
        let pulled = try await laptop.pull()
        for gitEntry in ["link", "file", "objects link"] {
            try? FileManager.default.removeItem(atPath: root + "/.git")
            switch gitEntry {
            case "link":
                try FileManager.default.createSymbolicLink(atPath: root + "/.git", withDestinationPath: other + "/.git")
            case "file":
                try writeFile(root + "/.git", "gitdir: \(other)/.git\n")
            default:
                // A real .git whose objects/ is a link: libgit2 would write objects through it.
                try GitCLI.run(["init", "-q"], in: root)
                try FileManager.default.removeItem(atPath: root + "/.git/objects")
                try FileManager.default.createSymbolicLink(atPath: root + "/.git/objects", withDestinationPath: other + "/.git/objects")
            }
            await #expect(throws: RecSyncError.self, "a .git \(gitEntry) is refused") { _ = try await laptop.commitSnapshot(after: pulled) }
            #expect((try? GitCLI.run(["rev-parse", "--verify", "-q", "HEAD"], in: other)) == nil, "nothing committed in the other repository")
            #expect(try GitCLI.run(["count-objects"], in: other).hasPrefix("0 objects"), "no object written through the link (\(gitEntry))")
        }
    }

    @Test func aSnapshotCommitsOnlyTheWorkspaceInItsOwnRepository() async throws {
        let f = EngineFixture()
        let alice = try f.store("alice")
        try await alice.createZones([zone("notes")])
        var saved = try await alice.save([Build.record("r0", in: zone("notes"), ["v": .int64(0)])])

        // A project in git with a file staged, and the workspace in a subdirectory of it.
        let project = f.directory.file("project")
        try FileManager.default.createDirectory(atPath: project, withIntermediateDirectories: true)
        try GitCLI.run(["init", "-q"], in: project)
        try writeFile(project + "/unrelated.txt", "not a record\n")
        try GitCLI.run(["add", "unrelated.txt"], in: project)
        let laptop = try f.device("project/ws")
        let root = laptop.workspace.root
        let identity = [
            "GIT_AUTHOR_NAME": "Ada Lovelace", "GIT_AUTHOR_EMAIL": "ada@example.org",
            "GIT_COMMITTER_NAME": "Snapshot Bot", "GIT_COMMITTER_EMAIL": "bot@example.org",
        ]

        let first = try await laptop.pull()
        _ = try #require(try await laptop.commitSnapshot(after: first, environment: identity))
        #expect(FileManager.default.fileExists(atPath: root + "/.git"), "the workspace got a repository of its own")
        #expect((try? GitCLI.run(["rev-parse", "--verify", "-q", "HEAD"], in: project)) == nil, "nothing committed in the enclosing repository")
        #expect(try GitCLI.run(["diff", "--cached", "--name-only"], in: project) == "unrelated.txt\n", "its staged file is still staged")
        let files = try GitCLI.run(["ls-tree", "-r", "--name-only", "HEAD"], in: root)
        #expect(files.contains("private/notes/r0.json") && !files.contains("unrelated.txt"), "\(files)")
        #expect(
            try GitCLI.run(["log", "-1", "--format=%an <%ae> / %cn <%ce>"], in: root)
                == "Ada Lovelace <ada@example.org> / Snapshot Bot <bot@example.org>\n")

        // Something staged in the workspace's own repository stays staged and out of the snapshot.
        try writeFile(root + "/notes.txt", "mine\n")
        try GitCLI.run(["add", "notes.txt"], in: root)
        saved[0].fields["v"] = .int64(1)
        _ = try await alice.save([saved[0]])
        let second = try await laptop.pull()
        _ = try #require(try await laptop.commitSnapshot(after: second, environment: identity))
        let after = try GitCLI.run(["ls-tree", "-r", "--name-only", "HEAD"], in: root)
        #expect(!after.contains("notes.txt"), "\(after)")
        #expect(try GitCLI.run(["diff", "--cached", "--name-only"], in: root) == "notes.txt\n")
        #expect(try GitCLI.run(["status", "--porcelain", "--", "private", "shared"], in: root) == "", "the snapshot's paths are clean")
        #expect(try GitCLI.run(["show", "HEAD:private/notes/r0.json"], in: root).contains("1"))
    }
}
