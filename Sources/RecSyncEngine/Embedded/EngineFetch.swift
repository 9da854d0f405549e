import RecSyncModel
import RecSyncStore

extension RecordSyncEngine {
    /// Fetches what changed on the store since the last fetch and delivers it as events
    /// (DESIGN §6, as the file workspace's pull does): per scope, database changes; then each
    /// changed zone page by page, each page before the zone token that covers it; every zone
    /// before the scope token. Stopped anywhere (a throw, a kill), the next fetch delivers at
    /// most one page again.
    ///
    /// `options` narrows the zones whose record changes are fetched and orders them; zone
    /// changes of the database are always fetched whole (see ``FetchChangesOptions``).
    public func fetchChanges(_ options: FetchChangesOptions = FetchChangesOptions()) async throws(RecSyncError) {
        try await fetchChanges(options, reason: .manual)
    }

    func fetchChanges(_ options: FetchChangesOptions, reason: SyncReason) async throws(RecSyncError) {
        try await exclusively { () async throws(RecSyncError) in
            try await settleAccount()
            let context = FetchChangesContext(reason: reason, options: options)
            try await emit(.willFetchChanges(context))
            for scope in options.databaseScopes {
                try scope.requireSupported(for: "fetching changes")
                try checkNotCancelled("the fetch")
                try await fetchScope(scope, options: options)
            }
            try await emit(.didFetchChanges(context))
        }
    }

    /// `fetchChanges` of every zone of these databases.
    public func fetchChanges(scopes: [DatabaseScope]) async throws(RecSyncError) {
        try await fetchChanges(FetchChangesOptions(databaseScopes: scopes))
    }

    private func fetchScope(_ scope: DatabaseScope, options: FetchChangesOptions) async throws(RecSyncError) {
        let holdings = try await keeper.holdings(of: scope, engine: self)
        let since = try await keeper.token(for: scope, engine: self)
        let plan = try await retryingTransient("the fetch") { () async throws(RecSyncError) in
            try await store.planScopeFetch(scope, since: since, holdings: holdings)
        }
        let (token, deleted, changed) = (plan.token, plan.deletions, plan.zones)
        // The zones in the options' scope, the prioritized ones first; the others are kept for
        // a later fetch.
        let covered = changed.filter(options.scope.contains)
        let zones = options.prioritizedZoneIDs.filter(covered.contains) + covered.filter { !options.prioritizedZoneIDs.contains($0) }
        let left = changed.filter { !options.scope.contains($0) }

        try await keeper.scopeFetchStarting(scope, removing: deleted, fetching: zones, leavingOut: left, engine: self)
        try await emit(
            .fetchedDatabaseChanges(
                FetchedDatabaseChanges(
                    scope: scope, modifications: changed, deletions: deleted, warnings: plan.warnings, tokenExpired: plan.tokenExpired)))
        try await keeper.zonesRemoved(deleted, engine: self)
        // Zones side by side (up to `zoneConcurrency`); a zone whose fetch failed on its own is
        // reported for that zone, and the others go on. Any other failure starts no further
        // zone; those under way finish, and the first failure is thrown.
        let results = await SyncEngine.sideBySide(zones, workers: zoneConcurrency) {
            [self] (zone: ZoneID) async throws(RecSyncError) -> RecSyncError? in
            try await fetchZoneUnlessCancelled(zone)
        }
        var failed: [ZoneID] = []
        for (zone, result) in zip(zones, results) {
            switch result {
            case .success(let error)?: if error != nil { failed.append(zone) }
            case .failure(let error)?: throw error
            case nil: break
            }
        }
        try await keeper.scopeFetched(scope, token: token, fetched: zones, failed: failed, engine: self)
    }

    private func fetchZoneUnlessCancelled(_ zone: ZoneID) async throws(RecSyncError) -> RecSyncError? {
        try checkNotCancelled("the fetch")
        return try await fetchZone(zone)
    }

