import RecSyncModel
import RecSyncStore

extension RecordSyncEngine {
    /// What the engine tells the app, in order: CloudKit's `CKSyncEngine.Event`.
    ///
    /// The engine awaits ``RecordSyncEngineDelegate/handleEvent(_:syncEngine:)`` for each event
    /// before it goes on, so the app sees them one at a time in the order listed here. Data
    /// comes before the state that covers it: a `.fetchedRecordZoneChanges` is followed by a
    /// `.stateUpdate` whose zone token includes it, and a `.sentRecordZoneChanges` by one
    /// without the pending changes it confirms. An app that saves the state from
    /// `.stateUpdate` only after it saved the data before it never loses a change.
    public enum Event: Sendable {
        /// The state changed: save it, to pass to the engine next time.
        case stateUpdate(State)
        /// The engine runs for a user and store for the first time, or for other ones than its
        /// saved state's: delivered once, before anything else, and followed by a
        /// `.stateUpdate` tied to the current user and store. Create the app's zones on
        /// `.signIn`; on `.switchAccounts`, drop the data synced with the previous account
        /// (the engine started its state over).
        case accountChange(AccountChange)
        /// A fetch begins, with what it was asked to cover.
        case willFetchChanges(FetchChangesContext)
        /// Zones changed or went away in a scope (deletions carry the reason: drop the local
        /// copy for `deleted` and `purged`; for `encryptedDataReset` of a zone the app's user
        /// owns, keep it and upload it again; a reset of a zone shared with the user drops it
        /// like a deletion, since only its owner can create it again:
        /// `ZoneDeletion.keepsRecordsForUpload(by:)` tells which).
        case fetchedDatabaseChanges(FetchedDatabaseChanges)
        /// The engine starts on one zone's changes.
        case willFetchRecordZoneChanges(ZoneID)
        /// Every record of the zone follows, not only changes: the first fetch of a zone, or
        /// its token no longer works (the store's history was rewritten). A full listing names
        /// no deletions, so records the app holds in this zone that came from the store (they
        /// have a change tag) and are neither delivered nor listed as undeliverable before
        /// `.didFetchRecordZoneChanges` are gone from it. Keep the marks durable with the
        /// records: a delivery stopped part-way resumes from its last page, without a second
        /// `.fetchingWholeZone`.
        case fetchingWholeZone(ZoneID)
        /// A page of one zone's changes: save them.
        case fetchedRecordZoneChanges(FetchedRecordZoneChanges)
        /// The engine is done with one zone; `error` says why it stopped early. The zone went
        /// away meanwhile (`zoneNotFound`, `userDeletedZone`): the next fetch reports that.
        /// Any other error failed this zone alone (the store could not read it, say): the fetch
        /// goes on with the other zones, and the zone stays in
        /// ``State/zoneIDsWithUnfetchedServerChanges`` for the next fetch. A store that cannot
        /// be reached, a cancellation or a failing delegate stops the whole fetch instead.
        case didFetchRecordZoneChanges(ZoneID, error: RecSyncError?)
        /// A fetch ended (a fetch that throws ends without it).
        case didFetchChanges(FetchChangesContext)
        /// A send begins, with what it was asked to cover.
        case willSendChanges(SendChangesContext)
        /// What became of the pending zone saves and deletes.
        case sentDatabaseChanges(SentDatabaseChanges)
        /// What became of a batch of pending record saves and deletes: save the new change
        /// tags of saved records, and resolve the conflicts.
        case sentRecordZoneChanges(SentRecordZoneChanges)
        /// A send ended (a send that throws ends without it).
        case didSendChanges(SendChangesContext)

        /// A short name for messages.
        public var name: String {
            switch self {
            case .stateUpdate: "stateUpdate"
            case .accountChange: "accountChange"
            case .willFetchChanges: "willFetchChanges"
            case .fetchedDatabaseChanges: "fetchedDatabaseChanges"
            case .willFetchRecordZoneChanges(let z): "willFetchRecordZoneChanges(\(z))"
            case .fetchingWholeZone(let z): "fetchingWholeZone(\(z))"
            case .fetchedRecordZoneChanges(let c): "fetchedRecordZoneChanges(\(c.zoneID))"
            case .didFetchRecordZoneChanges(let z, _): "didFetchRecordZoneChanges(\(z))"
            case .didFetchChanges: "didFetchChanges"
            case .willSendChanges: "willSendChanges"
            case .sentDatabaseChanges: "sentDatabaseChanges"
            case .sentRecordZoneChanges: "sentRecordZoneChanges"
            case .didSendChanges: "didSendChanges"
            }
        }
    }

    /// A user of a store: who an engine's state was made for.
    public struct Account: Sendable, Hashable {
        public var userRecordName: String
        public var storeID: String

        public init(userRecordName: String, storeID: String) {
            self.userRecordName = userRecordName
            self.storeID = storeID
        }
    }

    /// What changed about the account the engine syncs: CloudKit's
    /// `CKSyncEngine.Event.AccountChange`. A store has no sign-out: opening it as another user
    /// or another store is a switch.
    public enum AccountChange: Sendable, Hashable {
        /// A first start: the state was never used (`State()`).
        case signIn(current: Account)
        /// The saved state was made for another user or store: the engine dropped its tokens
        /// and pending changes and fetches everything again.
        case switchAccounts(previous: Account, current: Account)
    }

    /// Zones changed and deleted in one scope.
    public struct FetchedDatabaseChanges: Sendable, Hashable {
        public var scope: DatabaseScope
        public var modifications: [ZoneID]
        public var deletions: [ZoneDeletion]
        /// Entries of the store recsync passed over (another user's bad data), for logs.
        public var warnings: [StoreWarning]
        /// The saved database token had expired (the store's history was rewritten):
        /// `modifications` names every zone, and held zones it does not name are in `deletions`.
        public var tokenExpired = false
    }

