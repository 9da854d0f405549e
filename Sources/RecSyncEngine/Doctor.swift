import RecSyncModel
import RecSyncStore
import RecSyncWorkspace
import Synchronization

extension SyncEngine {
    /// `recsync doctor`: checks a workspace and its store, and with `fix` repairs what is safe.
    ///
    /// The workspace (see `Workspace.check`): leftovers of a killed write batch, orphan and
    /// damaged sidecars, synced files whose sidecar is gone, stale index entries, tokens that
    /// do not decode. A sync holding the lock is reported (`workspaceBusy`) and nothing is
    /// repaired. The store: whether it opens (`recsync.json`), lock files a killed writer left
    /// (in the repository or a network store's mirror; removed with `fix` when stale), every entry a pull would skip (zone metadata that does not decode, a zone
    /// directory of the wrong shape, names no workspace can hold) and every record whose
    /// stored form does not decode — it reads every record, as `git fsck` reads every object.
    public static func doctor(
        workspace ws: Workspace, openStore: () throws(RecSyncError) -> any RemoteStore, fix: Bool
    ) async throws(RecSyncError) -> [DoctorFinding] {
        var findings: [DoctorFinding] = []
        do {
            findings += try ws.withLock(purpose: "doctor") { () throws(RecSyncError) in try ws.check(fix: fix) }
        } catch {
            guard case .workspaceLocked = error.reason else { throw error }
            findings.append(
                DoctorFinding(
                    kind: .workspaceBusy, path: ws.relative(ws.stateDir),
                    detail: "a sync holds the workspace lock; checked without repairing anything", fixable: false))
            findings += try ws.check(fix: false)
        }
        let store: any RemoteStore
        var repository = ws.config.remote
        do {
            if !ws.config.remote.isEmpty {
                repository = try StoreLocation.repository(of: ws.config.remote, mirror: ws.mirrorPath, relativeTo: ws.root)
                for lock in try StoreLocation.doctor(remote: ws.config.remote, mirror: ws.mirrorPath, relativeTo: ws.root, removeStale: fix).findings
                {
                    let kind: DoctorFinding.Kind = lock.verdict == .inUse ? .storeLockInUse : .staleStoreLock
                    findings.append(
                        DoctorFinding(
                            kind: kind, path: lock.path, detail: lock.message, fixable: kind == .staleStoreLock, fixed: lock.verdict == .removed))
                }
            }
            store = try openStore()
        } catch {
            findings.append(DoctorFinding(kind: .storeUnreadable, path: repository, detail: error.message, fixable: false))
            return findings
        }
        findings += try await storeFindings(store)
        return findings
    }

    /// What a pull would skip or fail to read, in every zone the user sees: the engine's fetch
    /// of everything from the beginning, change tags only, kept nowhere.
    static func storeFindings(_ store: any RemoteStore) async throws(RecSyncError) -> [DoctorFinding] {
        let collector = StoreFindings()
        var options = RecordSyncEngine.Options.manual
        options.retries = .never
        // The store's own page size: pages cost a commit diff each, not a sync.
        options.fetchPageSize = 0
        try await RecordSyncEngine(store: store, client: collector, keeper: nil, options: options).fetchChanges()
        return collector.findings.withLock { $0 }
    }
}

/// Collects what a fetch of a whole store could not read (`SyncEngine.storeFindings`).
final class StoreFindings: EngineClient {
    let findings = Mutex<[DoctorFinding]>([])
    var desiredKeys: [String]? { [] }

    func zoneFailsAlone(_ error: RecSyncError) -> Bool {
        if case .storeCorrupt = error.reason { return true }
        return false
    }

    func handleEvent(_ event: RecordSyncEngine.Event, syncEngine: RecordSyncEngine) async throws {
        findings.withLock { findings in
            func warned(_ warnings: [StoreWarning]) {
                findings += warnings.map { DoctorFinding(kind: .storeEntry, path: $0.path, detail: $0.message, fixable: false) }
            }
            switch event {
            case .fetchedDatabaseChanges(let changes):
                warned(changes.warnings)
            case .fetchedRecordZoneChanges(let changes):
                warned(changes.warnings)
                for failure in changes.undeliverable {
                    findings.append(
                        DoctorFinding(
                            kind: .undecodableRecord, path: "\(changes.zoneID)/\(failure.recordID.recordName)", detail: failure.error.message,
                            fixable: false))
                }
            case .didFetchRecordZoneChanges(let zone, error: let error?) where error.kind == .storeCorrupt:
                // The zone as a whole, by its ID: its error names where it is in the store.
                findings.append(DoctorFinding(kind: .storeEntry, path: zone.description, detail: error.message, fixable: false))
            default:
                break
            }
        }
    }
}
