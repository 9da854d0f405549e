import Foundation
import RecSyncEngine
import RecSyncModel
import RecSyncStore
import RecSyncSubscriptions
import RecSyncSystem
import RecSyncTestSupport
import RecSyncWorkspace
import Synchronization

/// An invariant a history broke, with the step after which it was seen.
struct SimViolation: Error, CustomStringConvertible {
    /// Which invariant (a short stable name: shrinking keeps a history failing the same way).
    var invariant: String
    var detail: String
    /// Index of the step after which it was seen; nil in the final phase.
    var step: Int?
    var description: String { "[\(invariant)] after \(step.map { "step \($0)" } ?? "the final resolve-and-pull"): \(detail)" }
}

/// Plays one history against real workspaces and one store, checking the invariants after
/// every step and at the end.
///
/// The model it keeps: for each record, which store values are explained (the last
/// acknowledged write, writes that landed without an acknowledgement since, and absence after
/// a zone removal); for each workspace, the edits not yet acknowledged; for each zone, whether
/// the store deleted or purged it; for each of the other owner's zones, whether it is shared
/// with the workspaces' user, and how.
final class SimulationRunner {
    enum ZoneStatus { case never, live, deleted, purged, reset }

    struct Pending: Hashable {
        var id: RecordID
        var field: String
        var value: String
    }

    let kind: StoreKind
    let history: SimHistory
    let fixture: StoreFixture
    let admin: any RemoteStore
    /// `SimHistory.owner` on the store: owns the shared zones, and has no workspace.
    let owner: any RemoteStore
    var stores: [any RemoteStore] = []
    var roots: [String] = []
    var zoneStatus: [Int: ZoneStatus] = [:]
    /// The user's permission in each of the owner's zones shared with them (nil: not shared).
    var sharedWithUser: [Int: SharePermission] = [:]
    /// Workspaces whose last pull ran to the end with nothing written to the store since.
    var freshlyPulled: Set<Int> = []
    /// Store values each record may have; no entry means only "absent".
    var explained: [RecordID: Set<[String: FieldValue]?>] = [:]
    var pending: [Int: Set<Pending>] = [:]
    /// Workspaces whose last pull was killed (for `KnownDefect.zoneRemovedAfterKilledPullStays`).
    var interruptedPulls: Set<Int> = []
    /// Subscriptions: each workspace has a database subscription (`db`) whose cursor it
    /// acknowledges now and then. Since its last acknowledgement: a step of another writer
    /// that changed what the store holds (a notification is owed: each commit counts, so a
    /// zone created and purged again is two changes), whether any other writer committed at
    /// all (else a notification would be an echo), and a rewritten history.
    var notificationOwed: [Int: String] = [:]
    var foreignCommit: Set<Int> = []
    var historyRewritten: Set<Int> = []
    /// The store's head when each workspace last acknowledged its subscription.
    var acknowledgedHead: [Int: ServerChangeToken] = [:]
    /// What the store held after the last check (record tags and live zones).
    var storeFingerprint: [String] = []
    /// What happened, step by step (printed with a failure).
    var trace: [String] = []
    var stepsTaken = 0

    init(kind: StoreKind, history: SimHistory) throws {
        self.kind = kind
        self.history = history
        fixture = try StoreFixture(kind, name: "sim-\(kind)-\(history.seed)", in: Self.sandboxBase)
        admin = try fixture.store(as: SimHistory.user)
        owner = try fixture.store(as: SimHistory.owner)
        for n in 0..<history.workspaces {
            let root = fixture.directory.file("ws\(n)")
            _ = try Workspace.create(at: root, config: WorkspaceConfig(user: SimHistory.user, remote: kind == .memory ? "memory" : fixture.path))
            roots.append(root)
            stores.append(try fixture.store(as: SimHistory.user, deviceID: "ws\(n)"))  // each workspace its own client-token slot
        }
    }

    /// Histories write many small files and fsync each: in memory (/dev/shm) where the
    /// machine has it, they run several times faster than on disk.
    static let sandboxBase: String? = FileManager.default.isWritableFile(atPath: "/dev/shm") ? "/dev/shm" : nil

    /// Zone `n` of the history: the user's `z<n>`, or past `SimHistory.zones` the owner's.
    static func zoneID(_ n: Int) -> ZoneID {
        SimHistory.isShared(n) ? Build.zone("z\(n - SimHistory.zones)", owner: SimHistory.owner) : Build.zone("z\(n)", owner: SimHistory.user)
    }
    static func zoneIndex(_ zone: ZoneID) -> Int? { SimHistory.allZones.first { zoneID($0) == zone } }
    static func recordID(_ zone: Int, _ record: Int) -> RecordID { Build.id("r\(record)", in: zoneID(zone)) }
    static var allRecordIDs: [RecordID] {
        SimHistory.allZones.flatMap { z in (0..<SimHistory.records).map { recordID(z, $0) } }
    }
    /// The handle that owns zone `n` on the store.
    func ownerStore(_ n: Int) -> any RemoteStore { SimHistory.isShared(n) ? owner : admin }

