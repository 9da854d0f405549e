import Foundation
import RecSyncEngine
import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import RecSyncTestTraits
import Synchronization
import Testing

/// Automatic sync: changes are sent by themselves shortly after they are added, and a change
/// on the store is fetched when the store signals it. The tests wait for what the engine does
/// in the background (bounded by `waitUntil`), not for a fixed time, and give the engine the
/// test's own threads for it: tests beside them block Swift's shared pool for seconds at a
/// time, and automatic sync on that pool would wait behind them.
@Suite(.dedicatedThreads) struct RecordSyncEngineAutomaticTests {
    let notes: ZoneID

    init() throws {
        notes = try ZoneID(zoneName: "notes", ownerName: "alice")
    }

    func automatic(delay: Double = 0.05) -> RecordSyncEngine.Options {
        var options = RecordSyncEngine.Options()
        options.automaticSendDelay = delay
        options.retries = RetryPolicy(retries: 1, backoff: Backoff(initial: 0.01, maximum: 0.05))
        return options
    }

    /// Polls `condition` until it holds or `seconds` pass.
    func waitUntil(seconds: Double = 60, _ condition: () async throws -> Bool) async rethrows -> Bool {
        let end = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < end {
            if try await condition() { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return try await condition()
    }

    @Test func changesAddedAreSentByThemselves() async throws {
        let storage = MemoryStorage()
        let app = ComposingApp()
        let engine = try RecordSyncEngine(
            store: MemoryStore(storage: storage, actor: StoreActor(userRecordName: "alice", deviceID: "a")), state: RecordSyncEngine.State(),
            delegate: app, options: automatic(), executorPreference: TestThreads.current)
        let id = try RecordID(recordName: "n1", zoneID: notes)
        try app.edit(id, 1)
        try await engine.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: notes))])
        try await engine.add(pendingRecordZoneChanges: [.saveRecord(id)])

        let reader = MemoryStore(storage: storage, actor: try StoreActor(userRecordName: "alice", deviceID: "b"))
        let landed = try await waitUntil {
            guard try await !reader.fetchAllRecordZones(scope: .private).isEmpty else { return false }
            return try await reader.recordZoneChanges(zone: notes, since: nil).modifications.count == 1
        }
        #expect(landed, "the change was sent without a call to sendChanges")
        #expect(await waitUntil { await engine.state.pendingRecordZoneChanges.isEmpty })
        let reasons = app.data.withLock { d in
            d.events.compactMap { event -> RecordSyncEngine.SyncReason? in
                if case .willSendChanges(let context) = event { context.reason } else { nil }
            }
        }
        #expect(!reasons.isEmpty && reasons.allSatisfy { $0 == .scheduled })
        #expect(await engine.automaticSyncError == nil)
    }

    @Test func aChangeOnAGitStoreIsFetchedWhenTheStoreSignalsIt() async throws {
        let fixture = try StoreFixture(.git)
        let writer = KillableApp()
        let w = try RecordSyncEngine(
            store: fixture.store(as: "alice", deviceID: "w"), state: RecordSyncEngine.State(), delegate: writer, options: .manual)
        try await w.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: notes))])
        try await w.sendChanges()

        let app = KillableApp()
        let engine = try RecordSyncEngine(
            store: fixture.store(as: "alice", deviceID: "r"), state: RecordSyncEngine.State(), delegate: app, options: automatic(),
            executorPreference: TestThreads.current)
        // The fetch it makes when it starts.
        let started = await waitUntil { app.events.contains("didFetchChanges") }
        let failure = await engine.automaticSyncError
        #expect(started, "no fetch when it started: \(app.events), \(String(describing: failure))")

        let id = try RecordID(recordName: "n1", zoneID: notes)
        try writer.edit(id, ["v": .int64(1)])
        try await w.add(pendingRecordZoneChanges: [.saveRecord(id)])
        try await w.sendChanges()
        #expect(await waitUntil { app.records[id] != nil }, "fetched without a call to fetchChanges: \(app.events)")
        #expect(await engine.automaticSyncError == nil)
    }

    @Test func automaticSyncRunsOnTheExecutorTheAppGives() async throws {
        let storage = MemoryStorage()
        let app = KillableApp()
        let onTestThreads = Mutex<[Bool]>([])
        app.data.withLock { d in
            d.onEvent = { event, _ in
                if case .willFetchChanges = event { onTestThreads.withLock { $0.append(TestThreads.isCurrentThread) } }
                if case .willSendChanges = event { onTestThreads.withLock { $0.append(TestThreads.isCurrentThread) } }
            }
        }
        let engine = try RecordSyncEngine(
            store: MemoryStore(storage: storage, actor: StoreActor(userRecordName: "alice", deviceID: "a")), state: RecordSyncEngine.State(),
            delegate: app, options: automatic(), executorPreference: TestThreads.current)
        try await engine.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: notes))])
        #expect(await waitUntil { await engine.state.pendingDatabaseChanges.isEmpty })
        let seen = onTestThreads.withLock { $0 }
        #expect(seen.count >= 2 && !seen.contains(false), "a fetch and a send, both on the executor given: \(seen), \(app.events)")
    }

    @Test func aSendTheStoreRefusedForAWhileGoesWhenItIsBack() async throws {
        let storage = MemoryStorage()
        let flaky = FaultInjectingStore(MemoryStore(storage: storage, actor: try StoreActor(userRecordName: "alice", deviceID: "a")))
        let app = ComposingApp()
        let engine = try RecordSyncEngine(
            store: flaky, state: RecordSyncEngine.State(), delegate: app, options: automatic(), executorPreference: TestThreads.current)
        #expect(await waitUntil { app.eventNames.contains("didFetchChanges") })
        await flaky.failNextCalls(4)
        try await engine.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: notes))])
        #expect(await waitUntil { await flaky.droppedCalls == 4 })
        #expect(await waitUntil { await engine.state.pendingDatabaseChanges.isEmpty }, "sent after the outage, with nothing added since")
        #expect(
            try await MemoryStore(storage: storage, actor: StoreActor(userRecordName: "alice", deviceID: "b")).fetchAllRecordZones(scope: .private)
                .map(\.zoneID) == [notes])
    }

    @Test func aFetchTheStoreCouldNotServeIsTriedAgainWithoutASignal() async throws {
        let storage = MemoryStorage()
        let id = try RecordID(recordName: "n1", zoneID: notes)
        let writer = ComposingApp()
        let w = try RecordSyncEngine(
            store: MemoryStore(storage: storage, actor: StoreActor(userRecordName: "alice", deviceID: "w")), state: RecordSyncEngine.State(),
            delegate: writer, options: .manual)
        try writer.edit(id, 1)
        try await w.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: notes))])
        try await w.add(pendingRecordZoneChanges: [.saveRecord(id)])
        try await w.sendChanges()

        // More failures than one fetch's two tries: the first automatic fetch fails, and the
        // next one's first try. A memory store never signals: only the engine's own pause
        // brings the record.
        let flaky = FaultInjectingStore(MemoryStore(storage: storage, actor: try StoreActor(userRecordName: "alice", deviceID: "r")))
        await flaky.failNextCalls(3)
        let app = KillableApp()
        let engine = try RecordSyncEngine(
            store: flaky, state: RecordSyncEngine.State(), delegate: app, options: automatic(), executorPreference: TestThreads.current)
        #expect(await waitUntil { app.records[id] != nil }, "fetched again without a signal: \(app.events)")
        #expect(await flaky.droppedCalls == 3)
        // Cleared once the fetch has ended (the record arrives before its last events).
        #expect(await waitUntil { await engine.automaticSyncError == nil })
    }

    @Test func afterAFailedFetchTheEngineWaitsBeforeItLooksAgain() async throws {
        let fixture = try StoreFixture(.git)
        let app = KillableApp()
        let tries = Mutex(0)
        app.data.withLock { d in
            d.onEvent = { event, _ in
                guard case .willFetchChanges = event else { return }
                tries.withLock { $0 += 1 }
                throw KillableApp.Crash()
            }
        }
        let engine = try RecordSyncEngine(
            store: fixture.store(as: "alice", deviceID: "r"), state: RecordSyncEngine.State(), delegate: app, options: automatic(),
            executorPreference: TestThreads.current)
        #expect(await waitUntil { tries.withLock { $0 } == 1 })
        // The store signals all the time, as a network store does while it cannot be reached:
        // something is written beside its refs every 20 ms.
        let end = ContinuousClock.now + .milliseconds(2500)
        var n = 0
        while ContinuousClock.now < end {
            try Data([UInt8(n % 256)]).write(to: URL(fileURLWithPath: "\(fixture.path)/signal-\(n % 2)"))
            n += 1
            try await Task.sleep(for: .milliseconds(20))
        }
        // Fetches at 0 s, after a pause of about 1 s and after one of about 2 s: at most 3.
        let count = tries.withLock { $0 }
        #expect((1...3).contains(count), "\(count) fetches while the store signalled \(n) times")
        #expect(await engine.automaticSyncError?.kind == .delegateFailed)
    }

    @Test func changesAddedWithoutAPauseAreStillSent() async throws {
        let storage = MemoryStorage()
        let app = ComposingApp()
        let engine = try RecordSyncEngine(
            store: MemoryStore(storage: storage, actor: StoreActor(userRecordName: "alice", deviceID: "a")), state: RecordSyncEngine.State(),
            delegate: app, options: automatic(delay: 0.2), executorPreference: TestThreads.current)
        try await engine.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: notes))])
        // A change every 20 ms, each well inside the delay, until a send has gone (a minute at most).
        var n = 0
        let end = ContinuousClock.now + .seconds(60)
        while !app.eventNames.contains("sentRecordZoneChanges"), ContinuousClock.now < end {
            let id = try RecordID(recordName: "r\(n)", zoneID: notes)
            try app.edit(id, Int64(n))
            try await engine.add(pendingRecordZoneChanges: [.saveRecord(id)])
            n += 1
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(app.eventNames.contains("sentRecordZoneChanges"), "a send went while changes kept coming (\(n) added)")
    }

    /// With `whileASendWaits`, the send is due in a minute, and the task that waits for it is
    /// asleep when the app lets go: the wait must not hold the engine.
    @Test(arguments: [false, true]) func anEngineTheAppLetsGoStopsSyncing(whileASendWaits: Bool) async throws {
        let storage = MemoryStorage()
        let app = ComposingApp()
        weak var released: RecordSyncEngine?
        do {
            let engine = try RecordSyncEngine(
                store: MemoryStore(storage: storage, actor: StoreActor(userRecordName: "alice", deviceID: "a")), state: RecordSyncEngine.State(),
                delegate: app, options: automatic(delay: whileASendWaits ? 60 : 0.05), executorPreference: TestThreads.current)
            released = engine
            try await engine.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: notes))])
            if whileASendWaits { #expect(await waitUntil { app.eventNames.contains("didFetchChanges") }) }
        }
        #expect(await waitUntil(seconds: whileASendWaits ? 10 : 60) { released == nil }, "the background tasks hold the engine weakly")
        if whileASendWaits { #expect(!app.eventNames.contains("willSendChanges")) }
    }

    @Test func manualEnginesRunOnlyWhenAsked() async throws {
        let storage = MemoryStorage()
        let app = ComposingApp()
        let engine = try RecordSyncEngine(
            store: MemoryStore(storage: storage, actor: StoreActor(userRecordName: "alice", deviceID: "a")), state: RecordSyncEngine.State(),
            delegate: app, options: .manual)
        try await engine.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: notes))])
        // An automatic engine beside it sends and fetches within this wait; this one does not.
        let other = ComposingApp()
        let auto = try RecordSyncEngine(
            store: MemoryStore(storage: storage, actor: StoreActor(userRecordName: "alice", deviceID: "b")), state: RecordSyncEngine.State(),
            delegate: other, options: automatic(), executorPreference: TestThreads.current)
        try await auto.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: try ZoneID(zoneName: "other", ownerName: "alice")))])
        #expect(await waitUntil { await auto.state.pendingDatabaseChanges.isEmpty })
        #expect(!app.eventNames.contains("willSendChanges") && !app.eventNames.contains("willFetchChanges"))
        #expect(await engine.state.pendingDatabaseChanges.count == 1)
    }
}

