import Foundation
import RecSyncEngine
import RecSyncModel
import RecSyncStore
import RecSyncWorkspace
import Synchronization

/// A prompt to fetch, for one subscription, standing for every matching change since its
/// previous notification (CloudKit coalesces pushes the same way). Like CloudKit's silent
/// push it carries no record data: pull to get it.
public struct SubscriptionNotification: Sendable, Hashable {
    public var subscriptionID: String
    /// `database`, `zone` or `query`.
    public var kind: String
    public var scope: DatabaseScope
    /// The zone of a zone subscription (or of a query subscription limited to one zone).
    public var zone: ZoneID?
    /// How many changes it stands for (`SubscriptionMatch.count`); 0 when `reset`.
    public var count: Int
    /// The zones that changed (the JSON lists at most `listLimit` of them).
    public var zones: [ZoneID]
    /// Query subscriptions: the matching record changes, at most `SubscriptionCheck.recordListLimit`.
    public var records: [RecordChangeNotice]
    /// The subscription's cursor could not be used (the store's history was rewritten, the
    /// workspace now points at another store, or the cursor file is damaged): anything may
    /// have changed, so pull.
    public var reset: Bool

    public init(
        subscriptionID: String, kind: String, scope: DatabaseScope, zone: ZoneID?, count: Int, zones: [ZoneID], records: [RecordChangeNotice],
        reset: Bool
    ) {
        self.subscriptionID = subscriptionID
        self.kind = kind
        self.scope = scope
        self.zone = zone
        self.count = count
        self.zones = zones
        self.records = records
        self.reset = reset
    }

    /// The most zones a notification's JSON lists (as records: `SubscriptionCheck.recordListLimit`),
    /// so that a line stays small enough for a command's environment.
    public static let listLimit = SubscriptionCheck.recordListLimit

    /// The notification as one JSON object (the line `recsync watch` prints; version 1).
    public var json: JSONValue {
        var o: [String: JSONValue] = [
            "version": .int(1), "subscriptionID": .string(subscriptionID), "kind": .string(kind),
            "scope": .string(scope.rawValue), "count": .int(Int64(count)),
            "zones": .array(zones.prefix(Self.listLimit).map { .string($0.description) }),
        ]
        if zones.count > Self.listLimit { o["zonesOmitted"] = .int(Int64(zones.count - Self.listLimit)) }
        if let zone { o["zone"] = .string(zone.description) }
        if kind == "query" {
            o["records"] = .array(
                records.map { r in
                    .object([
                        "recordName": .string(r.recordID.recordName), "zone": .string(r.recordID.zoneID.zoneName),
                        "owner": .string(r.recordID.zoneID.ownerName), "reason": .string(r.reason.rawValue),
                    ])
                })
            if count > records.count { o["recordsOmitted"] = .int(Int64(count - records.count)) }
        }
        if reset { o["reset"] = .bool(true) }
        return .object(o)
    }
}

/// One look at the store for every subscription: the notifications it gives, and the
/// cursors to save once they are delivered.
public struct NotificationRound: Sendable {
    public var notifications: [SubscriptionNotification]
    /// The new cursor of every subscription looked at, notified or not.
    public var cursors: [String: SubscriptionCursor]
    public var warnings: [StoreWarning]
    /// Each subscription looked at as it was then, and what its cursor file held: a cursor
    /// moves only if both are unchanged when it is acknowledged.
    var looked: [String: (subscription: Subscription, seen: SubscriptionCursorSeen)] = [:]

    init(notifications: [SubscriptionNotification], cursors: [String: SubscriptionCursor], warnings: [StoreWarning]) {
        self.notifications = notifications
        self.cursors = cursors
        self.warnings = warnings
    }
}

