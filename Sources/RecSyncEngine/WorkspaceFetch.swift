import RecSyncModel
import RecSyncStore
import RecSyncWorkspace
import Synchronization

/// The file workspace as a client of `RecordSyncEngine`'s fetch (a pull).
///
/// The engine runs the protocol: database changes, removed zones, each zone's pages, tokens,
/// in the order DESIGN §6 requires. This client keeps the state it asks for in the
/// workspace's own files (a token per scope and zone, the retry list, the notes of a page
/// being applied and of records pushed since the zone token), and turns what the engine
/// delivers into record files and sidecars: expectations so that an edit made during the pull
/// is never overwritten, conflicts as three copies, lost+found for removed zones, assets
/// streamed into place, and the end of a full fetch (records the listing did not name are
/// asked about, then deleted).
///
/// A dry run (`SyncEngine.dryRun`) is the same run with every write left out.
final class WorkspaceFetchClient: EngineClient, FetchStateKeeper {
    let sync: SyncEngine
    let ws: Workspace
    let events: @Sendable (SyncEvent) -> Void
    var dryRun: Bool { sync.dryRun }
    var zoneConcurrency: Int { sync.zoneWorkers }

    /// What one zone's fetch holds while it runs; only that zone's steps touch it, in order.
    struct ZoneRun: Sendable {
        var report = PullReport()
        var index: ZoneIndex
        var refetch: FullFetchNames
        var retry: RetryList
        /// The zone's files when a full fetch began (see `PageApplier.listing`).
        var listing: ZoneListing?
        var madeDirectory: Bool
        var startedRefetch = false
        /// A page's names are noted (`noteApplying`) until its token is saved.
        var noted = false
        /// Versions the last delivery could not take in (an asset the store cannot deliver).
        var refused: [RecordID: RecSyncError] = [:]
    }

    private let runs = Mutex<[ZoneID: ZoneRun]>([:])
    /// The pull's report: scope by scope, each scope's removals, then its zones in order.
    private let reports = Mutex<(report: PullReport, zones: [ZoneID: PullReport])>((PullReport(), [:]))

    init(sync: SyncEngine, workspace: Workspace, events: @escaping @Sendable (SyncEvent) -> Void) {
        self.sync = sync
        self.ws = workspace
        self.events = events
    }

    var report: PullReport { reports.withLock { $0.report } }

    func zoneFailsAlone(_ error: RecSyncError) -> Bool {
        // The zone's own entry in the store is unreadable (its zone.json, or a directory of it
        // that plain git made a file): that zone is skipped and reported, and the rest of the
        // pull (or clone) goes on. Any other failure stops the pull.
        if case .storeCorrupt = error.reason { return true }
        return false
    }

    private func run<T>(_ zone: ZoneID, _ body: (inout ZoneRun) throws(RecSyncError) -> T) throws(RecSyncError) -> T {
        guard var run = runs.withLock({ $0.removeValue(forKey: zone) }) else {
            throw .internalError("the pull of zone \(zone) has no state; pull again")
        }
        defer { runs.withLock { [run] in $0[zone] = run } }
        return try body(&run)
    }

    private func addToReport(_ body: (inout PullReport) -> Void) {
        reports.withLock { body(&$0.report) }
    }

    // MARK: Scope state

