import RecSyncModel
import RecSyncStore

/// What a client holds of one scope, as a fetch of the scope needs to know it: the workspace's
/// pull and `RecordSyncEngine` each describe their own state this way, and `planScopeFetch`
/// decides for both which zones are gone and which to fetch.
struct ScopeHoldings {
    /// Zones held with a zone token.
    var held: [ZoneID]
    /// A fetch of the scope stopped between saving zone tokens and the scope token: a zone it
    /// brought in that went away since is in neither end of the feed.
    var interrupted: Bool
    /// Zones held without a token that are known to have been on the store (a first fetch
    /// stopped before its zone token; a zone the client saved records to): gone when the
    /// store no longer lists them, or shows a tombstone.
    var unconfirmed: [ZoneID] = []
    /// Zones held without a token that may never have reached the store (made here): only a
    /// tombstone removes one.
    var maybeNew: [ZoneID] = []
    /// Zones removed whatever the feed says, with their deletion (a shared zone kept for an
    /// upload that only its owner can make), unless the feed names them.
    var removedRegardless: [ZoneDeletion] = []
    /// Zones a stopped fetch removed ahead of its scope token: fetched whole again if the
    /// store shows them (a zone shared again as it was is in no feed from the old token).
    var removedAhead: [ZoneID] = []
    /// Zones the client chose that it holds no token of (a partial workspace's newly tracked
    /// zones, or ones whose first fetch did not finish): fetched whole if the store has them,
    /// since a feed from the scope token need not name them.
    var wanted: [ZoneID] = []
    /// Zones an earlier feed named that were not fetched yet (outside a fetch's scope).
    var pending: [ZoneID] = []
    /// Held zones to fetch even when the feed does not name them (records to fetch again,
    /// records pushed since the zone token, assets left on the store).
    var needingALook: Set<ZoneID> = []
    /// Zones already waiting to be uploaded again after a reset: its tombstone is not news.
    var awaitingReupload: Set<ZoneID> = []
}

/// What a fetch of one scope does: remove `deletions`, fetch `zones` (none of them removed),
/// then save `token`.
struct ScopeFetchPlan {
    var token: ServerChangeToken?
    /// The saved token had expired: the feed is a full listing.
    var tokenExpired: Bool
    var warnings: [StoreWarning]
    var deletions: [ZoneDeletion]
    var zones: [ZoneID]
}

extension RemoteStore {
    /// Reads a scope's changes since `token` and decides, from them and from what the client
    /// holds, which zones are gone (each once, with its reason) and which to fetch (each once,
    /// in the feed's order, then those needing a look).
    func planScopeFetch(_ scope: DatabaseScope, since token: ServerChangeToken?, holdings h: ScopeHoldings) async throws(RecSyncError)
        -> ScopeFetchPlan
    {
        let feed = try await allDatabaseChanges(scope: scope, since: token)
        var changed = feed.modifications
        var deleted = feed.deletions
        var listed: Set<ZoneID> { Set(changed).union(deleted.map(\.zoneID)) }
        // After a full listing (it names every live zone), or after a fetch stopped before this
        // scope token, zones held here that the feed did not name may be gone.
        if feed.listedAll || h.interrupted {
            let unlisted = h.held.filter { !listed.contains($0) }
            if !unlisted.isEmpty { deleted += try await zonesGone(unlisted, scope: scope, listedAll: feed.listedAll) }
        }
        let unconfirmed = h.unconfirmed.filter { !listed.contains($0) }
        if !unconfirmed.isEmpty { deleted += try await zonesGone(unconfirmed, scope: scope, listedAll: feed.listedAll) }
        let maybeNew = h.maybeNew.filter { !listed.contains($0) }
        if !maybeNew.isEmpty {
            deleted += try await fetchZoneDeletions(maybeNew).filter { $0.reason != .encryptedDataReset || !h.awaitingReupload.contains($0.zoneID) }
        }
        let named = listed
        deleted += h.removedRegardless.filter { !named.contains($0.zoneID) }
        var seen = Set<ZoneID>()
        deleted = deleted.filter { seen.insert($0.zoneID).inserted }
        let gone = Set(deleted.map(\.zoneID))
        let unnamed = (h.removedAhead + h.wanted).filter { !listed.contains($0) }
        if !unnamed.isEmpty {
            let live = Set(try await fetchAllRecordZones(scope: scope).map(\.zoneID))
            changed += unnamed.filter { live.contains($0) }
        }
        changed += h.pending
        changed += h.held.filter { h.needingALook.contains($0) }
        seen = []
        let zones = changed.filter { !gone.contains($0) && seen.insert($0).inserted }
        return ScopeFetchPlan(token: feed.token, tokenExpired: feed.tokenExpired, warnings: feed.warnings, deletions: deleted, zones: zones)
    }
}
