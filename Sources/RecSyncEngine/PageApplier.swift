import RecSyncModel
import RecSyncStore
import RecSyncWorkspace

/// Applies one page of incoming changes to a zone: stages file writes, decides conflicts with
/// local edits, and records what to put in the index once the page is on disk.
///
/// For a dry run (`SyncEngine.dryRun`) it decides the same way and only counts: nothing is
/// staged, downloaded or saved.
struct PageApplier {
    let engine: SyncEngine
    let workspace: Workspace
    let zone: ZoneID
    var batch: WriteBatch
    /// Index entries to record after the batch is durable: file → (record, fields, and the
    /// record file's stamp when the batch does not write that file).
    var indexUpdates: [String: (name: String, tag: String, hash: String, fileStamp: FileStamp?)] = [:]
    var indexRemovals: Set<String> = []
    /// What each guarded write or removal would have applied, for a conflict if the file
    /// changed under it: file → (record ID, the incoming version or nil for a deletion, the
    /// change tag the local copy was synced at).
    var guarded: [String: (id: RecordID, server: Record?, knownTag: String?)] = [:]
    /// Assets the batch puts in place: remembered with their stamps once it is durable.
    var assetWrites: [(id: RecordID, field: String, path: String, asset: AssetReference)] = []
    /// Record files the batch writes that name assets, and the names, with the stamps of the
    /// ones already in place (nil: the batch places it): noted in the asset cache once the
    /// batch is durable, so the next scan need not read them.
    var assetNamesWritten: [String: [String: FileStamp?]] = [:]
    /// Records whose asset files the batch removes: their `.assets` directory goes too once
    /// the batch is durable, if nothing else is left in it.
    var assetDirectoriesEmptied: Set<RecordID> = []
    /// Incoming versions not applied because the store cannot deliver one of their assets
    /// (see `write`): for the caller to report and put on the zone's `RetryList`.
    var refused: [RecordID: RecSyncError] = [:]
    /// What asset files hashed to, read once for the page and written once by `finish`.
    let assetCache: AssetDigestCache
    /// Whether assets are left on the store (`SyncEngine.fetchesAssets`): the record files
    /// land, their asset fields noted as not fetched (`Workspace.unfetchedAssets`).
    let skipsAssets: Bool
    /// The records whose notes of assets not fetched change with the batch: record → the
    /// fields not fetched now (none: every asset file is there, or the record is gone).
    var unfetched: [RecordID: [String: AssetReference]] = [:]
    var written = 0
    var deleted = 0
    var conflicts: [RecordID] = []
    /// What it wrote, deleted, and the conflicts whose incoming side is a deletion.
    var writtenIDs: [RecordID] = []
    var deletedIDs: [RecordID] = []
    var conflictsDeletedOnStore: [RecordID] = []
    /// Decide and count only (a dry run).
    let dryRun: Bool
    /// The zone's pending conflicts, read once per page.
    var pending: [RecordID: Conflict]?
    let handles: Workspace.DirectoryHandles
    /// The zone's files when a full fetch began: a record named in neither list, and not in
    /// the index, has nothing local to inspect (a clone then makes no `stat` call per record;
    /// a file made since is still caught, by the O_EXCL create).
    let listing: ZoneListing?
    /// Records of the page with no `.assets` directory: ones the listing shows without one
    /// that nothing since has written, and ones whose inspection just found none. Staging
    /// their assets need not look again (a clone makes no `stat` call for it, an incremental
    /// pull one where it made two).
    var withoutAssetDirectory: Set<RecordID> = []

    init(engine: SyncEngine, workspace: Workspace, zone: ZoneID, listing: ZoneListing? = nil) throws(RecSyncError) {
        self.engine = engine
        self.workspace = workspace
        self.zone = zone
        self.listing = listing
        dryRun = engine.dryRun
        skipsAssets = !engine.fetchesAssets(of: zone)
        batch = try workspace.recordBatch(zone: zone)
        // The page's files are synced with the pull's others, once, when it ends (`PageJournal`).
        if !dryRun { batch.journal = workspace.newPageJournalPath(zone) }
        handles = try Workspace.DirectoryHandles(zoneDirectory: workspace.zoneDirectory(zone))
        assetCache = workspace.assetDigestCache(zone)
    }

