import Foundation
import RecSyncModel
import RecSyncStore
import RecSyncWorkspace

extension SyncEngine {
    /// Sends local changes to the store (DESIGN §5).
    ///
    /// Every file is validated first; a zone with a problem sends nothing (it is reported in
    /// `notSent`), and with nothing else to send the push fails before anything is sent or
    /// changed. Then new zones are created and records saved with the change tags from their
    /// sidecars, atomically per zone; refused records become conflicts. `force` overwrites
    /// the store's versions (CloudKit's allKeys policy).
    public func push(force: Bool = false, events: @escaping @Sendable (SyncEvent) -> Void = { _ in }) async throws(RecSyncError) -> PushReport {
        try await workspace.withLock(purpose: "push") { () async throws(RecSyncError) -> PushReport in
            // A push reads the store as the mirror last saw it, and asks the remote only when
            // its write is refused (the store moved): the write is a compare-and-swap on the
            // remote's head, so a landed write proves every read was current. Not for a push
            // that settles an interrupted one first, nor for --force, whose list of what it
            // overwrites must come from the store as it is.
            let interrupted = try workspace.pendingPushNote() != nil
            let fromLastLook = !force && !interrupted
            return try await inOneOperation(fromLastLook: fromLastLook) { () async throws(RecSyncError) -> PushReport in
                let report = try await pushLocked(force: force, events: events)
                try workspace.recordContact(at: StoreActor.systemClock())
                return report
            }
        }
    }

    private func pushLocked(force: Bool, events: @escaping @Sendable (SyncEvent) -> Void) async throws(RecSyncError) -> PushReport {
        let decision = try await decidePush(events: events)
        guard decision.problems.isEmpty || !decision.isEmpty else { throw .invalidFiles(decision.problems) }
        return try await send(decision, force: force, events: events)
    }

    /// What a push is about to send, decided from the workspace and the store: the push sends
    /// it (`send`), its dry run (`pushPlan`) reports it and what the store would answer.
    struct PushDecision {
        let workspace: Workspace
        /// What the push has done and found so far: zones removed, files not sent.
        var report: PushReport
        var saves: [Record]
        var deletions: [RecordDeletion]
        var zonesToCreate: [ZoneID]
        /// Zones uploaded again after an encrypted-data reset.
        var reupload: Set<ZoneID>
        /// The problems that hold zones back (the push sends the other zones).
        var problems: [FileProblem]
        /// Those problems as the report's `notSent` lines.
        var heldBack: [String]
        var byID: [RecordID: (scan: Int, record: LocalRecord)]
        var scans: [ZoneScan]
        var pendingConflicts: Set<RecordID>

        var isEmpty: Bool { saves.isEmpty && deletions.isEmpty && zonesToCreate.isEmpty }
    }

