import RecSyncModel
import RecSyncStore
import RecSyncWorkspace
import Synchronization

extension SyncEngine {
    /// Steps 2 and 3 of a push: the engine's send creates the zones, then sends the records
    /// in one batch (a zone lands whole), and the workspace records what the store now holds.
    func send(_ decision: PushDecision, force: Bool, events: @escaping @Sendable (SyncEvent) -> Void) async throws(RecSyncError) -> PushReport {
        let client = WorkspaceSendClient(sync: self, decision: decision, force: force, events: events)
        var options = RecordSyncEngine.Options.manual
        options.retries = .never
        let engine = RecordSyncEngine(store: store, client: client, keeper: nil, options: options)
        // Only the upload after an encrypted-data reset may bring a zone back; a zone new here
        // is refused if it was deleted or purged since its tombstone was looked up (see
        // `WorkspaceSendClient.operation(saving:)`).
        try await engine.add(pendingDatabaseChanges: decision.zonesToCreate.map { .saveZone(RecordZone(zoneID: $0)) })
        try await engine.sendChanges()
        var (report, sent) = client.outcome
        let ws = decision.workspace
        if sent {
            // The store already held exactly what was sent: no conflict to show.
            let same = Set(try settleIdenticalConflictsLocked())
            report.conflicts.removeAll { same.contains($0) }
        }
        if !sent || (report.notSent.isEmpty && report.conflicts.isEmpty) { try finishReupload(decision.reupload, workspace: ws) }
        report.notSent += decision.heldBack
        return report
    }
}

/// The file workspace's push as a client of `RecordSyncEngine`'s send: it composes the one
/// batch from the files the push decided to send (assets uploaded and the pending-push note
/// written just before it goes), and records the results in sidecars, the index and conflicts.
final class WorkspaceSendClient: EngineClient {
    let sync: SyncEngine
    let decision: SyncEngine.PushDecision
    let force: Bool
    let events: @Sendable (SyncEvent) -> Void

    private struct Progress: Sendable {
        var report: PushReport
        /// Zones the store refused to create: nothing of them is sent.
        var refusedZones: Set<ZoneID> = []
        /// The records' batch went (or was composed and found empty).
        var composed = false
        var sent = false
    }
    private let progress: Mutex<Progress>

    init(sync: SyncEngine, decision: SyncEngine.PushDecision, force: Bool, events: @escaping @Sendable (SyncEvent) -> Void) {
        self.sync = sync
        self.decision = decision
        self.force = force
        self.events = events
        progress = Mutex(Progress(report: decision.report))
    }

    /// The report, and whether a batch of records was sent.
    var outcome: (PushReport, Bool) { progress.withLock { ($0.report, $0.sent) } }

    func operation(saving zone: RecordZone) -> ZoneOperation? {
        decision.reupload.contains(zone.zoneID) ? .uploadAfterReset(zone) : .save(zone)
    }

    func handleEvent(_ event: RecordSyncEngine.Event, syncEngine: RecordSyncEngine) async throws {
        switch event {
        case .sentDatabaseChanges(let sent): zonesSent(sent)
        case .sentRecordZoneChanges(let sent): try await recordsSent(sent)
        default: break
        }
    }

    private func zonesSent(_ sent: RecordSyncEngine.SentDatabaseChanges) {
        let ws = decision.workspace
        progress.withLock { p in
            for zone in sent.savedZones {
                p.report.zonesCreated.append(zone.zoneID)
                events(.zoneCreated(zone.zoneID))
            }
            for failure in sent.failedZoneSaves {
                p.refusedZones.insert(failure.zoneID)
                p.report.notSent.append(
                    """
                    \(ws.relative(ws.zoneDirectory(failure.zoneID)))/: \(failure.error.message); nothing of it was\
                     sent. Pull to learn what happened to it
                    """
                )
            }
        }
    }

    /// The one batch: every save and deletion the push decided on, but those of zones the
    /// store refused to create. Assets go first (CloudKit uploads them before the records),
    /// then the note of what is about to be sent, durably.
    func nextRecordZoneChangeBatch(_ context: RecordSyncEngine.SendChangesContext, syncEngine: RecordSyncEngine) async throws -> RecordSyncEngine
        .RecordZoneChangeBatch?
    {
        let refused: Set<ZoneID>? = progress.withLock { p in
            guard !p.composed else { return nil }
            p.composed = true
            return p.refusedZones
        }
        guard let refused else { return nil }
        let saves = decision.saves.filter { !refused.contains($0.recordID.zoneID) }
        let deletions = decision.deletions.filter { !refused.contains($0.recordID.zoneID) }
        guard !saves.isEmpty || !deletions.isEmpty else { return nil }
        let ws = decision.workspace
        try await sync.uploadAssets(of: saves, force: force, workspace: ws)
        events(.sending(records: saves.count + deletions.count))
        if force {
            let overwritten = try await sync.versionsToOverwrite(saves: saves, deletions: deletions)
            progress.withLock { $0.report.overwritten = overwritten }
        }
        let note = PendingPush(saves: saves, device: try ws.deviceID())
        try sync.notePendingPush(note, workspace: ws)
        var batch = RecordSyncEngine.RecordZoneChangeBatch(recordsToSave: saves, recordIDsToDelete: deletions.map(\.recordID), atomicByZone: true)
        batch.deletionTags = Dictionary(deletions.compactMap { d in d.changeTag.map { (d.recordID, $0) } }, uniquingKeysWith: { a, _ in a })
        batch.savePolicy = force ? .allKeys : .ifServerRecordUnchanged
        batch.clientChangeTokenData = note.token
        return batch
    }