/// Subscriptions with durable cursors: what changed since each subscription's cursor, as
/// coalesced notifications, and acknowledgement that moves the cursor (`recsync watch`,
/// `recsync notifications`).
///
/// Delivery is at least once: a cursor moves only after its notification was delivered, so a
/// process killed before that reports the same changes (and any since) on its next look.
public actor SubscriptionNotifier {
    enum Source {
        /// The workspace's subscriptions (re-read on every look) and cursor files.
        case workspace(Workspace)
        /// Fixed subscriptions with cursors in memory, starting at the head.
        case memory([Subscription])
    }

    public let store: any RemoteStore
    let source: Source
    let includeOwn: Bool
    var memoryCursors: [String: SubscriptionCursor] = [:]
    /// Subscriptions whose last delivery failed, and until when they are left alone: a
    /// `Backoff` per subscription, so one failing command does not hold back the others'
    /// notifications.
    var retryAt: [String: (until: Date, backoff: Backoff)] = [:]

    /// The workspace's subscriptions; with `includeOwn`, each reports this workspace's own
    /// changes too.
    public init(workspace: Workspace, store: any RemoteStore, includeOwn: Bool = false) {
        self.store = store
        self.source = .workspace(workspace)
        self.includeOwn = includeOwn
    }

    /// Subscriptions kept only while this notifier lives, starting at the store's head.
    public init(subscriptions: [Subscription], store: any RemoteStore, includeOwn: Bool = false) {
        self.store = store
        self.source = .memory(subscriptions)
        self.includeOwn = includeOwn
    }

    func subscriptions() throws(RecSyncError) -> [Subscription] {
        switch source {
        case .workspace(let ws): try ws.subscriptions()
        case .memory(let list): list
        }
    }

    func cursor(_ id: String) throws(RecSyncError) -> SubscriptionCursor? {
        switch source {
        case .workspace(let ws): try ws.subscriptionCursor(id)
        case .memory: memoryCursors[id]
        }
    }

    /// What is pending for each subscription since its cursor; moves nothing.
    ///
    /// A workspace subscription whose cursor is missing, unreadable or for another database
    /// gets a reset (pull everything) and starts again from the head; one kept in memory
    /// starts at the head the first time it is looked at.
    public func pending() async throws(RecSyncError) -> NotificationRound {
        // One look at the store for every subscription's check.
        try await SyncEngine.inOneOperation(on: store) { () async throws(RecSyncError) -> NotificationRound in try await pendingInOneOperation() }
    }

    private func pendingInOneOperation() async throws(RecSyncError) -> NotificationRound {
        let user = store.userRecordName
        var round = NotificationRound(notifications: [], cursors: [:], warnings: [])
        // Subscriptions that share a scope and a cursor are checked together.
        struct Group: Hashable { var scope: DatabaseScope; var token: ServerChangeToken? }
        var groups: [Group: [Subscription]] = [:]
        var order: [Group] = []
        var heads: [DatabaseScope: ServerChangeToken] = [:]
        var damaged: [(Subscription, DatabaseScope)] = []
        for var s in try subscriptions() {
            let scope = s.scope(forUser: user)
            guard scope != .public else {
                // Only a hand edit makes one; it must not stop the others.
                round.warnings.append(
                    StoreWarning(
                        path: ".recsync/subscriptions.json",
                        message: "subscription '\(s.id)' looks at the public database, which recsync does not have; skipped (unsubscribe it)"))
                continue
            }
            let asSaved = s
            if includeOwn { s.includeOwn = true }
            let saved: SubscriptionCursor?
            do { saved = try cursor(s.id) } catch {
                // One unreadable cursor must not stop the others: this subscription is told
                // to pull everything, and starts again from the head.
                round.warnings.append(
                    StoreWarning(path: ".recsync/subscriptions", message: "\(error.message); subscription '\(s.id)' starts again from now"))
                round.looked[s.id] = (asSaved, .unreadable)
                damaged.append((s, scope))
                continue
            }
            round.looked[s.id] = (asSaved, saved.map { .cursor($0) } ?? .none)
            guard let cursor = saved else {
                if case .memory = source {
                    // Kept in memory: it starts at the head the first time it is looked at.
                    if heads[scope] == nil { heads[scope] = try await store.currentDatabaseToken(scope: scope) }
                    round.cursors[s.id] = SubscriptionCursor(scope: scope, token: heads[scope])
                    continue
                }
                // Deleted, or made by the first release, which kept none: what it missed is
                // unknown, so it is told to pull everything (a reset) and starts from now.
                round.warnings.append(
                    StoreWarning(path: ".recsync/subscriptions", message: "subscription '\(s.id)' has no cursor; it starts again from now"))
                damaged.append((s, scope))
                continue
            }
            guard cursor.scope == scope else {
                // The subscription was edited by hand to another database: its cursor says
                // nothing about that one.
                round.warnings.append(
                    StoreWarning(
                        path: ".recsync/subscriptions",
                        message:
                            """
                            subscription '\(s.id)' now looks at the \(scope.rawValue) database, its cursor at the\
                             \(cursor.scope.rawValue) one; it starts again from now
                            """
                    ))
                damaged.append((s, scope))
                continue
            }
            let group = Group(scope: scope, token: cursor.token)
            if groups[group] == nil { order.append(group) }
            groups[group, default: []].append(s)
        }
        for (s, scope) in damaged {
            if heads[scope] == nil { heads[scope] = try await store.currentDatabaseToken(scope: scope) }
            round.cursors[s.id] = SubscriptionCursor(scope: scope, token: heads[scope])
            round.notifications.append(Self.reset(s, scope: scope))
        }
        for group in order {
            let members = groups[group] ?? []
            do {
                let check = try await store.checkSubscriptions(members, scope: group.scope, since: group.token)
                round.warnings += check.warnings
                for s in members { round.cursors[s.id] = SubscriptionCursor(scope: group.scope, token: check.cursor) }
                for match in check.matches {
                    guard let s = members.first(where: { $0.id == match.subscriptionID }) else { continue }
                    round.notifications.append(
                        Self.notification(s, scope: group.scope, count: match.count, zones: match.zones.sorted(), records: match.records))
                }
            } catch {
                switch error.reason {
                case .changeTokenExpired, .badToken: break
                default: throw error
                }
                // History was rewritten, or the cursor is from another store: say so once,
                // and start again from the head.
                let head = try await store.currentDatabaseToken(scope: group.scope)
                for s in members {
                    round.cursors[s.id] = SubscriptionCursor(scope: group.scope, token: head)
                    round.notifications.append(Self.reset(s, scope: group.scope))
                }
            }
        }
        return round
    }

    /// A notification that the subscription's cursor could not be used: anything may have changed.
    static func reset(_ s: Subscription, scope: DatabaseScope) -> SubscriptionNotification {
        var n = notification(s, scope: scope, count: 0, zones: [], records: [])
        n.reset = true
        return n
    }

    static func notification(_ s: Subscription, scope: DatabaseScope, count: Int, zones: [ZoneID], records: [RecordChangeNotice])
        -> SubscriptionNotification
    {
        var zone: ZoneID?
        switch s.kind {
        case .zone(let z): zone = z
        case .query(let q): zone = q.zone
        case .database: break
        }
        return SubscriptionNotification(
            subscriptionID: s.id, kind: s.kind.name, scope: scope, zone: zone, count: count, zones: zones, records: records, reset: false)
    }

    /// Moves the cursors of the given subscriptions (nil: all) to where `round` looked; a
    /// subscription removed, or removed and made again, since the round looked keeps what it
    /// has now (`Workspace.moveSubscriptionCursors`).
    public func acknowledge(_ round: NotificationRound, only ids: Set<String>? = nil) throws(RecSyncError) {
        let chosen = round.cursors.filter { ids?.contains($0.key) ?? true }.sorted { $0.key < $1.key }
        switch source {
        case .workspace(let ws):
            try ws.moveSubscriptionCursors(
                chosen.compactMap { id, cursor in
                    round.looked[id].map { SubscriptionCursorMove(subscription: $0.subscription, seen: $0.seen, cursor: cursor) }
                })
        case .memory:
            for (id, cursor) in chosen { memoryCursors[id] = cursor }
        }
    }

    /// One round: looks, prepares (the `--pull`), delivers each notification, and
    /// acknowledges what was delivered. Subscriptions that matched nothing are acknowledged
    /// first.
    ///
    /// `prepare` runs once before a round's notifications are delivered, so what they prompt
    /// for is already in the workspace (and after the first look whatever it found: `watch
    /// --pull` pulls at start); when it fails nothing is delivered. `notify` returns true once
    /// a notification is delivered (written whole, its command run); only then does its
    /// cursor move. With `pausingFailures` (the watch loop), a subscription whose delivery
    /// failed is left alone until its pause (`retryAt`) is over; without, every pending
    /// notification is tried.
    public func deliverRound(
        first: Bool = false,
        pausingFailures: Bool = false,
        prepare: (@Sendable ([SubscriptionNotification]) async -> Bool)? = nil,
        notify: @Sendable (SubscriptionNotification) async -> Bool
    ) async throws(RecSyncError) -> Delivery {
        let round = try await pending()
        let notified = Set(round.notifications.map(\.subscriptionID))
        try acknowledge(round, only: Set(round.cursors.keys).subtracting(notified))
        if let prepare, first || !round.notifications.isEmpty {
            guard await prepare(round.notifications) else {
                return Delivery(round: round, undelivered: round.notifications.map(\.subscriptionID), prepareFailed: true)
            }
        }
        var undelivered: [String] = []
        for n in round.notifications {
            let id = n.subscriptionID
            if pausingFailures, let retry = retryAt[id], retry.until > Date() {
                undelivered.append(id)  // still pausing after a failure: left for a later round
            } else if await notify(n) {
                retryAt[id] = nil
                try acknowledge(round, only: [id])
            } else {
                var backoff = retryAt[id]?.backoff ?? Backoff()
                retryAt[id] = (Date().addingTimeInterval(backoff.next()), backoff)
                undelivered.append(id)
            }
        }
        return Delivery(round: round, undelivered: undelivered, prepareFailed: false)
    }
}

