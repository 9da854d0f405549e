import RecSyncEngine
import RecSyncModel
import RecSyncStore
import Testing

/// `fetchChanges(_:)` and `sendChanges(_:)` with options: CKSyncEngine's scopes and priorities.
@Suite struct RecordSyncEngineOptionsTests {
    let storage = MemoryStorage()
    let notes: ZoneID, photos: ZoneID, music: ZoneID

    init() throws {
        (notes, photos, music) = (
            try ZoneID(zoneName: "notes", ownerName: "alice"), try ZoneID(zoneName: "photos", ownerName: "alice"),
            try ZoneID(zoneName: "music", ownerName: "alice")
        )
    }

    func engine(_ app: KillableApp, device: String) throws -> RecordSyncEngine {
        try RecordSyncEngine(
            store: MemoryStore(storage: storage, actor: try StoreActor(userRecordName: "alice", deviceID: device)), state: app.savedState,
            delegate: app, options: .manual)
    }

    /// Writes one record into each of the three zones from another device.
    func writeEverywhere(_ value: Int64) async throws {
        let writer = KillableApp()
        let e = try engine(writer, device: "writer")
        try await e.add(pendingDatabaseChanges: [notes, photos, music].map { .saveZone(RecordZone(zoneID: $0)) })
        var changes: [RecordSyncEngine.PendingRecordZoneChange] = []
        for zone in [notes, photos, music] {
            let id = try RecordID(recordName: "r\(value)", zoneID: zone)
            try writer.edit(id, ["v": .int64(value)])
            changes.append(.saveRecord(id))
        }
        try await e.add(pendingRecordZoneChanges: changes)
        try await e.sendChanges()
    }

    @Test func aScopedFetchTakesItsZonesFirstAndKeepsTheOthersForLater() async throws {
        try await writeEverywhere(1)
        let app = KillableApp()
        try await engine(app, device: "a").fetchChanges(.init(scope: .zoneIDs([notes, music]), prioritizedZoneIDs: [music]))
        #expect(Set(app.records.keys.map(\.zoneID)) == [notes, music])
        let fetched = app.events.filter { $0.hasPrefix("willFetchRecordZoneChanges") }
        #expect(fetched == ["willFetchRecordZoneChanges(alice/music)", "willFetchRecordZoneChanges(alice/notes)"], "the prioritized zone first")
        #expect(app.savedState.zoneIDsWithUnfetchedServerChanges == [photos], "the zone left out is remembered")

        // The database token moved past photos' creation: a later fetch still brings it in.
        app.clearEvents()
        try await engine(app, device: "a").fetchChanges(.init(scope: .allExcluding([notes])))
        #expect(Set(app.records.keys.map(\.zoneID)) == [notes, photos, music])
        #expect(app.savedState.zoneIDsWithUnfetchedServerChanges.isEmpty)

        // Changes in every zone; a fetch of all but photos, then of everything.
        try await writeEverywhere(2)
        try await engine(app, device: "a").fetchChanges(.init(scope: .allExcluding([photos])))
        #expect(app.records.count == 5)
        #expect(app.savedState.zoneIDsWithUnfetchedServerChanges == [photos])
        try await engine(app, device: "a").fetchChanges()
        #expect(app.records.count == 6)
        #expect(app.savedState.zoneIDsWithUnfetchedServerChanges.isEmpty)
    }

    @Test func aZoneRemovedWhileLeftOutIsReportedAndForgotten() async throws {
        try await writeEverywhere(1)
        let app = KillableApp()
        try await engine(app, device: "a").fetchChanges(.init(scope: .zoneIDs([notes])))
        #expect(app.savedState.zoneIDsWithUnfetchedServerChanges.sorted() == [music, photos].sorted())
        _ = try await MemoryStore(storage: storage, actor: try StoreActor(userRecordName: "alice", deviceID: "admin")).modifyRecordZones([
            .delete(photos)
        ])
        try await engine(app, device: "a").fetchChanges(.init(scope: .zoneIDs([notes])))
        #expect(app.savedState.zoneIDsWithUnfetchedServerChanges == [music])
        #expect(app.data.withLock { $0.fetchedDeletions.map(\.zoneID) }.contains(photos), "zone changes are always fetched whole")
    }

    @Test func aScopedSendSendsThoseChangesAndKeepsTheRestInOrder() async throws {
        let app = KillableApp()
        let e = try engine(app, device: "a")
        try await e.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: notes)), .saveZone(RecordZone(zoneID: photos))])
        let (n1, n2, p1) = (
            try RecordID(recordName: "n1", zoneID: notes), try RecordID(recordName: "n2", zoneID: notes),
            try RecordID(recordName: "p1", zoneID: photos)
        )
        for id in [n1, n2, p1] { try app.edit(id, ["v": .int64(1)]) }
        try await e.add(pendingRecordZoneChanges: [.saveRecord(p1), .saveRecord(n1), .saveRecord(n2)])

        try await e.sendChanges(.init(scope: .recordIDs([n2])))
        #expect(app.savedState.pendingRecordZoneChanges == [.saveRecord(p1), .saveRecord(n1)])
        #expect(app.savedState.pendingDatabaseChanges == [.saveZone(RecordZone(zoneID: photos))], "n2's zone went with it")
        #expect(app.records[n2]?.changeTag != nil)

        try await e.sendChanges(.init(scope: .allExcluding([photos])))
        #expect(app.savedState.pendingRecordZoneChanges == [.saveRecord(p1)])
        try await e.sendChanges(.init(scope: .zoneIDs([photos])))
        #expect(app.savedState.pendingRecordZoneChanges.isEmpty && app.savedState.pendingDatabaseChanges.isEmpty)
        let stored = try await MemoryStore(storage: storage, actor: try StoreActor(userRecordName: "alice", deviceID: "b")).fetchRecords([n1, n2, p1])
        #expect(stored.allSatisfy { if case .success = $0.result { true } else { false } })
    }
}

