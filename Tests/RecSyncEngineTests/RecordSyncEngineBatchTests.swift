import RecSyncEngine
import RecSyncModel
import RecSyncStore
import Synchronization
import Testing

/// An app that composes its own batches (CKSyncEngine's `nextRecordZoneChangeBatch`), keeps
/// what the store sent back, and notes the contexts it was given.
final class ComposingApp: RecordSyncEngineDelegate, @unchecked Sendable {
    struct Data {
        var records: [RecordID: Record] = [:]
        var savedState = RecordSyncEngine.State()
        var events: [RecordSyncEngine.Event] = []
        var contexts: [RecordSyncEngine.SendChangesContext] = []
        /// Given: the batch to send whatever is pending (nil: compose from the pending changes).
        var fixedBatch: RecordSyncEngine.RecordZoneChangeBatch?
        var batchLimit = 2
    }

    let data = Mutex(Data())

    func handleEvent(_ event: RecordSyncEngine.Event, syncEngine: RecordSyncEngine) async throws {
        data.withLock { d in
            d.events.append(event)
            switch event {
            case .stateUpdate(let state): d.savedState = state
            case .sentRecordZoneChanges(let sent): for record in sent.savedRecords { d.records[record.recordID] = record }
            case .fetchedRecordZoneChanges(let page): for record in page.modifications { d.records[record.recordID] = record }
            default: break
            }
        }
    }

    func nextRecordZoneChangeBatch(_ context: RecordSyncEngine.SendChangesContext, syncEngine: RecordSyncEngine) async throws -> RecordSyncEngine
        .RecordZoneChangeBatch?
    {
        let (fixed, limit) = data.withLock { d in
            d.contexts.append(context)
            return (d.fixedBatch, d.batchLimit)
        }
        if let fixed { return fixed }
        let pending = await syncEngine.state.pendingRecordZoneChanges.filter(context.options.scope.contains)
        let batch = await RecordSyncEngine.RecordZoneChangeBatch(pendingChanges: pending, limit: limit) { id in
            data.withLock { $0.records[id] }
        }
        return batch.isEmpty ? nil : batch
    }

    func edit(_ id: RecordID, _ value: Int64) throws {
        try data.withLock { d in
            var record = try d.records[id] ?? Record(recordID: id, recordType: "Note")
            record.fields = ["v": .int64(value)]
            d.records[id] = record
        }
    }

    var eventNames: [String] { data.withLock { $0.events.map(\.name) } }
    var savedState: RecordSyncEngine.State { data.withLock { $0.savedState } }
}

/// A delegate that provides neither its batches nor the records of the engine's.
final class SilentApp: RecordSyncEngineDelegate {
    func handleEvent(_ event: RecordSyncEngine.Event, syncEngine: RecordSyncEngine) async throws {}
}

/// `nextRecordZoneChangeBatch`: batches an app composes, and the engine's own.
@Suite struct RecordSyncEngineBatchTests {
    let storage = MemoryStorage()
    let notes: ZoneID

    init() throws {
        notes = try ZoneID(zoneName: "notes", ownerName: "alice")
    }

    func store(_ device: String) throws -> MemoryStore {
        MemoryStore(storage: storage, actor: try StoreActor(userRecordName: "alice", deviceID: device))
    }

    func id(_ name: String) throws -> RecordID { try RecordID(recordName: name, zoneID: notes) }

    /// The records the store holds, as another device fetches them.
    func stored() async throws -> [RecordID: Record] {
        let reader = KillableApp()
        try await RecordSyncEngine(store: try store("reader"), state: RecordSyncEngine.State(), delegate: reader, options: .manual).fetchChanges()
        return reader.records
    }

