import RecSyncEngine
import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import Testing

/// Transient failures (a dropped connection, a busy store) are tried again inside the engine,
/// with back-off; nothing pending is lost when the tries run out. A failure of one zone's
/// fetch is that zone's: the others are fetched.
@Suite struct RecordSyncEngineRetryTests {
    let storage = MemoryStorage()
    let notes: ZoneID

    init() throws {
        notes = try ZoneID(zoneName: "notes", ownerName: "alice")
    }

    func store(_ device: String) throws -> MemoryStore {
        MemoryStore(storage: storage, actor: try StoreActor(userRecordName: "alice", deviceID: device))
    }

    /// Quick pauses, so a test waits milliseconds, not seconds.
    func options(retries: Int?) -> RecordSyncEngine.Options {
        var options = RecordSyncEngine.Options.manual
        options.retries = RetryPolicy(retries: retries, backoff: Backoff(initial: 0.01, maximum: 0.05))
        options.fetchPageSize = 2
        return options
    }

    func writeRecords(_ count: Int) async throws -> [RecordID] {
        let writer = KillableApp()
        let engine = try RecordSyncEngine(store: try store("writer"), state: RecordSyncEngine.State(), delegate: writer, options: .manual)
        try await engine.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: notes))])
        let ids = try (0..<count).map { try RecordID(recordName: "r\($0)", zoneID: notes) }
        for (n, id) in ids.enumerated() { try writer.edit(id, ["v": .int64(Int64(n))]) }
        try await engine.add(pendingRecordZoneChanges: ids.map { .saveRecord($0) })
        try await engine.sendChanges()
        return ids
    }

    @Test func aFetchRidesOutDroppedConnections() async throws {
        let ids = try await writeRecords(5)
        let flaky = FaultInjectingStore(try store("a"))
        let app = KillableApp()
        let engine = try RecordSyncEngine(store: flaky, state: RecordSyncEngine.State(), delegate: app, options: options(retries: 3))
        await flaky.failNextCalls(3)
        try await engine.fetchChanges()
        #expect(Set(app.records.keys) == Set(ids))
        #expect(await flaky.droppedCalls == 3)

        // Failures between pages: each page is asked again, none delivered twice or skipped.
        let more = try await writeRecords(9)
        for _ in 0..<4 {
            await flaky.failNextCalls(2)
            try await engine.fetchChanges()
        }
        #expect(Set(app.records.keys) == Set(ids + more))
    }

    @Test func aSendWhoseAnswerWasLostLandsOnceAndIsNotCalledAConflict() async throws {
        let flaky = FaultInjectingStore(try store("a"))
        let app = KillableApp()
        let engine = try RecordSyncEngine(store: flaky, state: RecordSyncEngine.State(), delegate: app, options: options(retries: 3))
        try await engine.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: notes))])
        await flaky.loseNextAnswer()
        try await engine.sendChanges()
        let id = try RecordID(recordName: "r", zoneID: notes)
        try app.edit(id, ["v": .int64(1)])
        try await engine.add(pendingRecordZoneChanges: [.saveRecord(id)])
        await flaky.loseNextAnswer()
        try await engine.sendChanges()
        #expect(await flaky.droppedCalls == 2)
        #expect(app.data.withLock { $0.failedSaves.isEmpty && $0.conflicts.isEmpty })
        #expect(app.savedState.pendingRecordZoneChanges.isEmpty && app.savedState.pendingDatabaseChanges.isEmpty)
        #expect(app.records[id]?.changeTag != nil)
        #expect(await flaky.landed.filter { $0.recordID == id }.count == 1, "saved once")
    }

    @Test func whenTheTriesRunOutTheSendThrowsAndKeepsItsChanges() async throws {
        let flaky = FaultInjectingStore(try store("a"))
        let app = KillableApp()
        let engine = try RecordSyncEngine(store: flaky, state: RecordSyncEngine.State(), delegate: app, options: options(retries: 2))
        try await engine.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: notes))])
        try await engine.sendChanges()
        let id = try RecordID(recordName: "r", zoneID: notes)
        try app.edit(id, ["v": .int64(1)])
        try await engine.add(pendingRecordZoneChanges: [.saveRecord(id)])
        await flaky.failNextCalls(3)
        await #expect {
            try await engine.sendChanges()
        } throws: { error in
            (error as? RecSyncError)?.code == .networkFailure
        }
        #expect(await flaky.droppedCalls == 3, "the first try and two more")
        #expect(app.savedState.pendingRecordZoneChanges == [.saveRecord(id)])
        try await engine.sendChanges()
        #expect(app.savedState.pendingRecordZoneChanges.isEmpty)
    }

    @Test(.timeLimit(.minutes(1)))
    func cancellingEndsAPauseBetweenTries() async throws {
        let flaky = FaultInjectingStore(try store("a"))
        let app = KillableApp()
        var options = RecordSyncEngine.Options.manual
        options.retries = RetryPolicy(retries: nil, backoff: Backoff(initial: 600, maximum: 600))
        let engine = try RecordSyncEngine(store: flaky, state: RecordSyncEngine.State(), delegate: app, options: options)
        await flaky.failNextCalls(1)
        let fetch = Task { try await engine.fetchChanges() }
        while await flaky.droppedCalls == 0 { await Task.yield() }
        await engine.cancelOperations()
        await #expect {
            try await fetch.value
        } throws: { error in
            (error as? RecSyncError)?.code == .operationCancelled
        }
    }

    @Test func aZoneThatFailsAloneIsReportedForItselfAndFetchedNextTime() async throws {
        let ids = try await writeRecords(3)
        let photos = try ZoneID(zoneName: "photos", ownerName: "alice")
        let writer = KillableApp()
        let w = try RecordSyncEngine(store: try store("writer2"), state: RecordSyncEngine.State(), delegate: writer, options: .manual)
        try await w.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: photos))])
        let photo = try RecordID(recordName: "p", zoneID: photos)
        try writer.edit(photo, ["v": .int64(1)])
        try await w.add(pendingRecordZoneChanges: [.saveRecord(photo)])
        try await w.sendChanges()

        let flaky = FaultInjectingStore(try store("a"))
        let app = KillableApp()
        let engine = try RecordSyncEngine(store: flaky, state: RecordSyncEngine.State(), delegate: app, options: options(retries: 3))
        await flaky.failZone(notes, with: .storeCorrupt("zone notes: a tree entry cannot be read"))
        try await engine.fetchChanges()
        #expect(Set(app.records.keys) == [photo], "the other zone was fetched")
        #expect(app.savedState.zoneIDsWithUnfetchedServerChanges == [notes])
        #expect(app.events.contains("didFetchRecordZoneChanges(alice/notes)") && app.events.last == "didFetchChanges")
        let zoneErrors = app.events.filter { $0.hasPrefix("didFetchRecordZoneChanges") }
        #expect(zoneErrors.count == 2)

        // Nothing changed on the store since: the next fetch still brings the zone in.
        await flaky.failZone(notes, with: nil)
        try await engine.fetchChanges()
        #expect(Set(app.records.keys) == Set(ids + [photo]))
        #expect(app.savedState.zoneIDsWithUnfetchedServerChanges.isEmpty)
    }

    @Test func aStoreThatStaysUnreachableFailsTheWholeFetch() async throws {
        _ = try await writeRecords(3)
        let flaky = FaultInjectingStore(try store("a"))
        let app = KillableApp()
        let engine = try RecordSyncEngine(store: flaky, state: RecordSyncEngine.State(), delegate: app, options: options(retries: 1))
        await flaky.failZone(notes, with: .networkUnavailable("simulated: the store cannot be reached"))
        await #expect {
            try await engine.fetchChanges()
        } throws: { error in
            (error as? RecSyncError)?.code == .networkUnavailable
        }
        #expect(!app.events.contains("didFetchChanges"))
        #expect(app.savedState.token(for: .private) == nil, "the scope token did not move past the zone")
    }

    @Test func onlyPassingFailuresAreTriedAgain() throws {
        #expect(RecordSyncEngine.isTransient(.networkFailure("dropped")))
        #expect(RecordSyncEngine.isTransient(.networkUnavailable("down")))
        #expect(RecordSyncEngine.isTransient(.storeBusy("locked")))
        #expect(!RecordSyncEngine.isTransient(.permissionFailure("no")))
        #expect(!RecordSyncEngine.isTransient(.zoneNotFound(notes)))
        #expect(!RecordSyncEngine.isTransient(.notAuthenticated("who")))
    }
}
