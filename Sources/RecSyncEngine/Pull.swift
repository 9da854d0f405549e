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
    /// A partial workspace (`Workspace.isPartial`) fetches only the zones it tracks.
    public func pull(events: @escaping @Sendable (SyncEvent) -> Void = { _ in }) async throws(RecSyncError) -> PullReport {
        try await pull(fromLastLook: false, events: events)
    }

    /// `fromLastLook`: the pull reads the store as it was at its last look (see
    /// `RemoteStore.beginOperation`), for a clone, whose store looked when it was opened a
    /// moment before: over ssh that is one connection, and one key exchange, fewer.
    func pull(fromLastLook: Bool, events: @escaping @Sendable (SyncEvent) -> Void) async throws(RecSyncError) -> PullReport {
        store.prepareForBulkRead()
        if !fromLastLook { events(.askingStore) }
        return try await workspace.withLock(purpose: "pull") { () async throws(RecSyncError) -> PullReport in
            try await inOneOperation(fromLastLook: fromLastLook) { () async throws(RecSyncError) -> PullReport in
                let report = try await pullLocked(events: events)
                try workspace.recordContact(at: StoreActor.systemClock())
                return report
            }
        }
    }

    func pullLocked(events: @escaping @Sendable (SyncEvent) -> Void) async throws(RecSyncError) -> PullReport {
        let keptAside = dryRun ? [] : try workspace.removeStaleTemporaryFiles()
        let ws = try checkStore()
        // Sidecars of a push that landed but was killed before it wrote them: adopted first,
        // or this pull would take that push's own records for conflicts.
        try await settlePendingPush(workspace: ws)
        var report = PullReport()
        report.lostAndFound += keptAside.map(ws.relative)
        // The engine runs the fetch; the workspace keeps its state and takes in its pages.
        let client = WorkspaceFetchClient(sync: self, workspace: ws, events: events)
        var options = RecordSyncEngine.Options.manual
        options.fetchPageSize = pageSize
        options.listingPageSize = fullFetchPageSize
        options.retries = .never
        let engine = RecordSyncEngine(store: store, client: client, keeper: client, options: options)
        // A partial workspace fetches the record changes of its zones only; the zone lists
        // are still read whole, so a zone it holds that goes away is never missed.
        let scope = try ws.trackedZoneIDs().map(RecordSyncEngine.ZoneScope.zoneIDs) ?? .all
        try await engine.fetchChanges(RecordSyncEngine.FetchChangesOptions(scope: scope))
        // The pages' journals kept until their files are on disk (a pull that fails leaves
        // them open, for the next command to finish first).
        if !dryRun { try ws.closePageJournals() }
        report.merge(client.report)
        // A conflict whose two sides are the same (the store moved to what the file holds)
        // resolves itself: nothing to choose.
        let same = Set(dryRun ? [] : try settleIdenticalConflictsLocked())
        report.conflicts.removeAll { same.contains($0) }
        return report
    }

    /// Applies a zone deletion: work not yet pushed goes to lost+found, then the directory goes.
    /// After an encrypted-data reset of a zone of this user's the data stays and is uploaded
    /// again on the next push; a reset of a zone shared with this user is a removal.
    func removeZone(_ deletion: ZoneDeletion, workspace ws: Workspace, report: inout PullReport, events: @Sendable (SyncEvent) -> Void)
        async throws(RecSyncError)
    {
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
        } else if try ws.zoneDirectoryIsLink(zone) {
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

}

extension SyncEngine {
    /// Runs `work` on each item, at most `workers` at once, in a task group (so cancelling
    /// the caller cancels the work under way). Once one fails, or the caller is cancelled, no
    /// further item is started; those under way finish. Returns each item's result in order,
    /// nil for an item never started.
    static func sideBySide<Item: Sendable, Output: Sendable>(
        _ items: [Item], workers: Int, _ work: @escaping @Sendable (Item) async throws(RecSyncError) -> Output
    ) async -> [Result<Output, RecSyncError>?] {
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
        isUnderWay = try log.isUnderWay
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
