import Foundation
import RecSyncEngine
import RecSyncEngineFixtures
import RecSyncModel
import RecSyncStore
import RecSyncSystem
import RecSyncTestSupport
import RecSyncWorkspace
import Testing

/// Pull and push between workspaces through an in-memory store.
@Suite struct SyncTests {
    @Test func pushThenPullConvergesAndSecondSyncIsANoOp() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        let phone = try f.device("phone")
        try laptop.write("notes", "hello", #"{"title": "Hi", "tags": ["a", "b"], "due": {"$date": "2026-11-22T10:00:00.000Z"}}"#)
        try laptop.write("notes", "bye", #"{"n": 1}"#)

        let status = try await laptop.status()
        #expect(status.newZones == [zone("notes")])
        #expect(status.changes.map(\.kind) == [.new, .new])

        let pushed = try await laptop.push()
        #expect(pushed.zonesCreated == [zone("notes")])
        #expect(pushed.saved.count == 2 && pushed.conflicts.isEmpty)
        #expect(FileManager.default.fileExists(atPath: "\(laptop.workspace.root)/private/notes/.system/hello.json"))

        let pulled = try await phone.pull()
        #expect(pulled.recordsWritten == 2)
        #expect(try phone.fields("notes", "hello") == laptop.fields("notes", "hello"))

        // The laptop pulls its own changes back: nothing to write, nothing pending.
        _ = try await laptop.pull()
        #expect(phone.recordFiles.keys.sorted() == laptop.recordFiles.keys.sorted())
        #expect(try await laptop.status().isClean)
        #expect(try await phone.status().isClean)
        let again = try await phone.push()
        #expect(again.saved.isEmpty && again.commit == nil, "a pull followed by a push with no edit changes nothing")
    }

    @Test func reformattingAFileIsNotAChange() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        try laptop.write("notes", "r", #"{"b": 2, "a": 1.5}"#)
        _ = try await laptop.push()
        try laptop.write("notes", "r", "{\n\n  \"a\":1.5,\"b\":   2 }")
        #expect(try await laptop.status().isClean)
        // Opened again without the stat index (as after a fresh checkout): still clean.
        try FileIO.remove("\(laptop.workspace.stateDir)/index")
        #expect(try await f.reopen(laptop).status().isClean)
    }

    @Test func aNullFieldIsADeletionUntilPushedThenLeavesTheFile() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        let phone = try f.device("phone")
        try laptop.write("notes", "r", #"{"a": 1, "b": 2}"#)
        _ = try await laptop.push()

        // "b": null is CloudKit's nil: a deletion status shows until it is pushed.
        try laptop.write("notes", "r", #"{"a": 1, "b": null}"#)
        let status = try await laptop.status()
        #expect(status.changes.map(\.kind) == [.modified], "\(status)")
        try FileIO.remove("\(laptop.workspace.stateDir)/index")
        #expect(try await f.reopen(laptop).status().changes.map(\.kind) == [.modified], "without the index too")

        let pushed = try await laptop.push()
        #expect(pushed.saved.count == 1)
        _ = try await phone.pull()
        #expect(try phone.fields("notes", "r") == ["a": .int64(1)], "the store no longer has b")
        // The file now says what the store holds, canonically, and is clean.
        let bytes = try #require(FileManager.default.contents(atPath: laptop.path("notes", "r")))
        #expect(Array(bytes) == WorkspaceEncoding.encodeFields(["a": .int64(1)]), "\(String(decoding: bytes, as: UTF8.self))")
        #expect(try await laptop.status().isClean)
        #expect(try await f.reopen(laptop).status().isClean)
        #expect(try converged(laptop, phone))
    }

    @Test func editsAndDeletionsTravel() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        let phone = try f.device("phone")
        try laptop.write("notes", "a", #"{"v": 1}"#)
        try laptop.write("notes", "b", #"{"v": 1}"#)
        _ = try await laptop.push()
        _ = try await phone.pull()

        try phone.write("notes", "a", #"{"v": 2}"#)
        try FileManager.default.removeItem(atPath: phone.path("notes", "b"))
        let status = try await phone.status()
        #expect(Set(status.changes.map(\.kind)) == [.modified, .deleted])
        let pushed = try await phone.push()
        #expect(pushed.saved.count == 1 && pushed.deleted.count == 1)
        #expect(!FileManager.default.fileExists(atPath: "\(phone.workspace.root)/private/notes/.system/b.json"))

        let pulled = try await laptop.pull()
        #expect(pulled.recordsWritten == 1 && pulled.recordsDeleted == 1)
        #expect(try laptop.fields("notes", "a") == ["v": .int64(2)])
        #expect(!FileManager.default.fileExists(atPath: laptop.path("notes", "b")))
        #expect(!FileManager.default.fileExists(atPath: "\(laptop.workspace.root)/private/notes/.system/b.json"))
        #expect(try converged(laptop, phone))
    }

    @Test func badFileStopsThePushAndChangesNothing() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        try laptop.write("notes", "good", #"{"v": 1}"#)
        _ = try await laptop.push()
        try laptop.write("notes", "good", #"{"v": 2}"#)
        try laptop.write("notes", "broken", #"{"v": "#)
        try laptop.write("notes", "badkey", #"{"1x": 1}"#)
        try writeFile("\(laptop.workspace.root)/private/notes/_reserved.json", "{}")
        let headBefore = f.storage.history()
        let filesBefore = TreeSnapshot.files(laptop.workspace.root) { $0.hasPrefix(".recsync/index") || $0 == ".recsync/lock" }
        let error = await pushError(laptop)
        guard case .invalidFiles(let problems) = error?.reason else {
            Issue.record("a push with bad files must fail with invalidFiles, got \(String(describing: error))")
            return
        }
        #expect(problems.count == 3, "\(problems)")
        #expect(problems.contains { $0.description.hasPrefix("private/notes/broken.json:") && $0.description.contains("line 1") })
        #expect(problems.contains { $0.description.hasPrefix("private/notes/badkey.json:") })
        #expect(problems.contains { $0.description.hasPrefix("private/notes/_reserved.json:") })
        #expect(f.storage.history() == headBefore, "nothing was sent")
        let filesAfter = TreeSnapshot.files(laptop.workspace.root) { $0.hasPrefix(".recsync/index") || $0 == ".recsync/lock" }
        #expect(filesAfter == filesBefore, "nothing changed locally")
    }

    @Test func oddRecordNamesRoundTrip() async throws {
        let f = EngineFixture()
        let alice = try f.store("alice")
        try await alice.createZones([zone("notes")])
        let names = ["a/b", ".hidden", "100%", "with space", String(repeating: "x", count: 255)]
        try await alice.save(names.map { Build.record($0, in: zone("notes"), ["n": .string($0)]) })
        let laptop = try f.device("laptop")
        _ = try await laptop.pull()
        let files = FileIO.list("\(laptop.workspace.root)/private/notes").sorted()
        #expect(files.contains("a%2Fb.json") && files.contains("%2Ehidden.json") && files.contains("100%25.json"))
        #expect(files.contains { $0.hasPrefix("_") }, "a 255-character name is hashed")
        #expect(try await laptop.status().isClean)
        // Edit the hashed one and push: the sidecar supplies the real name.
        let hashed = try #require(files.first { $0.hasPrefix("_") })
        try writeFile("\(laptop.workspace.root)/private/notes/\(hashed)", #"{"n": "edited"}"#)
        let pushed = try await laptop.push()
        #expect(pushed.saved.map(\.recordName) == [String(repeating: "x", count: 255)])
    }

    @Test func putTypeNoteGivesANewRecordItsType() async throws {
        let f = EngineFixture()
        let alice = try f.store("alice")
        try await alice.createZones([zone("notes")], defaultRecordType: "Note")
        let laptop = try f.device("laptop")
        _ = try await laptop.pull()
        try laptop.write("notes", "plain", #"{"v": 1}"#)
        try laptop.write("notes", "typed", #"{"v": 1}"#)
        let sidecar = SystemFields(recordID: Build.id("typed", in: zone("notes")), recordType: "Task", changeTag: nil, created: nil, modified: nil)
        try writeFile(
            "\(laptop.workspace.root)/private/notes/.system/typed.json",
            String(decoding: WorkspaceEncoding.encodeSystemFields(sidecar), as: UTF8.self))
        _ = try await laptop.push()
        let stored = try await alice.fetchRecords([Build.id("plain", in: zone("notes")), Build.id("typed", in: zone("notes"))])
        #expect(try stored[0].result.get().recordType == "Note", "the zone's default type")
        #expect(try stored[1].result.get().recordType == "Task")
    }
}

/// Changes that net out of the zone feed.
@Suite struct NettedChangesTests {
    @Test func aRecordPushedHereAndDeletedElsewhereIsDeletedHere() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        let phone = try f.device("phone")
        try laptop.write("notes", "seed", #"{"v": 0}"#)
        _ = try await laptop.push()
        _ = try await laptop.pull()  // the laptop's tokens predate r1
        try laptop.write("notes", "r0", #"{"v": 0}"#)
        try laptop.write("notes", "r1", #"{"v": 1}"#)
        _ = try await laptop.push()
        _ = try await phone.pull()
        try FileManager.default.removeItem(atPath: phone.path("notes", "r1"))
        _ = try await phone.push()
        // Deleting r0 too leaves the zone exactly as the laptop's tokens saw it: not even the
        // database changes report it.
        try FileManager.default.removeItem(atPath: phone.path("notes", "r0"))
        _ = try await phone.push()
        let pulled = try await laptop.pull()
        #expect(pulled.recordsDeleted == 2)
        #expect(try laptop.fields("notes", "r1") == nil && laptop.fields("notes", "r0") == nil)
        #expect(try converged(laptop, phone))
    }
}

/// The stat index: a cache that status reads but does not rewrite when nothing changed.
@Suite struct IndexTests {
    @Test func aCleanStatusLeavesTheIndexAlone() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        for n in 0..<20 { try laptop.write("notes", "r\(n)", #"{"v": \#(n)}"#) }
        _ = try await laptop.push()
        _ = try await laptop.pull()
        #expect(try await laptop.status().isClean)
        // The index is a sorted base and a journal of small changes.
        let base = laptop.workspace.indexPath(zone("notes"))
        let before = [try FileIO.stamp(base), try FileIO.stamp(base + ".log")]
        #expect(before != [nil, nil])
        #expect(try await laptop.status().isClean)
        #expect(try [FileIO.stamp(base), FileIO.stamp(base + ".log")] == before, "nothing changed, nothing written")
        // An edit, then undoing it (same bytes, new mtime): read once, then trusted again.
        try laptop.write("notes", "r3", #"{"v": 99}"#)
        #expect(try await laptop.status().changes.count == 1)
        try laptop.write("notes", "r3", #"{"v": 3}"#)
        #expect(try await laptop.status().isClean)
        let after = [try FileIO.stamp(base), try FileIO.stamp(base + ".log")]
        #expect(after != before, "the re-read file's new stamp is recorded")
        #expect(try await laptop.status().isClean)
        #expect(try [FileIO.stamp(base), FileIO.stamp(base + ".log")] == after)
    }
}

/// Status must not hide a failure to save its stat index (it used to drop it with `try?`).
@Suite struct StatusIndexTests {
    @Test func anIndexThatCannotBeSavedIsReportedAndStatusIsStillRight() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        try laptop.write("notes", "a", #"{"n": 1}"#)
        _ = try await laptop.push()
        try laptop.write("notes", "b", #"{"n": 2}"#)
        // Directories where the index and its journal go: saving fails (for root too).
        let index = laptop.workspace.indexPath(zone("notes"))
        for path in [index, index + ".log"] {
            if FileManager.default.fileExists(atPath: path) { try FileManager.default.removeItem(atPath: path) }
            try FileManager.default.createDirectory(atPath: path + "/blocker", withIntermediateDirectories: true)
        }
        let status = try await laptop.status()
        #expect(status.changes.map(\.recordID.recordName) == ["b"])
        #expect(status.problems.contains { $0.description.contains("the stat index could not be saved") }, "\(status.problems)")
    }
}

extension StatusIndexTests {
    /// Status clears a killed pull's leftovers under the lock; when it cannot take the lock
    /// for a reason other than a running sync, it says so and still reports (it used to skip
    /// silently through try?; failing instead would break status on a read-only workspace).
    @Test func aLockThatCannotBeTakenIsReportedNotFatal() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        try laptop.write("notes", "a", #"{"n": 1}"#)
        try writeFile(laptop.workspace.tempRegistry, "")
        // A directory where the lock file goes: opening it fails, for root too.
        try FileManager.default.createDirectory(atPath: laptop.workspace.stateDir + "/lock/blocker", withIntermediateDirectories: true)
        let status = try await laptop.status()
        #expect(status.newZones == [zone("notes")])
        #expect(status.problems.contains { $0.description.contains("could not be cleared now") }, "\(status.problems)")
    }
}

/// `SyncEngine.clone`: a workspace made and pulled, or nothing left behind.
@Suite struct CloneTests {
    @Test func aCloneMakesAWorkspaceAndPullsEverything() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        try laptop.write("notes", "a", #"{"n": 1}"#)
        _ = try await laptop.push()
        let target = f.directory.file("cloned")
        let store = try f.store("alice", deviceID: "clone")
        let (engine, report) = try await SyncEngine.clone(
            into: target, config: WorkspaceConfig(user: "alice", remote: "memory"), openStore: { _ in store })
        #expect(report.recordsWritten == 1)
        #expect(try engine.workspace.recordFields(Build.id("a", in: zone("notes"))) == ["n": .int64(1)])
    }

    @Test func aFailedCloneLeavesNothingBehindAndAnEmptyDirectoryEmpty() async throws {
        let f = EngineFixture()
        for existed in [false, true] {
            let target = f.directory.file("clone-\(existed)")
            if existed { try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true) }
            do {
                _ = try await SyncEngine.clone(
                    into: target, config: WorkspaceConfig(user: "alice", remote: "memory"),
                    openStore: { _ throws(RecSyncError) in
                        throw .networkUnavailable("cannot reach the store")
                    })
                Issue.record("the clone went through")
            } catch {
                #expect(error == .networkUnavailable("cannot reach the store"))
            }
            #expect(FileManager.default.fileExists(atPath: target) == existed)
            if existed { #expect(try FileManager.default.contentsOfDirectory(atPath: target).isEmpty) }
        }
        // A directory that is not empty is refused before anything is made.
        let full = f.directory.file("full")
        try writeFile(full + "/keep.txt", "mine")
        await #expect(throws: RecSyncError.self) {
            _ = try await SyncEngine.clone(
                into: full, config: WorkspaceConfig(user: "alice", remote: "memory"),
                openStore: { _ throws(RecSyncError) -> any RemoteStore in
                    throw .internalError("the store is not opened for a directory that is not empty")
                })
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: full) == ["keep.txt"])
    }
}