    /// Step 1 of a push: settles what an interrupted sync left, removes the zones the store
    /// removed, reads and checks every changed file. A zone with a problem is held back.
    /// In a dry run zones are not removed (they are reported) and the index is not saved.
    func decidePush(events: @Sendable (SyncEvent) -> Void) async throws(RecSyncError) -> PushDecision {
        let keptAside = dryRun ? [] : try workspace.removeStaleTemporaryFiles()
        let ws = try checkStore()
        // Bookkeeping the dry run does too, as status does: a push that landed but was killed
        // before its sidecars were written, and conflicts whose sides became the same (which
        // then hold nothing back). Neither changes a record file.
        try await settlePendingPush(workspace: ws)
        _ = try settleIdenticalConflictsLocked()
        var report = PushReport()
        report.notSent += keptAside.map { "\(ws.relative($0)): a file an interrupted pull was writing held something else; kept there, not pushed" }

        // 1. Read and check everything. A zone with a problem (a malformed file, an edit in a
        // read-only share, a zone that is not shared with this user) sends nothing, since a
        // zone lands all or nothing; the other zones go (CloudKit's atomicity is per zone).
        let (localZones, dirProblems) = ws.localZones()
        var zoneProblems: [ZoneID: [FileProblem]] = [:]
        let storeZones = try await store.fetchAllRecordZones(scope: .private) + store.fetchAllRecordZones(scope: .shared)
        let storeZoneByID = Dictionary(storeZones.map { ($0.zoneID, $0) }, uniquingKeysWith: { a, _ in a })
        let gone = try await applyZoneDeletions(localZones.filter { storeZoneByID[$0] == nil }, workspace: ws, report: &report, events: events)
        let zones = localZones.filter { !gone.contains($0) }
        // Zones the store reset that the deletions just marked for uploading again (a dry run
        // marks nothing).
        let resetNow = Set(report.zonesRemoved.filter { $0.keepsRecordsForUpload(by: ws.user) }.map(\.zoneID))
        func awaitsReupload(_ zone: ZoneID) throws(RecSyncError) -> Bool { try resetNow.contains(zone) ? true : ws.awaitsReupload(zone) }
        var scans: [ZoneScan] = []
        var zonesToCreate: [ZoneID] = []
        var reupload = Set<ZoneID>()
        // Unchanged records matter only in zones the store lacks or that are to be uploaded
        // again; elsewhere only changes are kept (at a million records, not every zone fits).
        var keepAll = Set<ZoneID>()
        for zone in zones where try storeZoneByID[zone] == nil ? true : awaitsReupload(zone) { keepAll.insert(zone) }
        for (zone, scan) in zip(
            zones, try await scanZones(zones, workspace: ws, changesOnly: true, keepingAllRecordsOf: keepAll, savingIndex: !dryRun))
        {
            if !scan.problems.isEmpty { zoneProblems[zone, default: []] += scan.problems }
            report.untracked += scan.untracked
            scans.append(scan)
            if try awaitsReupload(zone) { reupload.insert(zone) }
            if !scan.changes.isEmpty, let refusal = Self.refusal(ofChangesIn: zone, onStore: storeZoneByID[zone], workspace: ws) {
                zoneProblems[zone, default: []].append(refusal)
            }
            if storeZoneByID[zone] == nil {
                if zone.ownerName == ws.user {
                    if !ws.zonesWithTokens().contains(zone) || reupload.contains(zone) { zonesToCreate.append(zone) }
                    // Records synced before, in a zone the store no longer has and that no pull
                    // has removed: upload them again rather than let a later pull drop them.
                    if zonesToCreate.contains(zone), scan.records.contains(where: { $0.knownTag != nil }) { reupload.insert(zone) }
                }
            }
        }
        // A zone removed or reset just now took its pending conflicts with it (a dry run has
        // only noted the removal).
        let pendingConflicts = Set(try ws.allConflicts().map(\.recordID).filter { !gone.contains($0.zoneID) && !resetNow.contains($0.zoneID) })
        // A zone to upload again that another device has re-created meanwhile: a record the
        // store holds at the tag this workspace knows was pulled from the new zone, and goes
        // as an ordinary change; the rest are uploaded as new (one the store holds at another
        // tag is then a conflict, settled as usual — sending it tag-less for ever would not be).
        var inSyncWithStore = Set<RecordID>()
        for scan in scans where reupload.contains(scan.zone) && storeZoneByID[scan.zone] != nil {
            let known = Dictionary(scan.records.compactMap { r in r.knownTag.map { (r.recordID, $0) } }, uniquingKeysWith: { a, _ in a })
            for result in try await store.fetchRecords(known.keys.sorted(), desiredKeys: []) {
                if case .success(let record) = result.result, let tag = record.changeTag, known[result.recordID] == tag {
                    inSyncWithStore.insert(result.recordID)
                }
            }
        }
        var saves: [Record] = []
        var deletions: [RecordDeletion] = []
        var byID: [RecordID: (scan: Int, record: LocalRecord)] = [:]
        var conflictHints = 0  // records held back for a pending conflict, hinted at
        for (i, scan) in scans.enumerated() {
            let defaultType = storeZoneByID[scan.zone]?.defaultRecordType
            for r in scan.records {
                let uploadingAgain = reupload.contains(r.recordID.zoneID) && !inSyncWithStore.contains(r.recordID)
                let resend = uploadingAgain && r.state != .deleted
                guard r.state != .clean || resend else { continue }
                if pendingConflicts.contains(r.recordID) {
                    report.notSent.append("\(ws.relative(ws.recordPath(r.recordID))): conflict pending; settle it first")
                    // A hint for the first few: a list of every conflict is what status prints.
                    if conflictHints < 3 { report.remedies.append(.resolve(path: ws.relative(ws.recordPath(r.recordID)))) }
                    conflictHints += 1
                    continue
                }
                byID[r.recordID] = (i, r)
                if r.state == .deleted {
                    if !uploadingAgain {
                        deletions.append(RecordDeletion(recordID: r.recordID, changeTag: r.knownTag))
                    }
                    continue
                }
                let type = r.system?.recordType ?? defaultType ?? "Record"
                do throws(RecSyncError) {
                    // A clean record sent again was not read by the scan: read it now, and
                    // keep its fields with the record (a conflict needs the client copy).
                    let fields: [String: FieldValue]
                    if let read = r.fields { fields = read } else { fields = try Self.readFields(of: r.recordID, workspace: ws) }
                    byID[r.recordID]?.record.fields = fields
                    let record = try Record(
                        recordID: r.recordID, recordType: type, fields: fields,
                        changeTag: resend ? nil : r.knownTag, created: r.system?.created, modified: r.system?.modified)
                    try record.validate()
                    saves.append(record)
                } catch {
                    zoneProblems[r.recordID.zoneID, default: []].append(
                        FileProblem(path: ws.relative(ws.recordPath(r.recordID)), message: error.message))
                    byID[r.recordID] = nil
                }
            }
        }
        // An asset over the store's limit is refused here, before anything is sent; so is a
        // file in a field its zone seals: recsync does not encrypt files, and one uploaded
        // would sit in the store in clear even though the record is then refused. (A zone
        // created by this push is checked by the store, at the upload.)
        let assetLimit = store.maxAssetBytes
        for save in saves {
            let encryption = storeZoneByID[save.recordID.zoneID]?.encryption
            for (key, asset) in save.assetFields.sorted(by: { $0.key < $1.key }) {
                let path = ws.relative(ws.assetPath(save.recordID, field: key))
                if asset.size > assetLimit {
                    zoneProblems[save.recordID.zoneID, default: []].append(
                        FileProblem(
                            path: path,
                            message:
                                """
                                is \(asset.size) bytes; the store takes assets of at most \(assetLimit) bytes (maxAssetBytes in\
                                 the store's recsync.json): make it smaller
                                """
                        ))
                }
                if encryption?.seals(key) == true {
                    zoneProblems[save.recordID.zoneID, default: []].append(
                        FileProblem(path: path, message: ZoneEncryption.fileInSealedField(save.recordID, field: key).message))
                }
            }
        }
        // Zones with a problem stay behind; with nothing else to send, the push fails as a
        // whole, naming every problem.
        let blocked = Set(zoneProblems.keys)
        let problems = dirProblems + zoneProblems.keys.sorted().flatMap { zoneProblems[$0] ?? [] }
        saves.removeAll { blocked.contains($0.recordID.zoneID) }
        deletions.removeAll { blocked.contains($0.recordID.zoneID) }
        zonesToCreate.removeAll { blocked.contains($0) }
        reupload.subtract(blocked)
        var heldBack = problems.map { "\($0.path): \($0.message)" }
        for zone in blocked.sorted() {
            heldBack.append(
                "\(ws.relative(ws.zoneDirectory(zone)))/: nothing of this zone was sent (a zone lands whole); fix the files above and push again")
        }
        return PushDecision(
            workspace: ws, report: report, saves: saves, deletions: deletions, zonesToCreate: zonesToCreate, reupload: reupload,
            problems: problems, heldBack: heldBack, byID: byID, scans: scans, pendingConflicts: pendingConflicts)
    }

