import RecSyncModel
import RecSyncStore
import RecSyncWorkspace

extension SyncEngine {
    /// Fetches records on a zone's retry list by ID: those that do not wait for a change on the
    /// store, or with `all` every one. What decodes now is applied as any incoming change,
    /// what is gone as a deletion; both leave the list. The rest stays.
    func retryRecords(_ zone: ZoneID, all: Bool, list: inout RetryList, workspace ws: Workspace, index: inout ZoneIndex, report: inout PullReport, events: @Sendable (SyncEvent) -> Void) async throws(RecSyncError) {
        var ids: [RecordID] = []
        for name in list.namesToFetch(all: all) {
            do throws(RecSyncError) { ids.append(try RecordID(recordName: name, zoneID: zone)) } catch { list[name] = nil }
        }
        guard !ids.isEmpty else { return dryRun ? () : try list.save() }
        var applier = PageApplier(engine: self, workspace: ws, zone: zone)
        for result in try await store.fetchRecords(ids, desiredKeys: nil) {
            let name = result.recordID.recordName
            switch result.result {
            case .success(let record):
                try await applier.incoming(record, index: &index)
                if let refusal = applier.refused[result.recordID] {
                    list[name] = RetryList.Entry(why: refusal.message)
                    report.warnings.append("\(result.recordID): still cannot be fetched (\(refusal.message)); the next pull tries again")
                } else {
                    list[name] = nil
                }
            case .failure(.unknownItem):
                try await applier.incomingDeletion(result.recordID, index: &index)
                list[name] = nil
            case .failure(let error):
                list[name] = RetryList.Entry(why: error.message, unreadableTag: result.unreadableChangeTag)
                let next = result.unreadableChangeTag == nil ? "the next pull tries again" : "a pull tries again once it changes on the store"
                report.warnings.append("\(result.recordID): still cannot be fetched (\(error.message)); \(next)")
            }
        }
        try await applier.finish(index: &index)
        applier.report(into: &report, events: events)
        guard !dryRun else { return }
        try index.save()
        try list.save()
    }
}