/// What `deliverRound` did.
public struct Delivery: Sendable {
    public var round: NotificationRound
    /// Subscriptions whose notification was not delivered (their cursors stay).
    public var undelivered: [String]
    /// `prepare` (the `--pull`) failed, so nothing was delivered; with `first`, the pull at
    /// start is still owed even when nothing was pending.
    public var prepareFailed: Bool
}

extension SyncEngine {
    /// Where a new subscription's cursor starts.
    public enum SubscriptionStart: Sendable {
        /// At the store's head: only changes from now on are reported.
        case now
        /// Before the store's first commit: everything in the store is reported once.
        case beginning
    }

    /// Adds a subscription to the workspace (CloudKit's `save(subscription)`), with its cursor
    /// at `start`.
    @discardableResult
    public func subscribe(_ subscription: Subscription, from start: SubscriptionStart = .now) async throws(RecSyncError) -> SubscriptionCursor {
        try Subscription.validateID(subscription.id)
        let scope = subscription.scope(forUser: store.userRecordName)
        try scope.requireSupported(for: "subscribing to the \(scope.rawValue) database")
        if case .query(let q) = subscription.kind {
            try NameRules.validateRecordType(q.recordType)
            _ = try q.matcher()
            guard !q.firesOn.isEmpty else { throw .invalidArguments("a query subscription must fire on at least one of create, update, delete") }
            if let zone = q.zone, (zone.ownerName == store.userRecordName ? DatabaseScope.private : .shared) != q.scope {
                throw .invalidArguments("zone '\(zone)' is not in the \(q.scope.rawValue) database")
            }
        }
        // As CloudKit refuses a subscription to a zone it does not have: the zone must be in
        // the store (shared with this user, for someone else's) or in the workspace, to push.
        var zone: ZoneID?
        if case .zone(let z) = subscription.kind { zone = z }
        if case .query(let q) = subscription.kind { zone = q.zone }
        if let zone, !workspace.hasZoneDirectory(zone),
            try await !store.fetchAllRecordZones(scope: scope).contains(where: { $0.zoneID == zone })
        {
            throw .notFound(
                """
                zone '\(zone)' is neither in the store\(scope == .shared ? " (shared with you)" : "") nor in\
                 this workspace; check the name
                """
            ).suggesting(.listZones)
        }
        let token: ServerChangeToken? =
            switch start {
            case .now: try await store.currentDatabaseToken(scope: scope)
            case .beginning: nil
            }
        let cursor = SubscriptionCursor(scope: scope, token: token)
        try workspace.addSubscription(subscription, cursor: cursor)
        return cursor
    }

