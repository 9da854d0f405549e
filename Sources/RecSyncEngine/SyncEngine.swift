import Foundation
import RecSyncModel
import RecSyncSnapshots
import RecSyncStore
import RecSyncWorkspace

/// Keeps a workspace in sync with a store: pull, push, status, resolve.
///
/// A client of ``RecordSyncEngine`` like any app: a pull runs the engine's fetch and a push
/// its send, with the workspace as the engine's delegate and the keeper of its state. Store
/// and workspace are protocols and values, so these tests run on a `MemoryStore` too.
public struct SyncEngine: Sendable {
    /// Points where a test may make a sync fail, to check that the next sync recovers.
    package enum Checkpoint: Sendable, Hashable {
        /// A page is decided and about to be written (a user may be editing files right now).
        case beforeBatchWrite(ZoneID)
        /// A batch of records is on disk; its zone token is not saved yet.
        case afterBatchBeforeZoneToken(ZoneID)
        /// Every zone of a scope is done; the scope token is not saved yet.
        case beforeScopeToken(DatabaseScope)
        /// A push's records are committed to the store; no sidecar records that yet.
        case afterPushCommitBeforeSidecars
        /// `fetchAssets` has an asset in its temporary file, not yet in place.
        case assetDownloaded(RecordID)
    }

    public internal(set) var workspace: Workspace
    public let store: any RemoteStore
    /// Records per page when pulling.
    public var pageSize = 400
    /// Records per page when fetching a zone in full (a clone, or after a token expired).
    public var fullFetchPageSize = 2000
    /// Zones pulled side by side.
    public var zoneWorkers = max(1, min(ProcessInfo.processInfo.activeProcessorCount, 4))
    /// Whether a pull downloads assets' content: false (`pull --no-assets`, CloudKit's
    /// `desiredKeys` leaving asset fields out) lands the records only, each asset noted as not
    /// fetched; so does a zone the workspace pulls without assets (`noAssetZones`).
    public var fetchesAssets = true
    /// Called at each checkpoint; throwing there aborts the sync as a crash would.
    package var checkpoint: (@Sendable (Checkpoint) throws(RecSyncError) -> Void)?
    /// A dry run: the pull runs as it would, deciding every record the same way, and writes
    /// nothing (`pullPlan`).
    var dryRun = false

    public init(workspace: Workspace, store: any RemoteStore) {
        self.workspace = workspace
        self.store = store
        // Status, dry runs and push refuse an oversized asset by its size, unread.
        workspace.assetSizeLimit.store(store.maxAssetBytes, ordering: .relaxed)
    }

    /// The fields of a synced version, looked up in the store by change tag.
    var baseLookup: Workspace.BaseLookup {
        let store = self.store
        return { (id: RecordID, tag: String) async throws(RecSyncError) -> [String: FieldValue]? in
            try await store.fetchRecordVersion(id, changeTag: tag)?.fields
        }
    }

    /// Runs `body` as one operation on the store (`RemoteStore.beginOperation`): a network
    /// store looks at the remote once for all of `body`'s reads, not once per call.
    func inOneOperation<T>(fromLastLook: Bool = false, _ body: () async throws(RecSyncError) -> T) async throws(RecSyncError) -> T {
        try await Self.inOneOperation(on: store, fromLastLook: fromLastLook, body)
    }

    /// Runs `body` as one operation on `store` (see `RemoteStore.beginOperation(fromLastLook:)`),
    /// ended however `body` ends. `body` runs in the caller's isolation (an actor's own state
    /// stays with it).
    public static func inOneOperation<T>(
        on store: any RemoteStore, fromLastLook: Bool = false, isolation: isolated (any Actor)? = #isolation,
        _ body: () async throws(RecSyncError) -> T
    ) async throws(RecSyncError) -> T {
        await store.beginOperation(fromLastLook: fromLastLook)
        do {
            let result = try await body()
            await store.endOperation()
            return result
        } catch {
            await store.endOperation()
            throw error
        }
    }

