import RecSyncEngine
import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import Synchronization
import Testing

/// Records that appear and go between two fetches are in neither end of the changes the second
/// fetch reads. An app that holds one anyway (it saved it, or took it in from a page whose
/// token it never saved) must still be told it is gone.
@Suite struct RecordSyncEngineHiddenDeletionTests {
    let storage = MemoryStorage()
    let notes: ZoneID

    init() throws {
        notes = try ZoneID(zoneName: "notes", ownerName: "alice")
    }

    func engine(_ app: KillableApp, _ device: String) throws -> RecordSyncEngine {
        try RecordSyncEngine(
            store: MemoryStore(storage: storage, actor: StoreActor(userRecordName: "alice", deviceID: device)), state: app.savedState, delegate: app,
            options: .manual)
    }

    /// Saves `id` from a new device, or deletes it.
    func write(_ id: RecordID, deleting: Bool = false) async throws {
        let other = KillableApp()
        let e = try engine(other, "other-\(deleting)")
        if deleting {
            try await e.add(pendingRecordZoneChanges: [.deleteRecord(id)])
        } else {
            try other.edit(id, ["v": .int64(1)])
            try await e.add(pendingRecordZoneChanges: [.saveRecord(id)])
        }
        try await e.sendChanges()
    }

    func makeZone() async throws {
        _ = try await MemoryStore(storage: storage, actor: StoreActor(userRecordName: "alice", deviceID: "admin")).modifyRecordZones([
            .save(RecordZone(zoneID: notes))
        ])
    }

    @Test func aRecordTheAppSavedAndAnotherDeviceDeletedBeforeItsNextFetchGoes() async throws {
        try await makeZone()
        let app = KillableApp()
        try await engine(app, "a").fetchChanges()
        let id = try RecordID(recordName: "r", zoneID: notes)
        try app.edit(id, ["v": .int64(1)])
        let e = try engine(app, "a")
        try await e.add(pendingRecordZoneChanges: [.saveRecord(id)])
        try await e.sendChanges()
        try await write(id, deleting: true)

        try await e.fetchChanges()
        #expect(app.records[id] == nil, "\(app.events)")
        #expect(app.savedState.pendingRecordZoneChanges.isEmpty)
    }

    @Test func aPageTakenInBeforeItsTokenWasSavedIsAskedAboutAgain() async throws {
        try await makeZone()
        let app = KillableApp()
        try await engine(app, "a").fetchChanges()
        let id = try RecordID(recordName: "r", zoneID: notes)
        try await write(id)

        // The app takes in the page with r, and is killed before it saves the token past it.
        let tookIn = Mutex(false)
        app.data.withLock { d in
            d.onEvent = { event, _ in
                if case .fetchedRecordZoneChanges(let page) = event, page.modifications.contains(where: { $0.recordID == id }) {
                    tookIn.withLock { $0 = true }
                }
                if case .stateUpdate(let state) = event, tookIn.withLock({ $0 }),
                    state.token(for: try ZoneID(zoneName: "notes", ownerName: "alice")) != nil
                {
                    throw KillableApp.Crash()
                }
            }
        }
        await #expect(throws: RecSyncError.self) { try await engine(app, "a").fetchChanges() }
        #expect(app.records[id] != nil)
        app.data.withLock { $0.onEvent = nil }

        try await write(id, deleting: true)
        try await engine(app, "a").fetchChanges()
        #expect(app.records[id] == nil, "\(app.events)")
    }

    @Test func aZoneListedByAFetchStoppedBeforeItsTokenGoesWithTheZone() async throws {
        try await makeZone()
        let id = try RecordID(recordName: "r", zoneID: notes)
        try await write(id)

        // The first fetch lists the zone, and the app is killed as the zone's token comes.
        let app = KillableApp()
        app.data.withLock { d in
            d.onEvent = { event, _ in
                if case .stateUpdate(let state) = event, state.token(for: try ZoneID(zoneName: "notes", ownerName: "alice")) != nil {
                    throw KillableApp.Crash()
                }
            }
        }
        await #expect(throws: RecSyncError.self) { try await engine(app, "a").fetchChanges() }
        #expect(app.records[id] != nil)
        app.data.withLock { $0.onEvent = nil }

        _ = try await MemoryStore(storage: storage, actor: StoreActor(userRecordName: "alice", deviceID: "admin")).modifyRecordZones([.delete(notes)])
        try await engine(app, "a").fetchChanges()
        #expect(app.records.isEmpty, "\(app.events)")
    }

    @Test func anAppThatSendsMuchBetweenFetchesReadsTheZoneWholeInsteadOfNotingEverything() async throws {
        try await makeZone()
        let app = KillableApp()
        let e = try engine(app, "a")
        try await e.fetchChanges()
        let count = RecordSyncEngine.State.savedNoteLimit + 1
        let ids = try (0..<count).map { try RecordID(recordName: "r\($0)", zoneID: notes) }
        for id in ids { try app.edit(id, ["v": .int64(1)]) }
        try await e.add(pendingRecordZoneChanges: ids.map { .saveRecord($0) })
        try await e.sendChanges()
        let stateBytes = try app.savedState.serialized().count
        #expect(stateBytes < 20_000, "the state does not carry \(count) names: \(stateBytes) bytes")

        try await write(ids[0], deleting: true)
        app.clearEvents()
        try await e.fetchChanges()
        #expect(app.events.contains("fetchingWholeZone(alice/notes)"))
        #expect(app.records[ids[0]] == nil && app.records.count == count - 1)
    }
}
