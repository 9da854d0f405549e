import RecSyncModel
import RecSyncStore
import RecSyncWorkspace

/// Records of a zone that the store delivered as failures (a stored copy it cannot decode).
///
/// The zone token moves past them, so they are kept here (`.recsync/tokens/…/<zone>.retry`)
/// and fetched by ID on every pull until they decode or are deleted; `status` lists them as
/// problems. One line per record: its escaped name, a tab, why it failed.
struct RetryList: Equatable {
    let path: String
    /// Record name → why the store could not deliver it.
    var entries: [String: String]

    static func load(_ ws: Workspace, zone: ZoneID) throws(RecSyncError) -> RetryList {
        let path = ws.retryPath(zone)
        var entries: [String: String] = [:]
        for line in try FileIO.read(path)?.split(separator: 10) ?? [] {
            let parts = line.split(separator: 9, maxSplits: 1, omittingEmptySubsequences: false)
            // A line a crash cut short names nothing readable: its record fails again if it still fails.
            guard let name = NameEscaping.unescape(String(decoding: parts[0], as: UTF8.self)), !name.isEmpty else { continue }
            entries[name] = parts.count > 1 ? String(decoding: parts[1], as: UTF8.self) : ""
        }
        return RetryList(path: path, entries: entries)
    }

    /// Writes the list durably, before the zone token that moves past its records; an empty
    /// list is removed.
    func save() throws(RecSyncError) {
        guard !entries.isEmpty else {
            try FileIO.remove(path)
            return
        }
        var out: [UInt8] = []
        for (name, why) in entries.sorted(by: { $0.key < $1.key }) {
            let oneLine = String(why.map { $0 == "\n" || $0 == "\t" || $0 == "\r" ? " " : $0 })
            out += Array(NameEscaping.escape(name).utf8) + [9] + Array(oneLine.utf8) + [10]
        }
        try FileIO.writeAtomically(path, out)
    }

    /// The status lines of the records listed, named by their files.
    func problems(_ ws: Workspace, zone: ZoneID) -> [String] {
        let dir = ws.relative(ws.zoneDirectory(zone))
        return entries.sorted(by: { $0.key < $1.key }).map { name, why in
            "\(dir)/\(Workspace.fileName(for: name)): the store's copy of this record cannot be read (\(why)); every pull fetches it again"
        }
    }
}

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
                list.entries[name] = nil
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