    /// The pending conflict of a record, if any.
    mutating func pendingConflict(_ id: RecordID) throws(RecSyncError) -> Conflict? {
        if pending == nil {
            pending = Dictionary(try workspace.conflicts(in: zone).map { ($0.recordID, $0) }, uniquingKeysWith: { a, _ in a })
        }
        return pending?[id]
    }

    /// The local state of a record, or nil when there is none.
    mutating func local(_ id: RecordID, index: inout ZoneIndex) async throws(RecSyncError) -> LocalRecord? {
        let file = Workspace.fileName(for: id.recordName)
        if let listing, !listing.files.contains(file), !listing.sidecars.contains(file), index[file] == nil {
            if !listing.files.contains(Workspace.assetDirectoryName(forFile: file)) { withoutAssetDirectory.insert(id) }
            return nil
        }
        switch try await workspace.inspect(zone: zone, file: file, index: &index, base: engine.baseLookup, handles: handles, assetCache: assetCache) {
        case .record(let r):
            if r.withoutAssetDirectory { withoutAssetDirectory.insert(id) }
            return r
        case .nothing: return nil
        case .problem:
            // An unreadable local file is local work (perhaps being written right now): treat
            // it as an edit, never overwrite it. It still was synced at a known version: if the
            // store has not moved from it, there is nothing to decide (no false conflict).
            return LocalRecord(
                recordID: id, fileName: file, state: .modified, system: nil, fields: nil, fileStamp: nil,
                knownTag: knownTag(id, file: file, index: index))
        }
    }

    /// The change tag a record was last synced at, from the index or else its sidecar; nil
    /// when neither says (the record then counts as never synced, and any incoming version
    /// is a conflict: the safe side).
    func knownTag(_ id: RecordID, file: String, index: ZoneIndex) -> String? {
        if let tag = index[file]?.tag, index[file]?.name == id.recordName { return tag }
        do throws(RecSyncError) {
            guard let system = try workspace.systemFields(id) else { return nil }
            return system.recordID == id ? system.changeTag : nil
        } catch {
            return nil
        }
    }

    /// An incoming new or changed record.
    mutating func incoming(_ record: Record, index: inout ZoneIndex) async throws(RecSyncError) {
        let id = record.recordID
        let file = Workspace.fileName(for: id.recordName)
        let existing = try pendingConflict(id)
        guard let local = try await local(id, index: &index), existing == nil else {
            if var conflict = existing {
                // Still in conflict: keep the newest server copy for `resolve`.
                conflict.server = record.fields
                conflict.serverSystem = record.systemFields
                if !dryRun { try workspace.saveConflict(conflict) }
                pending?[id] = conflict
                return
            }
            try await write(record, file: file, expect: .absent, knownTag: nil)
            return
        }
        switch local.state {
        case .clean:
            if local.knownTag == record.changeTag { return }  // our own change coming back
            try await write(
                record, file: file, expect: local.fileStamp.map { .unchanged($0) } ?? .absent, knownTag: local.knownTag, previous: heldAssets(local))
        case .new, .modified:
            if let fields = local.fields, fields == record.fields {
                // Both sides hold the same values: adopt the store's version, nothing to merge.
                if dryRun { return }
                batch.write(workspace.sidecarPath(id), WorkspaceEncoding.encodeSystemFields(record.systemFields), machineOwned: true)
                // The record file is not rewritten: the index keeps its stamp as inspected.
                indexUpdates[file] = (id.recordName, record.changeTag ?? "", ZoneIndex.hash(record.fields), local.fileStamp)
                return
            }
            if local.knownTag == record.changeTag { return }  // the store has not moved; our edit stands
            try await conflict(id, file: file, client: local.fields, server: record, ancestorTag: local.knownTag)
        case .deleted:
            if local.knownTag == record.changeTag { return }  // our deletion is still to be pushed
            try await conflict(id, file: file, client: nil, server: record, ancestorTag: local.knownTag)
        }
    }