    func holdings(of scope: DatabaseScope, engine: isolated RecordSyncEngine) async throws(RecSyncError) -> ScopeHoldings {
        // What this workspace holds of the scope. Zones with a token; zones held without one:
        // own zones made here (perhaps pushed, never pulled: in no feed when they go, so a
        // tombstone says), other users' zones a first pull of was killed before its zone token
        // (the store says whether they are still shared), and other users' zones kept for an
        // upload after their owner's reset, as earlier versions did (only the owner creates
        // them again: removed). Held zones are looked at even when the feed does not name
        // them if this workspace pushed to them since its last pull (a record created here and
        // deleted elsewhere looks unchanged at the database level), if records the store could
        // not deliver may have become readable (see `RetryList`), or if assets an earlier pull
        // left on the store are to be fetched now.
        let held = ws.zonesWithTokens().filter { ws.scope(of: $0) == scope }
        let withToken = Set(held)
        let local = ws.localZones().zones.filter { ws.scope(of: $0) == scope && !withToken.contains($0) }
        var holdings = ScopeHoldings(held: held, interrupted: try ws.pullWasInterrupted(scope))
        for zone in local where try ws.awaitsReupload(zone) { holdings.awaitingReupload.insert(zone) }
        if scope == .private {
            holdings.maybeNew = local.filter { $0.ownerName == ws.user }
        } else {
            holdings.unconfirmed = local.filter { $0.ownerName != ws.user && !holdings.awaitingReupload.contains($0) }
            holdings.removedRegardless = local.filter { $0.ownerName != ws.user && holdings.awaitingReupload.contains($0) }
                .map { ZoneDeletion(zoneID: $0, reason: .encryptedDataReset) }
        }
        holdings.removedAhead = try ws.zonesRemovedAheadOfScopeToken(scope).filter { !ws.hasZoneDirectory($0) }
        // Zones a partial workspace tracks without a token yet: tracked since the last pull
        // (which the scope's feed need not name), or their first fetch was stopped.
        holdings.wanted = try ws.trackedZonesNotHeld().filter { ws.scope(of: $0) == scope }
        for zone in held where try ws.zoneNeedsALook(zone) ? true : sync.fetchesAssets(of: zone) ? ws.hasUnfetchedAssetsNote(zone) : false {
            holdings.needingALook.insert(zone)
        }
        return holdings
    }

    func token(for scope: DatabaseScope, engine: isolated RecordSyncEngine) async throws(RecSyncError) -> ServerChangeToken? {
        try ws.loadToken(ws.scopeTokenPath(scope))
    }

    func scopeFetchStarting(
        _ scope: DatabaseScope, removing: [ZoneDeletion], fetching: [ZoneID], leavingOut: [ZoneID], engine: isolated RecordSyncEngine
    ) async throws(RecSyncError) {
        guard !dryRun else { return }
        try ws.noteRemovingZones(removing.map(\.zoneID), scope: scope)
        // Zone tokens are about to move ahead of the scope token: noted, durably, until the
        // scope token catches up (read by the pull after a kill).
        if !fetching.isEmpty { try ws.notePullUnderWay(scope) }
    }

    func zonesRemoved(_ deletions: [ZoneDeletion], engine: isolated RecordSyncEngine) async throws(RecSyncError) {
        // `removeZone` forgot each zone's state with its files.
    }

    func scopeFetched(_ scope: DatabaseScope, token: ServerChangeToken?, fetched: [ZoneID], failed: [ZoneID], engine: isolated RecordSyncEngine)
        async throws(RecSyncError)
    {
        reports.withLock { reports in
            for zone in fetched {
                let zoneReport = reports.zones.removeValue(forKey: zone) ?? PullReport()
                if !zoneReport.zonesSkipped.contains(zone) { reports.report.zonesChanged.append(zone) }
                reports.report.merge(zoneReport)
            }
        }
        guard !dryRun else { return }
        try sync.checkpoint?(.beforeScopeToken(scope))
        try ws.saveToken(token, at: ws.scopeTokenPath(scope))
        try ws.clearPullUnderWay(scope)
    }

    // MARK: Zone state

    func zoneFetchStarting(_ zone: ZoneID, engine: isolated RecordSyncEngine) async throws(RecSyncError) -> (token: ServerChangeToken?, listing: Bool)
    {
        // A page a killed pull was applying: its names join those asked about at the end.
        if !dryRun { try ws.adoptInterruptedPage(zone) }
        let token = try ws.loadToken(ws.zoneTokenPath(zone))
        let listing = try run(zone) { $0.refetch.isUnderWay }
        return (token, listing)
    }

    func retryCandidates(in zone: ZoneID, all: Bool, engine: isolated RecordSyncEngine) async throws(RecSyncError) -> [RecordID] {
        try run(zone) { run throws(RecSyncError) in
            var ids: [RecordID] = []
            for name in run.retry.namesToFetch(all: all) {
                do throws(RecSyncError) { ids.append(try RecordID(recordName: name, zoneID: zone)) } catch { run.retry[name] = nil }
            }
            return ids
        }
    }

