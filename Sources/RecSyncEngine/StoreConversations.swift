import RecSyncModel
import RecSyncStore

/// Store conversations both clients have: the file workspace (`SyncEngine`) and an app's
/// `RecordSyncEngine`.
extension RemoteStore {
    /// Saves and deletes records, recognising saves an earlier, interrupted send already landed.
    ///
    /// The client change token (see `PendingPush`) tells the next sync which zones' saves
    /// landed. As a fallback (a note lost, another workspace's token in a shared slot):
    /// a save refused only because the store already holds the same type and fields is the
    /// same save (DESIGN §11): an earlier push landed it and was killed before its sidecars
    /// recorded that. It counts as saved with the store's copy (its change tag adopted), and
    /// what the atomic zone refused along with it (`batchRequestFailed`) is sent once more.
    /// Decided here, not in the store: for other clients of the store, two writers making the
    /// same change from the same base is still a conflict (a counter incremented twice).
    func modifyRecognisingOwnSaves(
        saving saves: [Record], deleting deletions: [RecordDeletion], savePolicy: SavePolicy, atomically: Bool, clientChangeTokenData: String?
    ) async throws(RecSyncError) -> ModifyRecordsResult {
        var result = try await modifyRecords(
            saving: saves, deleting: deletions, savePolicy: savePolicy, atomically: atomically, clientChangeTokenData: clientChangeTokenData)
        var adopted = 0
        for (i, item) in result.saveResults.enumerated() {
            guard case .failure(let failure) = item.result, case .serverRecordChanged(let c) = failure.reason, let server = c.server,
                server.recordType == saves[i].recordType, server.fields == saves[i].fields
            else { continue }
            result.saveResults[i].result = .success(server)
            adopted += 1
        }
        guard adopted > 0 else { return result }
        // Zones with a failure of their own keep it; the others' collateral refusals go again.
        func failedOnItsOwn(_ r: Result<some Any, RecSyncError>) -> Bool {
            if case .failure(let e) = r, e.code != .batchRequestFailed { return true }
            return false
        }
        let failedZones = Set(
            result.saveResults.filter { failedOnItsOwn($0.result) }.map(\.recordID.zoneID)
                + result.deleteResults.filter { failedOnItsOwn($0.result) }.map(\.recordID.zoneID))
        func again(_ r: Result<some Any, RecSyncError>, _ id: RecordID) -> Bool {
            if case .failure(let error) = r, error.kind == .batchRequestFailed { return !failedZones.contains(id.zoneID) }
            return false
        }
        let saveIndexes = result.saveResults.indices.filter { again(result.saveResults[$0].result, saves[$0].recordID) }
        let deleteIndexes = result.deleteResults.indices.filter { again(result.deleteResults[$0].result, deletions[$0].recordID) }
        guard !saveIndexes.isEmpty || !deleteIndexes.isEmpty else { return result }
        let second = try await modifyRecords(
            saving: saveIndexes.map { saves[$0] }, deleting: deleteIndexes.map { deletions[$0] }, savePolicy: savePolicy, atomically: atomically,
            clientChangeTokenData: clientChangeTokenData)
        for (n, i) in saveIndexes.enumerated() { result.saveResults[i] = second.saveResults[n] }
        for (n, i) in deleteIndexes.enumerated() { result.deleteResults[i] = second.deleteResults[n] }
        result.cascadedDeletions += second.cascadedDeletions
        result.commit = second.commit ?? result.commit
        return result
    }

    /// Which of `zones` (held here, not in the feed) are gone, and why. After a full listing
    /// all are, for the reason their tombstones give (an encrypted-data reset keeps the local
    /// data for uploading again; no tombstone, or another owner's zone: deleted). Otherwise only
    /// own zones with a tombstone, and shared zones no longer visible to this user.
    func zonesGone(_ zones: [ZoneID], scope: DatabaseScope, listedAll: Bool) async throws(RecSyncError) -> [ZoneDeletion] {
        let tombstones = scope == .private ? try await fetchZoneDeletions(zones) : []
        if listedAll {
            let reasons = Dictionary(tombstones.map { ($0.zoneID, $0.reason) }, uniquingKeysWith: { a, _ in a })
            return zones.map { ZoneDeletion(zoneID: $0, reason: reasons[$0] ?? .deleted) }
        }
        if scope == .private { return tombstones }
        let visible = Set(try await fetchAllRecordZones(scope: .shared).map(\.zoneID))
        return zones.filter { !visible.contains($0) }.map { ZoneDeletion(zoneID: $0, reason: .deleted) }
    }

    /// Every zone change of a scope since a database token, all pages. A token the store no
    /// longer honours (history rewritten) starts over with a full listing (`listedAll`).
    func allDatabaseChanges(scope: DatabaseScope, since start: ServerChangeToken?) async throws(RecSyncError) -> ScopeChanges {
        var result = ScopeChanges(token: start, listedAll: start == nil)
        var feed = DatabaseChangeFeed(store: self, scope: scope, since: start)
        while let step = try await feed.next() {
            switch step {
            case .tokenExpired:
                result = ScopeChanges(token: nil, listedAll: true, warnings: result.warnings, tokenExpired: true)
            case .page(let page):
                result.modifications += page.modifications
                result.deletions += page.deletions
                result.warnings += page.warnings
                result.token = page.changeToken
            }
        }
        return result
    }
}

/// What `allDatabaseChanges` gathered.
struct ScopeChanges {
    /// The token to save once every zone named is done.
    var token: ServerChangeToken?
    /// A full listing: every live zone is named, so one held and not named is gone.
    var listedAll: Bool
    var modifications: [ZoneID] = []
    var deletions: [ZoneDeletion] = []
    var warnings: [StoreWarning] = []
    /// The token given had expired (the listing started over).
    var tokenExpired = false
}
