import Foundation
import RecSyncEngine
import RecSyncModel
import RecSyncStore
import RecSyncSubscriptions
import RecSyncSystem
import RecSyncTestSupport
import RecSyncTestTraits
import RecSyncWorkspace
import Synchronization
import Testing

/// Subscriptions and the watch loop on a local git store with inotify.
@Suite(.dedicatedThreads) struct WatchTests {
    final class Collected: Sendable {
        let items = Mutex<[SubscriptionNotification]>([])
        let errors = Mutex<[String]>([])
        let stop = Atomic<Bool>(false)
        /// The loop's first round has looked at the store (its `prepare` ran).
        let looked = Atomic<Bool>(false)
        /// The burst has landed: the loop may wait on the store's signal.
        let burstDone = Atomic<Bool>(false)
    }

    @Test func aBurstOfChangesGivesOneNotificationPerMatchingSubscription() async throws {
        let fixture = try StoreFixture(.git)
        let alice = try fixture.store(as: "alice")
        let notes = Build.zone("notes"), other = Build.zone("other")
        try await alice.createZones([notes, other])
        let subscriptions = [
            Subscription(id: "db", kind: .database(.private)),
            Subscription(id: "notes", kind: .zone(notes)),
            Subscription(id: "other", kind: .zone(other)),
            Subscription(
                id: "urgent",
                kind: .query(
                    QuerySubscription(scope: .private, recordType: "Task", conditions: [FieldCondition(field: "urgent", test: .equals("true"))]))),
            Subscription(id: "shared", kind: .database(.shared)),
        ]
        let watcher = SubscriptionNotifier(subscriptions: subscriptions, store: try fixture.store(as: "alice"))
        // The baseline (cursors at the head) is taken before the burst, not raced with it.
        try await watcher.acknowledge(watcher.pending())
        let signal = try LocalStoreSignal(storePath: fixture.path)
        let got = Collected()
        // After its first look the loop waits on the store's signal; here it is held until the
        // whole burst has landed (on a loaded machine three saves can take longer than any
        // settle time), so what is checked is the coalescing, not the machine's speed.
        var loop = WatchLoop { timeout in
            while !got.burstDone.load(ordering: .relaxed), !got.stop.load(ordering: .relaxed) { usleep(10_000) }
            return signal.wait(timeout: timeout)
        }
        loop.settle = 0.3
        let task = Task(executorPreference: TestThreads.current) {
            await loop.run(
                notifier: watcher, shouldStop: { got.stop.load(ordering: .relaxed) },
                onError: { e, _ in got.errors.withLock { $0.append(e.message) } },
                prepare: { _ in
                    got.looked.store(true, ordering: .relaxed); return true
                },
                notify: { n in
                    got.items.withLock { $0.append(n) }; return true
                })
        }
        // The first round looks at once: the burst must come after it, or it sees part of it.
        let waitedFrom = Date()
        while !got.looked.load(ordering: .relaxed), Date().timeIntervalSince(waitedFrom) < 30 { try await Task.sleep(nanoseconds: 20_000_000) }
        try await Task.sleep(nanoseconds: 300_000_000)  // the loop is waiting
        let started = Date()
        // A burst: three commits in quick succession.
        try await alice.save([Build.record("a", in: notes)])
        try await alice.save([Build.record("b", in: notes, type: "Task", ["urgent": .boolean(true)])])
        try await alice.save([Build.record("c", in: notes)])
        got.burstDone.store(true, ordering: .relaxed)
        var seen: [SubscriptionNotification] = []
        // Bounded, generously: CI machines run many tests at once.
        while Date().timeIntervalSince(started) < 30 {
            seen = got.items.withLock { $0 }
            if seen.count >= 3 { break }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        try await Task.sleep(nanoseconds: 800_000_000)  // anything extra would arrive now
        seen = got.items.withLock { $0 }
        got.stop.store(true, ordering: .relaxed)
        await task.value
        #expect(Date().timeIntervalSince(started) < 30)
        #expect(seen.map(\.subscriptionID).sorted() == ["db", "notes", "urgent"], "\(seen)")
        #expect(seen.first { $0.subscriptionID == "notes" }?.zone == notes)
        #expect(seen.first { $0.subscriptionID == "notes" }?.count == 3, "three records, one notification")
        #expect(got.errors.withLock { $0 }.isEmpty)
    }

    @Test func watchSurvivesAStoreThatIsBrieflyGone() async throws {
        let fixture = try StoreFixture(.git)
        let alice = try fixture.store(as: "alice")
        let notes = Build.zone("notes")
        try await alice.createZones([notes])
        let watcher = SubscriptionNotifier(subscriptions: [Subscription(id: "db", kind: .database(.private))], store: try fixture.store(as: "alice"))
        // Poll the ref's stat: the directory itself disappears in this test.
        let ref = "\(fixture.path)/refs/heads/main"
        let last = Mutex<Int64?>(nil)
        var loop = WatchLoop { timeout in
            let until = Date().addingTimeInterval(timeout)
            repeat {
                let now = (try? FileIO.stamp(ref)).flatMap { $0 }?.mtimeNanos  // gone or unreadable: no stamp
                let changed = last.withLock { old in
                    defer { old = now }; return old != nil && old != now
                }
                if changed { return true }
                try? await Task.sleep(nanoseconds: 50_000_000)
            } while Date() < until
            return false
        }
        loop.settle = 0.1
        loop.period = 0.5
        loop.backoff = Backoff(maximum: 0.5)
        let got = Collected()
        let task = Task(executorPreference: TestThreads.current) {
            await loop.run(
                notifier: watcher, shouldStop: { got.stop.load(ordering: .relaxed) },
                onError: { e, _ in got.errors.withLock { $0.append(e.message) } },
                notify: { n in
                    got.items.withLock { $0.append(n) }; return true
                })
        }
        // The subscription starts at the head the loop first looks at: the outage begins only
        // once it has looked (and waits for changes), or on a busy machine the change after
        // the outage may be where it starts. (A fixed 400 ms sleep lost that race.)
        let looking = Date()
        while last.withLock({ $0 }) == nil, Date().timeIntervalSince(looking) < 30 {
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        let moved = fixture.directory.file("moved.git")
        try FileManager.default.moveItem(atPath: fixture.path, toPath: moved)
        // Gone until the watcher has noticed (bounded, generously for busy machines).
        let away = Date()
        while got.errors.withLock({ $0.isEmpty }), Date().timeIntervalSince(away) < 30 {
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        try FileManager.default.moveItem(atPath: moved, toPath: fixture.path)
        try await alice.save([Build.record("after", in: notes)])
        let started = Date()
        // Alone this takes a second; the suites that block threads run off the shared pool
        // (`.ownThreads`), so the watch loop gets its turns under the whole suite too.
        while got.items.withLock({ $0.isEmpty }), Date().timeIntervalSince(started) < 30 {
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        got.stop.store(true, ordering: .relaxed)
        await task.value
        #expect(!got.errors.withLock { $0 }.isEmpty, "the outage was reported")
        #expect(got.items.withLock { $0 }.map(\.subscriptionID) == ["db"], "and the change after it was seen")
    }
}
