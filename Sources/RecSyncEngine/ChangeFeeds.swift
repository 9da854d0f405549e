import RecSyncModel
import RecSyncStore

/// A zone's record changes from a token, a page at a time: the one place in recsync that asks
/// a store for them. The workspace's pull, `RecordSyncEngine`'s fetch, `doctor` and
/// `recsync changes` all read through it.
///
/// Each `next` returns the following page, and moves `token` to that page's end; after the
/// last page (`moreComing` false) it returns nil. A token the store no longer honours is
/// returned as `.tokenExpired`, with `token` back at nil: a caller that goes on reads the zone
/// from the beginning (forgetting its saved token first); one that must not stops there.
public struct ZoneChangeFeed: Sendable {
    public let store: any RemoteStore
    public let zone: ZoneID
    /// Fields to read (nil: all; empty: none, for change tags only).
    public let desiredKeys: [String]?
    /// Where the next page starts; nil: the beginning.
    public private(set) var token: ServerChangeToken?
    /// The last page was read.
    public private(set) var isFinished = false

    /// What `next` read.
    public enum Step: Sendable {
        case page(RecordZoneChanges)
        /// The token was refused as expired (the store's words for what it was); the feed starts
        /// over from the beginning.
        case tokenExpired(String)
    }

    public init(store: any RemoteStore, zone: ZoneID, since token: ServerChangeToken?, desiredKeys: [String]? = nil) {
        self.store = store
        self.zone = zone
        self.token = token
        self.desiredKeys = desiredKeys
    }

    /// The next page of at most `limit` changes (0: the store's default), or nil after the last.
    /// An expired token from the beginning (which no store gives) is thrown, not returned, so a
    /// caller that goes on never loops.
    public mutating func next(limit: Int) async throws(RecSyncError) -> Step? {
        guard !isFinished else { return nil }
        do {
            let page = try await store.recordZoneChanges(zone: zone, since: token, resultsLimit: limit, desiredKeys: desiredKeys)
            token = page.changeToken
            isFinished = !page.moreComing
            return .page(page)
        } catch {
            guard case .changeTokenExpired(let why) = error.reason else { throw error }
            guard token != nil else { throw .changeTokenExpired(why) }
            token = nil
            return .tokenExpired(why)
        }
    }
}

extension ZoneChangeFeed {
    /// The client change token the zone's last save carried (CloudKit's
    /// `clientChangeTokenData`): whether a save a client noted before sending landed.
    public static func clientChangeToken(of zone: ZoneID, in store: any RemoteStore) async throws(RecSyncError) -> String? {
        var feed = ZoneChangeFeed(store: store, zone: zone, since: nil, desiredKeys: [])
        guard case .page(let first)? = try await feed.next(limit: 1) else { return nil }
        return first.clientChangeTokenData
    }

    /// Reads a zone's changes since `token` as the store records them (`recsync changes`),
    /// handing each page to `body`: every page, or with a `limit` the first page of at most
    /// that many. A token the store no longer honours is an error, not a start from the
    /// beginning: the caller asked for what changed since it.
    public static func read(
        _ zone: ZoneID, in store: any RemoteStore, since token: ServerChangeToken?, desiredKeys: [String]? = nil, limit: Int? = nil,
        _ body: (RecordZoneChanges) throws(RecSyncError) -> Void
    ) async throws(RecSyncError) {
        var feed = ZoneChangeFeed(store: store, zone: zone, since: token, desiredKeys: desiredKeys)
        while let step = try await feed.next(limit: limit ?? 0) {
            guard case .page(let page) = step else {
                if case .tokenExpired(let why) = step { throw .changeTokenExpired(why) }
                return
            }
            try body(page)
            if limit != nil { return }
        }
    }
}

extension DatabaseChangeFeed {
    /// As `ZoneChangeFeed.read`, for a scope's zone changes.
    public static func read(
        _ scope: DatabaseScope, in store: any RemoteStore, since token: ServerChangeToken?, limit: Int? = nil,
        _ body: (DatabaseChanges) throws(RecSyncError) -> Void
    ) async throws(RecSyncError) {
        var feed = DatabaseChangeFeed(store: store, scope: scope, since: token)
        while let step = try await feed.next(limit: limit ?? 0) {
            guard case .page(let page) = step else {
                if case .tokenExpired(let why) = step { throw .changeTokenExpired(why) }
                return
            }
            try body(page)
            if limit != nil { return }
        }
    }
}

/// A scope's zone changes from a database token, a page at a time: the one place in recsync that
/// asks a store for them (`allDatabaseChanges`, `doctor` and `recsync changes` read through it).
/// As `ZoneChangeFeed`, for the database.
public struct DatabaseChangeFeed: Sendable {
    public let store: any RemoteStore
    public let scope: DatabaseScope
    public private(set) var token: ServerChangeToken?
    public private(set) var isFinished = false

    public enum Step: Sendable {
        case page(DatabaseChanges)
        /// The token was refused as expired (the store's words for what it was); the feed starts
        /// over with a full listing.
        case tokenExpired(String)
    }

    public init(store: any RemoteStore, scope: DatabaseScope, since token: ServerChangeToken?) {
        self.store = store
        self.scope = scope
        self.token = token
    }

    /// The next page of at most `limit` zone changes (0: the store's default), or nil after the last.
    public mutating func next(limit: Int = 0) async throws(RecSyncError) -> Step? {
        guard !isFinished else { return nil }
        do {
            let page = try await store.databaseChanges(scope: scope, since: token, resultsLimit: limit)
            token = page.changeToken
            isFinished = !page.moreComing
            return .page(page)
        } catch {
            guard case .changeTokenExpired(let why) = error.reason else { throw error }
            guard token != nil else { throw .changeTokenExpired(why) }
            token = nil
            return .tokenExpired(why)
        }
    }
}