/// `cancelOperations()`: a running fetch or send stops between pages or batches.
@Suite struct RecordSyncEngineCancelTests {
    let storage = MemoryStorage()
    let notes: ZoneID

    init() throws { notes = try ZoneID(zoneName: "notes", ownerName: "alice") }

    func engine(_ app: KillableApp, device: String, pageSize: Int = 400, batchSize: Int = 200) throws -> RecordSyncEngine {
        var options = RecordSyncEngine.Options.manual
        options.fetchPageSize = pageSize
        options.sendBatchSize = batchSize
        return try RecordSyncEngine(
            store: MemoryStore(storage: storage, actor: try StoreActor(userRecordName: "alice", deviceID: device)), state: app.savedState,
            delegate: app, options: options)
    }

    func ids(_ n: Int) throws -> [RecordID] { try (0..<n).map { try RecordID(recordName: "r\($0)", zoneID: notes) } }

    @Test func aCancelledFetchStopsAfterAPageAndTheNextGoesOnFromThere() async throws {
        let writer = KillableApp()
        let w = try engine(writer, device: "writer")
        try await w.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: notes))])
        for id in try ids(10) { try writer.edit(id, ["v": .int64(1)]) }
        try await w.add(pendingRecordZoneChanges: try ids(10).map { .saveRecord($0) })
        try await w.sendChanges()

        let app = KillableApp()
        app.data.withLock {
            $0.onEvent = { event, engine in
                if case .fetchedRecordZoneChanges = event { await engine.cancelOperations() }
            }
        }
        let e = try engine(app, device: "a", pageSize: 3)
        do {
            try await e.fetchChanges()
            Issue.record("the fetch was to stop")
        } catch {
            if case .operationCancelled = error.reason {} else { Issue.record("expected operationCancelled, got \(error)") }
        }
        #expect(app.records.count == 3, "one page delivered, then stopped")
        #expect(app.events.last == "stateUpdate", "the page's state was delivered before it stopped")

        // A run called after the cancel is not affected, and delivers each record once.
        app.data.withLock { $0.onEvent = nil }
        try await e.fetchChanges()
        #expect(app.records.count == 10)
        let delivered = app.events.filter { $0.hasPrefix("fetchedRecordZoneChanges") }.count
        #expect(delivered == 4, "pages of 3, none delivered twice: \(app.events)")
    }

    @Test func aCancelledSendKeepsWhatItDidNotSendPending() async throws {
        let app = KillableApp()
        let e = try engine(app, device: "a", batchSize: 2)
        try await e.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: notes))])
        for id in try ids(5) { try app.edit(id, ["v": .int64(1)]) }
        try await e.add(pendingRecordZoneChanges: try ids(5).map { .saveRecord($0) })
        app.data.withLock {
            $0.onEvent = { event, engine in
                if case .sentRecordZoneChanges = event { await engine.cancelOperations() }
            }
        }
        do {
            try await e.sendChanges()
            Issue.record("the send was to stop")
        } catch {
            if case .operationCancelled = error.reason {} else { Issue.record("expected operationCancelled, got \(error)") }
        }
        #expect(
            app.savedState.pendingRecordZoneChanges == (try ids(5).dropFirst(2).map { .saveRecord($0) }), "the first batch landed; the rest waits")
        app.data.withLock { $0.onEvent = nil }
        try await e.sendChanges()
        #expect(app.savedState.pendingRecordZoneChanges.isEmpty)
        let stored = try await MemoryStore(storage: storage, actor: try StoreActor(userRecordName: "alice", deviceID: "b")).fetchRecords(try ids(5))
        #expect(stored.allSatisfy { if case .success = $0.result { true } else { false } })
    }

    @Test func cancellingTheTaskStopsAFetchToo() async throws {
        let app = KillableApp()
        // The task is cancelled while the fetch runs (its first event is handled in it).
        app.data.withLock {
            $0.onEvent = { event, _ in
                if case .willFetchChanges = event { withUnsafeCurrentTask { $0?.cancel() } }
            }
        }
        let e = try engine(app, device: "a")
        let result = await Task { try await e.fetchChanges() }.result
        guard case .failure(let error) = result else {
            Issue.record("the fetch ran to its end in a cancelled task")
            return
        }
        #expect((error as? RecSyncError)?.code == .operationCancelled, "\(error)")
        #expect(!app.events.contains("didFetchChanges"))
    }
}
