import Foundation
import RecSyncModel
import RecSyncStore
import RecSyncWorkspace

/// A prompt to fetch, emitted by `recsync watch` for a subscription that matches a change.
/// Like CloudKit's silent push it carries no data: pull to get it.
public struct WatchNotification: Sendable, Hashable, Codable {
    public var version = 1
    public var subscriptionID: String
    /// `database`, `zone` or `query`.
    public var kind: String
    public var scope: String
    /// `owner/zone`, for zone and query subscriptions.
    public var zone: String?
}

/// Tells, after the store moved, which subscriptions match what changed since the last look.
///
/// It keeps its own change tokens, in memory, starting at the store's state when `start()`
/// ran: a notification covers every change since the previous one, so bursts coalesce into
/// one notification per subscription.
public actor ChangeWatcher {
    let store: any RemoteStore
    let subscriptions: [Subscription]
    var databaseTokens: [DatabaseScope: ServerChangeToken] = [:]
    var zoneTokens: [ZoneID: ServerChangeToken] = [:]

    public init(store: any RemoteStore, subscriptions: [Subscription]) {
        self.store = store
        self.subscriptions = subscriptions
    }

    var scopes: [DatabaseScope] {
        var result = Set<DatabaseScope>()
        for s in subscriptions {
            switch s.kind {
            case .database(let scope): result.insert(scope)
            case .zone(let zone): result.insert(zone.ownerName == store.userRecordName ? .private : .shared)
            case .query(let scope, _, _, _): result.insert(scope)
            }
        }
        return result.sorted { $0.rawValue < $1.rawValue }
    }

    var queryScopes: Set<DatabaseScope> {
        Set(subscriptions.compactMap { if case .query(let scope, _, _, _) = $0.kind { scope } else { nil } })
    }

    /// Takes the store's current state as the baseline (nothing before it is reported).
    public func start() async throws(RecSyncError) {
        for scope in scopes {
            let (changed, _, token) = try await databaseChanges(scope, since: nil)
            databaseTokens[scope] = token
            if queryScopes.contains(scope) {
                for zone in changed { zoneTokens[zone] = try await zoneChanges(zone, since: nil).token }
            }
        }
    }

    /// Notifications for everything that changed since the last call (or `start`).
    public func check() async throws(RecSyncError) -> [WatchNotification] {
        // New tokens are kept aside and adopted only when the whole check succeeded, so a
        // failure half-way (the network) does not skip changes on the retry.
        var newDatabaseTokens = databaseTokens
        var newZoneTokens = zoneTokens
        var changedByScope: [DatabaseScope: Set<ZoneID>] = [:]
        for scope in scopes {
            let (changed, deleted, token) = try await databaseChanges(scope, since: databaseTokens[scope])
            changedByScope[scope] = Set(changed).union(deleted)
            newDatabaseTokens[scope] = token
        }
        // Query subscriptions look at the records of the changed zones.
        var changedRecords: [DatabaseScope: [Record]] = [:]
        for scope in queryScopes {
            for zone in (changedByScope[scope] ?? []).sorted() {
                do {
                    let (records, token) = try await zoneChanges(zone, since: zoneTokens[zone])
                    newZoneTokens[zone] = token
                    changedRecords[scope, default: []] += records
                } catch .zoneNotFound, .userDeletedZone {
                    newZoneTokens[zone] = nil
                }
            }
        }
        databaseTokens = newDatabaseTokens
        zoneTokens = newZoneTokens
        var notifications: [WatchNotification] = []
        for s in subscriptions {
            switch s.kind {
            case .database(let scope):
                if !(changedByScope[scope] ?? []).isEmpty {
                    notifications.append(WatchNotification(subscriptionID: s.id, kind: "database", scope: scope.rawValue))
                }
            case .zone(let zone):
                let scope: DatabaseScope = zone.ownerName == store.userRecordName ? .private : .shared
                if changedByScope[scope]?.contains(zone) == true {
                    notifications.append(WatchNotification(subscriptionID: s.id, kind: "zone", scope: scope.rawValue, zone: zone.description))
                }
            case .query(let scope, let type, let field, let equals):
                let wanted: FieldValue? = equals.flatMap { text in
                    (try? JSON.parse(text)).flatMap { try? WorkspaceEncoding.fieldValue(from: $0, key: field ?? "value") }
                }
                if let match = changedRecords[scope]?.first(where: { r in
                    r.recordType == type && (field == nil || r.fields[field!] == wanted)
                }) {
                    notifications.append(WatchNotification(subscriptionID: s.id, kind: "query", scope: scope.rawValue, zone: match.recordID.zoneID.description))
                }
            }
        }
        return notifications
    }

    func databaseChanges(_ scope: DatabaseScope, since start: ServerChangeToken?) async throws(RecSyncError) -> ([ZoneID], [ZoneID], ServerChangeToken?) {
        var token = start
        var changed: [ZoneID] = []
        var deleted: [ZoneID] = []
        while true {
            let page: DatabaseChanges
            do { page = try await store.databaseChanges(scope: scope, since: token, resultsLimit: 0) } catch .changeTokenExpired {
                // History was rewritten: everything counts as changed.
                token = nil
                continue
            }
            changed += page.modifications
            deleted += page.deletions.map(\.zoneID)
            token = page.changeToken
            if !page.moreComing { return (changed, deleted, token) }
        }
    }

    func zoneChanges(_ zone: ZoneID, since start: ServerChangeToken?) async throws(RecSyncError) -> (records: [Record], token: ServerChangeToken?) {
        var token = start
        var records: [Record] = []
        while true {
            let page: RecordZoneChanges
            do { page = try await store.recordZoneChanges(zone: zone, since: token, resultsLimit: 0, desiredKeys: nil) } catch .changeTokenExpired {
                token = nil
                continue
            }
            records += page.modifications.compactMap { try? $0.result.get() }
            token = page.changeToken
            if !page.moreComing { return (records, token) }
        }
    }
}

