import RecSyncModel
import RecSyncStore

/// Small steps that contract tests repeat, each failing the test with the store's message.
extension RemoteStore {
    /// Creates zones explicitly (as `recsync zone create` does: a deleted zone comes back).
    public func createZones(_ zones: [ZoneID], defaultRecordType: String? = nil) async throws {
        let results = try await modifyRecordZones(zones.map { .recreate(RecordZone(zoneID: $0, defaultRecordType: defaultRecordType)) })
        for r in results { _ = try r.result.get() }
    }

    public func zoneOp(_ op: ZoneOperation) async throws {
        _ = try await modifyRecordZones([op])[0].result.get()
    }

    /// Saves records that must all succeed; returns them as stored.
    @discardableResult
    public func save(_ records: [Record], policy: SavePolicy = .ifServerRecordUnchanged) async throws -> [Record] {
        let result = try await modifyRecords(saving: records, deleting: [], savePolicy: policy, atomically: true)
        return try result.saveResults.map { try $0.result.get() }
    }

    public func delete(_ records: [Record]) async throws -> ModifyRecordsResult {
        let result = try await modifyRecords(
            saving: [], deleting: records.map { RecordDeletion(recordID: $0.recordID, changeTag: $0.changeTag) },
            savePolicy: .ifServerRecordUnchanged, atomically: true)
        for r in result.deleteResults { try r.result.get() }
        return result
    }

    /// The fields of every record the store can read in the user's own zones (undecodable
    /// stored records are left out): what a test compares an app's copy with.
    public func readableContents() async throws -> [RecordID: [String: FieldValue]] {
        var result: [RecordID: [String: FieldValue]] = [:]
        for zone in try await fetchAllRecordZones(scope: .private) {
            var token: ServerChangeToken?
            while true {
                let page = try await recordZoneChanges(zone: zone.zoneID, since: token)
                for item in page.modifications { if case .success(let r) = item.result { result[r.recordID] = r.fields } }
                token = page.changeToken
                if !page.moreComing { break }
            }
        }
        return result
    }

    /// Every change in a zone from a token, following moreComing.
    public func allZoneChanges(_ zone: ZoneID, since token: ServerChangeToken?, limit: Int = 0) async throws -> (
        records: [Record], deletions: [RecordDeletionEvent], token: ServerChangeToken, pages: Int
    ) {
        var token = token
        var records: [Record] = []
        var deletions: [RecordDeletionEvent] = []
        var pages = 0
        while true {
            let page = try await recordZoneChanges(zone: zone, since: token, resultsLimit: limit, desiredKeys: nil)
            pages += 1
            records += try page.modifications.map { try $0.result.get() }
            deletions += page.deletions
            token = page.changeToken
            if !page.moreComing { return (records, deletions, page.changeToken, pages) }
        }
    }
}