    /// Refuses a store other than the one this workspace synced with before; remembers it on first use.
    func checkStore() throws(RecSyncError) -> Workspace {
        if let known = workspace.config.storeID {
            guard known == store.storeID else {
                throw .storeMismatch(location: StoreLocation.shown(workspace.config.remote), expected: known, found: store.storeID)
            }
            return workspace
        }
        if dryRun { return workspace }
        var config = workspace.config
        config.storeID = store.storeID
        try workspace.saveConfig(config)
        return workspace.withConfig(config)
    }

    // MARK: Status

    /// Local changes since the last sync, new zones, pending conflicts, and when the workspace
    /// last pulled or pushed.
    public func status() async throws(RecSyncError) -> StatusReport {
        try await inOneOperation { () async throws(RecSyncError) -> StatusReport in try await Self.status(workspace: workspace, engine: self) }
    }

    /// `status()` for a workspace whose store could not be opened (a network store that does
    /// not answer), from the workspace alone: `storeError` says why. A zone of yours that
    /// nothing was ever synced in counts as new; a file the stat index cannot vouch for
    /// counts as modified (the store is not there to compare it with); zones the store
    /// removed are not known.
    public static func offlineStatus(workspace: Workspace, storeError: RecSyncError) async throws(RecSyncError) -> StatusReport {
        var report = try await status(workspace: workspace, engine: nil)
        report.storeError = storeError.message
        return report
    }

    static func status(workspace: Workspace, engine: SyncEngine?) async throws(RecSyncError) -> StatusReport {
        var report = StatusReport()
        do throws(RecSyncError) { report.lastContact = try workspace.lastContact() } catch {
            report.problems.append(FileProblem(path: workspace.relative(workspace.lastContactPath), message: error.message))
        }
        // A pull killed half-way leaves files it was creating, or a journal of files it wrote:
        // clear them up or finish them first (when no sync is running), or they would read as
        // new records or edits.
        if !workspace.leftoverRegistries.isEmpty || !workspace.pageJournalsToRecover.isEmpty {
            do throws(RecSyncError) {
                let keptAside = try workspace.withLock(purpose: "status") { () throws(RecSyncError) in try workspace.removeStaleTemporaryFiles() }
                report.problems += keptAside.map {
                    FileProblem(path: workspace.relative($0), message: "a file an interrupted pull was writing held something else; kept there")
                }
            } catch {
                // A sync that is running clears them up itself. Otherwise status only reports;
                // a workspace it cannot lock (read-only) still gets one.
                if case .workspaceLocked = error.reason {
                } else {
                    report.problems.append(
                        FileProblem(
                            path: workspace.relative(workspace.stateDir),
                            message:
                                """
                                files an interrupted pull was writing are left, and could not be cleared now (\(error.message));\
                                 the workspace's doctor check says what is in the way
                                """
                        ))
                }
            }
        }
        // Conflicts whose sides are the same by now settle themselves, when no sync is running
        // (one that is settles them itself); a read-only workspace still gets its status.
        if let engine {
            do throws(RecSyncError) { _ = try engine.settleIdenticalConflicts() } catch {
                switch error.reason {
                case .workspaceLocked, .fileSystem: break
                default: throw error
                }
            }
        }
        let (zones, problems) = workspace.localZones()
        report.problems += problems
        var newZones: Set<ZoneID> = []
        // A zone the store deleted or purged is not new: the next pull or push removes it.
        var removed = Set<ZoneID>()
        // Zones shared with this user read-only: an edit there cannot be pushed.
        var readOnly = Set<ZoneID>()
        let scans: [ZoneScan]
        if let engine {
            let store = engine.store
            let onStore = Set(try await store.fetchAllRecordZones(scope: .private).map(\.zoneID))
            readOnly = Set(
                try await store.fetchAllRecordZones(scope: .shared).filter { $0.permission(for: workspace.user) == .readOnly }.map(\.zoneID))
            let missing = zones.filter { !onStore.contains($0) && $0.ownerName == workspace.user }
            for deletion in try await missing.isEmpty ? [] : store.fetchZoneDeletions(missing) where deletion.reason != .encryptedDataReset {
                removed.insert(deletion.zoneID)
                report.problems.append(
                    FileProblem(
                        path: workspace.relative(workspace.zoneDirectory(deletion.zoneID)) + "/",
                        message:
                            """
                            zone \(deletion.reason.rawValue) on the store; the next pull or push removes it here (unpushed\
                             edits go to lost+found). Only creating zone \(deletion.zoneID.zoneName) again brings it back
                            """
                    ))
            }
            newZones = Set(missing).subtracting(removed)
            scans = try await engine.scanZones(zones, workspace: workspace, changesOnly: true)
        } else {
            // Offline: a zone of yours that nothing was ever synced in is new (as push --dry-run).
            let held = Set(workspace.zonesWithTokens())
            newZones = Set(zones.filter { $0.ownerName == workspace.user && !held.contains($0) && workspace.holdsNoSyncedRecord($0) })
            var offline: [ZoneScan] = []
            for zone in zones { offline.append(try await workspace.scan(zone: zone, base: { _, _ throws(RecSyncError) in nil }, changesOnly: true)) }
            scans = offline
        }
        for (zone, scan) in zip(zones, scans) {
            // Status only reports: a marker it cannot look at is a problem to show, not a stop.
            let awaitsReupload: Bool
            do { awaitsReupload = try workspace.awaitsReupload(zone) } catch {
                report.problems.append(FileProblem(path: workspace.relative(workspace.reuploadMarker(zone)), message: error.message))
                awaitsReupload = false
            }
            if awaitsReupload {
                report.zonesToUploadAgain.append(zone)
            } else if newZones.contains(zone) {
                report.newZones.append(zone)
            }
            report.problems += scan.problems.sorted()
            if readOnly.contains(zone), !scan.changes.isEmpty {
                report.problems.append(
                    FileProblem(
                        path: workspace.relative(workspace.zoneDirectory(zone)) + "/",
                        message:
                            """
                            read-only: \(zone.ownerName) shares this zone with \(workspace.user) read-only, so its\
                             \(scan.changes.count == 1 ? "edit" : "\(scan.changes.count) edits") cannot be pushed; undo\
                             \(scan.changes.count == 1 ? "it" : "them") (a pull brings back what you deleted) or ask\
                             \(zone.ownerName) for write access. Your other zones push as usual
                            """
                    ))
            }
            report.untracked += scan.untracked
            report.problems += try RetryList.load(workspace, zone: zone).problems(workspace, zone: zone)
            for r in scan.changes.sorted(by: { $0.fileName < $1.fileName }) {
                let kind: LocalChange.Kind =
                    switch r.state {
                    case .new: .new
                    case .deleted: .deleted
                    default: .modified
                    }
                report.changes.append(LocalChange(kind: kind, recordID: r.recordID, path: workspace.relative(workspace.recordPath(r.recordID))))
            }
        }
        report.untracked = (report.untracked + (try workspace.untrackedOutsideZones())).sorted()
        report.conflicts = try workspace.allConflicts().map(\.recordID).sorted()
        return report
    }