    /// Uploads the asset files the records to be saved reference, streaming, but for assets
    /// a pull did not fetch: once for each record field that holds one, since the store
    /// takes a reference only in the record and field its upload was made for (equal
    /// content is still stored once). A file that no longer holds what the scan read
    /// (edited meanwhile) stops the push before any record is sent.
    ///
    /// An asset a record's synced version holds already in the same field is not uploaded
    /// again (the store keeps it with the record): the scan knew it unchanged by `stat`, so
    /// its file is not read at all. Not with `force`, whose save may replace a version that
    /// no longer holds it.
    func uploadAssets(of saves: [Record], force: Bool, workspace ws: Workspace) async throws(RecSyncError) {
        var caches: [ZoneID: AssetDigestCache] = [:]  // each zone's notes of assets not fetched, read once
        for save in saves {
            let assets = save.assetFields
            var kept: [String: FieldValue] = [:]
            if !force, !assets.isEmpty, let tag = save.changeTag {
                kept = try await store.fetchRecordVersion(save.recordID, changeTag: tag)?.fields ?? [:]
            }
            for (key, asset) in assets.sorted(by: { $0.key < $1.key }) where kept[key] != .asset(asset) {
                let path = ws.assetPath(save.recordID, field: key)
                // Not fetched here (`pull --no-assets`): the store has it, the record sends it unchanged.
                if try ws.assetFileStamp(save.recordID, field: key) == nil {
                    let zone = save.recordID.zoneID
                    let cache = caches[zone] ?? ws.assetDigestCache(zone)
                    caches[zone] = cache
                    if try ws.unfetchedAsset(save.recordID, field: key, cache: cache) == asset { continue }
                }
                // Opened under the workspace root without following links: a `.assets`
                // directory swapped for a link since the scan is refused, not read through.
                let read = try await ws.readingAssetFile(save.recordID, field: key) { fd, path throws(RecSyncError) in
                    try await store.uploadAsset(fd: fd, path: path, for: save.recordID, field: key)
                }
                guard let uploaded = read else {
                    throw .invalidFiles([
                        FileProblem(path: ws.relative(path), message: "went away while push read it; put it back (or drop the field) and push again")
                    ])
                }
                guard uploaded == asset else {
                    throw .invalidFiles([FileProblem(path: ws.relative(path), message: "changed while push read it; push again once it is written")])
                }
            }
        }
    }