    /// An incoming deletion.
    mutating func incomingDeletion(_ id: RecordID, index: inout ZoneIndex) async throws(RecSyncError) {
        let file = Workspace.fileName(for: id.recordName)
        if var existing = try pendingConflict(id) {
            existing.server = nil
            existing.serverSystem = nil
            if !dryRun { try workspace.saveConflict(existing) }
            pending?[id] = existing
            return
        }
        guard let local = try await local(id, index: &index) else { return }
        switch local.state {
        case .clean, .deleted:
            deleted += 1
            deletedIDs.append(id)
            if dryRun { return }
            workspace.unstage(id, in: &batch, expect: local.fileStamp.map { .unchanged($0) } ?? .absent)
            workspace.unstageAssets(id, were: heldAssets(local), keeping: [], in: &batch)
            assetDirectoriesEmptied.insert(id)
            unfetched[id] = [:]
            guarded[file] = (id, nil, local.knownTag)
            indexRemovals.insert(file)
        case .modified:
            try await conflict(id, file: file, client: local.fields, server: nil, ancestorTag: local.knownTag)
        case .new:
            break  // a record we never had; the local file is new work of its own
        }
    }

    /// `previous`: the asset fields of the version the workspace held (`heldAssets`), whose
    /// files the new version may drop.
    ///
    /// A version whose assets the store cannot deliver is not written: it goes to `refused`,
    /// and the workspace keeps what it held (one bad entry in the store never fails the rest
    /// of the pull).
    mutating func write(_ record: Record, file: String, expect: WriteBatch.Expectation, knownTag: String?, previous: Set<String> = [])
        async throws(RecSyncError)
    {
        if dryRun {
            // Assets are not downloaded: one the store cannot deliver shows in the real run.
            written += 1
            writtenIDs.append(record.recordID)
            return
        }
        do { try await stageAssets(of: record, previous: previous) } catch {
            guard case .storeCorrupt(let why) = error.reason else { throw error }
            refused[record.recordID] = .storeCorrupt(why)
            return
        }
        refused[record.recordID] = nil
        let hash = workspace.stage(record, in: &batch, expect: expect)
        guarded[file] = (record.recordID, record, knownTag)
        indexUpdates[file] = (record.recordID.recordName, record.changeTag ?? "", hash, nil)
        indexRemovals.remove(file)
        written += 1
        writtenIDs.append(record.recordID)
    }