    /// Removes a subscription and its cursor.
    public func unsubscribe(_ id: String) throws(RecSyncError) {
        try workspace.removeSubscription(id)
    }

    /// The workspace's subscriptions with their cursors.
    public func notifier(includeOwn: Bool = false) -> SubscriptionNotifier {
        SubscriptionNotifier(workspace: workspace, store: store, includeOwn: includeOwn)
    }

    /// Held while one process delivers the workspace's notifications (`watch`, `watch
    /// --once`, `notifications --ack`), so two never move the same cursors.
    public func deliveryLock(purpose: String) throws(RecSyncError) -> WorkspaceLock {
        do { return try workspace.lock(purpose: purpose, file: "watch.lock") } catch {
            guard case .workspaceLocked(let holder) = error.reason else { throw error }
            throw .invalidArguments(
                """
                another recsync (\(holder)) is delivering this workspace's notifications; stop it first, or look\
                 at them without taking them
                """
            ).suggesting(.lookWithoutAcknowledging)
        }
    }

    /// Runs `body` holding the delivery lock (`deliveryLock(purpose:)`), released when it returns.
    public func withDeliveryLock<T>(purpose: String, _ body: () async throws(RecSyncError) -> T) async throws(RecSyncError) -> T {
        let lock = try deliveryLock(purpose: purpose)
        defer { withExtendedLifetime(lock) {} }
        return try await body()
    }
}