    /// One page of a zone's changes.
    public struct FetchedRecordZoneChanges: Sendable, Hashable {
        public var zoneID: ZoneID
        public var modifications: [Record]
        public var deletions: [RecordDeletionEvent]
        /// Records listed as changed whose stored form could not be read. The engine asks for
        /// them again on every fetch (``State/retryRecords``); the rest of the zone is not held up.
        public var undeliverable: [RecordFailure]
        public var warnings: [StoreWarning]
        /// More pages of the zone follow.
        public var moreComing = false
        /// About how many records the whole delivery brings, on its first page, when the store
        /// knows (a listing of the zone gives its size, a tree diff the records changed since
        /// the token): for progress.
        public var recordCountEstimate: Int?
    }

    /// A record and why it could not be delivered or sent.
    public struct RecordFailure: Sendable, Hashable {
        public var recordID: RecordID
        public var error: RecSyncError
        /// The version at fault when the record's stored bytes are (it reads the same until it
        /// changes on the store); the workspace's retry list waits for a change then.
        var unreadableTag: String?
    }

    /// A record save the store refused: `.serverRecordChanged` carries the server's, the
    /// app's and the common ancestor's versions; merge, save the merged record locally with
    /// the server's change tag, and add the save again.
    public struct FailedRecordSave: Sendable, Hashable {
        public var record: Record
        public var error: RecSyncError
    }

    /// The outcome of the pending zone changes.
    public struct SentDatabaseChanges: Sendable, Hashable {
        public var savedZones: [RecordZone] = []
        public var failedZoneSaves: [ZoneFailure] = []
        public var deletedZoneIDs: [ZoneID] = []
        public var failedZoneDeletes: [ZoneFailure] = []
    }

    /// A zone operation the store refused.
    public struct ZoneFailure: Sendable, Hashable {
        public var zoneID: ZoneID
        public var error: RecSyncError
    }

    /// The outcome of one batch of pending record changes.
    public struct SentRecordZoneChanges: Sendable, Hashable {
        /// Saved, each with its new change tag.
        public var savedRecords: [Record] = []
        public var failedRecordSaves: [FailedRecordSave] = []
        /// Deleted (or already gone).
        public var deletedRecordIDs: [RecordID] = []
        public var failedRecordDeletes: [RecordFailure] = []
        /// Zones that refused changes because they are gone from the store, with the reason
        /// (their pending changes are dropped; only a `.saveZone` after a reset brings one back).
        public var zonesGone: [ZoneDeletion] = []
        /// The store's version that holds the batch (a git store's commit), if it landed.
        var commit: String?
    }
}

/// The app's side of a ``RecordSyncEngine``: CloudKit's `CKSyncEngineDelegate`.
public protocol RecordSyncEngineDelegate: AnyObject, Sendable {
    /// Handles one event. Throwing stops the fetch or send: what depended on the event (a
    /// token, the removal of a pending change) does not move, so the next run delivers it again.
    /// A handler may add and remove pending changes; `fetchChanges` and `sendChanges` called
    /// from it are refused (the running fetch or send waits for the handler).
    func handleEvent(_ event: RecordSyncEngine.Event, syncEngine: RecordSyncEngine) async throws

    /// The next batch of record changes to send, or nil when there is nothing more: CloudKit's
    /// `nextRecordZoneChangeBatch`. The engine asks again after each batch went (its
    /// `.sentRecordZoneChanges` handled) until this returns nil or an empty batch, or a batch
    /// of changes this send already tried: each pending change is tried once per send.
    ///
    /// Compose it from `syncEngine.state.pendingRecordZoneChanges` within
    /// `context.options.scope` (``RecordSyncEngine/RecordZoneChangeBatch/init(pendingChanges:limit:atomicByZone:recordProvider:)``
    /// does that with a record provider), or from anything else the app wants sent. Left
    /// out, the engine's own batch is used (``RecordSyncEngine/defaultRecordZoneChangeBatch(_:)``),
    /// with the records from ``recordsToSave(_:syncEngine:)``.
    func nextRecordZoneChangeBatch(_ context: RecordSyncEngine.SendChangesContext, syncEngine: RecordSyncEngine) async throws -> RecordSyncEngine
        .RecordZoneChangeBatch?

    /// The current version of records with pending saves, for one batch of the engine's own
    /// batches (a delegate that composes its batches in `nextRecordZoneChangeBatch` need not
    /// provide it). Each record carries the change tag of the version the app last fetched or
    /// saved (nil for a new record). A record the app no longer has is left out: its pending
    /// save is dropped.
    func recordsToSave(_ recordIDs: [RecordID], syncEngine: RecordSyncEngine) async throws -> [Record]
}

extension RecordSyncEngineDelegate {
    /// The engine's own batch: the next pending changes in the send's scope.
    public func nextRecordZoneChangeBatch(_ context: RecordSyncEngine.SendChangesContext, syncEngine: RecordSyncEngine) async throws
        -> RecordSyncEngine.RecordZoneChangeBatch?
    {
        try await syncEngine.defaultRecordZoneChangeBatch(context)
    }

    /// Refuses: a delegate that relies on the engine's own batches provides the records.
    public func recordsToSave(_ recordIDs: [RecordID], syncEngine: RecordSyncEngine) async throws -> [Record] {
        throw RecSyncError.delegateFailed(
            event: "recordsToSave",
            message: "the delegate provides neither recordsToSave nor nextRecordZoneChangeBatch; implement one of them to send record changes")
    }
}
