import RecSyncModel
import RecSyncStore
import RecSyncWorkspace

/// What `restore` did to one record (`recsync restore`).
public struct RestoreOutcome: Sendable, Hashable {
    public var recordID: RecordID
    /// The local change undone, in `status`'s words (`modified` or `deleted`); nil when the
    /// file already held the synced version, and for a restore from a revision.
    public var undone: LocalChange.Kind?
    /// For a restore from a revision: what was done to the file (`new`: written where there
    /// was none, `modified`: rewritten, `deleted`: removed, the record not being there at
    /// the revision); nil when it already held that version.
    public var written: LocalChange.Kind?
    /// For a restore from a revision: the store commit whose version was put in the file.
    public var commit: String?

    public init(recordID: RecordID, undone: LocalChange.Kind?, written: LocalChange.Kind? = nil, commit: String? = nil) {
        self.recordID = recordID
        self.undone = undone
        self.written = written
        self.commit = commit
    }
}

/// One record file a restore writes or removes.
struct RestoreStep {
    var id: RecordID
    /// The version to write; nil removes the file.
    var version: Record?
    /// The file as restore saw it (nil: none).
    var stamp: FileStamp?
    var local: [String: FieldValue]?
    /// A sidecar to write (a record the workspace no longer knows: new on the next push).
    var sidecar: SystemFields?
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
        let steps = plan.filter { $0.undone != nil }.map { RestoreStep(id: $0.id, version: $0.synced, stamp: $0.stamp, local: $0.local) }
        try await apply(steps, synced: true)
        return plan.map { RestoreOutcome(recordID: $0.id, undone: $0.undone) }
    }

    /// Writes (or removes) the record files of `steps` in one batch, with the asset files of
    /// each version that the workspace does not hold as they were. With `synced`, each version
    /// is the one the record's sidecar names, and the zone index learns it.
    func apply(_ steps: [RestoreStep], synced: Bool) async throws(RecSyncError) {
        let ws = workspace
        var batch = try ws.recordBatch()
        var temps: [String] = []
        do {
            for step in steps {
                let group = ws.recordPath(step.id)
                let expect: WriteBatch.Expectation = step.stamp.map { .unchanged($0) } ?? .absent
                guard let version = step.version else {
                    batch.remove(group, expect: expect, group: group)
                    continue
                }
                for (field, value) in version.fields.sorted(by: { $0.key < $1.key }) {
                    guard case .asset(let asset) = value, step.local?[field] != value else { continue }
                    let path = ws.assetPath(step.id, field: field)
                    let before = try ws.assetFileStamp(step.id, field: field)  // replaced only if still what restore saw
                    let temp = try await downloadAsset(asset, of: step.id, workspace: ws)
                    temps.append(temp)
                    batch.place(temp, at: path, group: group, expect: before.map { .unchanged($0) } ?? .absent)
                }
                batch.write(group, WorkspaceEncoding.encodeFields(version.fields), expect: expect, group: group)
                if let sidecar = step.sidecar {
                    batch.write(ws.sidecarPath(step.id), WorkspaceEncoding.encodeSystemFields(sidecar), late: true, group: group)
                }
            }
            try batch.commit()
        } catch {
            for temp in temps { ws.discardTemporaryFile(temp) }
            throw error
        }
        if synced {
            var indexes: [ZoneID: ZoneIndex] = [:]
            for step in steps where !batch.skipped.contains(ws.recordPath(step.id)) {
                guard let version = step.version else { continue }
                let zone = step.id.zoneID
                if indexes[zone] == nil { indexes[zone] = ZoneIndex.load(ws, zone: zone) }
                indexes[zone]?.record(
                    file: Workspace.fileName(for: step.id.recordName), recordName: step.id.recordName, tag: version.changeTag ?? "",
                    hash: ZoneIndex.hash(version.fields), fileStamp: batch.writtenStamps[ws.recordPath(step.id)],
                    sideStamp: try ws.sidecarStamp(step.id))
            }
            for var index in indexes.values { try index.save() }
        }
        if !batch.skipped.isEmpty {
            let paths = batch.skipped.sorted().map(ws.relative).joined(separator: ", ")
            throw .fileSystem(path: paths, message: "changed while restore ran and left as it is; restore it again")
        }
    }

    /// Puts an older version of records into their files, as local edits (`git restore
    /// --source`): `status`, `diff` and `push` then treat each as any edit. The version is the
    /// one `revision` names for each record (a commit, or `~N` versions back). A record that
    /// did not exist at the revision is `unknownItem`; one in conflict is refused, and so is
    /// one with edits not pushed (`localChanges`: they would be lost) unless `force`. Every
    /// record is read before any file is written, and a refusal writes nothing.
    public func restore(_ records: [RecordID], from revision: StoreRevision, force: Bool = false) async throws(RecSyncError)
        -> [RestoreOutcome]
    {
        let history = try self.history()
        var versions: [(RecordID, RecordAtRevision)] = []
        for id in Array(Set(records)).sorted() { versions.append((id, try await history.record(id, at: revision))) }
        let edited = force ? [] : Set(try await status().changes.map(\.recordID))
        return try await workspace.withLock(purpose: "restore") { () async throws(RecSyncError) -> [RestoreOutcome] in
            try await restoreLocked(versions.map { ($0.0, $0.1.record, $0.1.commit.commit) }, removing: [], at: nil, edited: edited)
        }
    }

    /// Puts a zone's records as they were at a commit into the workspace, as local edits:
    /// each record the commit held is written (its file made again if it is gone), and each
    /// synced record it did not hold is removed, so that a push makes the zone what it was.
    /// Records never pushed are left alone. `revision` is a commit (`~N` counts one record's
    /// versions and names none here); a conflict in the zone is refused, and so is a record
    /// with edits not pushed that the restore would change, unless `force`. A zone neither the
    /// commit nor the workspace holds is `notFound`.
    public func restore(zone: ZoneID, from revision: StoreRevision, force: Bool = false) async throws(RecSyncError) -> [RestoreOutcome] {
        let history = try self.history()
        let commit = try await history.commit(revision)
        let held = try await history.records(in: zone, at: commit.commit)
        if held.isEmpty && !workspace.hasZoneDirectory(zone) {
            throw .notFound("zone '\(zone.zoneName)' was not in the store at commit \(commit.commit.prefix(12)), nor is it in this workspace")
                .suggesting(.listZones)
        }
        let edited = force ? [] : Set(try await status().changes.map(\.recordID))
        var versions: [(RecordID, Record, String)] = []
        for (name, tag) in held.sorted(by: { $0.key < $1.key }) {
            let id = try RecordID(recordName: name, zoneID: zone)
            guard let record = try await history.recordVersion(id, changeTag: tag) else {
                // The store reads versions of the zones it holds now: a deleted zone's are not.
                throw .notFound(
                    """
                    the version \(tag.prefix(12)) of '\(id)' named by commit \(commit.commit.prefix(12)) cannot be read: the zone\
                     is not on the store now (create it again, then restore it)
                    """
                ).suggesting(.createZone(name: zone.zoneName))
            }
            versions.append((id, record, commit.commit))
        }
        return try await workspace.withLock(purpose: "restore") { () async throws(RecSyncError) -> [RestoreOutcome] in
            var removing: [RecordID] = []
            if workspace.hasZoneDirectory(zone) {
                for r in try workspace.records(in: zone) where held[r.recordID.recordName] == nil && r.system?.changeTag != nil {
                    removing.append(r.recordID)
                }
            }
            return try await restoreLocked(versions, removing: removing, at: commit.commit, edited: edited)
        }
    }

    private func restoreLocked(
        _ versions: [(RecordID, Record, String)], removing: [RecordID], at commit: String?, edited: Set<RecordID>
    ) async throws(RecSyncError) -> [RestoreOutcome] {
        let ws = workspace
        let conflicted = Set(try ws.allConflicts().map(\.recordID))
        let refused = (versions.map(\.0) + removing).filter(conflicted.contains).sorted()
        if !refused.isEmpty {
            let paths = refused.map { ws.relative(ws.recordPath($0)) }
            throw RecSyncError.invalidArguments(
                "nothing restored: " + paths.map { "\($0) is in conflict; settle it first" }.joined(separator: "; ")
            ).suggesting(.resolve(path: paths[0]))
        }
        var steps: [RestoreStep] = []
        var outcomes: [RestoreOutcome] = []
        var lost: [String] = []
        for (id, version, _) in versions where edited.contains(id) {
            var differs = true  // a file that does not decode is an edit too
            do { differs = try ws.recordFields(id) != version.fields } catch {
                if case .fileSystem = error.reason { throw error }
            }
            if differs { lost.append(ws.relative(ws.recordPath(id))) }
        }
        lost += removing.filter(edited.contains).map { ws.relative(ws.recordPath($0)) }
        if !lost.isEmpty {
            throw RecSyncError.localChanges(
                """
                nothing restored: \(lost.sorted().joined(separator: ", ")) \(lost.count == 1 ? "has" : "have") edits not pushed,\
                 which the restore would lose
                """
            ).suggesting(.showOrUndoEdits(path: lost.sorted()[0]), .force)
        }
        for (id, version, commit) in versions {
            let stamp = try ws.recordFileStamp(id)
            let local: [String: FieldValue]?
            do { local = try ws.recordFields(id) } catch {
                if case .fileSystem = error.reason { throw error }
                local = [:]
            }
            guard local != version.fields else {
                outcomes.append(RestoreOutcome(recordID: id, undone: nil, commit: commit))
                continue
            }
            let system = try ws.systemFields(id)
            let sidecar =
                system == nil ? SystemFields(recordID: id, recordType: version.recordType, changeTag: nil, created: nil, modified: nil) : nil
            steps.append(RestoreStep(id: id, version: version, stamp: stamp, local: local, sidecar: sidecar))
            outcomes.append(RestoreOutcome(recordID: id, undone: nil, written: stamp == nil ? .new : .modified, commit: commit))
        }
        for id in removing {
            steps.append(RestoreStep(id: id, version: nil, stamp: try ws.recordFileStamp(id), local: nil))
            outcomes.append(RestoreOutcome(recordID: id, undone: nil, written: .deleted, commit: commit))
        }
        try await apply(steps, synced: false)
        return outcomes.sorted { $0.recordID < $1.recordID }
    }

    /// The store's history, for a restore from a revision.
    func history() throws(RecSyncError) -> any StoreHistory {
        guard let history = store as? any StoreHistory else { throw .unsupported("this store keeps no history to restore from") }
        return history
    }
}