/// The loop behind `recsync watch`: report what is pending since each cursor, then wait for
/// the store to move, let a burst settle, and report again. A store that cannot be reached
/// is retried with back-off; `shouldStop` ends the loop between waits.
public struct WatchLoop: Sendable {
    /// Blocks until the store may have moved or the timeout passes; true if it may have.
    public var waitForChange: @Sendable (_ timeout: Double) async -> Bool
    /// How long a burst must be quiet before it is reported.
    public var settle: Double = 0.2
    /// Look anyway this often, in case a change signal was missed.
    public var period: Double = 5
    /// The pause after a failed look (or pull), growing while failures go on.
    public var backoff = Backoff()

    public init(waitForChange: @escaping @Sendable (_ timeout: Double) async -> Bool) {
        self.waitForChange = waitForChange
    }

    public func run(
        notifier: SubscriptionNotifier,
        shouldStop: @Sendable () -> Bool,
        onError: @Sendable (RecSyncError, _ retryIn: Double) -> Void,
        onRecovered: @Sendable () -> Void = {},
        prepare: (@Sendable ([SubscriptionNotification]) async -> Bool)? = nil,
        notify: @Sendable (SubscriptionNotification) async -> Bool
    ) async {
        var backoff = self.backoff
        var first = true
        var failing = false
        while !shouldStop() {
            do {
                if !first {
                    // After a failure, look again at once; otherwise wait for a change (or
                    // the period, so a missed signal is caught up on).
                    if !failing { _ = await waitForChange(period) }
                    if shouldStop() { return }
                    // Let the burst settle: keep waiting while changes keep coming (bounded).
                    let settleUntil = Date().addingTimeInterval(max(settle * 10, 2))
                    while Date() < settleUntil, await waitForChange(settle), !shouldStop() {}
                }
                let delivery = try await notifier.deliverRound(first: first, pausingFailures: true, prepare: prepare, notify: notify)
                // A pull at start that failed is owed until it works.
                if !delivery.prepareFailed { first = false }
                if delivery.prepareFailed {
                    // The pull failed, so nothing was delivered: try again after a pause that
                    // grows, not at every look. (A notification that failed alone pauses alone:
                    // `SubscriptionNotifier.retryAt`.)
                    failing = true
                    await pause(backoff.next(), shouldStop: shouldStop)
                    continue
                }
                if failing { onRecovered() }
                failing = false
                backoff.reset()
            } catch {
                failing = true
                let seconds = backoff.next()
                onError(error, seconds)
                await pause(seconds, shouldStop: shouldStop)
            }
        }
    }

