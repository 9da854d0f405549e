import RecSyncModel
import RecSyncStore
import RecSyncWorkspace

/// What `push` would do, as `push --dry-run` reports it.
public struct PushPlan: Sendable, Hashable {
    /// Zones the push would create on the store.
    public var zonesToCreate: [ZoneID] = []
    /// Records it would send: new, modified, deleted.
    public var changes: [LocalChange] = []
    /// Records the store changed since this workspace last synced them (or holds though they
    /// are new here): a push would make them conflicts, or `force` overwrite them.
    public var conflicts: [RecordID] = []
    /// Those of `conflicts` the store deleted since this workspace synced them: a push would
    /// make them conflicts, or `force` bring them back.
    public var deletedOnStore: [RecordID] = []
    /// Whether `conflicts` was checked with the store (false: it could not be reached).
    public var conflictsChecked = true
    /// Why the store could not be asked, when it could not.
    public var storeError: String?
    /// Zones the store deleted or purged: the push would remove them here first.
    public var zonesRemoved: [ZoneDeletion] = []
    /// Conflicts still pending from before: held back.
    public var conflictsPending: [RecordID] = []
    /// Files that would hold their zone back: the push sends nothing of it (the other zones go).
    public var problems: [FileProblem] = []
    /// Files that are not records: left alone.
    public var untracked: [String] = []

    public init() {}

    /// Changes a push would not send because a record of the same zone would conflict: a zone
    /// lands whole (`force` overwrites instead, so nothing is held back).
    public func heldBack(force: Bool) -> [RecordID] {
        guard !force else { return [] }
        let conflicting = Set(conflicts)
        let zones = Set(conflicts.map(\.zoneID))
        return changes.map(\.recordID).filter { zones.contains($0.zoneID) && !conflicting.contains($0) }
    }
}

/// What `pull` would do, as `pull --dry-run` reports it.
public struct PullPlan: Sendable, Hashable {
    /// Zones with changes to fetch.
    public var zonesChanged: [ZoneID] = []
    /// Zones the store deleted, purged or reset.
    public var zonesRemoved: [ZoneDeletion] = []
    /// Records the pull would write (new or changed on the store).
    public var recordsToWrite: [RecordID] = []
    /// Records it would delete here.
    public var recordsToDelete: [RecordID] = []
    /// Records edited here that changed on the store: they would become conflicts.
    public var conflicts: [RecordID] = []
    /// Tokens the store no longer honours: that zone or scope would be fetched in full.
    public var expiredTokens: [String] = []
    public var warnings: [String] = []

    public init() {}
}

extension SyncEngine {
    /// What `push(force:)` would send, create and meet as conflicts, without writing anything
    /// to the store or the workspace (the stat index, a cache, is not saved either).
    ///
    /// It reads what a push reads: the zones, every changed file, and — when the store can be
    /// reached — the store's zones and the change tags of the records to send. An unreachable
    /// store is not an error: the plan lists what would be sent, with `conflictsChecked` false.
    /// A push decides again when it runs; between the two someone else may push.
    public func pushPlan() async throws(RecSyncError) -> PushPlan {
        try await inOneOperation { () async throws(RecSyncError) -> PushPlan in try await Self.pushPlan(workspace: workspace, engine: self) }
    }

    /// `pushPlan()` for a workspace whose store could not even be opened (a network store
    /// that does not answer): what would be sent, by the workspace alone, with
    /// `conflictsChecked` false. Files the stat index cannot vouch for count as modified.
    public static func offlinePushPlan(workspace ws: Workspace, storeError: RecSyncError) async throws(RecSyncError) -> PushPlan {
        var plan = try await pushPlan(workspace: ws, engine: nil)
        plan.storeError = storeError.message
        return plan
    }

    /// Whether an error means the store could not be reached (rather than refused).
    public static func isUnreachable(_ error: RecSyncError) -> Bool {
        [.networkUnavailable, .networkFailure, .notAuthenticated].contains(error.code)
    }