    /// Plays the history, then resolves, pushes and pulls everywhere until nothing changes,
    /// and checks that every workspace equals the store.
    func run() async throws(SimViolation) {
        do {
            for ws in 0..<history.workspaces { try await engine(ws).subscribe(Subscription(id: "db", kind: .database(.private))) }
        } catch {
            throw SimViolation(invariant: "harness", detail: "subscribing: \(error)", step: nil)
        }
        for (i, step) in history.steps.enumerated() {
            let fingerprintBefore = storeFingerprint
            let headBefore: ServerChangeToken
            do {
                headBefore = try await admin.currentDatabaseToken(scope: .private)
                try await perform(step)
            } catch let v as SimViolation {
                throw SimViolation(invariant: v.invariant, detail: v.detail, step: i)
            } catch {
                throw SimViolation(invariant: "harness", detail: "\(step): \(error)", step: i)
            }
            stepsTaken += 1
            if let problem = await check() { throw SimViolation(invariant: problem.0, detail: problem.1, step: i) }
            if let problem = await checkNotifications(after: step, index: i, headBefore: headBefore, fingerprintBefore: fingerprintBefore) {
                throw SimViolation(invariant: problem.0, detail: problem.1, step: i)
            }
        }
        do { try await settle() } catch let v as SimViolation { throw v } catch {
            throw SimViolation(invariant: "harness", detail: "final phase: \(error)", step: nil)
        }
    }

    // MARK: Steps

    func engine(_ ws: Int, store: (any RemoteStore)? = nil) throws -> SyncEngine {
        var engine = SyncEngine(workspace: try Workspace.open(at: roots[ws]), store: store ?? stores[ws])
        engine.pageSize = 2
        engine.fullFetchPageSize = 3
        engine.zoneWorkers = 1
        return engine
    }