    func listingStarting(_ zone: ZoneID, expired: Bool, engine: isolated RecordSyncEngine) async throws(RecSyncError) {
        let fresh = ws.holdsNoSyncedRecord(zone)
        try run(zone) { run throws(RecSyncError) in
            if expired {
                run.report.expiredTokens.append("zone \(zone)")
                events(.tokenExpired("zone \(zone)"))
                if !dryRun { try ws.saveToken(nil, at: ws.zoneTokenPath(zone)) }
            } else {
                run.startedRefetch = !run.refetch.isUnderWay
            }
            try run.refetch.start(fresh: fresh)
            run.listing = try ZoneListing(ws, zone: zone)
        }
    }

    func pageArriving(_ records: [Record], in zone: ZoneID, engine: isolated RecordSyncEngine) async throws(RecSyncError) {
        // Outside a full fetch, a page's records land before its token: killed in between, the
        // next pull fetches from the old token, and a record this page created that is deleted
        // meanwhile is in neither end of that diff. Their names are noted until the token is
        // saved; the next pull then looks them up. A full fetch needs no note: it asks about
        // every record it did not see at its end.
        try run(zone) { run throws(RecSyncError) in
            guard !dryRun, !run.refetch.isUnderWay else { return }
            try ws.noteApplying(records.map(\.recordID.recordName), in: zone)
            run.noted = true
        }
    }

    func pageTaken(
        in zone: ZoneID, token: ServerChangeToken?, delivered: Set<RecordID>, failures: [RecordSyncEngine.RecordFailure], last: Bool,
        engine: isolated RecordSyncEngine
    ) async throws(RecSyncError) {
        try run(zone) { run throws(RecSyncError) in
            for id in delivered where run.refused[id] == nil { run.retry[id.recordName] = nil }
            for failure in failures {
                // The token moves past it: kept, to fetch by ID on the next pull, or, when its
                // stored bytes are at fault, until the zone's changes name it.
                let name = failure.recordID.recordName
                let entry = RetryList.Entry(why: failure.error.message, unreadableTag: failure.unreadableTag)
                if run.retry[name] != entry {
                    let next = entry.unreadableTag == nil ? "the next pull fetches it again" : "a pull fetches it again once it changes on the store"
                    run.report.warnings.append("\(failure.recordID): \(failure.error.message); \(next)")
                }
                run.retry[name] = entry
            }
            run.refused = [:]
            guard !dryRun else { return }
            // The page's changes to the list, appended: a line each, however long the list.
            try run.retry.save()
            try sync.checkpoint?(.afterBatchBeforeZoneToken(zone))
            try ws.saveToken(token, at: ws.zoneTokenPath(zone))
            if run.noted {
                try ws.clearApplying(zone)
                run.noted = false
            }
        }
    }

    func retried(in zone: ZoneID, settled: Set<RecordID>, failures: [RecordSyncEngine.RecordFailure], engine: isolated RecordSyncEngine)
        async throws(RecSyncError)
    {
        try run(zone) { run throws(RecSyncError) in
            for id in settled where run.refused[id] == nil { run.retry[id.recordName] = nil }
            for failure in failures {
                run.retry[failure.recordID.recordName] = RetryList.Entry(why: failure.error.message, unreadableTag: failure.unreadableTag)
                let next = failure.unreadableTag == nil ? "the next pull tries again" : "a pull tries again once it changes on the store"
                run.report.warnings.append("\(failure.recordID): still cannot be fetched (\(failure.error.message)); \(next)")
            }
            run.refused = [:]
            guard !dryRun else { return }
            try run.retry.save()
        }
    }

    func savedSinceToken(in zone: ZoneID, engine: isolated RecordSyncEngine) async throws(RecSyncError) -> [RecordSyncEngine.State.SavedRecord] {
        // A dry run left the names of a page a killed pull was applying where they were.
        var names = try ws.pushedRecordNames(zone) ?? []
        if dryRun { names.formUnion(try ws.interruptedPageNames(zone)) }
        return names.sorted().compactMap { name in
            (try? RecordID(recordName: name, zoneID: zone)).map { RecordSyncEngine.State.SavedRecord(recordID: $0, recordType: "") }
        }
    }

    func savedChecked(in zone: ZoneID, engine: isolated RecordSyncEngine) async throws(RecSyncError) {
        guard !dryRun else { return }
        try ws.clearPushed(zone)
    }

