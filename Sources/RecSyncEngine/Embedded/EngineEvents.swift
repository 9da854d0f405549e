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
        /// A fetch begins.
        case willFetchChanges
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
        /// The engine is done with one zone; `error` says why it stopped early (the zone went
        /// away meanwhile: the next fetch reports that).
        case didFetchRecordZoneChanges(ZoneID, error: RecSyncError?)
        /// A fetch ended.
        case didFetchChanges
        /// A send begins.
        case willSendChanges
        /// What became of the pending zone saves and deletes.
        case sentDatabaseChanges(SentDatabaseChanges)
        /// What became of a batch of pending record saves and deletes: save the new change
        /// tags of saved records, and resolve the conflicts.
        case sentRecordZoneChanges(SentRecordZoneChanges)
        /// A send ended.
        case didSendChanges

        /// A short name for messages.
        public var name: String {
            switch self {
            case .stateUpdate: "stateUpdate"
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

    /// Zones changed and deleted in one scope.
    public struct FetchedDatabaseChanges: Sendable, Hashable {
        public var scope: DatabaseScope
        public var modifications: [ZoneID]
        public var deletions: [ZoneDeletion]
        /// Entries of the store recsync passed over (another user's bad data), for logs.
        public var warnings: [StoreWarning]
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
    }

    /// A record and why it could not be delivered or sent.
    public struct RecordFailure: Sendable, Hashable {
        public var recordID: RecordID
        public var error: RecSyncError
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
    }
}

/// The app's side of a ``RecordSyncEngine``: CloudKit's `CKSyncEngineDelegate`.
public protocol RecordSyncEngineDelegate: AnyObject, Sendable {
    /// Handles one event. Throwing stops the fetch or send: what depended on the event (a
    /// token, the removal of a pending change) does not move, so the next run delivers it again.
    /// A handler may add and remove pending changes; `fetchChanges` and `sendChanges` called
    /// from it are refused (the running fetch or send waits for the handler).
    func handleEvent(_ event: RecordSyncEngine.Event, syncEngine: RecordSyncEngine) async throws

    /// The current version of records with pending saves, for one batch of a send. Each record
    /// carries the change tag of the version the app last fetched or saved (nil for a new
    /// record). A record the app no longer has is left out: its pending save is dropped.
    func recordsToSave(_ recordIDs: [RecordID], syncEngine: RecordSyncEngine) async throws -> [Record]
}
