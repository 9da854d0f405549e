import Foundation
import RecSyncEngine
import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import RecSyncTestTraits
import Synchronization
import Testing

/// One store and the handles a kill test needs.
struct KillWorld {
    let storage = MemoryStorage()
    let notes: ZoneID, other: ZoneID, third: ZoneID

    init() throws {
        notes = try ZoneID(zoneName: "notes", ownerName: "alice")
        other = try ZoneID(zoneName: "other", ownerName: "alice")
        third = try ZoneID(zoneName: "third", ownerName: "alice")
    }

    func store(_ device: String) throws -> MemoryStore {
        MemoryStore(storage: storage, actor: try StoreActor(userRecordName: "alice", deviceID: device))
    }

    func engine(_ app: KillableApp, _ device: String, pageSize: Int = 2, batchSize: Int = 2) throws -> RecordSyncEngine {
        var options = RecordSyncEngine.Options.manual
        options.fetchPageSize = pageSize
        options.sendBatchSize = batchSize
        return try RecordSyncEngine(store: store(device), state: app.savedState, delegate: app, options: options)
    }

    func write(saving: [(RecordID, String)] = [], deleting: [RecordID] = []) async throws {
        let s = try store("writer")
        let current = try await s.fetchRecords(saving.map(\.0))
        var records: [Record] = []
        for ((id, value), item) in zip(saving, current) {
            var r: Record
            switch item.result {
            case .success(let stored): r = stored
            case .failure(let error) where error.kind == .unknownItem: r = try Record(recordID: id, recordType: "Note")
            case .failure(let error): throw error
            }
            r.fields = ["v": .string(value)]
            records.append(r)
        }
        let result = try await s.modifyRecords(
            saving: records, deleting: deleting.map { RecordDeletion(recordID: $0, changeTag: nil) }, savePolicy: .ifServerRecordUnchanged,
            atomically: false)
        for item in result.saveResults { _ = try item.result.get() }
    }

    func contents() async throws -> [RecordID: [String: FieldValue]] {
        try await store("observer").readableContents()
    }

    func id(_ name: String, _ zone: ZoneID) throws -> RecordID { try RecordID(recordName: name, zoneID: zone) }
}

enum FetchPhase: String, CaseIterable, Sendable {
    /// The first fetch: whole zones.
    case first
    /// A fetch of changes: edits, deletions, a zone gone, a zone new, an unreadable record.
    case changes
    /// The same changes, then the store's history rewritten: every token expired.
    case rewritten
}

/// An app killed at any event of a fetch or a send, before or after storing it: restarted
/// from what it stored, it matches the store, and lands each change once.
@Suite(.dedicatedThreads) struct RecordSyncEngineKillTests {
    @Test(arguments: FetchPhase.allCases, [false, true])
    func killedAtAnyFetchEventTheRestartedAppMatchesTheStore(phase: FetchPhase, storing: Bool) async throws {
        var k = 0
        while true {
            let w = try KillWorld()
            _ = try await w.store("admin").modifyRecordZones([.save(RecordZone(zoneID: w.notes)), .save(RecordZone(zoneID: w.other))])
            try await w.write(
                saving: (0..<6).map { (try w.id("n\($0)", w.notes), "n\($0)") } + (0..<3).map { (try w.id("o\($0)", w.other), "o\($0)") })
            let app = KillableApp()
            if phase != .first { try await w.engine(app, "b").fetchChanges() }
            if phase != .first {
                try await w.write(
                    saving: [(w.id("n1", w.notes), "n1'"), (w.id("n6", w.notes), "n6"), (w.id("n7", w.notes), "n7")], deleting: [w.id("n2", w.notes)])
                _ = try await w.store("admin").modifyRecordZones([.delete(w.other), .save(RecordZone(zoneID: w.third))])
                try await w.write(saving: [(w.id("t0", w.third), "t0")])
                w.storage.commitRawRecord(try w.id("bad", w.notes), bytes: Array("garbage".utf8))
                if phase == .rewritten { w.storage.rewriteHistory() }
            }
            app.kill(after: k, storing: storing)
            let e = try w.engine(app, "b")
            do { try await e.fetchChanges() } catch {}
            guard app.wasKilled else { break }
            // The process restarts from what the app stored.
            app.kill(after: Int.max, storing: false)
            try await w.engine(app, "b").fetchChanges()
            let have = app.records.mapValues(\.fields)
            var want = try await w.contents()
            want[try w.id("bad", w.notes)] = nil
            #expect(
                have == want,
                """
                killed at event \(k) (\(phase), storing: \(storing)): extra\
                 \(Set(have.keys).subtracting(want.keys)), missing \(Set(want.keys).subtracting(have.keys))
                """
            )
            if phase != .first { #expect(app.savedState.retryRecords == [try w.id("bad", w.notes)], "killed at event \(k)") }
            // Nothing more arrives: the state covers everything.
            app.data.withLock { $0.events = [] }
            try await w.engine(app, "b").fetchChanges()
            #expect(!app.events.contains { $0.hasPrefix("fetchingWholeZone") }, "killed at event \(k): \(app.events)")
            k += 1
        }
        #expect(k > 5)
    }