    func fields(at path: String) -> [String: FieldValue]? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        do { return try WorkspaceEncoding.decodeFields(Array(data)) } catch { return nil }
    }

    /// A zone's directory in a workspace: `private/<zone>`, or `shared/<owner>/<zone>`.
    func zonePath(_ ws: Int, _ zone: ZoneID) -> String {
        zone.ownerName == SimHistory.user ? "\(roots[ws])/private/\(zone.zoneName)" : "\(roots[ws])/shared/\(zone.ownerName)/\(zone.zoneName)"
    }

    func recordPath(_ ws: Int, _ id: RecordID) -> String { "\(zonePath(ws, id.zoneID))/\(id.recordName).json" }

    /// Runs one step and updates the model; returns whether it changed anything (for `settle`).
    @discardableResult
    func perform(_ step: SimStep) async throws -> Bool {
        switch step {
        case .edit(let ws, let z, let r, let field, let value):
            let id = Self.recordID(z, r)
            let dir = zonePath(ws, id.zoneID)
            // Writing into a zone the store removed would be an explicit re-create; only
            // `recsync zone create` may do that, so a user of the simulation does not.
            if !FileManager.default.fileExists(atPath: dir), [.deleted, .purged].contains(zoneStatus[z] ?? .never) {
                trace.append("\(step): skipped (zone removed)")
                return false
            }
            // A zone shared with the user comes in with a pull; a user does not make its directory.
            if !FileManager.default.fileExists(atPath: dir), SimHistory.isShared(z) {
                trace.append("\(step): skipped (shared zone not here)")
                return false
            }
            var current = fields(at: recordPath(ws, id)) ?? [:]
            current[field] = .string(value)
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            try Data(WorkspaceEncoding.encodeFields(current)).write(to: URL(fileURLWithPath: recordPath(ws, id)))
            pending[ws, default: []] = pending[ws, default: []].filter { !($0.id == id && $0.field == field) }
            pending[ws, default: []].insert(Pending(id: id, field: field, value: value))
            trace.append("\(step)")
            return true

        case .remove(let ws, let z, let r):
            let id = Self.recordID(z, r)
            guard FileManager.default.fileExists(atPath: recordPath(ws, id)) else { return false }
            try FileManager.default.removeItem(atPath: recordPath(ws, id))
            pending[ws, default: []] = pending[ws, default: []].filter { $0.id != id }
            trace.append("\(step)")
            return true

        case .push(let ws, let crash):
            var before: [RecordID: [String: FieldValue]] = [:]
            for id in Self.allRecordIDs { before[id] = fields(at: recordPath(ws, id)) }
            // What the dry run says the push will do (a killed push is not compared with it).
            let plan = crash == nil ? try await engine(ws).pushPlan() : nil
            let comparesDryRun = try SimulationOptions.checksDryRuns && !skipsDryRunComparison(ws)
            let exempt = try zonesPushPlansMisjudge(ws)
            let faulty = FaultInjectingStore(stores[ws], fault: crash)
            var report: PushReport?
            var failure: RecSyncError?
            let pusher = try engine(ws, store: faulty)
            do { report = try await pusher.push() } catch { failure = error }
            let landed = await faulty.landed
            let created = await faulty.zonesCreated
            trace.append(
                "\(step): \(report.map { "saved \($0.saved.map(\.recordName)) deleted \($0.deleted.map(\.recordName)) conflicts \($0.conflicts.map(\.recordName)) created \($0.zonesCreated.map(\.zoneName)) removed \($0.zonesRemoved.map { "\($0.zoneID):\($0.reason.rawValue)" }) notSent \($0.notSent)" } ?? "failed: \(failure?.message ?? "")")"
            )
            for zone in created {
                guard let z = Self.zoneIndex(zone) else { continue }
                if SimHistory.isShared(z) {
                    throw SimViolation(
                        invariant: "zone-resurrected",
                        detail: "a push of \(SimHistory.user)'s created \(zone), a zone of \(zone.ownerName)'s; only its owner may", step: nil)
                }
                if [.deleted, .purged].contains(zoneStatus[z] ?? .never) {
                    throw SimViolation(
                        invariant: "zone-resurrected",
                        detail:
                            """
                            push re-created zone \(zone.zoneName), which the store had\
                             \(zoneStatus[z] == .purged ? "purged" : "deleted"); only an explicit zone create may
                            """,
                        step: nil)
                }
                zoneStatus[z] = .live
            }
            // 9. A participant writes to a shared zone only with write access.
            for item in landed {
                guard let z = Self.zoneIndex(item.recordID.zoneID), SimHistory.isShared(z), sharedWithUser[z] != .readWrite else { continue }
                throw SimViolation(
                    invariant: "read-only-share-kept",
                    detail:
                        """
                        a push stored \(describe(item.fields)) for \(item.recordID) in a zone\
                         \(sharedWithUser[z] == nil ? "not shared with \(SimHistory.user)" : "shared with \(SimHistory.user) read-only")
                        """,
                    step: nil)
            }
            if let plan {
                if let problem = try await checkOwnZonesPushed(ws: ws, plan: plan, report: report, failure: failure) {
                    throw SimViolation(invariant: problem.0, detail: problem.1, step: nil)
                }
                if comparesDryRun, let problem = compare(plan, with: report, failure: failure, ws: ws, exempt: exempt) {
                    throw SimViolation(invariant: problem.0, detail: problem.1, step: nil)
                }
            }
            if !landed.isEmpty || !created.isEmpty { freshlyPulled.removeAll() }
            for item in landed {
                let acknowledged = report.map { item.fields == nil ? $0.deleted.contains(item.recordID) : $0.saved.contains(item.recordID) } ?? false
                if acknowledged {
                    if item.fields != before[item.recordID] {
                        throw SimViolation(
                            invariant: "push-sent-other-content",
                            detail:
                                """
                                push stored \(String(describing: item.fields)) for \(item.recordID) while its file held\
                                 \(String(describing: before[item.recordID]))
                                """,
                            step: nil)
                    }
                    explained[item.recordID] = [item.fields]
                    pending[ws, default: []] = pending[ws, default: []].filter { p in
                        !(p.id == item.recordID && before[p.id]?[p.field] == .string(p.value))
                    }
                } else {
                    // Landed, but the push was killed before it heard: the edit is on the store
                    // (the store's model covers it from here), not lost.
                    explained[item.recordID, default: [nil]].insert(item.fields)
                    pending[ws, default: []] = pending[ws, default: []].filter { p in
                        !(p.id == item.recordID && item.fields?[p.field] == .string(p.value))
                    }
                }
            }
            return !landed.isEmpty || !(report?.conflicts.isEmpty ?? true) || !created.isEmpty

        case .pull(let ws, let crashAt):
            var engine = try engine(ws)
            // What the dry run says the pull will do, and the record files it may change.
            let plan = crashAt == nil ? try await engine.pullPlan() : nil
            let comparesDryRun = try SimulationOptions.checksDryRuns && !skipsDryRunComparison(ws)
            var filesBefore: [RecordID: Data] = [:]
            for id in Self.allRecordIDs { filesBefore[id] = FileManager.default.contents(atPath: recordPath(ws, id)) }
            if let crashAt {
                if SimulationOptions.knownDefects.contains(.changesLostAfterPullKilledMidBatch) {
                    // One page per zone: the killed pull leaves no mid-batch token behind.
                    engine.pageSize = 1000
                    engine.fullFetchPageSize = 1000
                }
                let calls = Mutex(0)
                engine.checkpoint = { (point: SyncEngine.Checkpoint) throws(RecSyncError) in
                    let n = calls.withLock {
                        $0 += 1; return $0
                    }
                    if n == crashAt { throw .internalError("simulated crash at \(point)") }
                }
            }
            let r: PullReport
            do { r = try await engine.pull() } catch {
                interruptedPulls.insert(ws)
                freshlyPulled.remove(ws)
                trace.append("\(step): failed: \(error.message)")
                return true
            }
            interruptedPulls.remove(ws)
            trace.append(
                """
                \(step): written \(r.recordsWritten) deleted \(r.recordsDeleted) conflicts\
                 \(r.conflicts.map(\.recordName)) removed\
                 \(r.zonesRemoved.map { "\($0.zoneID):\($0.reason.rawValue)" }) lost+found \(r.lostAndFound)\
                 expired \(r.expiredTokens.count) warnings \(r.warnings)
                """
            )
            if let problem = checkSharedZonesDropped(ws: ws) { throw SimViolation(invariant: problem.0, detail: problem.1, step: nil) }
            if comparesDryRun, let plan, let problem = try await compare(plan, with: r, ws: ws, filesBefore: filesBefore) {
                throw SimViolation(invariant: problem.0, detail: problem.1, step: nil)
            }
            freshlyPulled.insert(ws)
            return r.recordsWritten > 0 || r.recordsDeleted > 0 || !r.conflicts.isEmpty || !r.zonesRemoved.isEmpty

        case .resolve(let ws, let strategy):
            let outcomes = try engine(ws).resolve(strategy: strategy)
            trace.append("\(step): \(outcomes.map { "\(describe($0.recordID)): \($0.failure ?? "resolved")" })")
            if strategy == .theirs {
                // Choosing the store's version discards the local edits of those records.
                let settled = Set(outcomes.filter { $0.failure == nil }.map(\.recordID))
                pending[ws, default: []] = pending[ws, default: []].filter { !settled.contains($0.id) }
            }
            return outcomes.contains { $0.failure == nil }

        case .zone(let action, let z):
            let zone = Self.zoneID(z)
            let live = try await ownerStore(z).fetchAllRecordZones(scope: .private).contains { $0.zoneID == zone }
            if live == (action == .create) {
                trace.append("\(step): skipped (zone \(live ? "exists" : "missing"))")
                return false
            }
            if [.delete, .purge].contains(action), SimulationOptions.knownDefects.contains(.pushResurrectsZoneItNeverPulled),
                try roots.contains(where: { root in
                    try FileManager.default.fileExists(atPath: "\(root)/private/\(zone.zoneName)")
                        && !Workspace.open(at: root).zonesWithTokens().contains(zone)
                })
            {
                trace.append("\(step): skipped (known defect pushResurrectsZoneItNeverPulled: a workspace holds the zone without a token)")
                return false
            }
            if action != .create, SimHistory.isShared(z), let ws = try holdsWithoutToken(zone) {
                trace.append("\(step): skipped (known defect sharedZoneKeptAfterKilledFirstPull: ws\(ws) holds the shared zone without a token)")
                return false
            }
            if action != .create, SimulationOptions.knownDefects.contains(.zoneRemovedAfterKilledPullStays), !interruptedPulls.isEmpty {
                trace.append(
                    "\(step): skipped (known defect zoneRemovedAfterKilledPullStays: the last pull of ws\(interruptedPulls.sorted()) was killed)")
                return false
            }
            let op: ZoneOperation =
                switch action {
                case .create: .recreate(RecordZone(zoneID: zone))  // an explicit create, as `recsync zone create`
                case .delete: .delete(zone)
                case .purge: .purge(zone)
                case .reset: .markEncryptedDataReset(zone)
                }
            try await ownerStore(z).zoneOp(op)
            trace.append("\(step)")
            freshlyPulled.removeAll()
            // A zone removed takes its participants with it; created again, it is shared with nobody.
            sharedWithUser[z] = nil
            switch action {
            case .create: zoneStatus[z] = .live
            case .delete: zoneStatus[z] = .deleted
            case .purge: zoneStatus[z] = .purged
            case .reset: zoneStatus[z] = .reset
            }
            if action != .create {
                // The zone's records are gone, and every device is told so by its next pull.
                for id in Self.allRecordIDs where id.zoneID == zone { explained[id] = [nil] }
            }
            return true

        case .rewriteHistory:
            if SimulationOptions.knownDefects.contains(.refetchLeavesConflictedRecordTheStoreDeleted),
                try roots.contains(where: { try !Workspace.open(at: $0).allConflicts().isEmpty })
            {
                trace.append("\(step): skipped (known defect refetchLeavesConflictedRecordTheStoreDeleted: a workspace has a pending conflict)")
                return false
            }
            try fixture.rewriteHistory()
            trace.append("\(step)")
            freshlyPulled.removeAll()
            return true

        case .ownerEdit(let z, let r, let field, let value):
            let id = Self.recordID(z, r)
            guard try await owner.fetchAllRecordZones(scope: .private).contains(where: { $0.zoneID == id.zoneID }) else {
                trace.append("\(step): skipped (zone missing)")
                return false
            }
            var record = Build.record(id.recordName, in: id.zoneID)
            if case .success(let stored)? = try await owner.fetchRecords([id], desiredKeys: nil).first?.result { record = stored }
            record.fields[field] = .string(value)
            let stored = try await owner.save([record])[0]
            explained[id] = [stored.fields]
            trace.append("\(step)")
            freshlyPulled.removeAll()
            return true

        case .share(let z, let permission):
            let zone = Self.zoneID(z)
            guard try await owner.fetchAllRecordZones(scope: .private).contains(where: { $0.zoneID == zone }) else {
                trace.append("\(step): skipped (zone missing)")
                return false
            }
            if sharedWithUser[z] == permission {
                trace.append("\(step): skipped (shared so already)")
                return false
            }
            try await owner.share(zone, with: SimHistory.user, permission: permission)
            sharedWithUser[z] = permission
            trace.append("\(step)")
            freshlyPulled.removeAll()
            return true

        case .unshare(let z):
            guard sharedWithUser[z] != nil else {
                trace.append("\(step): skipped (not shared)")
                return false
            }
            if let ws = try holdsWithoutToken(Self.zoneID(z)) {
                trace.append("\(step): skipped (known defect sharedZoneKeptAfterKilledFirstPull: ws\(ws) holds the shared zone without a token)")
                return false
            }
            try await owner.unshare(Self.zoneID(z), with: SimHistory.user)
            sharedWithUser[z] = nil
            trace.append("\(step)")
            freshlyPulled.removeAll()
            return true
        }
    }

    /// For `KnownDefect.sharedZoneKeptAfterKilledFirstPull`: a workspace that holds a shared
    /// zone's directory but no token for it, if the defect is open.
    func holdsWithoutToken(_ zone: ZoneID) throws -> Int? {
        guard SimulationOptions.knownDefects.contains(.sharedZoneKeptAfterKilledFirstPull) else { return nil }
        return try (0..<history.workspaces).first { ws in
            try FileManager.default.fileExists(atPath: zonePath(ws, zone)) && !Workspace.open(at: roots[ws]).zonesWithTokens().contains(zone)
        }
    }

    // MARK: Invariants

    /// The first invariant broken now, as (name, detail).
    func check() async -> (String, String)? {
        // What the store holds.
        let storeRecords: [RecordID: Record]
        let liveZones: Set<ZoneID>
        do {
            let zones = try await admin.fetchAllRecordZones(scope: .private).map(\.zoneID)
            let ownersZones = try await owner.fetchAllRecordZones(scope: .private).map(\.zoneID)
            liveZones = Set(zones + ownersZones)
            var records: [RecordID: Record] = [:]
            for zone in zones {
                for r in try await admin.allZoneChanges(zone, since: nil).records { records[r.recordID] = r }
            }
            // (The user's private database only: the owner's zones are not what its subscription watches.)
            storeFingerprint = zones.map(\.description).sorted() + records.map { "\($0.key): \($0.value.changeTag ?? "")" }.sorted()
            for zone in ownersZones {
                for r in try await owner.allZoneChanges(zone, since: nil).records { records[r.recordID] = r }
            }
            storeRecords = records
        } catch {
            return ("store-readable", "the store cannot be read: \(error)")
        }
        // 1. Every store value is explained: an acknowledged write, a write that landed
        //    without an acknowledgement since, or absence after a zone removal. A value that
        //    is not is an acknowledged write silently lost (or a write nobody made).
        if let broken = SyncInvariants.storeExplained(storeRecords.mapValues(\.fields), by: explained) { return broken }
        // 2. No zone the store deleted or purged comes back without an explicit create; nor one
        //    of the owner's they reset (only they may upload it again, and they have no workspace).
        let removed = zoneStatus.filter { z, status in [.deleted, .purged].contains(status) || (status == .reset && SimHistory.isShared(z)) }
        if let broken = SyncInvariants.noZoneResurrected(
            live: liveZones, removed: Dictionary(removed.map { (Self.zoneID($0.key), "\($0.value)") }, uniquingKeysWith: { a, _ in a }))
        {
            return broken
        }
        for ws in 0..<history.workspaces {
            let root = roots[ws]
            let conflicts: [Conflict]
            do { conflicts = try Workspace.open(at: root).allConflicts() } catch {
                return ("workspace-readable", "ws\(ws): \(error)")
            }
            // 3. Every unacknowledged edit is in the workspace, a conflict, or lost+found.
            let lostAndFound = TreeSnapshot.files("\(root)/.recsync/lost+found").values.map { String(decoding: $0, as: UTF8.self) }
            for p in pending[ws] ?? [] {
                if fields(at: recordPath(ws, p.id))?[p.field] == .string(p.value) { continue }
                if conflicts.contains(where: { $0.recordID == p.id && $0.client?[p.field] == .string(p.value) }) { continue }
                if lostAndFound.contains(where: { $0.contains("\"\(p.value)\"") }) { continue }
                return (
                    "unpushed-edit-kept",
                    """
                    ws\(ws): the unpushed edit \(describe(p.id)).\(p.field) = \(p.value) is nowhere (file:\
                     \(describe(fields(at: recordPath(ws, p.id)))))
                    """
                )
            }
            // 4. A conflict is between different versions.
            for c in conflicts where c.client != nil && c.client == c.server {
                return (
                    "no-false-conflict",
                    """
                    ws\(ws): conflict on \(c.recordID.zoneID.zoneName)/\(c.recordID.recordName) whose client and\
                     server copies are equal (\(describe(c.client)))
                    """
                )
            }
            // 5. Nothing but recsync's own entries at a workspace's top level.
            let top = Set(FileIO.list(root)).subtracting([".recsync", "private", "shared"])
            if !top.isEmpty { return ("writes-confined", "ws\(ws) holds unexpected entries \(top.sorted())") }
        }
        // 6. Nothing written next to the workspaces.
        let expected = Set((0..<history.workspaces).map { "ws\($0)" } + (kind == .memory ? [] : ["store.git"]))
        let found = Set(FileIO.list(fixture.directory.path))
        if found != expected { return ("writes-confined", "the sandbox holds \(found.sorted()), expected \(expected.sorted())") }
        return nil
    }

    /// 7. Subscriptions: a workspace is told of every change another writer made (never
    ///    missed), never of its own alone (no echo), and of a rewritten history (a reset).
    func checkNotifications(after step: SimStep, index: Int, headBefore: ServerChangeToken, fingerprintBefore: [String]) async -> (String, String)? {
        var writer: Int?
        if case .push(let ws, _) = step { writer = ws }
        do {
            let headAfter = try await admin.currentDatabaseToken(scope: .private)
            if case .rewriteHistory = step {
                // (Rewriting a history rewritten the same way gives the very same commit; a
                // workspace that acknowledged that very commit is where it was: nothing to tell.)
                if headAfter != headBefore {
                    for ws in 0..<history.workspaces {
                        if acknowledgedHead[ws] == headAfter {
                            notificationOwed[ws] = nil
                            foreignCommit.remove(ws)
                            historyRewritten.remove(ws)
                        } else {
                            historyRewritten.insert(ws)
                        }
                    }
                }
            } else if headAfter != headBefore {
                for ws in 0..<history.workspaces where ws != writer {
                    foreignCommit.insert(ws)
                    if storeFingerprint != fingerprintBefore { notificationOwed[ws] = notificationOwed[ws] ?? "\(step)" }
                }
            }
            for ws in 0..<history.workspaces {
                let owed = notificationOwed[ws]
                let notifier = SubscriptionNotifier(workspace: try Workspace.open(at: roots[ws]), store: stores[ws])
                let round = try await notifier.pending()
                let told = round.notifications.filter { $0.subscriptionID == "db" }
                if historyRewritten.contains(ws) {
                    // With a ref per zone a cursor is each zone's head: it expires (a reset) only when a
                    // zone it knew was rewritten; a rewritten zone it never knew is news like a new one.
                    if kind == .zoneRefs ? told.isEmpty : !told.contains(where: \.reset) {
                        return ("subscription-reset", "ws\(ws) was not told that the history was rewritten: \(told)")
                    }
                } else if let why = owed, told.isEmpty {
                    return ("subscription-missed", "ws\(ws) was not told of another writer's change (\(why))")
                } else if !foreignCommit.contains(ws), !told.isEmpty {
                    return ("subscription-echo", "ws\(ws) was told of changes only it made: \(told)")
                }
                if (index + ws) % 3 == 0 {
                    try await notifier.acknowledge(round)
                    acknowledgedHead[ws] = headAfter
                    notificationOwed[ws] = nil
                    foreignCommit.remove(ws)
                    historyRewritten.remove(ws)
                }
            }
        } catch {
            return ("subscription-readable", "\(error)")
        }
        return nil
    }

    /// 10. After a pull, a workspace holds no zone of the owner's that is not shared with the
    ///     user: one unshared, deleted, purged or reset (after a key reset only its owner may
    ///     upload it again) is removed, its unpushed edits in lost+found (invariant 3).
    func checkSharedZonesDropped(ws: Int) -> (String, String)? {
        for z in SimHistory.allZones where SimHistory.isShared(z) && sharedWithUser[z] == nil {
            let dir = zonePath(ws, Self.zoneID(z))
            if FileManager.default.fileExists(atPath: dir) {
                return (
                    "shared-zone-dropped",
                    """
                    ws\(ws) still holds \(dir.dropFirst(roots[ws].count + 1))/ after a pull, though\
                     \(Self.zoneID(z)) is\
                     \(zoneStatus[z] == .live ? "no longer shared with \(SimHistory.user)" : "\(zoneStatus[z] ?? .never) on the store")
                    """
                )
            }
        }
        return nil
    }

    /// 11. A shared zone never holds back the user's own: a push (not killed) that fails leaves
    ///     no change in an own zone, one that does not sends every own zone it can, and right
    ///     after a pull, with nothing written to the store since, every change in the user's
    ///     own zones lands (no conflict can be left: the pull saw them all) — or the store holds
    ///     it already (a deletion in a zone reset since).
    func checkOwnZonesPushed(ws: Int, plan: PushPlan, report: PushReport?, failure: RecSyncError?) async throws -> (String, String)? {
        if let failure {
            // (Asked after the push, which first settles one killed before it: `plan` does not.)
            let status = try await engine(ws).status()
            let conflicts = Set(status.conflicts)
            let own = status.changes.map(\.recordID).filter { $0.zoneID.ownerName == SimHistory.user && !conflicts.contains($0) }
            if !own.isEmpty {
                return ("own-zones-pushed", "ws\(ws)'s push failed with changes in its own zones to send (\(own.map(describe))): \(failure.message)")
            }
            return nil
        }
        guard let report else { return nil }
        let own = plan.changes.map(\.recordID).filter { $0.zoneID.ownerName == SimHistory.user }
        // Held back for a reason of its own zone: a conflict (pending, or met now: a zone lands
        // whole), or the zone purged (its files in lost+found).
        let conflicted = Set((report.conflicts + plan.conflictsPending).map(\.zoneID.zoneName))
        for line in report.notSent where line.hasPrefix("private/") && !line.contains("conflict pending") && !line.contains("lost+found") {
            if conflicted.contains(where: { line.hasPrefix("private/\($0)/") }) { continue }
            return ("own-zones-pushed", "ws\(ws)'s push did not send \(line)")
        }
        guard freshlyPulled.contains(ws) else { return nil }
        let sent = Set(report.saved + report.deleted)
        let removed = Set(report.zonesRemoved.map(\.zoneID))
        var unsent = own.filter { !sent.contains($0) && !removed.contains($0.zoneID) }
        var stored: [RecordID: [String: FieldValue]] = [:]
        for result in try await admin.fetchRecords(unsent, desiredKeys: nil) {
            if case .success(let record) = result.result { stored[result.recordID] = record.fields }
        }
        unsent.removeAll { stored[$0] == fields(at: recordPath(ws, $0)) }
        if !unsent.isEmpty {
            return (
                "own-zones-pushed",
                """
                ws\(ws) pulled, then its push did not send \(unsent.map(describe)) (conflicts\
                 \(report.conflicts.map(describe)), notSent \(report.notSent))
                """
            )
        }
        return nil
    }

    /// 12. Dry runs: a push does what `pushPlan()` said just before — it sends the plan's
    ///     changes but its conflicts and the changes held back with them, meets its conflicts,
    ///     creates and removes its zones.
    /// `exempt`: zones whose records are not compared (`zonesPushPlansMisjudge`).
    func compare(_ plan: PushPlan, with report: PushReport?, failure: RecSyncError?, ws: Int, exempt: Set<ZoneID>) -> (String, String)? {
        let conflicts = Set(plan.conflicts.filter { !exempt.contains($0.zoneID) })
        let expected = Set(plan.changes.map(\.recordID)).subtracting(conflicts).subtracting(plan.heldBack(force: false)).filter {
            !exempt.contains($0.zoneID)
        }
        let sent = Set((report?.saved ?? []) + (report?.deleted ?? [])).filter { !exempt.contains($0.zoneID) }
        var differences: [String] = []
        if sent != expected { differences.append("sent \(sent.sorted().map(describe)), planned \(expected.sorted().map(describe))") }
        if Set((report?.conflicts ?? []).filter { !exempt.contains($0.zoneID) }) != conflicts {
            differences.append("conflicts \((report?.conflicts ?? []).sorted().map(describe)), planned \(plan.conflicts.map(describe))")
        }
        if Set(report?.zonesCreated ?? []) != Set(plan.zonesToCreate) {
            differences.append("zones created \(report?.zonesCreated ?? []), planned \(plan.zonesToCreate)")
        }
        if let report {
            if Self.removals(report.zonesRemoved) != Self.removals(plan.zonesRemoved) {
                differences.append("zones removed \(report.zonesRemoved.map(\.zoneID)), planned \(plan.zonesRemoved.map(\.zoneID))")
            }
        } else {
            // A push that fails reports nothing, but has removed the zones it found removed.
            let kept = Self.removals(plan.zonesRemoved).filter { FileManager.default.fileExists(atPath: zonePath(ws, $0)) }
            if !kept.isEmpty { differences.append("zones planned to be removed kept: \(kept.sorted())") }
        }
        guard !differences.isEmpty else { return nil }
        return (
            "dry-run-push",
            "the push \(failure.map { "failed (\($0.message)) and " } ?? "")disagrees with its dry run: \(differences.joined(separator: "; "))"
        )
    }

    /// 12. Dry runs: a pull does what `pullPlan()` said just before — it writes the plan's
    ///     records but its conflicts (those hold the store's version, the file untouched),
    ///     deletes the planned ones, leaves every other record file as it was, and removes the
    ///     planned zones.
    func compare(_ plan: PullPlan, with report: PullReport, ws: Int, filesBefore: [RecordID: Data]) async throws -> (String, String)? {
        let conflicts = Set(plan.conflicts)
        let toWrite = Set(plan.recordsToWrite).subtracting(conflicts)
        let toDelete = Set(plan.recordsToDelete).subtracting(conflicts)
        let removed = Set(report.zonesRemoved.map(\.zoneID))
        var differences: [String] = []
        if Set(report.conflicts) != conflicts {
            differences.append("conflicts \(report.conflicts.sorted().map(describe)), planned \(plan.conflicts.map(describe))")
        }
        if report.recordsWritten != toWrite.count {
            differences.append("\(report.recordsWritten) written, planned \(toWrite.sorted().map(describe))")
        }
        if report.recordsDeleted != toDelete.count {
            differences.append("\(report.recordsDeleted) deleted, planned \(toDelete.sorted().map(describe))")
        }
        let removedAsPlanned =
            SimulationOptions.knownDefects.contains(.dryRunMissesZonesThePullRemoves)
            ? Self.removals(plan.zonesRemoved).isSubset(of: Self.removals(report.zonesRemoved))  // only those it names
            : Self.removals(plan.zonesRemoved) == Self.removals(report.zonesRemoved)
        if !removedAsPlanned { differences.append("zones removed \(report.zonesRemoved.map(\.zoneID)), planned \(plan.zonesRemoved.map(\.zoneID))") }
        var stored: [RecordID: [String: FieldValue]] = [:]
        do {
            for result in try await admin.fetchRecords(toWrite.sorted(), desiredKeys: nil) {
                if case .success(let record) = result.result { stored[result.recordID] = record.fields }
            }
        } catch {
            return ("store-readable", "the store cannot be read: \(error)")
        }
        for id in Self.allRecordIDs where !removed.contains(id.zoneID) {
            let now = FileManager.default.contents(atPath: recordPath(ws, id))
            if toWrite.contains(id) {
                if fields(at: recordPath(ws, id)) != stored[id] {
                    differences.append(
                        "\(describe(id)) planned to be written holds \(describe(fields(at: recordPath(ws, id)))), the store \(describe(stored[id]))")
                }
            } else if toDelete.contains(id) {
                if now != nil { differences.append("\(describe(id)) planned to be deleted is still there") }
            } else if now != filesBefore[id] {
                differences.append(
                    """
                    \(describe(id)) not planned to change went from\
                     \(describe(filesBefore[id].flatMap { try? WorkspaceEncoding.decodeFields(Array($0)) })) to\
                     \(describe(fields(at: recordPath(ws, id))))
                    """
                )
            }
        }
        guard !differences.isEmpty else { return nil }
        return ("dry-run-pull", "ws\(ws)'s pull disagrees with its dry run: \(differences.joined(separator: "; "))")
    }

    /// The zones whose records a push plan of `ws` is known to misjudge, asked before the push:
    /// zones to upload again, zones shared without write access.
    func zonesPushPlansMisjudge(_ ws: Int) throws -> Set<ZoneID> {
        var exempt = Set<ZoneID>()
        let workspace = try Workspace.open(at: roots[ws])
        for z in SimHistory.allZones {
            let zone = Self.zoneID(z)
            if SimulationOptions.knownDefects.contains(.dryRunIgnoresUploadAgain),
                try workspace.awaitsReupload(zone) ? true : (!SimHistory.isShared(z) && zoneStatus[z] == .reset)
            {
                exempt.insert(zone)
            }
            if SimulationOptions.knownDefects.contains(.dryRunSendsToZonesThePushRefuses), SimHistory.isShared(z), sharedWithUser[z] != .readWrite {
                exempt.insert(zone)
            }
        }
        return exempt
    }

    /// Whether a workspace's next run is not compared with its dry run: it has a push killed
    /// after the store committed it to settle, which the dry runs do not. Asked before
    /// the run, which settles it.
    func skipsDryRunComparison(_ ws: Int) throws -> Bool {
        try SimulationOptions.knownDefects.contains(.dryRunIgnoresInterruptedPush) && Workspace.open(at: roots[ws]).pendingPushNote() != nil
    }

    /// The zones of `deletions` that go from a workspace (a reset of the user's own zone is
    /// kept, to be uploaded again: reports list it, plans need not).
    static func removals(_ deletions: [ZoneDeletion]) -> Set<ZoneID> {
        Set(deletions.filter { !$0.keepsRecordsForUpload(by: SimHistory.user) }.map(\.zoneID))
    }

    func describe(_ id: RecordID) -> String { SyncInvariants.describe(id) }

    func describe(_ fields: [String: FieldValue]?) -> String { SyncInvariants.describe(fields) }

    // MARK: The end

    /// Every workspace resolves (keeping its own edits), pushes and pulls until a whole round
    /// changes nothing; then each must equal the store record for record, and the store pass
    /// `git fsck --strict`.
    func settle() async throws {
        // Edits made in a zone shared read-only wait for write access: the owner grants it.
        for (z, permission) in sharedWithUser.sorted(by: { $0.key < $1.key }) where permission == .readOnly {
            try await perform(.share(zone: z, permission: .readWrite))
        }
        var quiet = false
        var rounds = 0
        while !quiet && rounds < 12 {
            rounds += 1
            quiet = true
            for ws in 0..<history.workspaces {
                for step: SimStep in [.pull(ws: ws, crashAt: nil), .resolve(ws: ws, strategy: .ours), .push(ws: ws, crash: nil)] {
                    if try await perform(step) { quiet = false }
                    stepsTaken += 1
                    if let problem = await check() { throw SimViolation(invariant: problem.0, detail: problem.1, step: nil) }
                }
            }
        }
        guard quiet else {
            throw SimViolation(invariant: "converges", detail: "still changing after \(rounds) rounds of resolve, push and pull", step: nil)
        }
        var expected: [String: [String: FieldValue]] = [:]
        for scope in [DatabaseScope.private, .shared] {
            for zone in try await admin.fetchAllRecordZones(scope: scope).map(\.zoneID) {
                let directory = scope == .private ? "private/\(zone.zoneName)" : "shared/\(zone.ownerName)/\(zone.zoneName)"
                for r in try await admin.allZoneChanges(zone, since: nil).records {
                    expected["\(directory)/\(r.recordID.recordName).json"] = r.fields
                }
            }
        }
        for ws in 0..<history.workspaces {
            var held: [String: [String: FieldValue]] = [:]
            for (path, bytes) in TreeSnapshot.records(roots[ws]) where !path.contains("/.system/") {
                held[path] = try? WorkspaceEncoding.decodeFields(bytes)
            }
            if let broken = SyncInvariants.converged("ws\(ws)", holds: held, store: expected) {
                throw SimViolation(invariant: broken.0, detail: broken.1, step: nil)
            }
            let status = try await engine(ws).status()
            if !status.isClean {
                throw SimViolation(invariant: "converges", detail: "ws\(ws) is not clean after settling: \(status)", step: nil)
            }
        }
        if kind != .memory {
            do { try GitCLI.run(["fsck", "--strict"], in: fixture.path) } catch {
                throw SimViolation(invariant: "git-fsck", detail: "\(error)", step: nil)
            }
        }
    }
}
