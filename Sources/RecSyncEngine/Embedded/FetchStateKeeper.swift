import RecSyncModel
import RecSyncStore

/// Where a fetch keeps what it must remember between runs: the scope and zone tokens, the
/// zones it must ask about, the records to fetch again and those to check by ID.
///
/// `RecordSyncEngine` runs the fetch protocol once, and asks a keeper at each step. An app's
/// keeper is ``StateKeeper``: the engine's ``RecordSyncEngine/State``, handed to the app in
/// `.stateUpdate` events. The file workspace keeps the same facts in its own files, one per
/// zone and scope, and is a client of the same fetch.
///
/// The engine calls the keeper in the order the protocol needs for crash safety: a note is
/// made before the data it protects is delivered, and a token moves only after the data it
/// covers was delivered and taken in.
protocol FetchStateKeeper: Sendable {
    /// What the client holds of a scope, for `planScopeFetch`.
    func holdings(of scope: DatabaseScope, engine: isolated RecordSyncEngine) async throws(RecSyncError) -> ScopeHoldings
    /// Where the scope was last fetched to.
    func token(for scope: DatabaseScope, engine: isolated RecordSyncEngine) async throws(RecSyncError) -> ServerChangeToken?
    /// Before the scope's zone changes are delivered: notes the zones about to be removed
    /// (until the scope token is saved), that zone tokens are about to move ahead of the scope
    /// token, and the changed zones this fetch leaves out.
    func scopeFetchStarting(
        _ scope: DatabaseScope, removing: [ZoneDeletion], fetching: [ZoneID], leavingOut: [ZoneID], engine: isolated RecordSyncEngine)
        async throws(RecSyncError)
    /// The client took in the removals: the zones' own state goes.
    func zonesRemoved(_ deletions: [ZoneDeletion], engine: isolated RecordSyncEngine) async throws(RecSyncError)
    /// Every zone of the scope was fetched (`failed` ones stopped early on their own): the
    /// scope token moves.
    func scopeFetched(_ scope: DatabaseScope, token: ServerChangeToken?, fetched: [ZoneID], failed: [ZoneID], engine: isolated RecordSyncEngine)
        async throws(RecSyncError)

    /// A zone's fetch begins: where it starts, and whether the zone is being read whole (no
    /// token, or a listing a stopped fetch began).
    func zoneFetchStarting(_ zone: ZoneID, engine: isolated RecordSyncEngine) async throws(RecSyncError) -> (token: ServerChangeToken?, listing: Bool)
    /// Records the store could not deliver before, to ask for by ID after the zone's pages;
    /// `all`: also those waiting for a change on the store (the zone is read whole).
    func retryCandidates(in zone: ZoneID, all: Bool, engine: isolated RecordSyncEngine) async throws(RecSyncError) -> [RecordID]
    /// The zone is about to be read whole, from the beginning; `expired`: its token was refused.
    func listingStarting(_ zone: ZoneID, expired: Bool, engine: isolated RecordSyncEngine) async throws(RecSyncError)
    /// A page's records are about to be delivered ahead of the token past them (outside a
    /// listing): noted, so that a record deleted before that token is saved is asked about.
    func pageArriving(_ records: [Record], in zone: ZoneID, engine: isolated RecordSyncEngine) async throws(RecSyncError)
    /// A page was delivered and taken in: the zone token moves to `token`; what was delivered
    /// leaves the retry list, what the store could not deliver joins it. `last`: the zone's
    /// last page.
    func pageTaken(
        in zone: ZoneID, token: ServerChangeToken?, delivered: Set<RecordID>, failures: [RecordSyncEngine.RecordFailure], last: Bool,
        engine: isolated RecordSyncEngine) async throws(RecSyncError)
    /// Records asked for again by ID were delivered (or are gone: `settled`), or still fail.
    func retried(in zone: ZoneID, settled: Set<RecordID>, failures: [RecordSyncEngine.RecordFailure], engine: isolated RecordSyncEngine)
        async throws(RecSyncError)
    /// Records the client saved (or took in from a page) since the zone's token, with their
    /// types: the fetch asks about those the zone's pages did not name.
    func savedSinceToken(in zone: ZoneID, engine: isolated RecordSyncEngine) async throws(RecSyncError) -> [RecordSyncEngine.State.SavedRecord]
    /// The saved records of the zone were asked about (and their deletions delivered).
    func savedChecked(in zone: ZoneID, engine: isolated RecordSyncEngine) async throws(RecSyncError)
}

