import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import Testing

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

extension Result where Failure == RecSyncError {
    /// The error's code, nil on success.
    var failureCode: CloudKitErrorCode? {
        if case .failure(let e) = self { return e.code }
        return nil
    }
}

/// Everything a user sees from nil: zones (with participants), every record's tag and fields,
/// and the zones database changes list.
func everything(_ store: any RemoteStore) async throws -> [String: String] {
    var seen: [String: String] = [:]
    for scope in [DatabaseScope.private, .shared] {
        for zone in try await store.fetchAllRecordZones(scope: scope) {
            seen["zone \(zone.zoneID)"] = zone.participants.map { "\($0.userRecordName):\($0.permission.rawValue)" }.joined(separator: ",")
            for record in try await store.allZoneChanges(zone.zoneID, since: nil).records {
                seen["record \(record.recordID)"] = "\(record.changeTag ?? "") \(record.fields)"
            }
        }
        let feed = try await store.databaseChanges(scope: scope, since: nil)
        seen["feed \(scope.rawValue)"] = "\(feed.modifications.sorted()) \(feed.deletions.map { "\($0.zoneID) \($0.reason)" }.sorted())"
    }
    return seen
}