/// Changes an app tracks itself: the engine asks for them when told they exist.
@Suite(.dedicatedThreads) struct RecordSyncEngineUntrackedChangesTests {
    @Test func untrackedChangesAreAskedForSentAndTheMarkCleared() async throws {
        let storage = MemoryStorage()
        let notes = try ZoneID(zoneName: "notes", ownerName: "alice")
        let app = ComposingApp()
        var options = RecordSyncEngine.Options()
        options.automaticSendDelay = 0.05
        let engine = try RecordSyncEngine(
            store: MemoryStore(storage: storage, actor: StoreActor(userRecordName: "alice", deviceID: "a")), state: RecordSyncEngine.State(),
            delegate: app, options: options, executorPreference: TestThreads.current)
        try await engine.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: notes))])
        let record = try Record(recordID: RecordID(recordName: "kept-by-the-app", zoneID: notes), recordType: "Note", fields: ["v": .int64(1)])
        let end = ContinuousClock.now + .seconds(60)
        while await !engine.state.pendingDatabaseChanges.isEmpty, ContinuousClock.now < end { try await Task.sleep(for: .milliseconds(50)) }

        app.data.withLock { $0.fixedBatch = RecordSyncEngine.RecordZoneChangeBatch(recordsToSave: [record]) }
        try await engine.setHasPendingUntrackedChanges(true)
        #expect(app.savedState.hasPendingUntrackedChanges, "saved with the state")
        while app.savedState.hasPendingUntrackedChanges, ContinuousClock.now < end { try await Task.sleep(for: .milliseconds(50)) }
        #expect(!app.savedState.hasPendingUntrackedChanges, "cleared once the send asked for everything")
        let stored = try await MemoryStore(storage: storage, actor: StoreActor(userRecordName: "alice", deviceID: "b")).recordZoneChanges(
            zone: notes, since: nil)
        #expect(stored.modifications.map(\.recordID) == [record.recordID])
    }
}