/// A client of the engine inside this library that keeps its own state and handles its own
/// failures: the file workspace. Its delegate's errors reach the caller as they are, its
/// zones' pages may be handled side by side, and it decides which failures stop one zone only.
protocol EngineClient: RecordSyncEngineDelegate {
    /// Zones fetched at the same time.
    var zoneConcurrency: Int { get }
    /// Whether a zone's fetch that failed this way leaves the other zones to fetch.
    func zoneFailsAlone(_ error: RecSyncError) -> Bool
    /// The store operation that saves a zone (nil: the engine's own): the workspace creates a
    /// zone new here with `.save` and only one it uploads again after a reset with
    /// `.uploadAfterReset` (which an encrypting store takes for an encrypted zone).
    func operation(saving zone: RecordZone) -> ZoneOperation?
    /// The fields fetched (nil: all; empty: none, change tags only).
    var desiredKeys: [String]? { get }
}

extension EngineClient {
    var zoneConcurrency: Int { 1 }
    func zoneFailsAlone(_ error: RecSyncError) -> Bool { RecordSyncEngine.failsOneZone(error) }
    func operation(saving zone: RecordZone) -> ZoneOperation? { nil }
    var desiredKeys: [String]? { nil }
}

/// The app's keeper: the engine's `State`, delivered in a `.stateUpdate` after each change.
struct StateKeeper: FetchStateKeeper {
    func holdings(of scope: DatabaseScope, engine: isolated RecordSyncEngine) async -> ScopeHoldings {
        // Zones held with a token; zones this app created or wrote to since the scope token,
        // not fetched yet (gone before this fetch, they are in neither end of the feed); zones
        // a stopped fetch removed; zones with records the store could not deliver before.
        let state = engine.state
        var holdings = ScopeHoldings(
            held: state.knownZones.filter { engine.scopeOf($0) == scope }, interrupted: state.interruptedScopes.contains(scope))
        holdings.unconfirmed = (state.writtenZones ?? []).filter { engine.scopeOf($0) == scope && state.token(for: $0) == nil }
        holdings.removedAhead = (state.removedZones ?? []).filter { engine.scopeOf($0) == scope && state.token(for: $0) == nil }
        holdings.needingALook = Set(state.retryRecords.map(\.zoneID))
        holdings.pending = (state.unfetchedZones ?? []).filter { engine.scopeOf($0) == scope }
        return holdings
    }

    func token(for scope: DatabaseScope, engine: isolated RecordSyncEngine) async -> ServerChangeToken? {
        engine.state.token(for: scope)
    }

    func scopeFetchStarting(
        _ scope: DatabaseScope, removing: [ZoneDeletion], fetching: [ZoneID], leavingOut: [ZoneID], engine: isolated RecordSyncEngine
    ) async throws(RecSyncError) {
        guard !removing.isEmpty || !fetching.isEmpty || !leavingOut.isEmpty else { return }
        engine.setState { s in
            let gone = Set(removing.map(\.zoneID))
            var unfetched = (s.unfetchedZones ?? []).filter { !gone.contains($0) }
            for zone in leavingOut where !unfetched.contains(zone) { unfetched.append(zone) }
            s.unfetchedZones = unfetched.isEmpty ? nil : unfetched
            // Noted before the app drops them, their tokens kept until it did: stopped in
            // between, the next fetch reads the feed from the same scope token, which names
            // the removals again.
            for deletion in removing where !(s.removedZones ?? []).contains(deletion.zoneID) {
                s.removedZones = (s.removedZones ?? []) + [deletion.zoneID]
            }
            if !fetching.isEmpty, !s.interruptedScopes.contains(scope) { s.interruptedScopes.append(scope) }
        }
        try await engine.emit(.stateUpdate(engine.state))
    }

    func zonesRemoved(_ deletions: [ZoneDeletion], engine: isolated RecordSyncEngine) async throws(RecSyncError) {
        guard !deletions.isEmpty else { return }
        let user = engine.store.userRecordName
        engine.setState { s in
            for deletion in deletions {
                s.setToken(nil, for: deletion.zoneID)
                s.retryRecords.removeAll { $0.zoneID == deletion.zoneID }
                s.forgetSaved(in: deletion.zoneID)
                // A deleted or purged zone takes its unsent changes with it (sending them
                // could only fail); after a reset they are what must be uploaded again.
                if !deletion.keepsRecordsForUpload(by: user) {
                    s.pendingRecordZoneChanges.removeAll { $0.recordID.zoneID == deletion.zoneID }
                }
            }
        }
        try await engine.emit(.stateUpdate(engine.state))
    }