/// The loop behind `recsync watch`: wait for the store to move, let a burst settle, then
/// report each matching subscription once. A store that cannot be reached is retried with
/// back-off; `shouldStop` ends the loop between waits.
public struct WatchLoop: Sendable {
    /// Blocks until the store may have moved or the timeout passes; true if it may have.
    public var waitForChange: @Sendable (_ timeout: Double) async -> Bool
    /// How long a burst must be quiet before it is reported.
    public var settle: Double = 0.2
    /// Look anyway this often, in case a change signal was missed.
    public var period: Double = 5
    public var maxBackoff: Double = 30

    public init(waitForChange: @escaping @Sendable (_ timeout: Double) async -> Bool) {
        self.waitForChange = waitForChange
    }

    public func run(
        watcher: ChangeWatcher,
        shouldStop: @Sendable () -> Bool,
        onError: @Sendable (RecSyncError, _ retryIn: Double) -> Void,
        onRecovered: @Sendable () -> Void = {},
        notify: @Sendable ([WatchNotification]) async -> Void
    ) async {
        var backoff = 0.5
        var started = false
        var failing = false
        while !shouldStop() {
            do {
                if !started {
                    try await watcher.start()
                    started = true
                } else {
                    // After a failure, look again at once; otherwise wait for a change (or
                    // the period, so a missed signal is caught up on).
                    if !failing { _ = await waitForChange(period) }
                    if shouldStop() { return }
                    // Let the burst settle: keep waiting while changes keep coming (bounded).
                    let settleUntil = Date().addingTimeInterval(max(settle * 10, 2))
                    while Date() < settleUntil, await waitForChange(settle), !shouldStop() {}
                    let notifications = try await watcher.check()
                    if !notifications.isEmpty { await notify(notifications) }
                }
                if failing { onRecovered() }
                failing = false
                backoff = 0.5
            } catch {
                failing = true
                onError(error, backoff)
                let deadline = Date().addingTimeInterval(backoff)
                while Date() < deadline, !shouldStop() { try? await Task.sleep(nanoseconds: 100_000_000) }
                backoff = min(maxBackoff, backoff * 2)
            }
        }
    }
}