    // MARK: Delivered changes

    func handleEvent(_ event: RecordSyncEngine.Event, syncEngine: RecordSyncEngine) async throws {
        switch event {
        case .fetchedDatabaseChanges(let changes): try await databaseChanged(changes)
        case .willFetchRecordZoneChanges(let zone): try zoneStarting(zone)
        case .fetchedRecordZoneChanges(let changes): try await recordsChanged(changes)
        case .didFetchRecordZoneChanges(let zone, let error): try await zoneFetched(zone, error: error)
        default: break
        }
    }

    private func databaseChanged(_ changes: RecordSyncEngine.FetchedDatabaseChanges) async throws(RecSyncError) {
        let scope = changes.scope
        if changes.tokenExpired {
            addToReport { $0.expiredTokens.append("\(scope.rawValue) database") }
            events(.tokenExpired("\(scope.rawValue) database"))
        }
        addToReport { $0.warnings += changes.warnings.map(\.description) }
        // A partial workspace hears of every zone that goes; those it does not track are not its business.
        for deletion in changes.deletions where ws.tracks(deletion.zoneID) {
            var removal = PullReport()
            try await sync.removeZone(deletion, workspace: ws, report: &removal, events: events)
            addToReport { $0.merge(removal) }
        }
        // A shared zone's permission is in its zone entry, which changes with it: the files of
        // a zone shared read-only are written without write permission (before its records land).
        let zones = changes.modifications.filter(ws.tracks)
        if scope == .shared, !zones.isEmpty, !dryRun {
            let onStore = Dictionary(
                try await sync.store.fetchAllRecordZones(scope: .shared).map { ($0.zoneID, $0) }, uniquingKeysWith: { a, _ in a })
            for zone in zones {
                if let entry = onStore[zone] { try ws.setReadOnly(entry.permission(for: ws.user) == .readOnly, zone: zone) }
            }
        }
    }

    private func zoneStarting(_ zone: ZoneID) throws(RecSyncError) {
        events(.zoneChanged(zone))
        let made = dryRun ? false : try ws.makeZoneDirectory(zone)
        let zoneRun = ZoneRun(
            index: ZoneIndex.load(ws, zone: zone), refetch: try FullFetchNames(ws.refetchLog(zone), writes: !dryRun),
            retry: try RetryList.load(ws, zone: zone), madeDirectory: made)
        runs.withLock { $0[zone] = zoneRun }
    }

    /// Applies a page (or the records asked for again, or the deletions of records saved here
    /// that are gone): decided against the local files, written durably, then the index.
    private func recordsChanged(_ changes: RecordSyncEngine.FetchedRecordZoneChanges) async throws(RecSyncError) {
        let zone = changes.zoneID
        guard var run = runs.withLock({ $0.removeValue(forKey: zone) }) else {
            throw .internalError("the pull of zone \(zone) has no state; pull again")
        }
        defer { runs.withLock { [run] in $0[zone] = run } }
        run.report.warnings += changes.warnings.map(\.description)
        if let expected = changes.recordCountEstimate { events(.recordsExpected(zone, count: expected)) }
        var applier = try PageApplier(engine: sync, workspace: ws, zone: zone, listing: run.listing)
        for record in changes.modifications {
            try await applier.incoming(record, index: &run.index)
        }
        for deletion in changes.deletions {
            try await applier.incomingDeletion(deletion.recordID, index: &run.index)
        }
        if !dryRun { try sync.checkpoint?(.beforeBatchWrite(zone)) }
        try await applier.finish(index: &run.index)
        try run.refetch.add((changes.modifications.map(\.recordID) + changes.undeliverable.map(\.recordID)).map(\.recordName))
        applier.report(into: &run.report, events: events)
        // Versions not taken in: on the retry list until a good one arrives.
        for (id, refusal) in applier.refused.sorted(by: { $0.key < $1.key }) {
            run.refused[id] = refusal
            let again = run.retry[id.recordName] != nil
            run.report.warnings.append(
                again
                    ? "\(id): still cannot be fetched (\(refusal.message)); the next pull tries again"
                    : "\(id): \(refusal.message); the next pull fetches it again")
            run.retry[id.recordName] = RetryList.Entry(why: refusal.message)
        }
        guard !dryRun else { return }
        // The journal only grows while pages come; the base is rewritten (if the journal
        // outgrew it) after the last page of an incremental pull, and once at the end of a
        // full fetch. Compacting on every page once the journal passed its threshold rewrote
        // the whole index every few pages: quadratic in a large pull.
        try run.index.save(compacting: !run.refetch.isUnderWay && !changes.moreComing)
        // A long pull makes its pages durable as it goes (`PageJournal`): a crash then has
        // little to redo, and the journals little room to take.
        if ws.pageJournalCount >= Self.journalsRetiredAt { try ws.retirePageJournals() }
    }

