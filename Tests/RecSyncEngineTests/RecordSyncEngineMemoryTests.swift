import RecSyncModel
import RecSyncStore
import Testing

@testable import RecSyncEngine

/// The engine's bookkeeping of pending changes stays as large as the pending list: it used
/// to keep an entry for every change ever added.
@Suite struct RecordSyncEngineMemoryTests {
    @Test func sentAndRemovedChangesLeaveNoBookkeepingBehind() async throws {
        let storage = MemoryStorage()
        let zone = try ZoneID(zoneName: "notes", ownerName: "alice")
        let app = KillableApp()
        let engine = try RecordSyncEngine(
            store: MemoryStore(storage: storage, actor: StoreActor(userRecordName: "alice", deviceID: "a")), state: .init(), delegate: app,
            options: .manual)
        try await engine.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: zone))])
        var ids: [RecordID] = []
        for round in 0..<3 {
            ids = try (0..<300).map { try RecordID(recordName: "r\($0)", zoneID: zone) }
            for id in ids { try app.edit(id, ["round": .int64(Int64(round))]) }
            try await engine.add(pendingRecordZoneChanges: ids.map { .saveRecord($0) })
            // A save replaced by a delete, and a change removed: neither may linger.
            try await engine.add(pendingRecordZoneChanges: [.deleteRecord(ids[0])])
            try await engine.remove(pendingRecordZoneChanges: [.saveRecord(ids[1])])
            #expect(await engine.trackedGenerations == 299)
            try await engine.sendChanges()
            #expect(await engine.state.pendingRecordZoneChanges.isEmpty)
            #expect(await engine.trackedGenerations == 0)
        }
    }
}