    /// The fields of a record file, read for sending; a file that is gone or does not decode
    /// is an error naming it (nothing may be sent in its place).
    static func readFields(of id: RecordID, workspace ws: Workspace) throws(RecSyncError) -> [String: FieldValue] {
        guard let fields = try ws.recordFields(id) else {
            throw .fileSystem(path: ws.relative(ws.recordPath(id)), message: "the file went away while the push read it; run the push again")
        }
        return fields
    }

    /// What a forced push is about to replace without having seen it: records whose store
    /// change tag is not the one the workspace sent as its base, and records saved at a tag
    /// the workspace knew that the store has deleted since (the push brings them back). Read
    /// just before sending, so a write that lands in between is overwritten too but not listed.
    /// A local deletion of a record the store deleted too replaces nothing.
    func versionsToOverwrite(saves: [Record], deletions: [RecordDeletion]) async throws(RecSyncError) -> [OverwrittenRecord] {
        var known: [RecordID: String?] = [:]
        for r in saves { known[r.recordID] = r.changeTag }
        for d in deletions { known[d.recordID] = d.changeTag }
        let saved = Set(saves.map(\.recordID))
        var overwritten: [OverwrittenRecord] = []
        for result in try await store.fetchRecords(known.keys.sorted(), desiredKeys: []) {
            let base = known[result.recordID] ?? nil
            switch result.result {
            case .success(let stored):
                guard let tag = stored.changeTag, tag != base else { continue }
                overwritten.append(OverwrittenRecord(recordID: result.recordID, changeTag: tag, knownTag: base))
            case .failure(let error) where error.kind == .unknownItem && base != nil && saved.contains(result.recordID):
                overwritten.append(OverwrittenRecord(recordID: result.recordID, changeTag: nil, knownTag: base))
            default:
                continue
            }
        }
        return overwritten.sorted { $0.recordID < $1.recordID }
    }

