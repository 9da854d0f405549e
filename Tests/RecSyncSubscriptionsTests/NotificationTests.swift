import Foundation
import RecSyncEngine
import RecSyncEngineFixtures
import RecSyncModel
import RecSyncStore
import RecSyncSubscriptions
import RecSyncSystem
import RecSyncTestSupport
import RecSyncTestTraits
import RecSyncWorkspace
import Synchronization
import Testing

/// Durable subscriptions: cursors in the workspace, at-least-once delivery, no echo.
@Suite(.dedicatedThreads) struct NotificationTests {
    final class Delivered: Sendable {
        let items = Mutex<[SubscriptionNotification]>([])
        var all: [SubscriptionNotification] { items.withLock { $0 } }
        func take() -> [SubscriptionNotification] {
            items.withLock { list in
                defer { list = [] }; return list
            }
        }
    }

    /// Two workspaces of alice's and a zone both hold.
    func laptopAndPhone(_ f: EngineFixture) async throws -> (SyncEngine, SyncEngine) {
        let laptop = try f.device("laptop"), phone = try f.device("phone")
        try laptop.write("notes", "first", #"{"n": 1}"#)
        _ = try await laptop.push()
        _ = try await phone.pull()
        return (laptop, phone)
    }

    func ids(_ round: NotificationRound) -> [String] { round.notifications.map(\.subscriptionID) }

    @Test func changesMadeWhileNothingRanAreReportedAndStayUntilAcknowledged() async throws {
        let f = EngineFixture()
        let (laptop, phone) = try await laptopAndPhone(f)
        try await phone.subscribe(Subscription(id: "db", kind: .database(.private)))
        try await phone.subscribe(Subscription(id: "notes", kind: .zone(zone("notes"))))
        // Nothing runs on the phone while the laptop pushes.
        try laptop.write("notes", "second", #"{"n": 2}"#)
        _ = try await laptop.push()
        // A new process: a fresh workspace handle and notifier.
        let notifier = try f.reopen(phone).notifier()
        let first = try await notifier.pending()
        #expect(ids(first) == ["db", "notes"])
        #expect(first.notifications.allSatisfy { $0.count == 1 && $0.zones == [zone("notes")] })
        // Looking is not acknowledging: the same again, and coalesced with what came since.
        try laptop.write("notes", "third", #"{"n": 3}"#)
        _ = try await laptop.push()
        let second = try await notifier.pending()
        #expect(ids(second) == ["db", "notes"])
        #expect(second.notifications.allSatisfy { $0.count == 2 }, "one notification standing for both changes")
        try await notifier.acknowledge(second)
        #expect(try await notifier.pending().notifications.isEmpty)
        // The cursors are files: another process sees them moved.
        #expect(try await f.reopen(phone).notifier().pending().notifications.isEmpty)
    }

    @Test func aNewSubscriptionStartsNowOrFromTheBeginning() async throws {
        let f = EngineFixture()
        let (_, phone) = try await laptopAndPhone(f)
        try await phone.subscribe(Subscription(id: "now", kind: .database(.private)))
        try await phone.subscribe(Subscription(id: "all", kind: .database(.private), includeOwn: true), from: .beginning)
        let round = try await phone.notifier().pending()
        #expect(ids(round) == ["all"])
        #expect(round.notifications.first?.count == 1)
        // IDs are unique, and an unsubscribed one takes its cursor with it.
        await #expect(throws: RecSyncError.self) { try await phone.subscribe(Subscription(id: "now", kind: .database(.shared))) }
        // A zone subscription needs a zone: in the store, or in the workspace (to push).
        await #expect(throws: RecSyncError.self) { try await phone.subscribe(Subscription(id: "nowhere", kind: .zone(zone("nowhere")))) }
        try await phone.subscribe(Subscription(id: "notes", kind: .zone(zone("notes"))))
        try phone.write("local", "x", "{}")
        try await phone.subscribe(Subscription(id: "local", kind: .zone(zone("local"))))
        try phone.unsubscribe("all")
        #expect(try FileIO.info(phone.workspace.subscriptionCursorPath("all")) == nil)
        #expect(throws: RecSyncError.self) { try phone.unsubscribe("all") }
    }

    @Test func aDeliveryThatDidNotFinishIsReportedAgain() async throws {
        let f = EngineFixture()
        let (laptop, phone) = try await laptopAndPhone(f)
        try await phone.subscribe(Subscription(id: "db", kind: .database(.private)))
        try await phone.subscribe(Subscription(id: "quiet", kind: .database(.shared)))
        try laptop.write("notes", "second", "{}")
        _ = try await laptop.push()
        let notifier = phone.notifier()
        // The notification could not be written (a killed process, a closed pipe).
        let got = Delivered()
        let failed = try await notifier.deliverRound(notify: { n in
            got.items.withLock { $0.append(n) }; return false
        })
        #expect(got.take().map(\.subscriptionID) == ["db"])
        #expect(failed.undelivered == ["db"])
        // The pull that comes first failed: nothing is delivered, nothing acknowledged.
        let unprepared = try await notifier.deliverRound(
            prepare: { _ in false },
            notify: { n in
                got.items.withLock { $0.append(n) }; return true
            })
        #expect(got.take().isEmpty)
        #expect(unprepared.undelivered == ["db"])
        // Delivered: acknowledged, and the next round is quiet.
        try laptop.write("notes", "third", "{}")
        _ = try await laptop.push()
        _ = try await notifier.deliverRound(notify: { n in
            got.items.withLock { $0.append(n) }; return true
        })
        let delivered = got.take()
        #expect(delivered.map(\.subscriptionID) == ["db"] && delivered.first?.count == 2, "the burst was never split: \(delivered)")
        _ = try await notifier.deliverRound(notify: { n in
            got.items.withLock { $0.append(n) }; return true
        })
        #expect(got.take().isEmpty)
    }

    @Test func thePullRunsBeforeDeliveryAndAtTheFirstRoundEvenWithNothingPending() async throws {
        let f = EngineFixture()
        let (_, phone) = try await laptopAndPhone(f)
        try await phone.subscribe(Subscription(id: "db", kind: .database(.private)))
        let calls = Atomic<Int>(0)
        let notifier = phone.notifier()
        _ = try await notifier.deliverRound(
            first: true,
            prepare: { _ in
                calls.add(1, ordering: .relaxed); return true
            }, notify: { _ in true })
        #expect(calls.load(ordering: .relaxed) == 1, "watch --pull pulls at start")
        _ = try await notifier.deliverRound(
            prepare: { _ in
                calls.add(1, ordering: .relaxed); return true
            }, notify: { _ in true })
        #expect(calls.load(ordering: .relaxed) == 1, "and later only before a notification")
        // A notification is delivered after the pull, so what it prompts for is there.
        let order = Mutex<[String]>([])
        let other = try f.device("tablet")
        try other.write("notes", "new", "{}")
        _ = try await other.push()
        _ = try await notifier.deliverRound(
            prepare: { _ in
                order.withLock { $0.append("pull") }; return true
            },
            notify: { n in
                order.withLock { $0.append(n.subscriptionID) }; return true
            })
        #expect(order.withLock { $0 } == ["pull", "db"])
    }

    @Test func ownPushesDoNotNotifyTheWorkspaceThatMadeThem() async throws {
        let f = EngineFixture()
        let (laptop, phone) = try await laptopAndPhone(f)
        try await phone.subscribe(Subscription(id: "db", kind: .database(.private)))
        try await laptop.subscribe(Subscription(id: "db", kind: .database(.private)))
        try phone.write("notes", "from-phone", "{}")
        _ = try await phone.push()
        #expect(try await phone.notifier().pending().notifications.isEmpty)
        #expect(ids(try await phone.notifier(includeOwn: true).pending()) == ["db"])
        #expect(ids(try await laptop.notifier().pending()) == ["db"])
    }

    @Test func aRewrittenHistoryGivesOneResetAndStartsAgainFromTheHead() async throws {
        let f = EngineFixture()
        let (laptop, phone) = try await laptopAndPhone(f)
        try await phone.subscribe(Subscription(id: "db", kind: .database(.private)))
        try laptop.write("notes", "second", "{}")
        _ = try await laptop.push()
        f.storage.rewriteHistory()
        let notifier = phone.notifier()
        let round = try await notifier.pending()
        #expect(round.notifications.map(\.reset) == [true])
        try await notifier.acknowledge(round)
        #expect(try await notifier.pending().notifications.isEmpty)
    }

    @Test func aNotificationListsAtMostAHundredZones() throws {
        let zones = try (0..<150).map { try ZoneID(zoneName: "z\($0)", ownerName: "alice") }
        let n = SubscriptionNotification(
            subscriptionID: "db", kind: "database", scope: .private, zone: nil, count: 150, zones: zones, records: [], reset: false)
        guard case .object(let o) = n.json, case .array(let listed) = o["zones"] else { Issue.record("not an object"); return }
        #expect(listed.count == 100)
        #expect(o["zonesOmitted"] == JSONValue.int(50))
    }

    @Test func aDamagedCursorResetsOnlyItsOwnSubscription() async throws {
        let f = EngineFixture()
        let (laptop, phone) = try await laptopAndPhone(f)
        try await phone.subscribe(Subscription(id: "db", kind: .database(.private)))
        try await phone.subscribe(Subscription(id: "notes", kind: .zone(zone("notes"))))
        try laptop.write("notes", "second", "{}")
        _ = try await laptop.push()
        try writeFile(phone.workspace.subscriptionCursorPath("notes"), "{not json")
        let notifier = phone.notifier()
        let round = try await notifier.pending()
        #expect(round.notifications.map(\.subscriptionID).sorted() == ["db", "notes"])
        #expect(round.notifications.first { $0.subscriptionID == "db" }?.count == 1)
        #expect(round.notifications.first { $0.subscriptionID == "notes" }?.reset == true)
        #expect(round.warnings.count == 1)
        try await notifier.acknowledge(round)
        #expect(try await notifier.pending().notifications.isEmpty, "the cursor file is whole again")
        // A directory where the cursor file goes: reset once, then a file again.
        try FileIO.remove(phone.workspace.subscriptionCursorPath("notes"))
        try FileManager.default.createDirectory(
            atPath: phone.workspace.subscriptionCursorPath("notes") + "/inside", withIntermediateDirectories: true)
        let again = try await notifier.pending()
        #expect(again.notifications.map(\.reset) == [true])
        try await notifier.acknowledge(again)
        #expect(try await notifier.pending().notifications.isEmpty)
        #expect(try FileIO.info(phone.workspace.subscriptionCursorPath("notes"))?.isRegular == true)
        // A link there, to a file outside: never read or written through; replaced by a file.
        let outside = f.directory.file("outside.txt")
        try writeFile(outside, "not a cursor")
        try FileIO.remove(phone.workspace.subscriptionCursorPath("notes"))
        try FileManager.default.createSymbolicLink(atPath: phone.workspace.subscriptionCursorPath("notes"), withDestinationPath: outside)
        let linked = try await notifier.pending()
        #expect(linked.notifications.map(\.reset) == [true])
        try await notifier.acknowledge(linked)
        #expect(try String(contentsOfFile: outside, encoding: .utf8) == "not a cursor")
        #expect(try FileIO.info(phone.workspace.subscriptionCursorPath("notes"))?.isRegular == true)
    }

    @Test func subscriptionsFromTheFirstReleaseStillReadAndStartNow() async throws {
        let f = EngineFixture()
        let (laptop, phone) = try await laptopAndPhone(f)
        let legacy = #"""
            [{"id": "db", "kind": {"database": {"_0": "private"}}},
             {"id": "urgent", "kind": {"query": {"scope": "private", "recordType": "Task", "field": "urgent", "equals": "true"}}}]
            """#
        try writeFile("\(phone.workspace.stateDir)/subscriptions.json", legacy)
        let subscriptions = try phone.workspace.subscriptions()
        #expect(subscriptions.count == 2)
        guard case .query(let q) = subscriptions[1].kind else { Issue.record("not a query"); return }
        #expect(q.conditions == [FieldCondition(field: "urgent", test: .equals("true"))] && q.firesOn == [.created, .updated])
        // No cursor yet: the first look starts them at the head.
        let notifier = phone.notifier()
        try await notifier.acknowledge(try await notifier.pending())
        try laptop.write("notes", "task", #"{"urgent": true}"#)
        try laptop.write("notes", "note", #"{"urgent": false}"#)
        _ = try await laptop.push()
        // The records are not Tasks: only the database subscription, and only for what came after.
        let round = try await notifier.pending()
        #expect(ids(round) == ["db"])
        #expect(round.notifications.first?.count == 2)
    }

    @Test func watchPausesLongerAndLongerWhileANotificationCannotBeDelivered() async throws {
        let f = EngineFixture()
        let (laptop, phone) = try await laptopAndPhone(f)
        try await phone.subscribe(Subscription(id: "db", kind: .database(.private)))
        try laptop.write("notes", "second", "{}")
        _ = try await laptop.push()
        // The loop looks every 50 ms or so; the hook always fails.
        var loop = WatchLoop { _ in
            try? await Task.sleep(nanoseconds: 50_000_000); return false
        }
        loop.period = 0.05
        loop.settle = 0.01
        let attempts = Atomic<Int>(0)
        let stop = Atomic<Bool>(false)
        let task = Task(executorPreference: TestThreads.current) {
            await loop.run(
                notifier: phone.notifier(), shouldStop: { stop.load(ordering: .relaxed) }, onError: { _, _ in },
                notify: { _ in
                    attempts.add(1, ordering: .relaxed); return false
                })
        }
        try await Task.sleep(nanoseconds: 2_500_000_000)
        stop.store(true, ordering: .relaxed)
        await task.value
        // Pauses of 0.5, 1, 2 s: at most four attempts in 2.5 s (without them, one every ~100 ms).
        let n = attempts.load(ordering: .relaxed)
        #expect(n >= 1 && n <= 4, "\(n) attempts")
        #expect(try await phone.notifier().pending().notifications.map(\.subscriptionID) == ["db"], "still pending")
    }

    /// One subscription whose command keeps failing pauses alone: the others' notifications
    /// keep coming at once (one back-off shared by all would hold them for up to 30 s).
    @Test func aFailingSubscriptionDoesNotHoldBackAnother() async throws {
        let f = EngineFixture()
        let (laptop, phone) = try await laptopAndPhone(f)
        try await phone.subscribe(Subscription(id: "broken", kind: .database(.private)))
        try await phone.subscribe(Subscription(id: "fine", kind: .zone(zone("notes"))))
        try laptop.write("notes", "second", "{}")
        _ = try await laptop.push()
        var loop = WatchLoop { _ in
            try? await Task.sleep(nanoseconds: 50_000_000); return false
        }
        loop.period = 0.05
        loop.settle = 0.01
        let fine = Mutex<[Date]>([])
        let stop = Atomic<Bool>(false)
        let task = Task(executorPreference: TestThreads.current) {
            await loop.run(
                notifier: phone.notifier(), shouldStop: { stop.load(ordering: .relaxed) }, onError: { _, _ in },
                notify: { n in
                    if n.subscriptionID == "fine" { fine.withLock { $0.append(Date()) } }
                    return n.subscriptionID == "fine"
                })
        }
        // Long enough for a shared back-off to have grown to 4 s (0.5 + 1 + 2).
        try await Task.sleep(nanoseconds: 6_000_000_000)
        try laptop.write("notes", "third", "{}")
        _ = try await laptop.push()
        let pushed = Date()
        while fine.withLock({ $0.count }) < 2, Date().timeIntervalSince(pushed) < 30 { try await Task.sleep(nanoseconds: 20_000_000) }
        stop.store(true, ordering: .relaxed)
        await task.value
        let second = try #require(fine.withLock { $0.count >= 2 ? $0[1] : nil })
        #expect(second.timeIntervalSince(pushed) < 4, "the healthy subscription waited \(second.timeIntervalSince(pushed)) s")
        #expect(try await phone.notifier().pending().notifications.map(\.subscriptionID) == ["broken"])
    }

    @Test func watchReportsTheBacklogAtStart() async throws {
        let f = EngineFixture()
        let (laptop, phone) = try await laptopAndPhone(f)
        try await phone.subscribe(Subscription(id: "db", kind: .database(.private)))
        try laptop.write("notes", "before", "{}")
        _ = try await laptop.push()
        var loop = WatchLoop { _ in
            try? await Task.sleep(nanoseconds: 20_000_000); return false
        }
        loop.period = 0.05
        let got = Delivered()
        let stop = Atomic<Bool>(false)
        let task = Task(executorPreference: TestThreads.current) {
            await loop.run(
                notifier: phone.notifier(), shouldStop: { stop.load(ordering: .relaxed) }, onError: { _, _ in },
                notify: { n in
                    got.items.withLock { $0.append(n) }; return true
                })
        }
        let started = Date()
        while got.all.isEmpty, Date().timeIntervalSince(started) < 30 { try await Task.sleep(nanoseconds: 20_000_000) }
        stop.store(true, ordering: .relaxed)
        await task.value
        #expect(got.all.map(\.subscriptionID) == ["db"])
        #expect(got.all.first?.count == 1)
    }

    /// The pull at start (`watch --pull`) failed with nothing pending; it must be
    /// tried again, not forgotten until the next notification.
    @Test func aFailedPullAtStartIsTriedAgain() async throws {
        let f = EngineFixture()
        let (_, phone) = try await laptopAndPhone(f)
        try await phone.subscribe(Subscription(id: "db", kind: .database(.private)))
        let once = try await phone.notifier().deliverRound(first: true, prepare: { _ in false }, notify: { _ in true })
        #expect(once.prepareFailed, "the round must say its pull failed")
        var loop = WatchLoop { _ in
            try? await Task.sleep(nanoseconds: 20_000_000); return false
        }
        loop.period = 0.05
        loop.settle = 0.01
        let calls = Atomic<Int>(0)
        let stop = Atomic<Bool>(false)
        let task = Task(executorPreference: TestThreads.current) {
            await loop.run(
                notifier: phone.notifier(), shouldStop: { stop.load(ordering: .relaxed) }, onError: { _, _ in },
                prepare: { _ in calls.add(1, ordering: .relaxed).oldValue > 0 }, notify: { _ in true })
        }
        let started = Date()
        while calls.load(ordering: .relaxed) < 2, Date().timeIntervalSince(started) < 30 { try await Task.sleep(nanoseconds: 20_000_000) }
        try await Task.sleep(nanoseconds: 300_000_000)
        stop.store(true, ordering: .relaxed)
        await task.value
        #expect(calls.load(ordering: .relaxed) == 2, "failed once, tried again, then only before notifications")
    }

    /// A subscription removed and made again (same ID) while a round was being
    /// delivered keeps its own new cursor: the old round's acknowledgement must not move it.
    @Test func anAcknowledgementDoesNotMoveTheCursorOfASubscriptionMadeAgain() async throws {
        let f = EngineFixture()
        let (laptop, phone) = try await laptopAndPhone(f)
        try await phone.subscribe(Subscription(id: "db", kind: .database(.private)))
        try laptop.write("notes", "second", "{}")
        _ = try await laptop.push()
        let notifier = phone.notifier()
        let round = try await notifier.pending()
        #expect(ids(round) == ["db"])
        // Meanwhile (another process): unsubscribe, and subscribe again from the beginning.
        let other = try f.reopen(phone)
        try other.unsubscribe("db")
        try await other.subscribe(Subscription(id: "db", kind: .database(.private), includeOwn: true), from: .beginning)
        try await notifier.acknowledge(round)
        let after = try await phone.notifier().pending()
        #expect(after.notifications.first?.count == 2, "the new subscription reports everything since the beginning: \(after.notifications)")
        // Unsubscribed while the round was out: its cursor does not come back.
        let again = try await notifier.pending()
        try other.unsubscribe("db")
        try await notifier.acknowledge(again)
        #expect(try FileIO.info(phone.workspace.subscriptionCursorPath("db")) == nil)
    }

    /// A round that found nothing new writes no cursor (watch looks every few
    /// seconds; each write is an fsync).
    @Test func aQuietRoundRewritesNoCursor() async throws {
        let f = EngineFixture()
        let (_, phone) = try await laptopAndPhone(f)
        try await phone.subscribe(Subscription(id: "db", kind: .database(.private)))
        let path = phone.workspace.subscriptionCursorPath("db")
        let before = try #require(FileIO.info(path)?.stamp)
        let delivery = try await phone.notifier().deliverRound(notify: { _ in true })
        #expect(delivery.round.notifications.isEmpty)
        let after = try #require(FileIO.info(path)?.stamp)
        #expect(after == before, "the cursor file was rewritten: \(before) -> \(after)")
    }
}
