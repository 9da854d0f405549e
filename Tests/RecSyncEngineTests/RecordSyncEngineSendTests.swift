import Foundation
import RecSyncEngine
import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import RecSyncTestTraits
import Synchronization
import Testing

/// What an app's engine sends: a refused record does not hold up the rest, a reset zone can
/// be uploaded again, and many pending changes keep each record's last one.
@Suite(.dedicatedThreads) struct RecordSyncEngineSendTests: AppsOnOneStore {
    let storage = MemoryStorage()
    let zone = Build.zone("notes")
    let other = Build.zone("other")

    /// A record over the store's size limit (a user pasted a huge text) made every send throw
    /// before anything went: no other change, in any zone, was ever sent again.
    @Test func anOversizedRecordDoesNotHoldUpEveryOtherSend() async throws {
        try await seed([:])
        let app = KillableApp()
        let e = try engine(app, device: "app")
        let huge = try id("huge"), small = try id("small", in: other)
        try app.edit(huge, ["text": .string(String(repeating: "x", count: Record.maxFieldDataBytes + 10))])
        try app.edit(small, ["text": .string("fine")])
        try await e.add(pendingRecordZoneChanges: [.saveRecord(huge), .saveRecord(small)])
        #expect(await refusedBySend(e)?.records.mapValues(\.code) == [huge: .limitExceeded])
        #expect(try await storeContents()[small] != nil)
        #expect(app.data.withLock { $0.failedSaves[huge]?.code } == .limitExceeded)
        #expect(app.savedState.pendingRecordZoneChanges.isEmpty, "the refused save is reported and dropped, as other refusals are")

        // With atomicByZone its zone lands nothing of the batch; the rest goes next time.
        var atomic = RecordSyncEngine.Options.manual
        atomic.atomicByZone = true
        let ea = try engine(app, device: "app", options: atomic)
        let buddy = try id("buddy")
        try app.edit(buddy, ["text": .string("fine")])
        try await ea.add(pendingRecordZoneChanges: [.saveRecord(huge), .saveRecord(buddy)])
        #expect(await refusedBySend(ea)?.records.mapValues(\.code) == [huge: .limitExceeded, buddy: .batchRequestFailed])
        #expect(try await storeContents()[buddy] == nil)
        #expect(app.savedState.pendingRecordZoneChanges == [.saveRecord(buddy)])
        try await ea.sendChanges()
        #expect(try await storeContents()[buddy] != nil)
    }

    /// After an encrypted-data reset the app keeps its copy and uploads it again (the engine's
    /// documentation says so): a `.saveZone` must be able to create the reset zone again.
    @Test func aZoneResetForEncryptedDataCanBeUploadedAgain() async throws {
        try await seed([zone.zoneName: ["a", "b"]])
        let app = KillableApp()
        let e = try engine(app, device: "app")
        try await e.fetchChanges()
        _ = try await store(device: "admin").modifyRecordZones([.markEncryptedDataReset(zone)])
        try await e.fetchChanges()
        #expect(app.records.count == 2, "a reset keeps the local copy")
        // The app uploads everything again, as new records.
        let ids = Array(app.records.keys)
        app.data.withLock { d in for k in ids { d.records[k]?.changeTag = nil } }
        try await e.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: zone))])
        try await e.add(pendingRecordZoneChanges: ids.map { .saveRecord($0) })
        try await e.sendChanges()
        #expect(try await storeContents().count == 2)
        #expect(app.savedState.pendingRecordZoneChanges.isEmpty)
        // A zone deleted or purged on purpose still does not come back that way.
        _ = try await store(device: "admin").modifyRecordZones([.delete(zone)])
        try await e.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: zone))])
        #expect(await refusedBySend(e)?.zones.mapValues(\.code) == [zone: .zoneNotFound])
        #expect(try await store(device: "x").fetchAllRecordZones(scope: .private).map(\.zoneID) == [other])
    }

    /// Thousands of changes at once (an import), in batches that replace each other's records:
    /// each record keeps its last change, at the place of that last change. How long adding
    /// takes is not asserted here (a timed test fails on a loaded machine); adding is one pass
    /// over the batch and one over the list, and 25,000 changes take a fraction of a second.
    @Test func manyPendingChangesKeepEachRecordsLastChangeInOrder() async throws {
        try await seed([:])
        let app = KillableApp()
        let e = try engine(app, device: "a")
        let ids = try (0..<25_000).map { try id("r\($0)") }
        try await e.add(pendingRecordZoneChanges: ids[..<5_000].map { .saveRecord($0) })
        // The second batch deletes every other record of the first, and saves the rest anew.
        let second: [RecordSyncEngine.PendingRecordZoneChange] =
            ids[..<5_000].enumerated().filter { $0.offset.isMultiple(of: 2) }.map { .deleteRecord($0.element) }
            + ids[5_000...].map { .saveRecord($0) }
        try await e.add(pendingRecordZoneChanges: second)
        // A batch naming a record twice keeps its last change only.
        try await e.add(pendingRecordZoneChanges: [.saveRecord(ids[1]), .deleteRecord(ids[1])])
        let expected: [RecordSyncEngine.PendingRecordZoneChange] =
            ids[..<5_000].enumerated().filter { !$0.offset.isMultiple(of: 2) && $0.offset != 1 }.map { .saveRecord($0.element) }
            + second + [.deleteRecord(ids[1])]
        #expect(app.savedState.pendingRecordZoneChanges == expected)
        #expect(Set(app.savedState.pendingRecordZoneChanges.map(\.recordID)).count == 25_000, "one change per record")
    }
}
