import Foundation
import RecSyncModel
import RecSyncStore
import RecSyncWorkspace

extension SyncEngine {
    /// Brings the store's changes into the workspace (DESIGN §6).
    ///
    /// Per scope: database changes; removed zones (unpushed work saved to lost+found first);
    /// then each changed zone, page by page — records on disk before the zone token, every
    /// zone before the scope token. Killed anywhere, the next pull redoes at most one page.
    /// Local edits are never overwritten: an incoming change to an edited record is a conflict.
    public func pull(events: @escaping @Sendable (SyncEvent) -> Void = { _ in }) async throws(RecSyncError) -> PullReport {
        try await pull(fromLastLook: false, events: events)
    }

    /// `fromLastLook`: the pull reads the store as it was at its last look (see
    /// `RemoteStore.beginOperation`), for a clone, whose store looked when it was opened a
    /// moment before: over ssh that is one connection, and one key exchange, fewer.
    func pull(fromLastLook: Bool, events: @escaping @Sendable (SyncEvent) -> Void) async throws(RecSyncError) -> PullReport {
        store.prepareForBulkRead()
        return try await workspace.withLock(purpose: "pull") { () async throws(RecSyncError) -> PullReport in
            try await inOneOperation(fromLastLook: fromLastLook) { () async throws(RecSyncError) -> PullReport in
                let report = try await pullLocked(events: events)
                try workspace.recordContact(at: StoreActor.systemClock())
                return report
            }
        }
    }

    func pullLocked(events: @escaping @Sendable (SyncEvent) -> Void) async throws(RecSyncError) -> PullReport {
        let keptAside = dryRun ? [] : workspace.removeStaleTemporaryFiles()
        let ws = try checkStore()
        // Sidecars of a push that landed but was killed before it wrote them: adopted first,
        // or this pull would take that push's own records for conflicts.
        try await settlePendingPush(workspace: ws)
        var report = PullReport()
        report.lostAndFound += keptAside.map(ws.relative)
        for scope in [DatabaseScope.private, .shared] {
            try await pullScope(scope, workspace: ws, report: &report, events: events)
        }
        // A conflict whose two sides are the same (the store moved to what the file holds)
        // resolves itself: nothing to choose.
        let same = Set(dryRun ? [] : try settleIdenticalConflictsLocked())
        report.conflicts.removeAll { same.contains($0) }
        return report
    }

    func pullScope(_ scope: DatabaseScope, workspace ws: Workspace, report: inout PullReport, events: @escaping @Sendable (SyncEvent) -> Void) async throws(RecSyncError) {
        let tokenPath = ws.scopeTokenPath(scope)
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
        var holdings = ScopeHoldings(held: held, interrupted: ws.pullWasInterrupted(scope))
        holdings.awaitingReupload = Set(local.filter(ws.awaitsReupload))
        if scope == .private {
            holdings.maybeNew = local.filter { $0.ownerName == ws.user }
        } else {
            holdings.unconfirmed = local.filter { $0.ownerName != ws.user && !holdings.awaitingReupload.contains($0) }
            holdings.removedRegardless = local.filter { $0.ownerName != ws.user && holdings.awaitingReupload.contains($0) }
                .map { ZoneDeletion(zoneID: $0, reason: .encryptedDataReset) }
        }
        holdings.removedAhead = try ws.zonesRemovedAheadOfScopeToken(scope).filter { !ws.hasZoneDirectory($0) }
        holdings.needingALook = Set(held.filter { ws.zoneNeedsALook($0) || (fetchesAssets(of: $0) && FileIO.info(ws.unfetchedAssetsPath($0)) != nil) })
        let plan = try await store.planScopeFetch(scope, since: try ws.loadToken(tokenPath), holdings: holdings)
        if plan.tokenExpired {
            report.expiredTokens.append("\(scope.rawValue) database")
            events(.tokenExpired("\(scope.rawValue) database"))
        }
        report.warnings += plan.warnings.map(\.description)
        if !dryRun { try ws.noteRemovingZones(plan.deletions.map(\.zoneID), scope: scope) }
        for deletion in plan.deletions {
            try await removeZone(deletion, workspace: ws, report: &report, events: events)
        }
        let (token, zones) = (plan.token, plan.zones)
        // Zone tokens are about to move ahead of the scope token: note it, durably, until the
        // scope token catches up (read above by the pull after a kill).
        if !zones.isEmpty && !dryRun { try ws.notePullUnderWay(scope) }
        // A shared zone's permission is in its zone entry, which changes with it: the files of a
        // zone shared read-only are written without write permission (before its records land).
        if scope == .shared, !zones.isEmpty, !dryRun {
            let onStore = Dictionary(try await store.fetchAllRecordZones(scope: .shared).map { ($0.zoneID, $0) }, uniquingKeysWith: { a, _ in a })
            for zone in zones {
                if let entry = onStore[zone] { try ws.setReadOnly(entry.permission(for: ws.user) == .readOnly, zone: zone) }
            }
        }
        try await pullZones(zones, workspace: ws, report: &report, events: events)
        guard !dryRun else { return }
        try checkpoint?(.beforeScopeToken(scope))
        try ws.saveToken(token, at: tokenPath)
        try ws.clearPullUnderWay(scope)
    }

