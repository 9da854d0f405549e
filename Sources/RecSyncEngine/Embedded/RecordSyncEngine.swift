import RecSyncModel
import RecSyncStore

/// Keeps an app's own records in sync with a store: CloudKit's `CKSyncEngine`, for Swift
/// programs that hold their data themselves (a database, memory) instead of in record files.
///
/// The app creates the engine with a `RemoteStore`, the ``State`` it saved last time and a
/// delegate; it tells the engine what it changed (``add(pendingRecordZoneChanges:)``), and calls
/// ``sendChanges(_:)`` and ``fetchChanges(_:)``. The engine delivers what happened as
/// ``Event``s, in order, to the delegate, and asks the delegate for the records to send.
/// Fetches and sends run one at a time; adding pending changes meanwhile is safe (a change
/// added while its record is being sent is kept for the next send).
///
/// The file workspace (`SyncEngine`) is a client of this engine too: its pull is a fetch and
/// its push a send (see the `RecSyncEngine` documentation article).
public actor RecordSyncEngine {
    /// Tuning; the defaults suit most apps.
    public struct Options: Sendable, Hashable {
        /// Records asked of the store per page when fetching.
        public var fetchPageSize = 400
        /// Pending record changes sent per request (and asked of the delegate at once).
        public var sendBatchSize = 200
        /// With true, a zone in which any change of a batch fails lands none of them
        /// (the others come back as `batchRequestFailed` and stay pending).
        public var atomicByZone = false
        /// How often a store call that failed for a passing reason (the network down or
        /// dropped, the store busy) is tried again, and how long the engine pauses between
        /// tries (doubling, with jitter). A fetch or send that still fails throws; nothing it
        /// left pending is lost. `.never` turns the retries off.
        public var retries = RetryPolicy(retries: 4, backoff: Backoff(initial: 0.5, maximum: 8))
        /// Sync without being asked (CloudKit's `automaticallySync`): the engine fetches when
        /// it is created and whenever the store signals a change (inotify on a local git store,
        /// polling on a network one; a memory store gives no signal), and sends the pending
        /// changes ``automaticSendDelay`` seconds after the last one was added. Such runs say
        /// `.scheduled` in their context; a failure of one is kept in
        /// ``RecordSyncEngine/automaticSyncError``. Off (``manual``), the app calls
        /// ``RecordSyncEngine/fetchChanges(_:)`` and ``RecordSyncEngine/sendChanges(_:)``
        /// itself, as tests do.
        public var automaticallySync = true
        /// Seconds between the last change added and the automatic send. Changes added
        /// without such a pause still go at least every five of these.
        public var automaticSendDelay: Double = 1
        /// Records asked of the store per page while a zone is read whole (its first fetch, or
        /// after its token expired); nil: ``fetchPageSize``. Larger pages make a first fetch
        /// cheaper for an app that saves each page in one transaction.
        public var listingPageSize: Int?
        /// Zones whose record changes are fetched at the same time. Their events still reach
        /// the delegate one at a time; the fetching of one zone overlaps the handling of
        /// another's pages.
        public var zoneFetchConcurrency = 1

        public init() {}

        /// The defaults with automatic sync off: nothing runs unless the app asks.
        public static var manual: Options {
            var options = Options()
            options.automaticallySync = false
            return options
        }
    }

    public nonisolated let store: any RemoteStore
    public let options: Options
    /// Where automatic sync runs (see `init(store:state:delegate:options:executorPreference:)`).
    nonisolated let executorPreference: (any TaskExecutor)?
    private weak var delegate: (any RecordSyncEngineDelegate)?
    /// The current state (what the last `.stateUpdate` carried).
    public private(set) var state: State
    /// A number, unique for the engine's life, given to a pending change each time the app
    /// adds it, so a send removes only the changes it actually sent (not one added again while
    /// it ran). Entries go with their changes, so this stays as large as the pending list.
    private var generations: [PendingRecordZoneChange: Int] = [:]
    private var nextGeneration = 1
    private var busy = false
    /// Moved on by `cancelOperations()`; a run called before it moved stops at its next page
    /// or batch.
    private var cancellations = 0
    /// `cancellations` as it was when the running fetch or send was called.
    private var runCancellations = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []
    /// The sign-in or switch to deliver before anything else; nil once delivered.
    private var accountChange: AccountChange?
    /// Automatic sync: whether its fetches were started, the pause before a send is tried
    /// again, and the last scheduled run's failure.
    var automaticSyncStarted = false
    /// Moved on each time the app sets the untracked-changes mark, so a send clears only the
    /// mark it saw.
    var untrackedMarks = 0
    /// When the oldest change not yet covered by an automatic send asked for one, when that
    /// send is due, and whether a task waits for it.
    var firstUnsentRequest: ContinuousClock.Instant?
    var sendDue: ContinuousClock.Instant?
    var sendWaiting = false
    var automaticBackoff = Backoff(initial: 1, maximum: 60)
    /// The pause after a scheduled fetch failed, before the engine looks again.
    var automaticFetchBackoff = Backoff(initial: 1, maximum: 60)
    /// Why the last automatic fetch or send failed; nil after one succeeds (or with automatic
    /// sync off). Its changes stay pending; the engine tries again on the next change or signal,
    /// or after a growing pause when the store could not be reached or was busy.
    public internal(set) var automaticSyncError: RecSyncError?
    /// The send under way: the pending changes it may send, and those it tried.
    struct SendRun {
        var candidates: Set<PendingRecordZoneChange>
        var tried: Set<PendingRecordZoneChange> = []
    }
    var currentSend: SendRun?
    /// The engines whose delegate the current task (or the task it descends from) is in.
    @TaskLocal static var handling: Set<ObjectIdentifier> = []
    /// One event at a time: an `add` from another task waits for the event being handled, so
    /// the app never saves an older `.stateUpdate` after a newer one.
    private var delivering = false
    private var waitingToDeliver: [CheckedContinuation<Void, Never>] = []
    /// Where a fetch keeps its state: the `State` of `.stateUpdate` events, or a client's own.
    let keeper: any FetchStateKeeper
    /// The file workspace, when it is the client (see `init(store:client:options:)`).
    let client: (any EngineClient)?
    var zoneConcurrency: Int { client?.zoneConcurrency ?? options.zoneFetchConcurrency }

    /// Creates the engine. A state that was never used (`State()`) is signed in, and one made
    /// with another store or user is switched: the engine delivers `.accountChange` before
    /// anything else it delivers (see ``AccountChange``).
    ///
    /// - Parameters:
    ///   - store: The store to sync with, opened as the app's user.
    ///   - state: What the app saved from the last `.stateUpdate`, or `State()`.
    ///   - delegate: The app's side; held weakly, as `CKSyncEngine` holds its delegate.
    ///   - options: Page and batch sizes, retries.
    ///   - executorPreference: The executor automatic sync's fetches and sends prefer: nil
    ///     for Swift's shared pool. That pool has one thread per core, so an app whose own
    ///     tasks block it (synchronous database or file work, waiting for a process) holds up
    ///     automatic sync for as long; an executor with threads of its own keeps it going. A
    ///     delegate without an actor of its own is called there too; one isolated to an actor
    ///     (the main actor, say) runs on that actor. Fetches and sends the app calls run where
    ///     the app calls them.
    public init(
        store: any RemoteStore, state: State, delegate: any RecordSyncEngineDelegate, options: Options = Options(),
        executorPreference: (any TaskExecutor)? = nil
    ) throws(RecSyncError) {
        guard options.fetchPageSize > 0, options.sendBatchSize > 0, options.zoneFetchConcurrency > 0 else {
            throw .invalidArguments(
                """
                fetchPageSize, sendBatchSize and zoneFetchConcurrency must be at least 1 (got\
                 \(options.fetchPageSize), \(options.sendBatchSize), \(options.zoneFetchConcurrency))
                """
            )
        }
        self.store = store
        self.state = state
        self.delegate = delegate
        self.options = options
        self.executorPreference = executorPreference
        keeper = StateKeeper()
        client = nil
        let current = Account(userRecordName: store.userRecordName, storeID: store.storeID)
        if state.storeID == nil, state.userRecordName == nil {
            accountChange = .signIn(current: current)
        } else if state.storeID != current.storeID || state.userRecordName != current.userRecordName {
            let previous = Account(userRecordName: state.userRecordName ?? "", storeID: state.storeID ?? "")
            accountChange = .switchAccounts(previous: previous, current: current)
        }
        if options.automaticallySync {
            let weak = WeakEngine(self)
            Task.detached(executorPreference: executorPreference) { await weak.engine?.startAutomaticSync() }
        }
    }

    /// An engine for a client of this library that keeps its own state (the file
    /// workspace): no account change, no automatic sync, no `.stateUpdate` to save.
    init(store: any RemoteStore, client: some EngineClient, keeper: (any FetchStateKeeper)?, options: Options) {
        self.store = store
        state = State()
        delegate = client
        var options = options
        options.automaticallySync = false
        self.options = options
        executorPreference = nil
        self.keeper = keeper ?? StateKeeper()
        self.client = client
    }

    /// Delivers the account change the engine found at its creation, before anything else: a
    /// switch starts the state over (the old tokens and pending changes belong to another
    /// store or user). The state is tied to this store and user from here on.
    func settleAccount() async throws(RecSyncError) {
        guard let change = accountChange else { return }
        accountChange = nil
        if case .switchAccounts = change {
            state = State()
            generations = [:]
        }
        state.storeID = store.storeID
        state.userRecordName = store.userRecordName
        do {
            try await emit(.accountChange(change))
        } catch {
            // Not taken in: delivered again by the next call (the state the app saved is still
            // the old one).
            accountChange = change
            throw error
        }
        try await emit(.stateUpdate(state))
    }

    // MARK: Pending changes

    /// Records the app changed, to send. A save replaces a pending delete of the same record
    /// and the other way round. Delivers a `.stateUpdate`.
    public func add(pendingRecordZoneChanges changes: [PendingRecordZoneChange]) async throws(RecSyncError) {
        try await settleAccount()
        // Each record's last change goes to the end, in the order of those last changes (one
        // pass over the list, not one per change: apps add thousands at once).
        var last: [RecordID: Int] = [:]
        for (i, change) in changes.enumerated() {
            last[change.recordID] = i
            generations[change] = nextGeneration
            nextGeneration += 1
        }
        let added = Set(changes)
        for replaced in state.pendingRecordZoneChanges where last[replaced.recordID] != nil && !added.contains(replaced) {
            generations[replaced] = nil
        }
        state.pendingRecordZoneChanges.removeAll { last[$0.recordID] != nil }
        state.pendingRecordZoneChanges += changes.enumerated().filter { last[$0.element.recordID] == $0.offset }.map(\.element)
        try await emit(.stateUpdate(state))
        if !changes.isEmpty { scheduleSend() }
    }

    /// Forgets pending record changes (the app dropped them). Delivers a `.stateUpdate`.
    public func remove(pendingRecordZoneChanges changes: [PendingRecordZoneChange]) async throws(RecSyncError) {
        try await settleAccount()
        let gone = Set(changes)
        state.pendingRecordZoneChanges.removeAll { gone.contains($0) }
        for change in changes { generations[change] = nil }
        try await emit(.stateUpdate(state))
    }

    /// Zones the app created or deleted, to send. Delivers a `.stateUpdate`.
    public func add(pendingDatabaseChanges changes: [PendingDatabaseChange]) async throws(RecSyncError) {
        try await settleAccount()
        for change in changes {
            state.pendingDatabaseChanges.removeAll { $0.zoneID == change.zoneID }
            state.pendingDatabaseChanges.append(change)
        }
        try await emit(.stateUpdate(state))
        if !changes.isEmpty { scheduleSend() }
    }

    /// Notes that the app has changes to send that it tracks itself (or that it has none any
    /// more): a send asks ``RecordSyncEngineDelegate/nextRecordZoneChangeBatch(_:syncEngine:)``
    /// for them, automatic sync schedules one, and a send that completes clears the mark.
    /// Delivers a `.stateUpdate`.
    public func setHasPendingUntrackedChanges(_ value: Bool) async throws(RecSyncError) {
        try await settleAccount()
        state.untrackedChanges = value ? true : nil
        untrackedMarks += 1
        try await emit(.stateUpdate(state))
        if value { scheduleSend() }
    }

    /// Forgets pending zone saves and deletes (the app dropped them). Delivers a `.stateUpdate`.
    public func remove(pendingDatabaseChanges changes: [PendingDatabaseChange]) async throws(RecSyncError) {
        try await settleAccount()
        let gone = Set(changes)
        state.pendingDatabaseChanges.removeAll { gone.contains($0) }
        try await emit(.stateUpdate(state))
    }

    // MARK: Running one at a time

    /// Stops the running fetch or send, and those waiting to run, at their next page or batch
    /// boundary: what they delivered before stays delivered (and its state saved), nothing is
    /// half-applied, and each throws `operationCancelled`. CloudKit's
    /// `CKSyncEngine.cancelOperations()`. Runs called afterwards are not affected. Cancelling
    /// the task that runs a fetch or send stops it the same way.
    public func cancelOperations() {
        cancellations += 1
    }

    /// Throws `operationCancelled` if the running fetch or send was cancelled: called between
    /// pages and batches, after the state covering the last one was delivered.
    func checkNotCancelled(_ what: String) throws(RecSyncError) {
        if cancellations != runCancellations || Task.isCancelled { throw .operationCancelled(what) }
    }

    func exclusively<T: Sendable>(_ body: () async throws(RecSyncError) -> T) async throws(RecSyncError) -> T {
        let called = cancellations
        // Called from the delegate while it handles an event, a run would wait for the run that
        // waits for the delegate: refused instead of hanging for ever.
        if Self.handling.contains(ObjectIdentifier(self)) {
            throw .invalidArguments(
                """
                fetchChanges or sendChanges was called from inside handleEvent or recordsToSave, which the\
                 running fetch or send waits for; call it after the run returns (or from a Task.detached the\
                 handler does not wait for)
                """
            )
        }
        if busy {
            await withCheckedContinuation { waiting.append($0) }
        } else {
            busy = true
        }
        defer {
            if waiting.isEmpty { busy = false } else { waiting.removeFirst().resume() }
        }
        runCancellations = called
        return try await body()
    }

    /// Hands an event to the delegate; its failure stops the run.
    ///
    /// Events go one at a time, in the order they were made (each `.stateUpdate` carries the
    /// state as it was then, so a later one is never overtaken by an earlier one). One made by
    /// the delegate itself while it handles another (an `add` from a handler) goes at once.
    func emit(_ event: Event) async throws(RecSyncError) {
        guard let delegate else {
            throw .delegateFailed(
                event: event.name,
                message:
                    "the engine's delegate is gone (the engine holds it weakly, as CKSyncEngine does); keep a reference to it while the engine runs")
        }
        // A client of this library keeps no `State`: its zones' pages may be handled at the
        // same time, each zone's in order.
        let nested = Self.handling.contains(ObjectIdentifier(self)) || client != nil
        if !nested {
            if delivering {
                await withCheckedContinuation { waitingToDeliver.append($0) }
            } else {
                delivering = true
            }
        }
        defer {
            if !nested {
                if waitingToDeliver.isEmpty { delivering = false } else { waitingToDeliver.removeFirst().resume() }
            }
        }
        let outcome = await inDelegate { () async -> Result<Void, RecSyncError> in
            do {
                try await delegate.handleEvent(event, syncEngine: self)
                return .success(())
            } catch let error as RecSyncError {
                // The workspace's failures are the pull's own (a full disk, a bad file).
                if self.client != nil { return .failure(error) }
                return .failure(.delegateFailed(event: event.name, message: error.message))
            } catch {
                return .failure(.delegateFailed(event: event.name, message: "\(error)"))
            }
        }
        try outcome.get()
    }

    /// Runs a call into the delegate marked as such for the task (see `exclusively`).
    private func inDelegate<T: Sendable>(_ call: () async -> T) async -> T {
        await Self.$handling.withValue(Self.handling.union([ObjectIdentifier(self)]), operation: call)
    }

    /// Runs a store call; while it fails for a passing reason (``isTransient(_:)``), pauses
    /// as ``Options/retries`` says and runs it again. The pause ends early, with
    /// `operationCancelled`, when the run is cancelled. `call` must be safe to run again after
    /// a failure: the store's reads are, and its writes are when the caller recognises its own
    /// landed changes.
    func retryingTransient<T: Sendable>(_ what: String, _ call: () async throws(RecSyncError) -> T) async throws(RecSyncError) -> T {
        var backoff = options.retries.backoff
        var retry = 0
        while true {
            do {
                return try await call()
            } catch let failure where Self.isTransient(failure) {
                if let limit = options.retries.retries, retry >= limit { throw failure }
                retry += 1
                let end = ContinuousClock.now + .milliseconds(Int(backoff.next() * 1000))
                while ContinuousClock.now < end {
                    try checkNotCancelled(what)
                    do {
                        try await Task.sleep(for: min(.milliseconds(100), end - ContinuousClock.now))
                    } catch {
                        throw .operationCancelled(what)
                    }
                }
                try checkNotCancelled(what)
            }
        }
    }

    /// Failures that trying the same call again later may cure: the store could not be
    /// reached, the connection dropped, or the store was busy with other writers.
    public static func isTransient(_ error: RecSyncError) -> Bool {
        switch error.code {
        case .networkUnavailable, .networkFailure, .zoneBusy: true
        default: false
        }
    }

    /// The delegate's next batch of a send (its own, or the engine's default).
    func nextBatch(_ context: SendChangesContext) async throws(RecSyncError) -> RecordZoneChangeBatch? {
        guard let delegate else {
            throw .delegateFailed(
                event: "nextRecordZoneChangeBatch", message: "the engine's delegate is gone; keep a reference to it while the engine runs")
        }
        let outcome = await inDelegate { () async -> Result<RecordZoneChangeBatch?, RecSyncError> in
            do {
                return .success(try await delegate.nextRecordZoneChangeBatch(context, syncEngine: self))
            } catch let error as RecSyncError {
                // The engine's default batch names the delegate call that failed (recordsToSave);
                // the workspace's failures are the push's own.
                if case .delegateFailed = error.reason { return .failure(error) }
                if self.client != nil { return .failure(error) }
                return .failure(.delegateFailed(event: "nextRecordZoneChangeBatch", message: error.message))
            } catch {
                return .failure(.delegateFailed(event: "nextRecordZoneChangeBatch", message: "\(error)"))
            }
        }
        return try outcome.get()
    }

    func recordsToSave(_ ids: [RecordID]) async throws(RecSyncError) -> [Record] {
        guard let delegate else {
            throw .delegateFailed(event: "recordsToSave", message: "the engine's delegate is gone; keep a reference to it while the engine runs")
        }
        let outcome = await inDelegate { () async -> Result<[Record], RecSyncError> in
            do {
                return .success(try await delegate.recordsToSave(ids, syncEngine: self))
            } catch let error as RecSyncError {
                return .failure(.delegateFailed(event: "recordsToSave", message: error.message))
            } catch {
                return .failure(.delegateFailed(event: "recordsToSave", message: "\(error)"))
            }
        }
        return try outcome.get()
    }

    func generation(of change: PendingRecordZoneChange) -> Int { generations[change] ?? 0 }

    /// How many changes the engine tracks a generation for (for tests: it must not grow past
    /// the pending list).
    var trackedGenerations: Int { generations.count }

    /// Drops sent changes, unless the app added them again since `sent` was taken.
    func removeSent(_ sent: [(PendingRecordZoneChange, Int)]) {
        let done = Set(sent.filter { generation(of: $0.0) == $0.1 }.map(\.0))
        state.pendingRecordZoneChanges.removeAll { done.contains($0) }
        for change in done { generations[change] = nil }
    }

    func setState(_ update: (inout State) -> Void) {
        update(&state)
    }
}
