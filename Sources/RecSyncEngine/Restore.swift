import RecSyncModel
import RecSyncStore
import RecSyncWorkspace

/// What `restore` did to one record (`recsync restore`).
public struct RestoreOutcome: Sendable, Hashable {
    public var recordID: RecordID
    /// The local change undone, in `status`'s words (`modified` or `deleted`); nil when the
    /// file already held the synced version.
    public var undone: LocalChange.Kind?
}

extension SyncEngine {
    /// Puts record files back to the version they were last synced at (the one their sidecar's
    /// change tag names, read from the store): undoes local edits and `rm`, like `git restore`.
    ///
    /// Every record is checked before anything is written, and a refusal is an error naming
    /// all of them (nothing is written then): a record never pushed has no synced version (it
    /// is deleted with `rm`), a record in conflict is settled with `resolve`, and a synced
    /// version the store no longer has needs a pull. Without records (nil), every record
    /// edited or removed here is restored (new records and conflicts are left alone).
    public func restore(_ records: [RecordID]?) async throws(RecSyncError) -> [RestoreOutcome] {
        let all = records == nil
        let ids: [RecordID]
        if let records { ids = records } else { ids = try await status().changes.filter { $0.kind != .new }.map(\.recordID) }
        return try await workspace.withLock(purpose: "restore") { () async throws(RecSyncError) -> [RestoreOutcome] in
            try await restoreLocked(ids, all: all)
        }
    }

    private func restoreLocked(_ records: [RecordID], all: Bool) async throws(RecSyncError) -> [RestoreOutcome] {
        let ws = workspace
        let conflicted = Set(try ws.allConflicts().map(\.recordID))
        let records = all ? records.filter { !conflicted.contains($0) } : records
        var refusals: [String] = []
        var remedies: [RecSyncError.Remedy] = []
        var plan: [(id: RecordID, synced: Record, stamp: FileStamp?, undone: LocalChange.Kind?, local: [String: FieldValue]?)] = []
        for id in Array(Set(records)).sorted() {
            let path = ws.relative(ws.recordPath(id))
            if conflicted.contains(id) {
                refusals.append("\(path) is in conflict; settle it first")
                remedies.append(.resolve(path: path))
                continue
            }
            let stamp = try ws.recordFileStamp(id)
            guard let tag = try ws.systemFields(id)?.changeTag else {
                refusals.append(
                    stamp == nil
                        ? "\(path): no such record here (no file and no synced version)"
                        : "\(path) is a new record (never pushed): there is no synced version to restore; remove it instead")
                if stamp != nil { remedies.append(.removeRecord(path: path)) }
                continue
            }
            guard let synced = try await store.fetchRecordVersion(id, changeTag: tag) else {
                refusals.append("\(path): its synced version \(tag.prefix(12)) is no longer in the store; pull first")
                if !remedies.contains(.pull) { remedies.append(.pull) }
                continue
            }
            // A file that does not decode is an edit too: restoring replaces it.
            let local: [String: FieldValue]?
            do { local = try ws.recordFields(id) } catch {
                if case .fileSystem = error.reason { throw error }
                local = [:]
            }
            let undone: LocalChange.Kind? = local == nil ? .deleted : local == synced.fields ? nil : .modified
            plan.append((id, synced, stamp, undone, local))
        }
        if !refusals.isEmpty {
            var error = RecSyncError.invalidArguments("nothing restored: " + refusals.joined(separator: "; "))
            error.remedies = remedies
            throw error
        }
        var batch = try ws.recordBatch()
        // The synced version's asset files that the workspace does not hold as they were (an
        // edited or removed file) come back from the store too, placed with their record file.
        var temps: [String] = []
        do {
            for p in plan where p.undone != nil {
                let group = ws.recordPath(p.id)
                for (field, value) in p.synced.fields.sorted(by: { $0.key < $1.key }) {
                    guard case .asset(let asset) = value, p.local?[field] != value else { continue }
                    let path = ws.assetPath(p.id, field: field)
                    let before = try ws.assetFileStamp(p.id, field: field)  // replaced only if still what restore saw
                    let temp = try await downloadAsset(asset, of: p.id, workspace: ws)
                    temps.append(temp)
                    batch.place(temp, at: path, group: group, expect: before.map { .unchanged($0) } ?? .absent)
                }
                batch.write(
                    ws.recordPath(p.id), WorkspaceEncoding.encodeFields(p.synced.fields), expect: p.stamp.map { .unchanged($0) } ?? .absent,
                    group: group)
            }
            try batch.commit()
        } catch {
            for temp in temps { ws.discardTemporaryFile(temp) }
            throw error
        }
        var indexes: [ZoneID: ZoneIndex] = [:]
        for p in plan where p.undone != nil && !batch.skipped.contains(ws.recordPath(p.id)) {
            let zone = p.id.zoneID
            if indexes[zone] == nil { indexes[zone] = ZoneIndex.load(ws, zone: zone) }
            indexes[zone]?.record(
                file: Workspace.fileName(for: p.id.recordName), recordName: p.id.recordName, tag: p.synced.changeTag ?? "",
                hash: ZoneIndex.hash(p.synced.fields), fileStamp: batch.writtenStamps[ws.recordPath(p.id)], sideStamp: try ws.sidecarStamp(p.id))
        }
        for var index in indexes.values { try index.save() }
        if !batch.skipped.isEmpty {
            let paths = batch.skipped.sorted().map(ws.relative).joined(separator: ", ")
            throw .fileSystem(path: paths, message: "changed while restore ran and left as it is; restore it again")
        }
        return plan.map { RestoreOutcome(recordID: $0.id, undone: $0.undone) }
    }
}