    /// Fetches one zone's changes; returns the error that stopped this zone alone (the rest of
    /// the fetch goes on), after reporting it in `.didFetchRecordZoneChanges`.
    private func fetchZone(_ zone: ZoneID) async throws(RecSyncError) -> RecSyncError? {
        try await emit(.willFetchRecordZoneChanges(zone))
        do {
            let (token, resumingListing) = try await keeper.zoneFetchStarting(zone, engine: self)
            // Reading the whole zone (no token, an expired one, or a listing a stopped fetch
            // began), not its changes.
            var listing = token == nil || resumingListing
            // Asked again after the zone's changes: those that failed before this fetch.
            var retrying = try await keeper.retryCandidates(in: zone, all: listing, engine: self)
            if token == nil { try await startListing(zone, expired: false) }
            // Records the pages named, so the check of this app's own saves skips them.
            var mentioned = Set<RecordID>()
            var feed = ZoneChangeFeed(store: store, zone: zone, since: token, desiredKeys: client?.desiredKeys)
            while true {
                // Between pages: the last one and the state covering it are delivered.
                try checkNotCancelled("the fetch")
                let limit = listing ? max(options.fetchPageSize, options.listingPageSize ?? 0) : options.fetchPageSize
                guard let step = try await retryingTransient("the fetch", { () async throws(RecSyncError) in try await feed.next(limit: limit) })
                else { break }
                guard case .page(let page) = step else {
                    listing = true
                    try await startListing(zone, expired: true)
                    retrying = Array(Set(retrying).union(try await keeper.retryCandidates(in: zone, all: true, engine: self)))
                    continue
                }
                var records: [Record] = []
                var failures: [RecordFailure] = []
                for item in page.modifications {
                    switch item.result {
                    case .success(let record): records.append(record)
                    case .failure(let error):
                        failures.append(RecordFailure(recordID: item.recordID, error: error, unreadableTag: item.unreadableChangeTag))
                    }
                }
                // Taken in by the app but stopped before the token past them is saved, a page's
                // new records could be deleted meanwhile, and the changes from the old token
                // would name them at neither end: noted first, they are asked about at the end
                // of the zone's next fetch. (A listing is read again from the same commit.)
                if !listing, !records.isEmpty { try await keeper.pageArriving(records, in: zone, engine: self) }
                try await emit(
                    .fetchedRecordZoneChanges(
                        FetchedRecordZoneChanges(
                            zoneID: zone, modifications: records, deletions: page.deletions, undeliverable: failures,
                            warnings: page.warnings, moreComing: page.moreComing, recordCountEstimate: page.recordCountEstimate)))
                let delivered = Set(records.map(\.recordID)).union(page.deletions.map(\.recordID))
                mentioned.formUnion(delivered)
                mentioned.formUnion(failures.map(\.recordID))
                try await keeper.pageTaken(
                    in: zone, token: page.changeToken, delivered: delivered, failures: failures, last: !page.moreComing, engine: self)
            }
            // Those the zone's changes delivered or listed again meanwhile are settled.
            let stillListed = Set(try await keeper.retryCandidates(in: zone, all: true, engine: self))
            try await retryUndelivered(retrying.filter(stillListed.contains).sorted(), in: zone)
            try await checkSavedRecords(in: zone, mentioned: mentioned)
        } catch let error where error.reason == .zoneNotFound(zone) || error.reason == .userDeletedZone(zone) {
            // Gone meanwhile: the next fetch's database changes say so.
            try await emit(.didFetchRecordZoneChanges(zone, error: error))
            return nil
        } catch let error where failsOneZone(error) {
            try await emit(.didFetchRecordZoneChanges(zone, error: error))
            return error
        }
        try await emit(.didFetchRecordZoneChanges(zone, error: nil))
        return nil
    }

    /// Whether a zone's fetch that failed this way leaves the other zones to fetch: not when
    /// the store cannot be reached (after the retries), the run was cancelled, the app's
    /// delegate failed, or the user or the local disk is the problem.
    func failsOneZone(_ error: RecSyncError) -> Bool {
        client?.zoneFailsAlone(error) ?? Self.failsOneZone(error)
    }

    static func failsOneZone(_ error: RecSyncError) -> Bool {
        if isTransient(error) { return false }
        switch error.reason {
        case .operationCancelled, .delegateFailed, .notAuthenticated, .fileSystem, .workspaceLocked: return false
        default: return true
        }
    }

    /// Announces a listing of the whole zone, after the keeper noted it.
    private func startListing(_ zone: ZoneID, expired: Bool) async throws(RecSyncError) {
        try await keeper.listingStarting(zone, expired: expired, engine: self)
        try await emit(.fetchingWholeZone(zone))
    }

    /// Asks about the records this app saved in the zone since its token that the zone's
    /// changes did not name: one created after the token and deleted by someone else since is
    /// in neither end of the changes, and is delivered as a deletion here. Then forgets them:
    /// the zone's token is past their saves (a fetch never overlaps a send).
    private func checkSavedRecords(in zone: ZoneID, mentioned: Set<RecordID>) async throws(RecSyncError) {
        let saved = try await keeper.savedSinceToken(in: zone, engine: self)
        guard !saved.isEmpty else { return }
        let unnamed = saved.filter { !mentioned.contains($0.recordID) }
        if !unnamed.isEmpty {
            let ids = unnamed.map(\.recordID)
            let found = try await retryingTransient("the fetch") { () async throws(RecSyncError) in try await store.fetchRecords(ids, desiredKeys: [])
            }
            let gone = Set(
                found.compactMap { item -> RecordID? in
                    if case .failure(let error) = item.result, error.kind == .unknownItem { item.recordID } else { nil }
                })
            let deletions = unnamed.filter { gone.contains($0.recordID) }.map {
                RecordDeletionEvent(recordID: $0.recordID, recordType: $0.recordType)
            }
            if !deletions.isEmpty {
                try await emit(
                    .fetchedRecordZoneChanges(
                        FetchedRecordZoneChanges(zoneID: zone, modifications: [], deletions: deletions, undeliverable: [], warnings: [])))
            }
        }
        try await keeper.savedChecked(in: zone, engine: self)
    }

    /// Asks again for records of the zone the store could not deliver before.
    private func retryUndelivered(_ ids: [RecordID], in zone: ZoneID) async throws(RecSyncError) {
        guard !ids.isEmpty else { return }
        var records: [Record] = []
        var failures: [RecordFailure] = []
        var gone: [RecordID] = []
        let fetched = try await retryingTransient("the fetch") { () async throws(RecSyncError) in try await store.fetchRecords(ids) }
        for item in fetched {
            switch item.result {
            case .success(let record): records.append(record)
            case .failure(let error) where error.kind == .unknownItem: gone.append(item.recordID)
            case .failure(let error): failures.append(RecordFailure(recordID: item.recordID, error: error, unreadableTag: item.unreadableChangeTag))
            }
        }
        if !records.isEmpty || !failures.isEmpty {
            try await emit(
                .fetchedRecordZoneChanges(
                    FetchedRecordZoneChanges(
                        zoneID: zone, modifications: records, deletions: [], undeliverable: failures, warnings: [])))
        }
        // A record deleted since it failed: its deletion was (or will be) in the zone's changes.
        try await keeper.retried(in: zone, settled: Set(records.map(\.recordID)).union(gone), failures: failures, engine: self)
    }

    /// Which scope a zone belongs to for this user.
    func scopeOf(_ zone: ZoneID) -> DatabaseScope {
        zone.ownerName == store.userRecordName ? .private : .shared
    }
}
