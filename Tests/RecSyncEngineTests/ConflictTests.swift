import Foundation
import RecSyncEngine
import RecSyncEngineFixtures
import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import RecSyncWorkspace
import Testing

/// Edits on both sides: never overwritten, always reported, settled by resolve.
@Suite struct ConflictTests {
    /// Laptop and phone both hold record `r` = {"title": "t", "body": "b"}.
    func twoDevices(_ f: EngineFixture) async throws -> (SyncEngine, SyncEngine) {
        let laptop = try f.device("laptop")
        let phone = try f.device("phone")
        try laptop.write("notes", "r", #"{"title": "t", "body": "b"}"#)
        _ = try await laptop.push()
        _ = try await phone.pull()
        return (laptop, phone)
    }

    @Test func incomingChangeToAnEditedRecordIsAConflictNotAnOverwrite() async throws {
        let f = EngineFixture()
        let (laptop, phone) = try await twoDevices(f)
        try laptop.write("notes", "r", #"{"title": "laptop", "body": "b"}"#)
        _ = try await laptop.push()
        try phone.write("notes", "r", #"{"title": "t", "body": "phone"}"#)

        let pulled = try await phone.pull()
        #expect(pulled.conflicts == [Build.id("r", in: zone("notes"))])
        #expect(try phone.fields("notes", "r") == ["title": .string("t"), "body": .string("phone")], "the local edit is untouched")
        let conflicts = try phone.workspace.allConflicts()
        #expect(conflicts.count == 1)
        #expect(conflicts[0].client == ["title": .string("t"), "body": .string("phone")])
        #expect(conflicts[0].server == ["title": .string("laptop"), "body": .string("b")])
        #expect(conflicts[0].ancestor == ["title": .string("t"), "body": .string("b")])
        #expect(try await phone.status().conflicts.count == 1)

        // A push leaves the conflicted record alone until it is resolved.
        let blocked = try await phone.push()
        #expect(blocked.saved.isEmpty && blocked.notSent.count == 1)
        #expect(blocked.remedies.count == 1, "settling it is what to do: \(blocked.remedies)")
        if case .resolve(let path)? = blocked.remedies.first {
            #expect(blocked.notSent[0].hasPrefix(path))
        } else {
            Issue.record("\(blocked.remedies)")
        }

        let outcome = try phone.resolve(strategy: .merge)
        #expect(outcome.map(\.failure) == [nil])
        #expect(try phone.fields("notes", "r") == ["title": .string("laptop"), "body": .string("phone")])
        let pushed = try await phone.push()
        #expect(pushed.saved.count == 1 && pushed.conflicts.isEmpty)
        _ = try await laptop.pull()
        #expect(try laptop.fields("notes", "r") == ["title": .string("laptop"), "body": .string("phone")])
        #expect(try converged(laptop, phone))
    }

    @Test func pushOfAStaleEditIsAConflictResolvedOurs() async throws {
        let f = EngineFixture()
        let (laptop, phone) = try await twoDevices(f)
        try laptop.write("notes", "r", #"{"title": "laptop", "body": "b"}"#)
        _ = try await laptop.push()
        try phone.write("notes", "r", #"{"title": "phone", "body": "b"}"#)
        let pushed = try await phone.push()
        #expect(pushed.conflicts == [Build.id("r", in: zone("notes"))])
        #expect(try phone.resolve(strategy: .merge).first?.clashes == ["title"], "both changed the title: no automatic merge")
        #expect(try phone.workspace.allConflicts().count == 1, "a clash keeps the conflict")

        #expect(try phone.resolve(strategy: .ours).map(\.failure) == [nil])
        #expect(try phone.fields("notes", "r")?["title"] == .string("phone"))
        let again = try await phone.push()
        #expect(again.saved.count == 1 && again.conflicts.isEmpty, "ours now carries the store's change tag")
        _ = try await laptop.pull()
        #expect(try laptop.fields("notes", "r")?["title"] == .string("phone"))
    }

    @Test func resolveTheirsTakesTheStoreVersion() async throws {
        let f = EngineFixture()
        let (laptop, phone) = try await twoDevices(f)
        try laptop.write("notes", "r", #"{"title": "laptop"}"#)
        _ = try await laptop.push()
        try phone.write("notes", "r", #"{"title": "phone"}"#)
        _ = try await phone.pull()
        #expect(try phone.resolve(strategy: .theirs).map(\.failure) == [nil])
        #expect(try phone.resolve(strategy: .theirs).isEmpty)
        #expect(try phone.fields("notes", "r") == ["title": .string("laptop")])
        #expect(try await phone.status().isClean)
        #expect(try converged(laptop, phone))
    }

    @Test func sameEditOnBothSidesIsNotAConflict() async throws {
        let f = EngineFixture()
        let (laptop, phone) = try await twoDevices(f)
        try laptop.write("notes", "r", #"{"title": "same", "body": "b"}"#)
        _ = try await laptop.push()
        try phone.write("notes", "r", #"{"body": "b", "title": "same"}"#)
        let pulled = try await phone.pull()
        #expect(pulled.conflicts.isEmpty)
        #expect(try await phone.status().isClean)
    }

    @Test func deletedOnOneSideEditedOnTheOther() async throws {
        let f = EngineFixture()
        let (laptop, phone) = try await twoDevices(f)
        try FileManager.default.removeItem(atPath: laptop.path("notes", "r"))
        _ = try await laptop.push()
        try phone.write("notes", "r", #"{"title": "kept"}"#)
        let pulled = try await phone.pull()
        #expect(pulled.conflicts.count == 1)
        let conflict = try #require(try phone.workspace.allConflicts().first)
        #expect(conflict.server == nil && conflict.client == ["title": .string("kept")])
        // Ours: the record lives on as a new record.
        _ = try phone.resolve(strategy: .ours)
        let pushed = try await phone.push()
        #expect(pushed.saved.count == 1)
        _ = try await laptop.pull()
        #expect(try laptop.fields("notes", "r") == ["title": .string("kept")])
    }

    @Test func editedLocallyWhileDeletedOnTheStoreTheirsDeletes() async throws {
        let f = EngineFixture()
        let (laptop, phone) = try await twoDevices(f)
        try FileManager.default.removeItem(atPath: laptop.path("notes", "r"))
        _ = try await laptop.push()
        try phone.write("notes", "r", #"{"title": "doomed"}"#)
        _ = try await phone.pull()
        _ = try phone.resolve(strategy: .theirs)
        #expect(try phone.fields("notes", "r") == nil)
        #expect(try await phone.status().isClean)
    }
}

/// Resolve's details (the file as it is now, no common version) and record names near the
/// file-name limit.
@Suite struct ResolveDetailTests {
    @Test func mergeUsesTheFileAsItIsNow() async throws {
        let f = EngineFixture()
        let (_, phone) = try await f.twoDevicesWithAConflict()
        // The user keeps working on the file after the conflict was reported.
        try phone.write("notes", "r", #"{"title": "t", "body": "phone", "tags": ["later"]}"#)
        #expect(try phone.resolve(strategy: .merge).map(\.resolved) == [true])
        #expect(try phone.fields("notes", "r") == ["title": .string("laptop"), "body": .string("phone"), "tags": .list([.string("later")])])
    }

    @Test func withoutACommonVersionDifferingKeysAreNotGuessed() throws {
        let merged = try SyncEngine.merge(client: ["a": .int64(1), "b": .int64(2)], server: ["a": .int64(1)], ancestor: nil).get()
        // A key on one side only must not be silently kept or dropped without an ancestor.
        #expect(merged.clashes == ["b"])
        #expect(merged.fields == ["a": .int64(1), "b": .int64(2)])
        let same = try SyncEngine.merge(client: ["a": .int64(1)], server: ["a": .int64(1)], ancestor: nil).get()
        #expect(same == FieldMerge(fields: ["a": .int64(1)], clashes: []))
    }

    @Test func recordNamesNearTheFileNameLimitSync() async throws {
        let f = EngineFixture()
        let alice = try f.store("alice")
        try await alice.createZones([zone("notes")])
        let long = String(repeating: "n", count: 245)  // file name: 250 bytes, the longest kept unhashed
        try await alice.save([Build.record(long, in: zone("notes"), ["v": .int64(1)])])
        let laptop = try f.device("laptop")
        let pulled = try await laptop.pull()
        #expect(pulled.recordsWritten == 1)
        #expect(try laptop.fields("notes", long) == ["v": .int64(1)])
        try laptop.write("notes", long, #"{"v": 2}"#)
        #expect(try await laptop.push().saved.count == 1)
    }
}

/// A user editing files while a pull applies a page.
@Suite struct EditDuringPullTests {
    @Test func anEditMadeWhileAPageIsAppliedBecomesAConflict() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        var phone = try f.device("phone")
        try laptop.write("notes", "r", #"{"v": 1}"#)
        try laptop.write("notes", "gone", #"{"v": 1}"#)
        _ = try await laptop.push()
        _ = try await phone.pull()
        try laptop.write("notes", "r", #"{"v": 2}"#)
        try FileManager.default.removeItem(atPath: laptop.path("notes", "gone"))
        _ = try await laptop.push()

        let path = phone.path("notes", "r")
        let gonePath = phone.path("notes", "gone")
        phone.checkpoint = { (point: SyncEngine.Checkpoint) throws(RecSyncError) in
            if case .beforeBatchWrite = point {
                // The page was decided with both files clean; the user saves them now.
                try? #"{"v": "typed meanwhile"}"#.write(toFile: path, atomically: true, encoding: .utf8)
                try? #"{"v": "kept"}"#.write(toFile: gonePath, atomically: true, encoding: .utf8)
            }
        }
        let pulled = try await phone.pull()
        #expect(Set(pulled.conflicts.map(\.recordName)) == ["r", "gone"])
        #expect(try phone.fields("notes", "r") == ["v": .string("typed meanwhile")], "the edit was not overwritten")
        #expect(try phone.fields("notes", "gone") == ["v": .string("kept")], "nor deleted")
        phone.checkpoint = nil
        let conflicts = try phone.workspace.allConflicts().sorted { $0.recordID < $1.recordID }
        #expect(conflicts.map(\.server) == [nil, ["v": .int64(2)]])
        _ = try phone.resolve(strategy: .theirs)
        #expect(try phone.fields("notes", "r") == ["v": .int64(2)])
        #expect(try converged(laptop, phone))
    }
}

/// The field-by-field merge of `resolve --merge` (`SyncEngine.merge`).
@Suite struct FieldMergeTests {
    let ancestor: [String: FieldValue] = ["title": .string("t"), "qty": .int64(1), "note": .string("n"), "tag": .string("x")]

    @Test func eachSideTakesItsOwnChangesAndClashesKeepOurs() throws {
        let ours: [String: FieldValue] = ["title": .string("ours"), "qty": .int64(2), "note": .string("n"), "tag": .string("same")]
        let theirs: [String: FieldValue] = ["title": .string("theirs"), "qty": .int64(1), "note": .string("theirs"), "tag": .string("same")]
        let merged = try SyncEngine.merge(client: ours, server: theirs, ancestor: ancestor).get()
        #expect(merged.clashes == ["title"])
        #expect(merged.fields == ["title": .string("ours"), "qty": .int64(2), "note": .string("theirs"), "tag": .string("same")])
    }

    @Test func removalsAndAdditionsOnOneSideMerge() throws {
        var ours = ancestor
        ours["extra"] = .int64(9)  // added here
        var theirs = ancestor
        theirs["note"] = nil  // removed there
        let merged = try SyncEngine.merge(client: ours, server: theirs, ancestor: ancestor).get()
        #expect(merged.clashes.isEmpty)
        #expect(merged.fields == ["title": .string("t"), "qty": .int64(1), "tag": .string("x"), "extra": .int64(9)])
    }

    @Test func aRemovalAgainstAChangeClashes() throws {
        var ours = ancestor
        ours["qty"] = nil
        var theirs = ancestor
        theirs["qty"] = .int64(5)
        let merged = try SyncEngine.merge(client: ours, server: theirs, ancestor: ancestor).get()
        #expect(merged.clashes == ["qty"])
        #expect(merged.fields["qty"] == nil)  // ours: removed
    }

    @Test func aDeletedRecordCannotBeMerged() {
        guard case .failure(let why) = SyncEngine.merge(client: nil, server: ancestor, ancestor: ancestor) else {
            Issue.record("a deleted side has no fields to merge")
            return
        }
        #expect(why.message.contains("--ours or --theirs"))
    }

    @Test func mergingAgainAfterTheClashIsEditedSettles() throws {
        let ours: [String: FieldValue] = ["title": .string("ours"), "qty": .int64(2), "note": .string("n"), "tag": .string("x")]
        let theirs: [String: FieldValue] = ["title": .string("theirs"), "qty": .int64(1), "note": .string("theirs"), "tag": .string("x")]
        var file = try SyncEngine.merge(client: ours, server: theirs, ancestor: ancestor).get().fields
        file["title"] = .string("theirs")  // the user takes their title
        let again = try SyncEngine.merge(client: file, server: theirs, ancestor: ancestor).get()
        #expect(again.clashes.isEmpty)
        #expect(again.fields == ["title": .string("theirs"), "qty": .int64(2), "note": .string("theirs"), "tag": .string("x")])
    }
}

/// Conflicts whose two sides are the same settle themselves.
@Suite struct IdenticalSidesTests {
    @Test func aConflictWhoseSidesBecameTheSameDisappears() async throws {
        let f = EngineFixture()
        let (laptop, phone) = try await f.twoDevicesWithAConflict()
        #expect(try phone.workspace.allConflicts().count == 1)
        // The laptop makes the same change the phone made: the next pull has nothing to decide.
        try laptop.write("notes", "r", #"{"title": "t", "body": "phone"}"#)
        _ = try await laptop.push()
        let pulled = try await phone.pull()
        #expect(pulled.conflicts.isEmpty)
        #expect(try phone.workspace.allConflicts().isEmpty)
        #expect(try await phone.status().isClean)
    }

    @Test func editingTheFileToTheStoreVersionSettlesAtStatus() async throws {
        let f = EngineFixture()
        let (_, phone) = try await f.twoDevicesWithAConflict()
        try phone.write("notes", "r", #"{"title": "laptop", "body": "b"}"#)
        let status = try await phone.status()
        #expect(status.conflicts.isEmpty && status.isClean)
        #expect(try phone.workspace.allConflicts().isEmpty)
    }
}
