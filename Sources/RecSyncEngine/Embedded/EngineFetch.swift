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
        // Zones held with a token; zones this app created or wrote to since the scope token,
        // not fetched yet (gone before this fetch, they are in neither end of the feed); zones
        // a stopped fetch removed; zones with records the store could not deliver before.
        var holdings = ScopeHoldings(held: state.knownZones.filter { scopeOf($0) == scope }, interrupted: state.interruptedScopes.contains(scope))
        holdings.unconfirmed = (state.writtenZones ?? []).filter { scopeOf($0) == scope && state.token(for: $0) == nil }
        holdings.removedAhead = (state.removedZones ?? []).filter { scopeOf($0) == scope && state.token(for: $0) == nil }
        holdings.needingALook = Set(state.retryRecords.map(\.zoneID))
        holdings.pending = (state.unfetchedZones ?? []).filter { scopeOf($0) == scope }
        let since = state.token(for: scope)
        let plan = try await retryingTransient("the fetch") { () async throws(RecSyncError) in
            try await store.planScopeFetch(scope, since: since, holdings: holdings)
        }
        let (token, warnings, deleted, changed) = (plan.token, plan.warnings, plan.deletions, plan.zones)
        // The zones in the options' scope, the prioritized ones first; the others are kept for
        // a later fetch.
        let covered = changed.filter(options.scope.contains)
        let zones = options.prioritizedZoneIDs.filter(covered.contains) + covered.filter { !options.prioritizedZoneIDs.contains($0) }
        let left = changed.filter { !options.scope.contains($0) }

        try await emit(.fetchedDatabaseChanges(FetchedDatabaseChanges(scope: scope, modifications: changed, deletions: deleted, warnings: warnings)))
        if !deleted.isEmpty || !changed.isEmpty {
            setState { s in
                let gone = Set(deleted.map(\.zoneID))
                var unfetched = (s.unfetchedZones ?? []).filter { !gone.contains($0) }
                for zone in left where !unfetched.contains(zone) { unfetched.append(zone) }
                s.unfetchedZones = unfetched.isEmpty ? nil : unfetched
                for deletion in deleted {
                    if !(s.removedZones ?? []).contains(deletion.zoneID) { s.removedZones = (s.removedZones ?? []) + [deletion.zoneID] }
                    s.setToken(nil, for: deletion.zoneID)
                    s.retryRecords.removeAll { $0.zoneID == deletion.zoneID }
                    s.forgetSaved(in: deletion.zoneID)
                    // A deleted or purged zone takes its unsent changes with it (sending them
                    // could only fail); after a reset they are what must be uploaded again.
                    if !deletion.keepsRecordsForUpload(by: store.userRecordName) {
                        s.pendingRecordZoneChanges.removeAll { $0.recordID.zoneID == deletion.zoneID }
                    }
                }
                if !zones.isEmpty, !s.interruptedScopes.contains(scope) { s.interruptedScopes.append(scope) }
            }
            try await emit(.stateUpdate(state))
        }
        // A zone whose fetch failed on its own is reported for that zone; the others go on.
        var failed: [ZoneID] = []
        for zone in zones {
            try checkNotCancelled("the fetch")
            if try await fetchZone(zone) != nil { failed.append(zone) }
        }
        setState { s in
            s.setToken(token, for: scope)
            s.interruptedScopes.removeAll { $0 == scope }
            s.removedZones?.removeAll { scopeOf($0) == scope }
            if s.removedZones?.isEmpty == true { s.removedZones = nil }
            // A failed zone stays to fetch: the scope token moves past its changes.
            var unfetched = (s.unfetchedZones ?? []).filter { !zones.contains($0) || failed.contains($0) }
            for zone in failed where !unfetched.contains(zone) { unfetched.append(zone) }
            s.unfetchedZones = unfetched.isEmpty ? nil : unfetched
        }
        try await emit(.stateUpdate(state))
    }

    /// Fetches one zone's changes; returns the error that stopped this zone alone (the rest of
    /// the fetch goes on), after reporting it in `.didFetchRecordZoneChanges`.
    private func fetchZone(_ zone: ZoneID) async throws(RecSyncError) -> RecSyncError? {
        try await emit(.willFetchRecordZoneChanges(zone))
        let token = state.token(for: zone)
        // Asked again after the zone's changes: those that failed before this fetch.
        let retrying = state.retryRecords.filter { $0.zoneID == zone }
        if token == nil { try await startListing(zone) }
        // Records the pages named, so the check of this app's own saves skips them.
        var mentioned = Set<RecordID>()
        // Reading the whole zone (no token, or an expired one), not its changes.
        var listing = token == nil
        do {
            var feed = ZoneChangeFeed(store: store, zone: zone, since: token)
            while true {
                // Between pages: the last one and the state covering it are delivered.
                try checkNotCancelled("the fetch")
                let limit = options.fetchPageSize
                guard let step = try await retryingTransient("the fetch", { () async throws(RecSyncError) in try await feed.next(limit: limit) }) else { break }
                guard case .page(let page) = step else {
                    listing = true
                    setState { $0.setToken(nil, for: zone) }
                    try await startListing(zone)
                    continue
                }
                var records: [Record] = []
                var failures: [RecordFailure] = []
                for item in page.modifications {
                    switch item.result {
                    case .success(let record): records.append(record)
                    case .failure(let error): failures.append(RecordFailure(recordID: item.recordID, error: error))
                    }
                }
                if !listing {
                    // Taken in by the app but stopped before the token past them is saved, a
                    // page's new records could be deleted meanwhile, and the changes from the
                    // old token would name them at neither end: noted first, they are asked
                    // about at the end of the zone's next fetch. (A listing is read again from
                    // the same commit instead.)
                    let noted = Set((state.savedSinceToken ?? []).map(\.recordID))
                    let fresh = records.filter { !noted.contains($0.recordID) }
                    if !fresh.isEmpty {
                        setState { $0.notePage(fresh) }
                        try await emit(.stateUpdate(state))
                    }
                }
                try await emit(.fetchedRecordZoneChanges(FetchedRecordZoneChanges(
                    zoneID: zone, modifications: records, deletions: page.deletions, undeliverable: failures, warnings: page.warnings)))
                let delivered = Set(records.map(\.recordID)).union(page.deletions.map(\.recordID))
                mentioned.formUnion(delivered)
                mentioned.formUnion(failures.map(\.recordID))
                setState { s in
                    s.setToken(page.changeToken, for: zone)
                    // Named by the page: a later deletion is a change from its token on.
                    s.savedSinceToken?.removeAll { delivered.contains($0.recordID) }
                    if s.savedSinceToken?.isEmpty == true { s.savedSinceToken = nil }
                    s.retryRecords.removeAll { delivered.contains($0) }
                    // A set for membership: a zone a hostile writer filled with unreadable
                    // entries must not make each page quadratic.
                    var listed = Set(s.retryRecords)
                    for failure in failures where listed.insert(failure.recordID).inserted { s.retryRecords.append(failure.recordID) }
                }
                try await emit(.stateUpdate(state))
            }
            try await retryUndelivered(retrying, in: zone)
            try await checkSavedRecords(in: zone, mentioned: mentioned)
        } catch .zoneNotFound(let z) where z == zone {
            // Gone meanwhile: the next fetch's database changes say so.
            try await emit(.didFetchRecordZoneChanges(zone, error: .zoneNotFound(z)))
            return nil
        } catch .userDeletedZone(let z) where z == zone {
            try await emit(.didFetchRecordZoneChanges(zone, error: .userDeletedZone(z)))
            return nil
        } catch let error where Self.failsOneZone(error) {
            try await emit(.didFetchRecordZoneChanges(zone, error: error))
            return error
        }
        try await emit(.didFetchRecordZoneChanges(zone, error: nil))
        return nil
    }

    /// Whether a zone's fetch that failed this way leaves the other zones to fetch: not when
    /// the store cannot be reached (after the retries), the run was cancelled, the app's
    /// delegate failed, or the user or the local disk is the problem.
    static func failsOneZone(_ error: RecSyncError) -> Bool {
        if isTransient(error) { return false }
        switch error {
        case .operationCancelled, .delegateFailed, .notAuthenticated, .fileSystem, .workspaceLocked: return false
        default: return true
        }
    }

    /// Announces a listing of the whole zone, after noting the zone as one the app holds
    /// records of without a token: stopped before its first token is saved, the next fetch
    /// asks whether the zone is still there (a fetch from no database token names no
    /// removals), so the records the app took in go with it.
    private func startListing(_ zone: ZoneID) async throws(RecSyncError) {
        if !(state.writtenZones ?? []).contains(zone) {
            setState { $0.noteWritten([zone]) }
            try await emit(.stateUpdate(state))
        }
        try await emit(.fetchingWholeZone(zone))
    }

    /// Asks about the records this app saved in the zone since its token that the zone's
    /// changes did not name: one created after the token and deleted by someone else since is
    /// in neither end of the changes, and is delivered as a deletion here. Then forgets them:
    /// the zone's token is past their saves (a fetch never overlaps a send).
    private func checkSavedRecords(in zone: ZoneID, mentioned: Set<RecordID>) async throws(RecSyncError) {
        let saved = (state.savedSinceToken ?? []).filter { $0.recordID.zoneID == zone }
        guard !saved.isEmpty else { return }
        let unnamed = saved.filter { !mentioned.contains($0.recordID) }
        if !unnamed.isEmpty {
            let ids = unnamed.map(\.recordID)
            let found = try await retryingTransient("the fetch") { () async throws(RecSyncError) in try await store.fetchRecords(ids, desiredKeys: []) }
            let gone = Set(found.compactMap { item -> RecordID? in
                if case .failure(.unknownItem) = item.result { item.recordID } else { nil }
            })
            let deletions = unnamed.filter { gone.contains($0.recordID) }.map { RecordDeletionEvent(recordID: $0.recordID, recordType: $0.recordType) }
            if !deletions.isEmpty {
                try await emit(.fetchedRecordZoneChanges(FetchedRecordZoneChanges(zoneID: zone, modifications: [], deletions: deletions, undeliverable: [], warnings: [])))
            }
        }
        setState { $0.forgetSaved(in: zone) }
        try await emit(.stateUpdate(state))
    }

    /// Asks again for records of the zone the store could not deliver before.
    private func retryUndelivered(_ candidates: [RecordID], in zone: ZoneID) async throws(RecSyncError) {
        // Those the zone's changes delivered or listed again meanwhile are settled.
        let stillListed = Set(state.retryRecords)
        let ids = candidates.filter(stillListed.contains)
        guard !ids.isEmpty else { return }
        var records: [Record] = []
        var failures: [RecordFailure] = []
        var gone: [RecordID] = []
        let fetched = try await retryingTransient("the fetch") { () async throws(RecSyncError) in try await store.fetchRecords(ids) }
        for item in fetched {
            switch item.result {
            case .success(let record): records.append(record)
            case .failure(.unknownItem): gone.append(item.recordID)
            case .failure(let error): failures.append(RecordFailure(recordID: item.recordID, error: error))
            }
        }
        if !records.isEmpty || !failures.isEmpty {
            try await emit(.fetchedRecordZoneChanges(FetchedRecordZoneChanges(zoneID: zone, modifications: records, deletions: [], undeliverable: failures, warnings: [])))
        }
        // A record deleted since it failed: its deletion was (or will be) in the zone's changes.
        let settled = Set(records.map(\.recordID)).union(gone)
        guard !settled.isEmpty else { return }
        setState { $0.retryRecords.removeAll { settled.contains($0) } }
        try await emit(.stateUpdate(state))
    }

    /// Which scope a zone belongs to for this user.
    func scopeOf(_ zone: ZoneID) -> DatabaseScope {
        zone.ownerName == store.userRecordName ? .private : .shared
    }
}
