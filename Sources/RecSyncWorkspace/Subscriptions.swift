import Foundation
import RecSyncModel
import RecSyncSystem

/// Where a subscription's notifications have been delivered up to: a database token of its
/// scope (nil: the store's beginning, so everything ever committed is still to report).
public struct SubscriptionCursor: Sendable, Hashable, Codable {
    package var scope: DatabaseScope
    package var token: ServerChangeToken?

    package init(scope: DatabaseScope, token: ServerChangeToken?) {
        self.scope = scope
        self.token = token
    }
}

/// What a subscription's cursor file held when a notification was made from it.
package enum SubscriptionCursorSeen: Sendable, Hashable {
    /// No cursor file.
    case none
    /// A file that could not be read or decoded.
    case unreadable
    case cursor(SubscriptionCursor)
}

/// One cursor to move once its notification is delivered (`moveSubscriptionCursors`).
public struct SubscriptionCursorMove: Sendable, Hashable {
    /// The subscription as it was when the notification was made.
    package var subscription: Subscription
    package var seen: SubscriptionCursorSeen
    package var cursor: SubscriptionCursor

    package init(subscription: Subscription, seen: SubscriptionCursorSeen, cursor: SubscriptionCursor) {
        self.subscription = subscription
        self.seen = seen
        self.cursor = cursor
    }
}

extension Workspace {
    var subscriptionsPath: String { "\(stateDir)/subscriptions.json" }

    /// The cursor file of one subscription: one file each, so acknowledging one never
    /// rewrites another's (a `subscribe` while `watch` runs loses nothing).
    package func subscriptionCursorPath(_ id: String) -> String { "\(stateDir)/subscriptions/\(NameEscaping.escape(id)).cursor" }

    package func subscriptions() throws(RecSyncError) -> [Subscription] {
        guard let bytes = try FileIO.read(subscriptionsPath) else { return [] }
        let all: [Subscription]
        do { all = try JSONDecoder().decode([Subscription].self, from: Data(bytes)) } catch {
            throw .fileSystem(path: subscriptionsPath, message: "is damaged (\(error)); fix it, or delete it and subscribe again")
        }
        var seen = Set<String>()
        for s in all where !seen.insert(s.id).inserted {
            throw .fileSystem(path: subscriptionsPath, message: "holds two subscriptions with the ID '\(s.id)'; remove one")
        }
        return all
    }

    package func saveSubscriptions(_ subscriptions: [Subscription]) throws(RecSyncError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data: Data
        do { data = try encoder.encode(subscriptions) } catch {
            throw .internalError("cannot encode the subscriptions: \(error)")
        }
        try FileIO.writeAtomically(subscriptionsPath, Array(data) + [10])
    }

    /// Adds a subscription that reports changes after `cursor`. The cursor is saved first,
    /// so a subscription is never without one.
    package func addSubscription(_ subscription: Subscription, cursor: SubscriptionCursor) throws(RecSyncError) {
        try Subscription.validateID(subscription.id)
        try withLock(purpose: "subscribe", file: "subscriptions.lock", wait: true) { () throws(RecSyncError) in
            var all = try subscriptions()
            guard !all.contains(where: { $0.id == subscription.id }) else {
                throw .alreadyExists("a subscription '\(subscription.id)' exists already").suggesting(.chooseAnotherSubscriptionID)
            }
            try saveSubscriptionCursor(subscription.id, cursor)
            all.append(subscription)
            try saveSubscriptions(all)
        }
    }

    /// Removes a subscription and its cursor.
    package func removeSubscription(_ id: String) throws(RecSyncError) {
        try withLock(purpose: "unsubscribe", file: "subscriptions.lock", wait: true) { () throws(RecSyncError) in
            var all = try subscriptions()
            guard all.contains(where: { $0.id == id }) else {
                throw .notFound("no subscription '\(id)'").suggesting(.listSubscriptions)
            }
            all.removeAll { $0.id == id }
            try saveSubscriptions(all)
            let path = subscriptionCursorPath(id)
            if try FileIO.info(path) != nil { try FileIO.remove(path) }
        }
    }

    /// A subscription's cursor; nil when it has none (made by the first release, which kept
    /// none), and then it starts from the store's head.
    package func subscriptionCursor(_ id: String) throws(RecSyncError) -> SubscriptionCursor? {
        let path = subscriptionCursorPath(id)
        guard let bytes = try FileIO.read(path, limit: 64 * 1024) else { return nil }
        do { return try JSONDecoder().decode(SubscriptionCursor.self, from: Data(bytes)) } catch {
            throw .fileSystem(
                path: path, message: "is damaged (\(error)); the subscription is reset (told to pull everything) and starts again from now")
        }
    }

    /// Moves cursors once their notifications are delivered, under the lock `subscribe` and
    /// `unsubscribe` take: each only if its subscription is still the one the notification
    /// was made for and its cursor file still holds what was read then. So a subscription
    /// removed meanwhile gets no cursor back, and one removed and made again (same ID, new
    /// cursor) keeps its own. A cursor already where it should be is not written again.
    package func moveSubscriptionCursors(_ moves: [SubscriptionCursorMove]) throws(RecSyncError) {
        guard !moves.isEmpty else { return }
        try withLock(purpose: "acknowledge", file: "subscriptions.lock", wait: true) { () throws(RecSyncError) in
            var current: [String: Subscription] = [:]
            for s in try subscriptions() { current[s.id] = s }
            for move in moves {
                let id = move.subscription.id
                guard current[id] == move.subscription else { continue }
                let now: SubscriptionCursorSeen
                // An unreadable file was reported when the notification was made (a reset): it
                // is replaced only if it was unreadable then too.
                do { now = try subscriptionCursor(id).map { .cursor($0) } ?? .none } catch { now = .unreadable }
                guard now == move.seen, now != .cursor(move.cursor) else { continue }
                try saveSubscriptionCursor(id, move.cursor)
            }
        }
    }

    package func saveSubscriptionCursor(_ id: String, _ cursor: SubscriptionCursor) throws(RecSyncError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data: Data
        do { data = try encoder.encode(cursor) } catch {
            throw .internalError("cannot encode a subscription cursor: \(error)")
        }
        let path = subscriptionCursorPath(id)
        try FileIO.makeDirectories("\(stateDir)/subscriptions")
        // Something else there (a directory, a FIFO: a hand edit) was reported as a damaged
        // cursor and reset; it goes, or no cursor could ever be saved again.
        if let info = try FileIO.info(path), !info.isRegular { try FileIO.remove(path) }
        try FileIO.writeAtomically(path, Array(data) + [10])
    }
}