    static func pushPlan(workspace ws: Workspace, engine: SyncEngine?) async throws(RecSyncError) -> PushPlan {
        try await ws.withLock(purpose: "push --dry-run") { () async throws(RecSyncError) -> PushPlan in
            var plan = PushPlan()
            let (localZones, dirProblems) = ws.localZones()
            plan.problems = dirProblems
            var storeZones: Set<ZoneID>?
            var storeZoneByID: [ZoneID: RecordZone] = [:]
            if let store = engine?.store {
                do throws(RecSyncError) {
                    let listed = try await store.fetchAllRecordZones(scope: .private) + store.fetchAllRecordZones(scope: .shared)
                    storeZoneByID = Dictionary(listed.map { ($0.zoneID, $0) }, uniquingKeysWith: { a, _ in a })
                    storeZones = Set(storeZoneByID.keys)
                } catch let error where isUnreachable(error) {
                    plan.storeError = error.message
                }
            }
            plan.conflictsChecked = storeZones != nil
            var zones = localZones
            if let storeZones, let store = engine?.store {
                let missing = localZones.filter { !storeZones.contains($0) }
                plan.zonesRemoved = try await missing.isEmpty ? [] : store.fetchZoneDeletions(missing).filter { !$0.keepsRecordsForUpload(by: ws.user) }
                let removed = Set(plan.zonesRemoved.map(\.zoneID))
                zones = localZones.filter { !removed.contains($0) }
                plan.zonesToCreate = zones.filter { !storeZones.contains($0) && $0.ownerName == ws.user }
            } else {
                // Offline: a zone of yours that nothing was ever synced in is new.
                let held = Set(ws.zonesWithTokens())
                plan.zonesToCreate = zones.filter { $0.ownerName == ws.user && !held.contains($0) && ws.holdsNoSyncedRecord($0) }
            }
            let pending = Set(try ws.allConflicts().map(\.recordID))
            plan.conflictsPending = pending.sorted()
            var known: [RecordID: String?] = [:]
            var deletedHere = Set<RecordID>()
            var scans: [ZoneScan] = []
            if let engine {
                scans = try await engine.scanZones(zones, workspace: ws, changesOnly: true, savingIndex: false)
            } else {
                for zone in zones { scans.append(try await ws.scan(zone: zone, base: { _, _ throws(RecSyncError) in nil }, changesOnly: true)) }
            }
            for scan in scans {
                plan.problems += scan.problems
                plan.untracked += scan.untracked
                // What push holds back whole (see `push`): a zone with a problem, an edit in a
                // zone shared read-only, or in one no longer shared with this user.
                var heldBack = !scan.problems.isEmpty
                if !scan.changes.isEmpty, storeZones != nil,
                   let refusal = refusal(ofChangesIn: scan.zone, onStore: storeZoneByID[scan.zone], workspace: ws) {
                    plan.problems.append(refusal)
                    heldBack = true
                }
                guard !heldBack else { continue }
                for r in scan.changes where !pending.contains(r.recordID) {
                    let kind: LocalChange.Kind = switch r.state {
                    case .new: .new
                    case .deleted: .deleted
                    default: .modified
                    }
                    plan.changes.append(LocalChange(kind: kind, recordID: r.recordID, path: ws.relative(ws.recordPath(r.recordID))))
                    known[r.recordID] = r.knownTag
                    if kind == .deleted { deletedHere.insert(r.recordID) }
                }
            }
            plan.changes.sort { $0.recordID < $1.recordID }
            if plan.conflictsChecked, let store = engine?.store, !known.isEmpty {
                let creating = Set(plan.zonesToCreate)
                let ids = known.keys.filter { !creating.contains($0.zoneID) }.sorted()
                for result in try await ids.isEmpty ? [] : store.fetchRecords(ids, desiredKeys: []) {
                    let base = known[result.recordID] ?? nil
                    switch result.result {
                    case .success(let stored) where stored.changeTag != base: plan.conflicts.append(result.recordID)
                    case .failure(.unknownItem) where base != nil && !deletedHere.contains(result.recordID):
                        // Deleted there (deleted here too, it is already what the push wants).
                        plan.conflicts.append(result.recordID)
                        plan.deletedOnStore.append(result.recordID)
                    default: break
                    }
                }
            }
            return plan
        }
    }

    /// What `pull()` would write, delete and turn into conflicts, without writing anything: it
    /// reads the store's changes from the workspace's tokens and does not save them.
    public func pullPlan() async throws(RecSyncError) -> PullPlan {
        try await inOneOperation { () async throws(RecSyncError) -> PullPlan in try await pullPlanInOneOperation() }
    }