    func scopeFetched(_ scope: DatabaseScope, token: ServerChangeToken?, fetched: [ZoneID], failed: [ZoneID], engine: isolated RecordSyncEngine)
        async throws(RecSyncError)
    {
        engine.setState { s in
            s.setToken(token, for: scope)
            s.interruptedScopes.removeAll { $0 == scope }
            s.removedZones?.removeAll { engine.scopeOf($0) == scope }
            if s.removedZones?.isEmpty == true { s.removedZones = nil }
            // A failed zone stays to fetch: the scope token moves past its changes.
            var unfetched = (s.unfetchedZones ?? []).filter { !fetched.contains($0) || failed.contains($0) }
            for zone in failed where !unfetched.contains(zone) { unfetched.append(zone) }
            s.unfetchedZones = unfetched.isEmpty ? nil : unfetched
        }
        try await engine.emit(.stateUpdate(engine.state))
    }

    func zoneFetchStarting(_ zone: ZoneID, engine: isolated RecordSyncEngine) async -> (token: ServerChangeToken?, listing: Bool) {
        let token = engine.state.token(for: zone)
        return (token, token == nil)
    }

    func retryCandidates(in zone: ZoneID, all: Bool, engine: isolated RecordSyncEngine) async -> [RecordID] {
        engine.state.retryRecords.filter { $0.zoneID == zone }
    }

    func listingStarting(_ zone: ZoneID, expired: Bool, engine: isolated RecordSyncEngine) async throws(RecSyncError) {
        // Noted as a zone the app holds records of without a token: stopped before its first
        // token is saved, the next fetch asks whether the zone is still there (a fetch from no
        // database token names no removals), so the records the app took in go with it.
        let noted = (engine.state.writtenZones ?? []).contains(zone)
        engine.setState { s in
            s.setToken(nil, for: zone)
            s.noteWritten([zone])
        }
        if !noted { try await engine.emit(.stateUpdate(engine.state)) }
    }

    func pageArriving(_ records: [Record], in zone: ZoneID, engine: isolated RecordSyncEngine) async throws(RecSyncError) {
        let noted = Set((engine.state.savedSinceToken ?? []).map(\.recordID))
        let fresh = records.filter { !noted.contains($0.recordID) }
        guard !fresh.isEmpty else { return }
        engine.setState { $0.notePage(fresh) }
        try await engine.emit(.stateUpdate(engine.state))
    }

    func pageTaken(
        in zone: ZoneID, token: ServerChangeToken?, delivered: Set<RecordID>, failures: [RecordSyncEngine.RecordFailure], last: Bool,
        engine: isolated RecordSyncEngine
    ) async throws(RecSyncError) {
        engine.setState { s in
            s.setToken(token, for: zone)
            // Named by the page: a later deletion is a change from its token on.
            s.savedSinceToken?.removeAll { delivered.contains($0.recordID) }
            if s.savedSinceToken?.isEmpty == true { s.savedSinceToken = nil }
            s.retryRecords.removeAll { delivered.contains($0) }
            // A set for membership: a zone a hostile writer filled with unreadable entries
            // must not make each page quadratic.
            var listed = Set(s.retryRecords)
            for failure in failures where listed.insert(failure.recordID).inserted { s.retryRecords.append(failure.recordID) }
        }
        try await engine.emit(.stateUpdate(engine.state))
    }

    func retried(in zone: ZoneID, settled: Set<RecordID>, failures: [RecordSyncEngine.RecordFailure], engine: isolated RecordSyncEngine)
        async throws(RecSyncError)
    {
        guard !settled.isEmpty else { return }
        engine.setState { $0.retryRecords.removeAll { settled.contains($0) } }
        try await engine.emit(.stateUpdate(engine.state))
    }

    func savedSinceToken(in zone: ZoneID, engine: isolated RecordSyncEngine) async -> [RecordSyncEngine.State.SavedRecord] {
        (engine.state.savedSinceToken ?? []).filter { $0.recordID.zoneID == zone }
    }

    func savedChecked(in zone: ZoneID, engine: isolated RecordSyncEngine) async throws(RecSyncError) {
        engine.setState { $0.forgetSaved(in: zone) }
        try await engine.emit(.stateUpdate(engine.state))
    }
}