    /// Applies a zone deletion: work not yet pushed goes to lost+found, then the directory goes.
    /// After an encrypted-data reset of a zone of this user's the data stays and is uploaded
    /// again on the next push; a reset of a zone shared with this user is a removal.
    func removeZone(_ deletion: ZoneDeletion, workspace ws: Workspace, report: inout PullReport, events: @Sendable (SyncEvent) -> Void) async throws(RecSyncError) {
        let zone = deletion.zoneID
        if dryRun {
            report.zonesRemoved.append(deletion)
            return
        }
        if deletion.keepsRecordsForUpload(by: ws.user) {
            try ws.markAwaitsReupload(zone)
        } else if ws.hasZoneDirectory(zone) {
            // The store no longer has the zone: compare with the index only (no base lookups).
            let scan = try await ws.scan(zone: zone) { _, _ throws(RecSyncError) in nil }
            let saved = try ws.setAsideUnpushedWork(of: zone, scan: scan, stamp: Self.stamp())
            if let saved { report.lostAndFound.append(ws.relative(saved)) }
            try ws.removeZoneDirectory(zone)
            events(.zoneRemoved(zone, reason: deletion.reason, lostAndFound: saved.map(ws.relative)))
        } else if ws.zoneDirectoryIsLink(zone) {
            // Only the link goes: what it points to is outside the workspace and not recsync's.
            try ws.removeZoneDirectory(zone)
            events(.zoneRemoved(zone, reason: deletion.reason, lostAndFound: nil))
        }
        try ws.forgetZoneState(zone)
        report.zonesRemoved.append(deletion)
    }

    static func stamp() -> String {
        let ms = StoreActor.systemClock()
        return Timestamps.iso8601(ms).replacingOccurrences(of: ":", with: "-")
    }

    /// Pulls zones side by side (one per core, at most `zoneWorkers`): zones share nothing on
    /// disk, so one zone's file writes overlap another's fetching and decoding. Each zone is
    /// all-or-nothing per page as before; on a failure no further zone is started, the ones
    /// under way finish, and the first error is thrown.
    func pullZones(_ zones: [ZoneID], workspace ws: Workspace, report: inout PullReport, events: @escaping @Sendable (SyncEvent) -> Void) async throws(RecSyncError) {
        let results = await Self.sideBySide(zones, workers: zoneWorkers) { (zone: ZoneID) async throws(RecSyncError) -> PullReport in
            events(.zoneChanged(zone))
            var zoneReport = PullReport()
            try await self.pullZone(zone, workspace: ws, report: &zoneReport, events: events)
            return zoneReport
        }
        var failure: RecSyncError?
        for (zone, result) in zip(zones, results) {
            guard let result else { continue }  // not started: an earlier zone failed
            switch result {
            case .success(let r):
                if !r.zonesSkipped.contains(zone) { report.zonesChanged.append(zone) }
                report.merge(r)
            case .failure(let error):
                report.zonesChanged.append(zone)
                failure = failure ?? error
            }
        }
        if let failure { throw failure }
    }

