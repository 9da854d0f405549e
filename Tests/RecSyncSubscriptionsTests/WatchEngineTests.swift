import Foundation
import RecSyncEngine
import RecSyncEngineFixtures
import RecSyncModel
import RecSyncStore
import RecSyncSubscriptions
import RecSyncTestSupport
import RecSyncWorkspace
import Synchronization
import Testing

/// `SyncEngine.watch`: the delivery policy behind `recsync watch`, on an in-memory store.
@Suite struct WatchEngineTests {
    final class Log: Sendable {
        let delivered = Mutex<[String]>([])
        let events = Mutex<[String]>([])
        var ids: [String] { delivered.withLock { $0 } }
        var names: [String] { events.withLock { $0 } }

        func record(_ event: WatchEvent) {
            let name =
                switch event {
                case .storeWarning: "warning"
                case .watching: "watching"
                case .pulled: "pulled"
                case .pullFailed: "pullFailed"
                case .lookFailed: "lookFailed"
                case .recovered: "recovered"
                case .nothingNew: "nothingNew"
                case .stopped: "stopped"
                }
            events.withLock { $0.append(name) }
        }
    }

    /// A phone subscribed to alice's private database, and a laptop that just pushed a change.
    func subscribedPhone(_ f: EngineFixture) async throws -> SyncEngine {
        let laptop = try f.device("laptop"), phone = try f.device("phone")
        try await phone.subscribe(Subscription(id: "db", kind: .database(.private)))
        try laptop.write("notes", "r", #"{"n": 1}"#)
        _ = try await laptop.push()
        return phone
    }

    @Test func onceDeliversWhatIsPendingAndMovesTheCursor() async throws {
        let f = EngineFixture()
        defer { withExtendedLifetime(f) {} }
        let phone = try await subscribedPhone(f)
        let log = Log()
        try await phone.watch(
            WatchOptions(once: true), shouldStop: { false },
            deliver: { n in
                log.delivered.withLock { $0.append(n.subscriptionID) }
                return .delivered
            }, events: log.record)
        #expect(log.ids == ["db"])
        try await phone.watch(WatchOptions(once: true), shouldStop: { false }, deliver: { _ in .delivered }, events: log.record)
        #expect(log.names == ["nothingNew"])
    }

    @Test func onceWithAFailedDeliveryFailsAndKeepsItPending() async throws {
        let f = EngineFixture()
        defer { withExtendedLifetime(f) {} }
        let phone = try await subscribedPhone(f)
        await #expect(throws: RecSyncError.notDelivered(["db"])) {
            try await phone.watch(WatchOptions(once: true), shouldStop: { false }, deliver: { _ in .failed }, events: { _ in })
        }
        #expect(try await phone.notifier().pending().notifications.map(\.subscriptionID) == ["db"])
    }

    @Test func nothingToWatchIsAnError() async throws {
        let f = EngineFixture()
        defer { withExtendedLifetime(f) {} }
        let phone = try f.device("phone")
        await #expect(throws: RecSyncError.self) {
            try await phone.watch(WatchOptions(once: true), shouldStop: { false }, deliver: { _ in .delivered }, events: { _ in })
        }
    }

    @Test func aReceiverThatIsGoneStopsTheLoopAndFails() async throws {
        let f = EngineFixture()
        defer { withExtendedLifetime(f) {} }
        let phone = try await subscribedPhone(f)
        let log = Log()
        await #expect(throws: RecSyncError.notDelivered(["db"])) {
            try await phone.watch(WatchOptions(), shouldStop: { false }, deliver: { _ in .receiverGone }, events: log.record)
        }
        #expect(log.names == ["watching", "stopped"])
        #expect(try await phone.notifier().pending().notifications.count == 1, "still pending")
    }

    @Test func pullWithNoSubscriptionPullsAtStartAndStopsWhenAsked() async throws {
        let f = EngineFixture()
        defer { withExtendedLifetime(f) {} }
        let laptop = try f.device("laptop"), phone = try f.device("phone")
        try laptop.write("notes", "r", #"{"n": 1}"#)
        _ = try await laptop.push()
        let log = Log()
        try await phone.watch(
            WatchOptions(pull: true), shouldStop: { log.names.contains("pulled") }, deliver: { _ in .delivered }, events: log.record)
        #expect(log.names == ["watching", "pulled", "stopped"])
        #expect(try phone.fields("notes", "r") == ["n": .int64(1)])
    }

    @Test func theDeliveryLockIsHeldWhileWatching() async throws {
        let f = EngineFixture()
        defer { withExtendedLifetime(f) {} }
        let phone = try await subscribedPhone(f)
        let held = Mutex<Bool?>(nil)
        try await phone.watch(
            WatchOptions(once: true), shouldStop: { false },
            deliver: { _ in
                held.withLock { $0 = (try? phone.deliveryLock(purpose: "another")) == nil }
                return .delivered
            }, events: { _ in })
        #expect(held.withLock { $0 } == true)
    }

    @Test func notificationsMovesTheCursorsOnlyWhenAcknowledgedAndShown() async throws {
        let f = EngineFixture()
        defer { withExtendedLifetime(f) {} }
        let phone = try await subscribedPhone(f)
        #expect(try await phone.notifications { _ in }.notifications.count == 1)
        await #expect(throws: RecSyncError.notDelivered(["db"])) {
            try await phone.notifications(acknowledge: true) { round throws(RecSyncError) in
                throw .notDelivered(round.notifications.map(\.subscriptionID))
            }
        }
        #expect(try await phone.notifications(acknowledge: true) { _ in }.notifications.count == 1)
        #expect(try await phone.notifications { _ in }.notifications.isEmpty)
    }
}
