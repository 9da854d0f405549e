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