    /// Fetches a zone's record changes page by page and applies each page durably.
    func pullZone(_ zone: ZoneID, workspace ws: Workspace, report: inout PullReport, events: @Sendable (SyncEvent) -> Void) async throws(RecSyncError) {
        let madeDirectory = dryRun ? false : try ws.makeZoneDirectory(zone)
        let tokenPath = ws.zoneTokenPath(zone)
        var token = try ws.loadToken(tokenPath)
        var refetch = try FullFetchNames(ws.refetchLog(zone), writes: !dryRun)
        let startedRefetch = token == nil && !refetch.isUnderWay
        if token == nil { try refetch.start(fresh: ws.holdsNoSyncedRecord(zone)) }
        var index = ZoneIndex.load(ws, zone: zone)
        var listing = token == nil ? ZoneListing(ws, zone: zone) : nil
        // A page a killed pull was applying: its names join the ones looked up by name at the
        // end (see `checkPushedRecords`).
        if !dryRun { try ws.adoptInterruptedPage(zone) }
        // Records the store could not deliver before: those that may have become readable
        // without changing are asked for by ID; at the start of a full fetch, which names
        // only what exists, every one (one listed there may have been deleted meanwhile).
        var retry = try RetryList.load(ws, zone: zone)
        try await retryRecords(zone, all: token == nil, list: &retry, workspace: ws, index: &index, report: &report, events: events)
        var feed = ZoneChangeFeed(store: store, zone: zone, since: token)
        while true {
            let step: ZoneChangeFeed.Step?
            do {
                // A full fetch takes larger pages: fewer syncs, the same durability per page.
                step = try await feed.next(limit: refetch.isUnderWay ? max(pageSize, fullFetchPageSize) : pageSize)
            } catch .zoneNotFound, .userDeletedZone {
                // Gone since the database changes were read; the next pull removes it.
                report.warnings.append("zone \(zone) went away during the pull; pull again")
                report.zonesSkipped.append(zone)
                return
            } catch .storeCorrupt(let why) {
                // The zone's own entry in the store is unreadable (its zone.json, or a directory
                // of it that plain git made a file): that zone is skipped and reported, left here
                // as it was, and the rest of the pull (or clone) goes on. What this pull made
                // for it goes again, so the empty directory does not read as a new zone.
                report.warnings.append("zone \(zone) skipped: \(why)")
                report.zonesSkipped.append(zone)
                if madeDirectory { try ws.removeZoneDirectoryIfEmpty(zone) }
                if startedRefetch { try refetch.end() }
                return
            }
            guard let step else { break }
            guard case .page(let page) = step else {
                report.expiredTokens.append("zone \(zone)")
                events(.tokenExpired("zone \(zone)"))
                token = nil
                if !dryRun { try ws.saveToken(nil, at: tokenPath) }
                try refetch.start(fresh: ws.holdsNoSyncedRecord(zone))
                listing = ZoneListing(ws, zone: zone)
                try await retryRecords(zone, all: true, list: &retry, workspace: ws, index: &index, report: &report, events: events)
                continue
            }
            report.warnings += page.warnings.map(\.description)
            if let expected = page.recordCountEstimate { events(.recordsExpected(zone, count: expected)) }
            var applier = PageApplier(engine: self, workspace: ws, zone: zone, listing: listing)
            for item in page.modifications {
                let name = item.recordID.recordName
                switch item.result {
                case .success(let record):
                    try await applier.incoming(record, index: &index)
                    if let refusal = applier.refused[item.recordID] {
                        report.warnings.append("\(item.recordID): \(refusal.message); the next pull fetches it again")
                        retry[name] = RetryList.Entry(why: refusal.message)
                    } else {
                        retry[name] = nil
                    }
                case .failure(let error):
                    // The token moves past it: keep it, to fetch by ID on the next pull, or,
                    // when its stored bytes are at fault, until the zone's changes name it.
                    let entry = RetryList.Entry(why: error.message, unreadableTag: item.unreadableChangeTag)
                    if retry[name] != entry {
                        let next = entry.unreadableTag == nil ? "the next pull fetches it again" : "a pull fetches it again once it changes on the store"
                        report.warnings.append("\(item.recordID): \(error.message); \(next)")
                    }
                    retry[name] = entry
                }
            }
            for deletion in page.deletions {
                try await applier.incomingDeletion(deletion.recordID, index: &index)
                retry[deletion.recordID.recordName] = nil
            }
            if !dryRun { try checkpoint?(.beforeBatchWrite(zone)) }
            // Outside a full fetch, a page's records land before its token: killed in between,
            // the next pull fetches from the old token, and a record this page created that is
            // deleted meanwhile is in neither end of that diff. Note their names until the
            // token is saved; the next pull then looks them up (simulation finding F7). A full
            // fetch needs no note: it asks about every record it did not see at its end.
            let noted = !refetch.isUnderWay && !page.modifications.isEmpty && !dryRun
            if noted { try ws.noteApplying(page.modifications.map(\.recordID.recordName), in: zone) }
            try await applier.finish(index: &index)
            try refetch.add(page.modifications.map(\.recordID.recordName))
            applier.report(into: &report, events: events)
            token = page.changeToken
            if !dryRun {
                // The journal only grows while pages come; the base is rewritten (if the journal
                // outgrew it) after the last page of an incremental pull, and once at the end of
                // a full fetch. Compacting on every page once the journal passed its threshold
                // rewrote the whole index every few pages: quadratic in a large pull.
                try index.save(compacting: !refetch.isUnderWay && feed.isFinished)
                // The page's changes to the list, appended: a line each, however long the list.
                try retry.save()
                try checkpoint?(.afterBatchBeforeZoneToken(zone))
                try ws.saveToken(token, at: tokenPath)
            }
            if noted { try ws.clearApplying(zone) }
        }
        try await checkPushedRecords(zone, workspace: ws, index: &index, retry: &retry, report: &report, events: events)
        let (seen, fullFetch) = try refetch.finishing()
        if fullFetch {
            // A full fetch lists every record: synced records it did not list are gone — unless
            // they arrived since the fetch's target (pushed from here meanwhile), so ask the
            // store about each before deleting it. A zone waiting to be uploaded again after
            // an encrypted-data reset keeps everything.
            var applier = PageApplier(engine: self, workspace: ws, zone: zone)
            if !ws.awaitsReupload(zone) {
                // Pending conflicts too, whose record may be new here (no tag, so not in the
                // scan's candidates, and a zone holding only such records fetches as fresh):
                // a conflict whose server copy the store has since deleted must learn it, or
                // settling it with the store's side would bring the deleted version back.
                var candidates = Set(try ws.conflicts(in: zone).filter { $0.server != nil && seen?.contains($0.recordID.recordName) != true }.map(\.recordID))
                if let seen {
                    let scan = try await ws.scan(zone: zone, base: baseLookup)
                    candidates.formUnion(scan.records.filter { $0.knownTag != nil && !seen.contains($0.recordID.recordName) }.map(\.recordID))
                }
                for result in try await store.fetchRecords(candidates.sorted(), desiredKeys: nil) {
                    switch result.result {
                    case .failure(.unknownItem): try await applier.incomingDeletion(result.recordID, index: &index)
                    case .success(let record): try await applier.incoming(record, index: &index)
                    case .failure: break
                    }
                }
            }
            try await applier.finish(index: &index)
            if !dryRun { try index.compactJournal() }
            applier.report(into: &report, events: events)
            try keepRefused(applier, in: &retry, report: &report)
            try refetch.end()
        }
        guard !dryRun else { return }
        try retry.compact()
        if fetchesAssets(of: zone) { try await fetchUnfetchedAssets(of: zone, workspace: ws) }
    }
}