    /// Step 3: records what the store now holds: sidecars, index, conflicts.
    private func recordsSent(_ sent: RecordSyncEngine.SentRecordZoneChanges) async throws(RecSyncError) {
        try sync.checkpoint?(.afterPushCommitBeforeSidecars)
        let ws = decision.workspace
        var report = progress.withLock { $0.report }
        report.commit = sent.commit
        let byID = decision.byID
        var batch = try ws.recordBatch()
        // The scans saved and let go of their indexes; these reads are lazy (see `ZoneIndex`).
        var indexes: [ZoneID: ZoneIndex] = Dictionary(uniqueKeysWithValues: decision.scans.map { ($0.zone, ZoneIndex.load(ws, zone: $0.zone)) })
        var indexed: [(ZoneID, String, RecordID, String, [String: FieldValue], FileStamp?)] = []
        // Zones that went from the store between the look this push read and its write (a
        // race, or a push from the mirror's last look): nothing of them landed.
        var goneMeanwhile = Set<ZoneID>()
        for stored in sent.savedRecords {
            guard let local = byID[stored.recordID]?.record else { continue }
            batch.write(ws.sidecarPath(stored.recordID), WorkspaceEncoding.encodeSystemFields(stored.systemFields), machineOwned: true)
            if !local.deletedFields.isEmpty, let stamp = local.fileStamp {
                // The file's nulls are deletions the store has made: it now says so without
                // them (unless edited meanwhile, which stays an edit).
                batch.write(
                    ws.recordPath(stored.recordID), WorkspaceEncoding.encodeFields(stored.fields), expect: .unchanged(stamp),
                    group: ws.recordPath(stored.recordID))
            }
            indexed.append((stored.recordID.zoneID, local.fileName, stored.recordID, stored.changeTag ?? "", stored.fields, local.fileStamp))
            report.saved.append(stored.recordID)
        }
        for failure in sent.failedRecordSaves {
            guard let local = byID[failure.record.recordID]?.record else { continue }
            switch failure.error.reason {
            case .serverRecordChanged(let c):
                try await sync.saveConflict(local, server: c.server, workspace: ws, report: &report, events: events)
            case .unknownItem:
                try await sync.saveConflict(local, server: nil, workspace: ws, report: &report, events: events)
            case .zoneNotFound(let zone), .userDeletedZone(let zone):
                goneMeanwhile.insert(zone)
            default:
                report.notSent.append("\(ws.relative(ws.recordPath(failure.record.recordID))): \(failure.error.message)")
                for remedy in failure.error.remedies where !report.remedies.contains(remedy) { report.remedies.append(remedy) }
            }
        }
        for id in sent.deletedRecordIDs {
            guard let local = byID[id]?.record else { continue }
            batch.remove(ws.sidecarPath(id))
            indexes[id.zoneID]?[local.fileName] = nil
            report.deleted.append(id)
        }
        for failure in sent.failedRecordDeletes {
            guard let local = byID[failure.recordID]?.record else { continue }
            switch failure.error.reason {
            case .serverRecordChanged(let c):
                try await sync.saveConflict(local, server: c.server, workspace: ws, report: &report, events: events)
            case .zoneNotFound(let zone), .userDeletedZone(let zone):
                goneMeanwhile.insert(zone)
            default:
                report.notSent.append("\(ws.relative(ws.recordPath(failure.recordID))): \(failure.error.message)")
                for remedy in failure.error.remedies where !report.remedies.contains(remedy) { report.remedies.append(remedy) }
            }
        }
        // Only what landed was overwritten (an atomic zone with a refused item lands nothing).
        let landed = Set(report.saved + report.deleted)
        report.overwritten.removeAll { !landed.contains($0.recordID) }
        // Records the store deleted along with a deleteSelf target are removed here by the
        // next pull, the usual way (and kept if edited meanwhile). What was saved is noted for
        // the next pull to ask about (see `FetchStateKeeper.savedSinceToken`).
        var savedByZone: [ZoneID: [String]] = [:]
        for id in report.saved { savedByZone[id.zoneID, default: []].append(id.recordName) }
        for (zone, names) in savedByZone {
            try ws.notePushed(names, in: zone, batch: &batch)
        }
        try batch.commit()
        for (zone, file, id, tag, fields, stamp) in indexed {
            // The record file's stat as it was read (an edit made during the push stays an
            // edit); the sidecar's as written.
            indexes[zone]?.record(
                file: file, recordName: id.recordName, tag: tag, hash: ZoneIndex.hash(fields),
                fileStamp: batch.writtenStamps[ws.recordPath(id)] ?? stamp, sideStamp: batch.writtenStamps[ws.sidecarPath(id)])
        }
        for var index in indexes.values { try index.save() }
        // The sidecars say what landed: the note is no longer needed.
        try ws.clearPendingPushNote()
        // A zone that went meanwhile is removed here as one found before sending would have
        // been (unpushed work to lost+found; a purged one refused), not left for another push.
        if !goneMeanwhile.isEmpty {
            let mine = goneMeanwhile.filter { $0.ownerName == ws.user }
            let removed = try await sync.applyZoneDeletions(mine.sorted(), workspace: ws, report: &report, events: events)
            for zone in goneMeanwhile.subtracting(removed).sorted() {
                report.notSent.append("\(ws.relative(ws.zoneDirectory(zone)))/: \(RecSyncError.zoneNotFound(zone).message)")
            }
        }
        progress.withLock { [report] in
            $0.report = report
            $0.sent = true
        }
    }
}
