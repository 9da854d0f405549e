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
    /// What `push(force:)` would send, create and meet as conflicts: the push itself up to the
    /// point of sending (the same reads, checks and decisions), with its writes left out, then
    /// the store's current versions of the records to send, to tell which it would refuse.
    ///
    /// Like `status`, it first settles what is already settled (a push that landed but was
    /// killed before it noted so, conflicts whose sides became the same); that changes
    /// sidecars only. A store that cannot be reached is not an error: the plan lists what would
    /// be sent, with `conflictsChecked` false. A push decides again when it runs; between the
    /// two someone else may push.
    public func pushPlan() async throws(RecSyncError) -> PushPlan {
        var planner = self
        planner.dryRun = true
        planner.checkpoint = nil
        do {
            return try await workspace.withLock(purpose: "push --dry-run") { () async throws(RecSyncError) -> PushPlan in
                try await planner.inOneOperation { () async throws(RecSyncError) -> PushPlan in try await planner.planPush() }
            }
        } catch let error where Self.isUnreachable(error) {
            return try await Self.offlinePushPlan(workspace: workspace, storeError: error)
        }
    }

    /// The push's decision, and what the store would answer to it.
    private func planPush() async throws(RecSyncError) -> PushPlan {
        let decision = try await decidePush(events: { _ in })
        let ws = decision.workspace
        var plan = PushPlan()
        plan.zonesToCreate = decision.zonesToCreate
        plan.zonesRemoved = decision.report.zonesRemoved.filter { !$0.keepsRecordsForUpload(by: ws.user) }
        plan.problems = decision.problems
        plan.untracked = decision.report.untracked
        plan.conflictsPending = decision.pendingConflicts.sorted()
        func change(_ kind: LocalChange.Kind, _ id: RecordID) -> LocalChange {
            LocalChange(kind: kind, recordID: id, path: ws.relative(ws.recordPath(id)))
        }
        plan.changes =
            (decision.saves.map { change($0.changeTag == nil ? .new : .modified, $0.recordID) }
            + decision.deletions.map { change(.deleted, $0.recordID) }).sorted { $0.recordID < $1.recordID }
        // What the store holds now decides, as the conditional save will: a record it holds at
        // another version than the one sent as the base, or one it deleted, is a conflict —
        // but a save of exactly what it holds, which the push recognises as its own.
        let creating = Set(decision.zonesToCreate)
        let saves = Dictionary(decision.saves.map { ($0.recordID, $0) }, uniquingKeysWith: { a, _ in a })
        let bases = Dictionary(
            decision.saves.map { ($0.recordID, $0.changeTag) } + decision.deletions.map { ($0.recordID, $0.changeTag) },
            uniquingKeysWith: { a, _ in a })
        let ids = bases.keys.filter { !creating.contains($0.zoneID) }.sorted()
        for result in try await ids.isEmpty ? [] : store.fetchRecords(ids, desiredKeys: nil) {
            let base = bases[result.recordID] ?? nil
            switch result.result {
            case .success(let stored) where stored.changeTag != base:
                if let save = saves[result.recordID], save.recordType == stored.recordType, save.fields == stored.fields { continue }
                plan.conflicts.append(result.recordID)
            case .failure(let error) where error.kind == .unknownItem && base != nil && saves[result.recordID] != nil:
                plan.conflicts.append(result.recordID)
                plan.deletedOnStore.append(result.recordID)
            default: break
            }
        }
        return plan
    }

    /// `pushPlan()` for a workspace whose store could not be reached: what would be sent, by
    /// the workspace alone, with `conflictsChecked` false. Files the stat index cannot vouch
    /// for count as modified; a zone of yours that nothing was ever synced in is new.
    public static func offlinePushPlan(workspace ws: Workspace, storeError: RecSyncError) async throws(RecSyncError) -> PushPlan {
        try await ws.withLock(purpose: "push --dry-run") { () async throws(RecSyncError) -> PushPlan in
            var plan = PushPlan()
            plan.storeError = storeError.message
            plan.conflictsChecked = false
            let (zones, dirProblems) = ws.localZones()
            plan.problems = dirProblems
            let held = Set(ws.zonesWithTokens())
            plan.zonesToCreate = zones.filter { $0.ownerName == ws.user && !held.contains($0) && ws.holdsNoSyncedRecord($0) }
            let pending = Set(try ws.allConflicts().map(\.recordID))
            plan.conflictsPending = pending.sorted()
            for zone in zones {
                let scan = try await ws.scan(zone: zone, base: { _, _ throws(RecSyncError) in nil }, changesOnly: true)
                plan.problems += scan.problems
                plan.untracked += scan.untracked
                guard scan.problems.isEmpty else { continue }
                for r in scan.changes where !pending.contains(r.recordID) {
                    let kind: LocalChange.Kind =
                        switch r.state {
                        case .new: .new
                        case .deleted: .deleted
                        default: .modified
                        }
                    plan.changes.append(LocalChange(kind: kind, recordID: r.recordID, path: ws.relative(ws.recordPath(r.recordID))))
                }
            }
            plan.changes.sort { $0.recordID < $1.recordID }
            return plan
        }
    }

    /// Whether an error means the store could not be reached (rather than refused).
    public static func isUnreachable(_ error: RecSyncError) -> Bool {
        [.networkUnavailable, .networkFailure, .notAuthenticated].contains(error.code)
    }

    /// What `pull()` would write, delete and turn into conflicts: the pull itself, run with its
    /// writes left out (no record file, sidecar, token or note is written). It fetches what the
    /// pull fetches but no asset content, so an asset the store cannot deliver shows only in
    /// the real pull. A push that landed but was killed before it noted so is settled first,
    /// as every sync does: that changes sidecars only, to what the store already holds.
    public func pullPlan() async throws(RecSyncError) -> PullPlan {
        var planner = self
        planner.dryRun = true
        planner.checkpoint = nil
        return try await workspace.withLock(purpose: "pull --dry-run") { () async throws(RecSyncError) -> PullPlan in
            try await planner.inOneOperation { () async throws(RecSyncError) -> PullPlan in
                PullPlan(try await planner.pullLocked(events: { _ in }))
            }
        }
    }
}

extension PullPlan {
    /// The plan a dry run's report makes: a conflict is listed with what the store did to the
    /// record (written, or deleted) as well.
    init(_ report: PullReport) {
        let conflicts = Set(report.conflicts)
        let deletedThere = Set(report.conflictsDeletedOnStore)
        zonesChanged = report.zonesChanged
        zonesRemoved = report.zonesRemoved
        recordsToWrite = Set(report.recordsWrittenIDs).union(conflicts.subtracting(deletedThere)).sorted()
        recordsToDelete = Set(report.recordsDeletedIDs).union(deletedThere).sorted()
        self.conflicts = conflicts.sorted()
        expiredTokens = report.expiredTokens
        warnings = report.warnings
    }
}