extension SyncEngine {
    /// Looks up the records this workspace saved since its zone token, which the zone feed
    /// cannot report if someone deleted them meanwhile (created after the token and gone at
    /// the head: in neither end of the diff). What is gone is deleted here; what changed is applied.
    func checkPushedRecords(_ zone: ZoneID, workspace ws: Workspace, index: inout ZoneIndex, retry: inout RetryList, report: inout PullReport, events: @Sendable (SyncEvent) -> Void) async throws(RecSyncError) {
        // A dry run left the names of a page a killed pull was applying where they were.
        let applying = dryRun ? try ws.interruptedPageNames(zone) : []
        guard let names = try ws.pushedRecordNames(zone).map({ $0.union(applying) }) ?? (applying.isEmpty ? nil : applying) else { return }
        let ids = names.sorted().compactMap { try? RecordID(recordName: $0, zoneID: zone) }
        var applier = PageApplier(engine: self, workspace: ws, zone: zone)
        for result in try await store.fetchRecords(ids, desiredKeys: nil) {
            switch result.result {
            case .success(let record): try await applier.incoming(record, index: &index)
            case .failure(.unknownItem): try await applier.incomingDeletion(result.recordID, index: &index)
            case .failure: break
            }
        }
        try await applier.finish(index: &index)
        applier.report(into: &report, events: events)
        guard !dryRun else { return }
        try index.save()
        try keepRefused(applier, in: &retry, report: &report)
        try ws.clearPushed(zone)
    }

