import Foundation
import RecSyncEngine
import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import RecSyncTestTraits
import Synchronization
import Testing

/// Runs `work` detached; false when it has not finished after `seconds` (a deadlock: it is
/// left behind, so the suite goes on).
func finishes(within seconds: Double, _ work: @escaping @Sendable () async -> Void) async -> Bool {
    let done = Mutex(false)
    Task.detached(executorPreference: TestThreads.current) {
        await work()
        done.withLock { $0 = true }
    }
    let start = ContinuousClock.now
    while ContinuousClock.now - start < .seconds(seconds) {
        if done.withLock({ $0 }) { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return false
}

/// An app's calls into its engine from inside an event handler, and from several tasks at
/// once: refused or ordered, never a deadlock or a lost change.
@Suite(.dedicatedThreads) struct RecordSyncEngineConcurrencyTests: AppsOnOneStore {
    let storage = MemoryStorage()
    let zone = Build.zone("notes")
    let other = Build.zone("other")

    /// A handler that starts a fetch (a common wish: "fetch again once this send is done")
    /// waited for the run it was called from, which waited for the handler: a deadlock.
    @Test func aFetchStartedFromInsideAHandlerIsRefusedNotADeadlock() async throws {
        try await seed([zone.zoneName: ["a"]])
        let app = KillableApp()
        let e = try engine(app, device: "b")
        let inner = Mutex<RecSyncError?>(nil)
        app.data.withLock { d in
            d.onEvent = { event, engine in
                guard case .didFetchChanges = event else { return }
                do throws(RecSyncError) { try await engine.fetchChanges() } catch { inner.withLock { $0 = error } }
            }
        }
        // Alone it takes milliseconds; a deadlock never finishes at all.
        let finished = await finishes(within: 20) { _ = try? await e.fetchChanges() }
        #expect(finished, "fetchChanges called from handleEvent deadlocked")
        guard finished else { return }
        #expect(inner.withLock { $0 } != nil, "the nested fetch is refused with an error")
        // A send the handler only schedules (a detached task it does not wait for) runs after it.
        let scheduled = Mutex<Task<Void, any Error>?>(nil)
        app.data.withLock { d in
            d.onEvent = { event, engine in
                guard case .didFetchChanges = event, scheduled.withLock({ $0 == nil }) else { return }
                scheduled.withLock { $0 = Task.detached(executorPreference: TestThreads.current) { try await engine.sendChanges() } }
            }
        }
        try await e.fetchChanges()
        try await #require(scheduled.withLock { $0 }).value
        #expect(app.events.last == "didSendChanges")
        app.data.withLock { $0.onEvent = nil }
    }

    /// Two tasks add changes at once; each `add` delivers a `.stateUpdate`. Delivered side by
    /// side, the older state can be saved last, and the newer change is lost at the next start.
    @Test func concurrentAddsDeliverTheirStatesInOrder() async throws {
        let app = KillableApp()
        let e = try engine(app, device: "a")
        let first = try id("first"), second = try id("second")
        let firstArrived = Mutex(false)
        app.data.withLock { d in
            d.onEvent = { event, _ in
                // Saving the first state is slow (a busy disk).
                guard case .stateUpdate(let s) = event, s.pendingRecordZoneChanges == [.saveRecord(first)] else { return }
                firstArrived.withLock { $0 = true }
                try await Task.sleep(for: .milliseconds(300))
            }
        }
        async let a: Void = e.add(pendingRecordZoneChanges: [.saveRecord(first)])
        while !firstArrived.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }
        try await e.add(pendingRecordZoneChanges: [.saveRecord(second)])
        try await a
        // The app restarts from what it saved last.
        #expect(Set(app.savedState.pendingRecordZoneChanges) == [.saveRecord(first), .saveRecord(second)])
    }

    /// The send walks a copy of the pending list taken when it starts. A delete the app
    /// replaced by a save (an undo) while an earlier batch was out was still sent.
    @Test func aChangeReplacedWhileAnEarlierBatchIsOutIsNotSentStale() async throws {
        try await seed([zone.zoneName: ["a", "b"]])
        let app = KillableApp()
        var options = RecordSyncEngine.Options.manual
        options.sendBatchSize = 1
        let e = try engine(app, device: "app", options: options)
        try await e.fetchChanges()
        let a = try id("a"), b = try id("b")
        try app.edit(a, ["v": .string("a2")])
        let bRecord = try #require(app.records[b])
        app.forget(b)
        try await e.add(pendingRecordZoneChanges: [.saveRecord(a), .deleteRecord(b)])
        app.data.withLock { d in
            d.onEvent = { event, engine in
                guard case .sentRecordZoneChanges(let sent) = event, sent.savedRecords.map(\.recordID) == [a] else { return }
                // The user undoes the delete while a's batch is out.
                app.data.withLock { $0.records[b] = bRecord }
                try await engine.add(pendingRecordZoneChanges: [.saveRecord(b)])
            }
        }
        try await e.sendChanges()
        app.data.withLock { $0.onEvent = nil }
        #expect(try await storeContents()[b] != nil, "the delete the app took back was sent anyway")
        #expect(app.savedState.pendingRecordZoneChanges == [.saveRecord(b)])
    }
}