    @Test func anAppsOwnBatchesAreSentInTurnAndSettleWhatTheySent() async throws {
        let app = ComposingApp()
        let engine = try RecordSyncEngine(store: try store("a"), state: RecordSyncEngine.State(), delegate: app, options: .manual)
        try await engine.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: notes))])
        let ids = try (1...5).map { try id("n\($0)") }
        for (n, id) in ids.enumerated() { try app.edit(id, Int64(n)) }
        try await engine.add(pendingRecordZoneChanges: ids.map { .saveRecord($0) })

        try await engine.sendChanges()
        #expect(app.eventNames.filter { $0 == "sentRecordZoneChanges" }.count == 3, "5 changes in batches of 2")
        #expect(app.savedState.pendingRecordZoneChanges.isEmpty)
        #expect(app.data.withLock { $0.contexts.count } == 4, "asked until it had nothing more")
        let onStore = try await stored()
        #expect(Set(onStore.keys) == Set(ids))
        let kept = app.data.withLock { $0.records }
        #expect(ids.allSatisfy { kept[$0]?.changeTag != nil }, "the app kept the new change tags")
    }

    @Test func aRecordTheAppNoLongerHasLosesItsPendingSaveAndADeleteGoesAsComposed() async throws {
        let app = ComposingApp()
        let engine = try RecordSyncEngine(store: try store("a"), state: RecordSyncEngine.State(), delegate: app, options: .manual)
        try await engine.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: notes))])
        let (kept, gone) = (try id("kept"), try id("gone"))
        try app.edit(kept, 1)
        try await engine.add(pendingRecordZoneChanges: [.saveRecord(kept), .saveRecord(gone)])
        try await engine.sendChanges()
        #expect(app.savedState.pendingRecordZoneChanges.isEmpty, "the save of a record the provider did not have is dropped")
        #expect(Set(try await stored().keys) == [kept])

        try await engine.add(pendingRecordZoneChanges: [.deleteRecord(kept)])
        try await engine.sendChanges()
        #expect(try await stored().isEmpty)
        #expect(app.savedState.pendingRecordZoneChanges.isEmpty)
    }

    @Test func anAppMaySendWhatItNeverMadePendingAndABatchTriedAlreadyEndsTheSend() async throws {
        let app = ComposingApp()
        let engine = try RecordSyncEngine(store: try store("a"), state: RecordSyncEngine.State(), delegate: app, options: .manual)
        try await engine.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: notes))])
        try await engine.sendChanges()
        let untracked = try Record(recordID: id("untracked"), recordType: "Note", fields: ["v": .int64(7)])
        app.data.withLock { $0.fixedBatch = RecordSyncEngine.RecordZoneChangeBatch(recordsToSave: [untracked]) }

        // The app hands the same batch every time: sent once, then the send ends.
        app.data.withLock { $0.contexts = [] }
        try await engine.sendChanges()
        #expect(app.data.withLock { $0.contexts.count } == 2)
        #expect(app.eventNames.filter { $0 == "sentRecordZoneChanges" }.count == 1)
        #expect(try await stored()[try id("untracked")]?.fields["v"] == .int64(7))
    }

    @Test func fetchAndSendEventsCarryWhatTheyWereAskedToCover() async throws {
        let app = ComposingApp()
        let engine = try RecordSyncEngine(store: try store("a"), state: RecordSyncEngine.State(), delegate: app, options: .manual)
        let sendOptions = RecordSyncEngine.SendChangesOptions(scope: .zoneIDs([notes]))
        let fetchOptions = RecordSyncEngine.FetchChangesOptions(scope: .allExcluding([notes]), databaseScopes: [.private])
        try await engine.sendChanges(sendOptions)
        try await engine.fetchChanges(fetchOptions)
        let contexts = app.data.withLock { d in
            d.events.compactMap { event -> String? in
                switch event {
                case .willSendChanges(let c): "will send \(c.options == sendOptions)"
                case .didSendChanges(let c): "did send \(c.options == sendOptions)"
                case .willFetchChanges(let c): "will fetch \(c.options == fetchOptions)"
                case .didFetchChanges(let c): "did fetch \(c.options == fetchOptions)"
                default: nil
                }
            }
        }
        #expect(contexts == ["will send true", "did send true", "will fetch true", "did fetch true"])
        #expect(app.data.withLock { $0.contexts.map(\.options) } == [sendOptions], "the batch is asked with the same context")
    }

    @Test func pendingZoneChangesCanBeRemoved() async throws {
        let app = ComposingApp()
        let engine = try RecordSyncEngine(store: try store("a"), state: RecordSyncEngine.State(), delegate: app, options: .manual)
        let photos = try ZoneID(zoneName: "photos", ownerName: "alice")
        try await engine.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: notes)), .saveZone(RecordZone(zoneID: photos))])
        try await engine.remove(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: notes))])
        #expect(app.savedState.pendingDatabaseChanges == [.saveZone(RecordZone(zoneID: photos))])
        try await engine.sendChanges()
        #expect(try await store("b").fetchAllRecordZones(scope: .private).map(\.zoneID) == [photos])
    }

    @Test func aDelegateThatProvidesNoRecordsIsToldSoAndLosesNothing() async throws {
        let app = SilentApp()
        let engine = try RecordSyncEngine(store: try store("a"), state: RecordSyncEngine.State(), delegate: app, options: .manual)
        try await engine.add(pendingRecordZoneChanges: [.saveRecord(try id("n1"))])
        await #expect {
            try await engine.sendChanges()
        } throws: { error in
            guard case .delegateFailed(let event, let message) = (error as? RecSyncError)?.reason else { return false }
            return event == "recordsToSave" && message.contains("nextRecordZoneChangeBatch")
        }
        #expect(await engine.state.pendingRecordZoneChanges == [.saveRecord(try id("n1"))])
    }
}