    /// Streams the record's assets that the workspace does not hold yet into temporary files
    /// beside their targets (each durable), to land with the record file; removes asset files
    /// of fields the record no longer has. A file that already holds the asset is left alone.
    ///
    /// Nothing is staged until every asset is in: an asset the store cannot deliver as its
    /// reference says (missing, other content, over the limit: a bad entry someone wrote)
    /// throws `storeCorrupt` naming the field, with the batch untouched and no temporary file
    /// left, so that `write` can refuse that record alone.
    mutating func stageAssets(of record: Record, previous: Set<String>) async throws(RecSyncError) {
        let id = record.recordID
        let assets = record.assetFields
        let mayHaveDirectory = !withoutAssetDirectory.contains(id)
        if assets.isEmpty {
            if mayHaveDirectory, workspace.hasAssetDirectory(id) {
                workspace.unstageAssets(id, were: previous, keeping: [], in: &batch)
                assetDirectoriesEmptied.insert(id)
                assetNamesWritten[Workspace.fileName(for: id.recordName)] = [:]
            }
            unfetched[id] = [:]
            return
        }
        let resolve = workspace.assetResolver(id, cache: assetCache)
        let group = Workspace.fileName(for: id.recordName)
        let hadDirectory = mayHaveDirectory && workspace.hasAssetDirectory(id)
        var fetched: [(key: String, path: String, temp: String, asset: AssetReference, before: FileStamp?)] = []
        var inPlace: [String: FileStamp?] = [:]
        var notFetched: [String: AssetReference] = [:]
        for (key, asset) in assets.sorted(by: { $0.key < $1.key }) {
            let path = workspace.assetPath(id, field: key)
            // A file that cannot be read or hashed is simply fetched again.
            let stamp = try workspace.assetFileStamp(id, field: key)
            if let stamp, (try? resolve(key, key)) == asset {
                inPlace[key] = stamp
                continue
            }
            if skipsAssets {
                // The previous version's file goes, or it would read as an edit of the field.
                if stamp != nil { batch.remove(path, group: group) }
                notFetched[key] = asset
                inPlace[key] = .some(nil)  // no file: the record is not remembered as clean
                continue
            }
            let temp: String
            do { temp = try await engine.downloadAsset(asset, of: id, workspace: workspace) } catch {
                for f in fetched { workspace.discardTemporaryFile(f.temp) }
                if !hadDirectory { workspace.removeAssetDirectoryIfEmpty(id) }
                switch error.reason {
                case .storeCorrupt, .limitExceeded: throw .storeCorrupt("field '\(key)': \(error.message)")
                default: throw error
                }
            }
            fetched.append((key, path, temp, asset, stamp))
        }
        for f in fetched {
            // Only over what the decision saw: a file put there meanwhile is the user's.
            batch.place(f.temp, at: f.path, group: group, expect: f.before.map { .unchanged($0) } ?? .absent)
            assetWrites.append((id, f.key, f.path, f.asset))
            inPlace[f.key] = .some(nil)
        }
        assetNamesWritten[group] = inPlace
        unfetched[id] = notFetched
        workspace.unstageAssets(id, were: previous, keeping: Set(assets.keys), in: &batch)
    }

    /// The asset fields of the version of a record the workspace holds: from its fields when
    /// the file was read, else from the asset cache, which vouched for the `stat` fast path
    /// that left the file unread.
    func heldAssets(_ local: LocalRecord) -> Set<String> {
        if let fields = local.fields { return Self.assetNames(fields) }
        guard let stamp = local.fileStamp else { return [] }
        return Set(assetCache.assetNames(ofFile: local.fileName, stamp: stamp) ?? [])
    }

    /// The fields of a version that were assets (their files are the record's).
    static func assetNames(_ fields: [String: FieldValue]?) -> Set<String> {
        Set((fields ?? [:]).compactMap { key, value in if case .asset = value { key } else { nil } })
    }

    mutating func conflict(_ id: RecordID, file: String, client: [String: FieldValue]?, server: Record?, ancestorTag: String?)
        async throws(RecSyncError)
    {
        conflicts.append(id)
        if server == nil { conflictsDeletedOnStore.append(id) }
        if dryRun { return }
        var ancestor: [String: FieldValue]?
        if let ancestorTag { ancestor = try await engine.store.fetchRecordVersion(id, changeTag: ancestorTag)?.fields }
        let conflict = Conflict(
            recordID: id, fileName: file, client: client, server: server?.fields, serverSystem: server?.systemFields, ancestor: ancestor)
        try workspace.saveConflict(conflict)
        pending?[id] = conflict
    }