    private func pullPlanInOneOperation() async throws(RecSyncError) -> PullPlan {
        try await workspace.withLock(purpose: "pull --dry-run") { () async throws(RecSyncError) -> PullPlan in
            let ws = workspace
            var plan = PullPlan()
            var edited: [RecordID: LocalRecord.State] = [:]
            let local = ws.localZones().zones
            for scan in try await scanZones(local, workspace: ws, changesOnly: true, savingIndex: false) {
                for r in scan.changes { edited[r.recordID] = r.state }
            }
            for scope in [DatabaseScope.private, .shared] {
                let feed = try await store.allDatabaseChanges(scope: scope, since: try ws.loadToken(ws.scopeTokenPath(scope)))
                if feed.tokenExpired { plan.expiredTokens.append("\(scope.rawValue) database") }
                plan.warnings += feed.warnings.map(\.description)
                plan.zonesRemoved += feed.deletions.filter { local.contains($0.zoneID) || ws.zonesWithTokens().contains($0.zoneID) }
                let removed = Set(feed.deletions.map(\.zoneID))
                zones: for zone in feed.modifications where !removed.contains(zone) {
                    plan.zonesChanged.append(zone)
                    var token = try ws.loadToken(ws.zoneTokenPath(zone))
                    // From no token the feed lists the whole zone and names no deletions: as
                    // the pull does, records held here that it does not list are looked up.
                    var listed: Set<String>? = token == nil ? [] : nil
                    while true {
                        let page: RecordZoneChanges
                        do throws(RecSyncError) {
                            page = try await store.recordZoneChanges(zone: zone, since: token, resultsLimit: 0, desiredKeys: [])
                        } catch .changeTokenExpired {
                            plan.expiredTokens.append("zone \(zone)")
                            token = nil
                            listed = []
                            continue
                        } catch .zoneNotFound, .userDeletedZone {
                            break
                        } catch .storeCorrupt(let why) {
                            // As the pull: the zone is skipped, the rest goes on.
                            plan.warnings.append("zone \(zone) skipped: \(why)")
                            plan.zonesChanged.removeLast()
                            continue zones
                        }
                        plan.warnings += page.warnings.map(\.description)
                        listed?.formUnion(page.modifications.map(\.recordID.recordName))
                        for item in page.modifications {
                            let tag = ws.systemFieldsIfReadable(item.recordID)?.changeTag
                            if case .success(let record) = item.result, record.changeTag == tag { continue }  // our own push
                            plan.recordsToWrite.append(item.recordID)
                            if edited[item.recordID] != nil { plan.conflicts.append(item.recordID) }
                        }
                        for deletion in page.deletions where ws.systemFieldsIfReadable(deletion.recordID) != nil {
                            plan.recordsToDelete.append(deletion.recordID)
                            if edited[deletion.recordID] == .modified { plan.conflicts.append(deletion.recordID) }
                        }
                        token = page.changeToken
                        if !page.moreComing { break }
                    }
                    try await planLookups(zone, listed: listed, edited: edited, plan: &plan)
                }
            }
            // A record already in conflict is neither written nor deleted, nor a conflict again:
            // the pull only keeps the store's newest copy with the conflict, for `resolve`.
            let pending = Set(try ws.allConflicts().map(\.recordID))
            plan.recordsToWrite = Set(plan.recordsToWrite).subtracting(pending).sorted()
            plan.recordsToDelete = Set(plan.recordsToDelete).subtracting(pending).sorted()
            plan.conflicts = Set(plan.conflicts).subtracting(pending).sorted()
            return plan
        }
    }
}

extension SyncEngine {
    /// The records of `zone` a pull looks up by ID after its feed, and what it would do with
    /// them: after a whole-zone listing (`listed`), the synced records held here that it did
    /// not list; always, the records pushed from here since the zone token (see
    /// `checkPushedRecords`). Gone from the store: deleted here; changed: written.
    func planLookups(_ zone: ZoneID, listed: Set<String>?, edited: [RecordID: LocalRecord.State], plan: inout PullPlan) async throws(RecSyncError) {
        let ws = workspace
        var candidates = Set<RecordID>()
        if let listed, !ws.awaitsReupload(zone) {
            let scan = try await ws.scan(zone: zone, base: baseLookup)
            candidates.formUnion(scan.records.filter { $0.knownTag != nil && !listed.contains($0.recordID.recordName) }.map(\.recordID))
        }
        for name in try ws.pushedRecordNames(zone) ?? [] {
            if let id = try? RecordID(recordName: name, zoneID: zone) { candidates.insert(id) }
        }
        guard !candidates.isEmpty else { return }
        for result in try await store.fetchRecords(candidates.sorted(), desiredKeys: []) {
            let known = ws.systemFieldsIfReadable(result.recordID)?.changeTag
            switch result.result {
            case .failure(.unknownItem) where known != nil:
                plan.recordsToDelete.append(result.recordID)
                if edited[result.recordID] == .modified { plan.conflicts.append(result.recordID) }
            case .success(let record) where record.changeTag != known:
                plan.recordsToWrite.append(result.recordID)
                if edited[result.recordID] != nil { plan.conflicts.append(result.recordID) }
            default: break
            }
        }
    }
}

extension Workspace {
    /// The sidecar of a record, nil when it has none or it does not decode (a dry run only
    /// reports; the real pull decides about damaged sidecars).
    func systemFieldsIfReadable(_ id: RecordID) -> SystemFields? {
        do { return try systemFields(id) } catch { return nil }
    }
}