    /// Why a push cannot send changes in `zone` whatever they are, nil if it can: the zone is
    /// shared with this user read-only, or is another user's that the store no longer shares
    /// with them (`onStore` nil). The push and its dry run both ask this.
    static func refusal(ofChangesIn zone: ZoneID, onStore: RecordZone?, workspace ws: Workspace) -> FileProblem? {
        let path = ws.relative(ws.zoneDirectory(zone))
        if let onStore, onStore.permission(for: ws.user) == .readOnly {
            return FileProblem(
                path: path,
                message: "zone '\(zone)' is shared with \(ws.user) read-only; undo these changes or ask \(zone.ownerName) for write access")
        }
        if onStore == nil, zone.ownerName != ws.user {
            return FileProblem(path: path, message: "zone '\(zone)' is not shared with \(ws.user); pull to remove it, then move your files elsewhere")
        }
        return nil
    }

    /// Learns why zones of this workspace's user that the store lacks went away, before
    /// anything is created (only an explicit `zone create` brings a deleted zone back):
    /// deleted → removed here as a pull does (unpushed work to lost+found); purged → removed
    /// likewise and refused (userDeletedZone: never uploaded again); encryptedDataReset →
    /// kept and marked for uploading again. A zone with no tombstone is new. Returns the
    /// zones removed.
    func applyZoneDeletions(_ missing: [ZoneID], workspace ws: Workspace, report: inout PushReport, events: @Sendable (SyncEvent) -> Void)
        async throws(RecSyncError) -> Set<ZoneID>
    {
        let mine = missing.filter { $0.ownerName == ws.user }
        guard !mine.isEmpty else { return [] }
        var removed = Set<ZoneID>()
        for deletion in try await store.fetchZoneDeletions(mine) {
            // An upload already under way again after a reset: nothing more to learn.
            if deletion.reason == .encryptedDataReset, try ws.awaitsReupload(deletion.zoneID) { continue }
            var pulled = PullReport()
            try await removeZone(deletion, workspace: ws, report: &pulled, events: events)
            report.zonesRemoved += pulled.zonesRemoved
            report.lostAndFound += pulled.lostAndFound
            if deletion.reason == .purged {
                report.notSent.append(
                    """
                    \(ws.relative(ws.zoneDirectory(deletion.zoneID))):\
                     \(RecSyncError.userDeletedZone(deletion.zoneID).message); its files were moved to lost+found.\
                     To upload them anyway, create zone \(deletion.zoneID.zoneName) again and copy them back
                    """
                )
                report.remedies.append(.createZone(name: deletion.zoneID.zoneName))
            }
            if deletion.reason != .encryptedDataReset { removed.insert(deletion.zoneID) }
        }
        return removed
    }

    func saveConflict(_ local: LocalRecord, server: Record?, workspace ws: Workspace, report: inout PushReport, events: @Sendable (SyncEvent) -> Void)
        async throws(RecSyncError)
    {
        var ancestor: [String: FieldValue]?
        if let tag = local.knownTag { ancestor = try await store.fetchRecordVersion(local.recordID, changeTag: tag)?.fields }
        try ws.saveConflict(
            Conflict(
                recordID: local.recordID, fileName: local.fileName, client: local.fields, server: server?.fields, serverSystem: server?.systemFields,
                ancestor: ancestor))
        report.conflicts.append(local.recordID)
        events(.conflict(local.recordID))
    }

    func finishReupload(_ zones: Set<ZoneID>, workspace ws: Workspace) throws(RecSyncError) {
        for zone in zones { try ws.clearAwaitsReupload(zone) }
    }
}