    /// Scans zones side by side (the work is mostly `stat` calls: two cores halve it), at
    /// most `zoneWorkers` at once, and returns them in order. With `changesOnly` (status), each
    /// zone's index is saved and let go as soon as it is scanned, and only changed records are
    /// kept: at a million records, holding every zone's index and records at once would not fit.
    func scanZones(
        _ zones: [ZoneID], workspace ws: Workspace, changesOnly: Bool = false, keepingAllRecordsOf keepAll: Set<ZoneID> = [], savingIndex: Bool = true
    ) async throws(RecSyncError) -> [ZoneScan] {
        let base = baseLookup
        let results = await Self.sideBySide(zones, workers: zoneWorkers) { (zone: ZoneID) async throws(RecSyncError) -> ZoneScan in
            let onlyChanges = changesOnly && !keepAll.contains(zone)
            var scan = try await ws.scan(zone: zone, base: base, changesOnly: onlyChanges)
            if changesOnly && savingIndex {
                // The index only saves work: status is right without it, so a failure to save
                // it (a full disk) is reported, not fatal.
                do throws(RecSyncError) { try scan.index.save() } catch {
                    scan.problems.append(
                        FileProblem(
                            path: ws.relative(ws.indexPath(zone)),
                            message: "the stat index could not be saved (\(error.message)); status read every file, and the next one will too"))
                }
                scan.index.unload()
            }
            scan.records.sort { $0.fileName < $1.fileName }
            scan.problems.sort()
            return scan
        }
        var scans: [ZoneScan] = []
        scans.reserveCapacity(zones.count)
        for result in results {
            if case .failure(let error)? = result { throw error }
        }
        for case .success(let scan)? in results { scans.append(scan) }
        guard scans.count == zones.count else { throw .fileSystem(path: ws.root, message: "a zone scan did not finish; run the command again") }
        return scans
    }
}

