import RecSyncModel
import RecSyncStore
import RecSyncWorkspace

extension SyncEngine {
    /// Fetches the records on a zone's retry list by ID: what decodes now is applied as any
    /// incoming change, what is gone as a deletion; both leave the list. The rest stays.
    func retryRecords(_ zone: ZoneID, list: inout RetryList, workspace ws: Workspace, index: inout ZoneIndex, report: inout PullReport, events: @Sendable (SyncEvent) -> Void) async throws(RecSyncError) {
        var ids: [RecordID] = []
        for name in list.entries.keys.sorted() {
            do throws(RecSyncError) { ids.append(try RecordID(recordName: name, zoneID: zone)) } catch { list.entries[name] = nil }
        }
        var applier = PageApplier(engine: self, workspace: ws, zone: zone)
        for result in try await store.fetchRecords(ids, desiredKeys: nil) {
            let name = result.recordID.recordName
            switch result.result {
            case .success(let record):
                try await applier.incoming(record, index: &index)
                if let refusal = applier.refused[result.recordID] {
                    list.entries[name] = refusal.message
                    report.warnings.append("\(result.recordID): still cannot be fetched (\(refusal.message)); the next pull tries again")
                } else {
                    list.entries[name] = nil
                }
            case .failure(.unknownItem):
                try await applier.incomingDeletion(result.recordID, index: &index)
                list.entries[name] = nil
            case .failure(let error):
                list.entries[name] = error.message
                report.warnings.append("\(result.recordID): still cannot be fetched (\(error.message)); the next pull tries again")
            }
        }
        try await applier.finish(index: &index)
        try index.save()
        applier.report(into: &report, events: events)
        try list.save()
    }
}