    /// Puts the versions an applier refused (an asset the store cannot deliver) on the zone's
    /// retry list, as a page's undecodable records are: reported now, fetched again by ID on
    /// every pull until a good version arrives.
    func keepRefused(_ applier: PageApplier, in retry: inout RetryList, report: inout PullReport) throws(RecSyncError) {
        guard !applier.refused.isEmpty, !dryRun else { return }
        for (id, refusal) in applier.refused.sorted(by: { $0.key < $1.key }) {
            report.warnings.append("\(id): \(refusal.message); the next pull fetches it again")
            retry[id.recordName] = RetryList.Entry(why: refusal.message)
        }
        try retry.save()
    }
}

extension SyncEngine {
    /// Runs `work` on each item, at most `workers` at once, in a task group (so cancelling
    /// the caller cancels the work under way). Once one fails, or the caller is cancelled, no
    /// further item is started; those under way finish. Returns each item's result in order,
    /// nil for an item never started.
    static func sideBySide<Item: Sendable, Output: Sendable>(_ items: [Item], workers: Int, _ work: @escaping @Sendable (Item) async throws(RecSyncError) -> Output) async -> [Result<Output, RecSyncError>?] {
        var results = [Result<Output, RecSyncError>?](repeating: nil, count: items.count)
        let run = { @Sendable (i: Int) async -> (Int, Result<Output, RecSyncError>) in
            do throws(RecSyncError) { return (i, .success(try await work(items[i]))) } catch { return (i, .failure(error)) }
        }
        await withTaskGroup(of: (Int, Result<Output, RecSyncError>).self) { group in
            var next = 0
            while next < min(max(1, workers), items.count) {
                group.addTask { [next] in await run(next) }
                next += 1
            }
            var stopped = false
            while let (i, result) = await group.next() {
                results[i] = result
                if case .failure = result { stopped = true }
                if Task.isCancelled { stopped = true }
                guard !stopped, next < items.count else { continue }
                group.addTask { [next] in await run(next) }
                next += 1
            }
        }
        return results
    }
}

/// The names a full fetch of a zone has delivered (`RefetchLog`): on disk, or for a dry run in
/// memory, starting from what is on disk.
struct FullFetchNames {
    let log: RefetchLog
    let writes: Bool
    private(set) var isUnderWay: Bool
    /// In memory: nil while the zone held no synced record when the fetch began.
    private var names: Set<String>?

    init(_ log: RefetchLog, writes: Bool) throws(RecSyncError) {
        self.log = log
        self.writes = writes
        isUnderWay = log.isUnderWay
        if !writes && isUnderWay { names = try log.finishing().names }
    }

    mutating func start(fresh: Bool) throws(RecSyncError) {
        if writes { try log.start(fresh: fresh) }
        isUnderWay = true
        names = fresh ? nil : []
    }

    mutating func add(_ delivered: [String]) throws(RecSyncError) {
        guard isUnderWay else { return }
        if writes { try log.add(delivered) } else { names?.formUnion(delivered) }
    }

    /// The names delivered, if a full fetch is under way; nil names for a fresh zone.
    func finishing() throws(RecSyncError) -> (names: Set<String>?, done: Bool) {
        if writes { return try log.finishing() }
        return isUnderWay ? (names, true) : (nil, false)
    }

    mutating func end() throws(RecSyncError) {
        if writes { try log.end() }
        isUnderWay = false
    }
}