extension Workspace {
    /// Writes a record's file and then its sidecar into a batch; the file only if it still is
    /// what `expect` says (the sidecar follows the file, or is skipped with it).
    /// Returns the index hash of what it writes (the canonical bytes are made once).
    func stage(_ record: Record, in batch: inout WriteBatch, expect: WriteBatch.Expectation?) -> String {
        let group = Self.fileName(for: record.recordID.recordName)
        let bytes = WorkspaceEncoding.encodeFields(record.fields)
        batch.write(recordPath(record.recordID), bytes, expect: expect, group: group)
        batch.write(
            sidecarPath(record.recordID), WorkspaceEncoding.encodeSystemFields(record.systemFields), late: true, group: group, machineOwned: true)
        return ZoneIndex.hash(encoded: bytes, fields: record.fields)
    }

    /// Removes a record's file (only if it still is what `expect` says) and its sidecar.
    func unstage(_ id: RecordID, in batch: inout WriteBatch, expect: WriteBatch.Expectation?) {
        let group = Self.fileName(for: id.recordName)
        batch.remove(recordPath(id), expect: expect, group: group)
        batch.remove(sidecarPath(id), group: group)
    }
}

extension SyncEngine {
    /// Commits a snapshot of the workspace into its git repository, with a message that
    /// summarises the pull and names the local edits not pushed that ride along in it; nil
    /// when nothing changed.
    /// The author is git's usual identity, read from `environment` (see
    /// `Workspace.commitSnapshot`).
    public func commitSnapshot(after report: PullReport, environment: [String: String] = ProcessInfo.processInfo.environment)
        async throws(RecSyncError) -> SnapshotCommit?
    {
        // Edits not pushed are in the workspace's files, so they are in the snapshot too: say so.
        let unpushed = try await status().changes
        var summary = "recsync pull: \(report.recordsWritten) written, \(report.recordsDeleted) deleted"
        if !report.zonesChanged.isEmpty { summary += " in \(report.zonesChanged.count) zone\(report.zonesChanged.count == 1 ? "" : "s")" }
        if !unpushed.isEmpty { summary += ", with \(unpushed.count) local edit\(unpushed.count == 1 ? "" : "s") not pushed" }
        var body: [String] = []
        if !report.zonesChanged.isEmpty { body.append("zones changed: " + report.zonesChanged.map(\.description).joined(separator: ", ")) }
        for removal in report.zonesRemoved { body.append("zone \(removal.zoneID) removed (\(removal.reason.rawValue))") }
        if !report.conflicts.isEmpty { body.append("conflicts: " + report.conflicts.map(\.description).joined(separator: ", ")) }
        if !unpushed.isEmpty {
            body.append(
                "local edits not pushed (in this snapshot, not in the store): "
                    + unpushed.prefix(10).map { "\($0.kind.rawValue) \($0.path)" }.joined(separator: ", ")
                    + (unpushed.count > 10 ? ", … (\(unpushed.count - 10) more)" : ""))
        }
        let message = summary + "\n" + (body.isEmpty ? "" : "\n" + body.joined(separator: "\n") + "\n")
        guard let commit = try workspace.commitSnapshot(message: message, time: StoreActor.systemClock(), environment: environment) else {
            return nil
        }
        return SnapshotCommit(commit: commit, unpushed: unpushed)
    }
}

/// A snapshot commit of the workspace's own git repository (`SyncEngine.commitSnapshot`).
public struct SnapshotCommit: Sendable, Hashable {
    public var commit: String
    /// Local edits not pushed when the snapshot was taken: they are in it, and not in the store.
    public var unpushed: [LocalChange]

}