    private func pause(_ seconds: Double, shouldStop: @Sendable () -> Bool) async {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline, !shouldStop() {
            do { try await Task.sleep(nanoseconds: 100_000_000) } catch { return }
        }
    }
}

/// How `SyncEngine.watch` runs (`recsync watch`'s options).
public struct WatchOptions: Sendable, Hashable {
    /// Deliver what is pending since each cursor, then return (`--once`).
    public var once = false
    /// Pull the workspace at start and before each burst's notifications (`--pull`); with no
    /// subscription, watch both databases.
    public var pull = false
    /// Report this workspace's own changes too.
    public var includeOwn = false
    /// Seconds a burst must be quiet before it is reported.
    public var settle: Double = 0.2

    public init(once: Bool = false, pull: Bool = false, includeOwn: Bool = false, settle: Double = 0.2) {
        self.once = once
        self.pull = pull
        self.includeOwn = includeOwn
        self.settle = settle
    }
}

/// What became of one notification handed to `SyncEngine.watch`'s `deliver`.
public enum NotificationDelivery: Sendable, Hashable {
    /// Delivered: its cursor moves.
    case delivered
    /// Not delivered this time: it stays pending and is tried again after a pause.
    case failed
    /// Not delivered, and nothing later can be (whoever read the notifications is gone): the
    /// watch stops, and fails naming every subscription as not delivered.
    case receiverGone
}

/// Something a watch did or noticed, as it happens.
public enum WatchEvent: Sendable {
    /// A warning from a look at the store (`--once` only).
    case storeWarning(StoreWarning)
    /// The watch waits for the store at `remote` to move; `subscriptions` nil: every zone (`--pull`).
    case watching(remote: String, subscriptions: [String]?)
    /// The `--pull` before a round finished.
    case pulled(PullReport)
    /// The `--pull` failed, so nothing was delivered; with `willRetry`, it is tried again later.
    case pullFailed(RecSyncError, willRetry: Bool)
    /// A look at the store failed; the next one is in `retryIn` seconds.
    case lookFailed(RecSyncError, retryIn: Double)
    /// A look worked again after failures.
    case recovered
    /// `--once` found nothing pending for these subscriptions.
    case nothingNew([String])
    /// The watch stopped, as asked.
    case stopped
}

extension SyncEngine {
    /// Delivers the workspace's subscription notifications (`recsync watch`): what changed
    /// since each cursor, then, unless `once`, each new burst as the store moves, until
    /// `shouldStop` says so. Holds the delivery lock throughout.
    ///
    /// Each notification goes to `deliver`; its cursor moves once that says `.delivered`
    /// (and, with `pull`, the pull before it finished). Fails with `notDelivered` when
    /// something stays pending (`once`) or the receiver went away.
    public func watch(
        _ options: WatchOptions,
        shouldStop: @escaping @Sendable () -> Bool,
        deliver: @escaping @Sendable (SubscriptionNotification) async -> NotificationDelivery,
        events: @escaping @Sendable (WatchEvent) -> Void
    ) async throws(RecSyncError) {
        let subscriptions = try workspace.subscriptions()
        guard !subscriptions.isEmpty || options.pull else {
            throw .invalidArguments("nothing to watch for: the workspace has no subscription, and pulling was not asked for").suggesting(
                .subscribeOrPull)
        }
        try await withDeliveryLock(purpose: options.once ? "watch --once" : "watch") { () async throws(RecSyncError) in
            try await watchLocked(subscriptions: subscriptions, options, shouldStop: shouldStop, deliver: deliver, events: events)
        }
    }