    /// Makes the page durable, then records the index entries for what was written. A file
    /// the user changed while the page was being applied was left alone: it becomes a conflict.
    mutating func finish(index: inout ZoneIndex) async throws(RecSyncError) {
        guard !dryRun else { return }
        // Notes of assets not fetched go down before the record files naming them land, the
        // notes they no longer need only after (a crash in between leaves a note too many,
        // which a file or a field gone outweighs, never a record naming a missing file).
        let notesBefore = try unfetched.isEmpty ? [:] : workspace.unfetchedAssets(in: zone)
        var adding = unfetched.filter { !$0.value.isEmpty }
        for (id, fields) in adding { adding[id] = (notesBefore[id] ?? [:]).merging(fields) { _, new in new } }
        try workspace.setUnfetchedAssets(adding, in: zone)
        try batch.commit()
        for id in unfetched.keys where batch.skipped.contains(Workspace.fileName(for: id.recordName)) {
            unfetched[id] = notesBefore[id] ?? [:]  // the local file stays as it was
        }
        try workspace.setUnfetchedAssets(unfetched, in: zone)
        unfetched.removeAll()
        for w in assetWrites where !batch.skipped.contains(Workspace.fileName(for: w.id.recordName)) {
            if let stamp = batch.writtenStamps[w.path] { workspace.rememberAsset(w.id, field: w.field, stamp: stamp, asset: w.asset, in: assetCache) }
        }
        assetWrites.removeAll()
        let zoneDir = workspace.zoneDirectory(zone)
        for (file, assets) in assetNamesWritten where !batch.skipped.contains(file) {
            guard let stamp = batch.writtenStamps["\(zoneDir)/\(file)"] else { continue }
            var stamps: [String: FileStamp] = [:]
            for (name, known) in assets {
                let path = "\(zoneDir)/\(Workspace.assetDirectoryName(forFile: file))/\(name)"
                stamps[name] = known ?? batch.writtenStamps[path]
            }
            if stamps.count == assets.count {
                assetCache.rememberClean(file: file, stamp: stamp, assets: stamps)
            } else {
                assetCache.forgetClean(file: file)
            }
        }
        assetNamesWritten.removeAll()
        assetCache.save()
        for id in assetDirectoriesEmptied { workspace.removeAssetDirectoryIfEmpty(id) }
        assetDirectoriesEmptied.removeAll()
        for file in batch.skipped {
            guard let g = guarded[file] else { continue }
            indexUpdates[file] = nil
            indexRemovals.remove(file)
            if g.server == nil {
                deleted -= 1
                deletedIDs.removeAll { $0 == g.id }
            } else {
                written -= 1
                writtenIDs.removeAll { $0 == g.id }
            }
            var client: [String: FieldValue]?
            // A file that cannot be read is an error; one that does not decode (the user is
            // mid-edit) is recorded with no client fields, as before.
            do { client = try workspace.recordFields(g.id) } catch {
                if case .fileSystem = error.reason { throw error }
            }
            try await conflict(g.id, file: file, client: client, server: g.server, ancestorTag: g.knownTag)
        }
        guarded.removeAll()
        for file in indexRemovals { index[file] = nil }
        let dir = workspace.zoneDirectory(zone)
        for (file, u) in indexUpdates {
            let fileStamp = batch.writtenStamps["\(dir)/\(file)"] ?? u.fileStamp
            let sideStamp = batch.writtenStamps["\(dir)/.system/\(file)"]
            index.record(file: file, recordName: u.name, tag: u.tag, hash: u.hash, fileStamp: fileStamp, sideStamp: sideStamp)
        }
        indexUpdates.removeAll()
        indexRemovals.removeAll()
    }

    func report(into report: inout PullReport, events: @Sendable (SyncEvent) -> Void) {
        report.recordsWritten += written
        report.recordsDeleted += deleted
        report.conflicts += conflicts
        // Named only for a dry run's plan: a clone of a million records would hold every ID.
        if dryRun {
            report.recordsWrittenIDs += writtenIDs
            report.recordsDeletedIDs += deletedIDs
        }
        report.conflictsDeletedOnStore += conflictsDeletedOnStore
        if written > 0 { events(.recordsWritten(zone, count: written)) }
        if deleted > 0 { events(.recordsDeleted(zone, count: deleted)) }
        for c in conflicts { events(.conflict(c)) }
    }
}

/// The names in a zone directory and its `.system`, listed once.
final class ZoneListing: Sendable {
    let files: Set<String>
    let sidecars: Set<String>

    init(_ workspace: Workspace, zone: ZoneID) throws(RecSyncError) {
        (files, sidecars) = try workspace.zoneFileNames(zone)
    }
}