    /// How many pages' journals a pull keeps before it makes their files durable: at 400
    /// records a page, one sync for about 25,000 records.
    static let journalsRetiredAt = 64

    private func zoneFetched(_ zone: ZoneID, error: RecSyncError?) async throws(RecSyncError) {
        guard var run = runs.withLock({ $0.removeValue(forKey: zone) }) else { return }
        switch error {
        case nil:
            try await finishFullFetch(zone, run: &run)
            if !dryRun {
                try run.retry.compact()
                if sync.fetchesAssets(of: zone) { try await sync.fetchUnfetchedAssets(of: zone, workspace: ws) }
            }
        case let error? where error.kind == .zoneNotFound || error.kind == .userDeletedZone:
            // Gone since the database changes were read; the next pull removes it.
            run.report.warnings.append("zone \(zone) went away during the pull; pull again")
            run.report.zonesSkipped.append(zone)
        case let error?:
            // Skipped and reported (see `zoneFailsAlone`), left here as it was. What this pull
            // made for it goes again, so the empty directory does not read as a new zone.
            run.report.warnings.append("zone \(zone) skipped: \(error.message)")
            run.report.zonesSkipped.append(zone)
            if run.madeDirectory { try ws.removeZoneDirectoryIfEmpty(zone) }
            if run.startedRefetch { try run.refetch.end() }
        }
        reports.withLock { [report = run.report] in $0.zones[zone] = report }
    }

    /// The end of a full fetch, which lists every record: synced records it did not list are
    /// gone — unless they arrived since the fetch's target (pushed from here meanwhile), so the
    /// store is asked about each before it is deleted. A zone waiting to be uploaded again
    /// after an encrypted-data reset keeps everything.
    private func finishFullFetch(_ zone: ZoneID, run: inout ZoneRun) async throws(RecSyncError) {
        let (seen, fullFetch) = try run.refetch.finishing()
        guard fullFetch else { return }
        var applier = try PageApplier(engine: sync, workspace: ws, zone: zone)
        if try !ws.awaitsReupload(zone) {
            // Pending conflicts too, whose record may be new here (no tag, so not in the
            // scan's candidates, and a zone holding only such records fetches as fresh): a
            // conflict whose server copy the store has since deleted must learn it, or settling
            // it with the store's side would bring the deleted version back.
            var candidates = Set(
                try ws.conflicts(in: zone).filter { $0.server != nil && seen?.contains($0.recordID.recordName) != true }.map(\.recordID))
            if let seen {
                let scan = try await ws.scan(zone: zone, base: sync.baseLookup)
                candidates.formUnion(scan.records.filter { $0.knownTag != nil && !seen.contains($0.recordID.recordName) }.map(\.recordID))
            }
            for result in try await sync.store.fetchRecords(candidates.sorted(), desiredKeys: nil) {
                switch result.result {
                case .failure(let error) where error.kind == .unknownItem: try await applier.incomingDeletion(result.recordID, index: &run.index)
                case .success(let record): try await applier.incoming(record, index: &run.index)
                case .failure: break
                }
            }
        }
        try await applier.finish(index: &run.index)
        if !dryRun { try run.index.compactJournal() }
        applier.report(into: &run.report, events: events)
        if !applier.refused.isEmpty, !dryRun {
            for (id, refusal) in applier.refused.sorted(by: { $0.key < $1.key }) {
                run.report.warnings.append("\(id): \(refusal.message); the next pull fetches it again")
                run.retry[id.recordName] = RetryList.Entry(why: refusal.message)
            }
            try run.retry.save()
        }
        try run.refetch.end()
    }
}