    private func watchLocked(
        subscriptions: [Subscription],
        _ options: WatchOptions,
        shouldStop: @escaping @Sendable () -> Bool,
        deliver: @escaping @Sendable (SubscriptionNotification) async -> NotificationDelivery,
        events: @escaping @Sendable (WatchEvent) -> Void
    ) async throws(RecSyncError) {
        // --pull with no subscription watches everything the user can see, from now.
        let everything = ["all-private", "all-shared"]
        let notifier =
            subscriptions.isEmpty
            ? SubscriptionNotifier(
                subscriptions: [
                    Subscription(id: everything[0], kind: .database(.private)), Subscription(id: everything[1], kind: .database(.shared)),
                ], store: store, includeOwn: options.includeOwn)
            : notifier(includeOwn: options.includeOwn)
        let once = options.once
        // Set when the receiver is gone: the loop stops rather than fail for ever while holding
        // the delivery lock.
        let receiverGone = Atomic<Bool>(false)
        let stopping: @Sendable () -> Bool = { shouldStop() || (!once && receiverGone.load(ordering: .relaxed)) }
        let notify: @Sendable (SubscriptionNotification) async -> Bool = { n in
            // Stopping: the rest of the round stays pending, delivered by the next watch.
            if !once && stopping() { return false }
            switch await deliver(n) {
            case .delivered: return true
            case .failed: return false
            case .receiverGone:
                receiverGone.store(true, ordering: .relaxed)
                return false
            }
        }
        var prepare: (@Sendable ([SubscriptionNotification]) async -> Bool)?
        let pullError = Mutex<RecSyncError?>(nil)
        if options.pull {
            prepare = { @Sendable (_: [SubscriptionNotification]) async -> Bool in
                do throws(RecSyncError) {
                    events(.pulled(try await pull()))
                    return true
                } catch {
                    // --once reports it as its failure; watch tries again.
                    if once { pullError.withLock { $0 = error } } else { events(.pullFailed(error, willRetry: true)) }
                    return false
                }
            }
        }
        if once {
            let delivery = try await notifier.deliverRound(first: true, prepare: prepare, notify: notify)
            for w in delivery.round.warnings { events(.storeWarning(w)) }
            if delivery.prepareFailed, let error = pullError.withLock({ $0 }) {
                // Nothing pending, but the pull at start failed: that is this run's failure.
                guard !delivery.undelivered.isEmpty else { throw error }
                events(.pullFailed(error, willRetry: false))
            }
            if !delivery.undelivered.isEmpty {
                throw .notDelivered(delivery.undelivered)
            }
            if delivery.round.notifications.isEmpty { events(.nothingNew(subscriptions.map(\.id))) }
            return
        }
        let signal = try store.changeSignal()
        var loop = WatchLoop(waitForChange: { timeout in
            if let signal { return await signal.wait(timeout: timeout, shouldStop: stopping) }
            // A store with nothing to wait on is looked at again after the timeout.
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline, !stopping() {
                do { try await Task.sleep(nanoseconds: 50_000_000) } catch { break }
            }
            return false
        })
        loop.settle = options.settle
        events(.watching(remote: store.remote ?? workspace.config.remote, subscriptions: subscriptions.isEmpty ? nil : subscriptions.map(\.id)))
        await loop.run(
            notifier: notifier,
            shouldStop: stopping,
            onError: { error, retry in events(.lookFailed(error, retryIn: retry)) },
            onRecovered: { events(.recovered) },
            prepare: prepare,
            notify: notify)
        events(.stopped)
        if receiverGone.load(ordering: .relaxed) {
            throw .notDelivered(subscriptions.isEmpty ? everything : subscriptions.map(\.id))
        }
    }
}

extension SyncEngine {
    /// What is pending for each subscription since its cursor (`recsync notifications`),
    /// handed to `show`. With `acknowledge`, the delivery lock is held throughout and the
    /// cursors move past the round once `show` returns; a `show` that throws (the round could
    /// not be shown) leaves them.
    @discardableResult
    public func notifications(
        includeOwn: Bool = false, acknowledge: Bool = false, show: (NotificationRound) throws(RecSyncError) -> Void
    ) async throws(RecSyncError) -> NotificationRound {
        let notifier = notifier(includeOwn: includeOwn)
        guard acknowledge else {
            let round = try await notifier.pending()
            try show(round)
            return round
        }
        return try await withDeliveryLock(purpose: "notifications --ack") { () async throws(RecSyncError) -> NotificationRound in
            let round = try await notifier.pending()
            try show(round)
            try await notifier.acknowledge(round)
            return round
        }
    }
}