    @Test(arguments: [false, true])
    func killedAtAnySendEventTheRestartedAppLandsEachChangeOnce(storing: Bool) async throws {
        var k = 0
        while true {
            let w = try KillWorld()
            _ = try await w.store("admin").modifyRecordZones([.save(RecordZone(zoneID: w.notes))])
            try await w.write(saving: (0..<5).map { (try w.id("n\($0)", w.notes), "n\($0)") })
            let app = KillableApp()
            try await w.engine(app, "a").fetchChanges()
            // Edits, a delete, a new record, a new zone with a record.
            let (n0, n1, n2, n5, o0) = (
                try w.id("n0", w.notes), try w.id("n1", w.notes), try w.id("n2", w.notes), try w.id("n5", w.notes), try w.id("o0", w.other)
            )
            try app.edit(n0, ["v": .string("n0'")])
            try app.edit(n1, ["v": .string("n1'")])
            app.forget(n2)
            try app.edit(n5, ["v": .string("n5")])
            try app.edit(o0, ["v": .string("o0")])
            let e = try w.engine(app, "a")
            try await e.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: w.other))])
            try await e.add(pendingRecordZoneChanges: [.saveRecord(n0), .saveRecord(n1), .deleteRecord(n2), .saveRecord(n5), .saveRecord(o0)])
            app.kill(after: k, storing: storing)
            do { try await e.sendChanges() } catch {}
            guard app.wasKilled else { break }
            app.kill(after: Int.max, storing: false)
            let restarted = try w.engine(app, "a")
            try await restarted.sendChanges()
            let want: [RecordID: [String: FieldValue]] = [
                n0: ["v": .string("n0'")], n1: ["v": .string("n1'")], try w.id("n3", w.notes): ["v": .string("n3")],
                try w.id("n4", w.notes): ["v": .string("n4")], n5: ["v": .string("n5")], o0: ["v": .string("o0")],
            ]
            #expect(try await w.contents() == want, "killed at event \(k), storing: \(storing)")
            #expect(app.data.withLock { $0.conflicts }.isEmpty, "killed at event \(k): its own landed saves are no conflict")
            #expect(app.savedState.pendingRecordZoneChanges.isEmpty && app.savedState.pendingDatabaseChanges.isEmpty, "killed at event \(k)")
            // The app's change tags are the store's: its next edit goes through.
            let stored = try await w.store("x").fetchRecords(Array(want.keys))
            for item in stored {
                #expect(try item.result.get().changeTag == app.records[item.recordID]?.changeTag, "killed at event \(k): \(item.recordID)")
            }
            k += 1
        }
        #expect(k > 5)
    }
}
