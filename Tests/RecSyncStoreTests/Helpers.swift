import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import Testing

/// Small steps that contract tests repeat, each failing the test with the store's message.
extension RemoteStore {
    func createZones(_ zones: [ZoneID], defaultRecordType: String? = nil) async throws {
        let results = try await modifyRecordZones(zones.map { .save(RecordZone(zoneID: $0, defaultRecordType: defaultRecordType)) })
        for r in results { _ = try r.result.get() }
    }

    func zoneOp(_ op: ZoneOperation) async throws {
        _ = try await modifyRecordZones([op])[0].result.get()
    }

    /// Saves records that must all succeed; returns them as stored.
    @discardableResult
    func save(_ records: [Record], policy: SavePolicy = .ifServerRecordUnchanged) async throws -> [Record] {
        let result = try await modifyRecords(saving: records, deleting: [], savePolicy: policy, atomically: true)
        return try result.saveResults.map { try $0.result.get() }
    }

    func delete(_ records: [Record]) async throws -> ModifyRecordsResult {
        let result = try await modifyRecords(saving: [], deleting: records.map { RecordDeletion(recordID: $0.recordID, changeTag: $0.changeTag) }, savePolicy: .ifServerRecordUnchanged, atomically: true)
        for r in result.deleteResults { try r.result.get() }
        return result
    }

    /// Every change in a zone from a token, following moreComing.
    func allZoneChanges(_ zone: ZoneID, since token: ServerChangeToken?, limit: Int = 0) async throws -> (records: [Record], deletions: [RecordDeletionEvent], token: ServerChangeToken, pages: Int) {
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

/// The error a throwing call produced, or nil.
func caught<T>(_ body: () async throws -> T) async -> RecSyncError? {
    do {
        _ = try await body()
        return nil
    } catch let e as RecSyncError {
        return e
    } catch {
        Issue.record("unexpected error type: \(error)")
        return nil
    }
}

func names(_ records: [Record]) -> [String] { records.map(\.recordID.recordName).sorted() }
