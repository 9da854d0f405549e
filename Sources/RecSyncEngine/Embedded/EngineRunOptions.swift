import RecSyncModel
import RecSyncStore

extension RecordSyncEngine {
    /// Which zones a fetch or send covers: CloudKit's `CKSyncEngine.FetchChangesOptions.Scope`
    /// and `SendChangesOptions.Scope` (without `recordIDs`, which only a send takes: see
    /// ``SendChangesOptions``).
    public enum ZoneScope: Sendable, Hashable {
        /// Every zone.
        case all
        /// Only these zones.
        case zoneIDs([ZoneID])
        /// Every zone but these.
        case allExcluding([ZoneID])

        /// Whether the scope covers `zone`.
        public func contains(_ zone: ZoneID) -> Bool {
            switch self {
            case .all: true
            case .zoneIDs(let zones): zones.contains(zone)
            case .allExcluding(let zones): !zones.contains(zone)
            }
        }
    }

    /// What a fetch covers: CloudKit's `CKSyncEngine.FetchChangesOptions`.
    ///
    /// Database changes (zones created, changed, gone) are always fetched and delivered in
    /// full, so a removed zone is never missed. Record changes are fetched for the zones in
    /// `scope`; a changed zone outside it is remembered in
    /// ``State/zoneIDsWithUnfetchedServerChanges`` and fetched by a later fetch that covers it.
    public struct FetchChangesOptions: Sendable, Hashable {
        /// The zones whose record changes to fetch.
        public var scope: ZoneScope
        /// Zones to fetch first, in this order (if they have changes); the others follow in
        /// the store's order.
        public var prioritizedZoneIDs: [ZoneID]
        /// The databases to fetch (recsync's addition: the private one and the one of zones
        /// shared with the user).
        public var databaseScopes: [DatabaseScope]

        public init(scope: ZoneScope = .all, prioritizedZoneIDs: [ZoneID] = [], databaseScopes: [DatabaseScope] = [.private, .shared]) {
            self.scope = scope
            self.prioritizedZoneIDs = prioritizedZoneIDs
            self.databaseScopes = databaseScopes
        }
    }

    /// What a send covers: CloudKit's `CKSyncEngine.SendChangesOptions`. Pending changes
    /// outside the scope stay pending, in their order.
    public struct SendChangesOptions: Sendable, Hashable {
        public enum Scope: Sendable, Hashable {
            /// Every pending change.
            case all
            /// The pending changes of these zones (zone saves and deletes, and their records).
            case zoneIDs([ZoneID])
            /// The pending changes of every zone but these.
            case allExcluding([ZoneID])
            /// The pending changes of these records, and the pending saves of their zones (a
            /// record cannot land in a zone not created yet).
            case recordIDs([RecordID])

            /// Whether the scope covers a pending record change.
            public func contains(_ change: PendingRecordZoneChange) -> Bool {
                switch self {
                case .all: true
                case .zoneIDs(let zones): zones.contains(change.recordID.zoneID)
                case .allExcluding(let zones): !zones.contains(change.recordID.zoneID)
                case .recordIDs(let ids): ids.contains(change.recordID)
                }
            }

            /// Whether the scope covers a pending zone save or delete.
            public func contains(_ change: PendingDatabaseChange) -> Bool {
                switch self {
                case .all: true
                case .zoneIDs(let zones): zones.contains(change.zoneID)
                case .allExcluding(let zones): !zones.contains(change.zoneID)
                case .recordIDs(let ids):
                    if case .deleteZone = change { false } else { ids.contains { $0.zoneID == change.zoneID } }
                }
            }
        }

        public var scope: Scope

        public init(scope: Scope = .all) {
            self.scope = scope
        }
    }
}

extension RecordSyncEngine {
    /// Why a fetch or send runs: CloudKit's `CKSyncEngine.SyncReason`.
    public enum SyncReason: Sendable, Hashable {
        /// Automatic sync started it (``Options/automaticallySync``): changes were added, or
        /// the store signalled a change.
        case scheduled
        /// The app called ``fetchChanges(_:)`` or ``sendChanges(_:)``.
        case manual
    }

    /// Why a fetch runs and what it was asked to cover: carried by `.willFetchChanges` and
    /// `.didFetchChanges` (CloudKit's `CKSyncEngine.FetchChangesContext`).
    public struct FetchChangesContext: Sendable, Hashable {
        public var reason: SyncReason
        public var options: FetchChangesOptions
    }

    /// Why a send runs and what it was asked to cover: carried by `.willSendChanges` and
    /// `.didSendChanges`, and passed to
    /// ``RecordSyncEngineDelegate/nextRecordZoneChangeBatch(_:syncEngine:)`` (CloudKit's
    /// `CKSyncEngine.SendChangesContext`).
    public struct SendChangesContext: Sendable, Hashable {
        public var reason: SyncReason
        public var options: SendChangesOptions
    }

    /// One request's worth of record changes to send: CloudKit's
    /// `CKSyncEngine.RecordZoneChangeBatch`. The delegate composes it in
    /// ``RecordSyncEngineDelegate/nextRecordZoneChangeBatch(_:syncEngine:)``, from the
    /// engine's pending changes or from anything else it wants sent.
    public struct RecordZoneChangeBatch: Sendable, Hashable {
        /// Records to save, each with the change tag of the version the app last fetched or
        /// saved (nil for a new record).
        public var recordsToSave: [Record]
        /// Records to delete.
        public var recordIDsToDelete: [RecordID]
        /// With true, a zone in which any change of the batch fails lands none of them.
        public var atomicByZone: Bool
        /// Pending saves of records the app no longer has (the provider returned nil): dropped
        /// from the pending changes once the batch went, as CKSyncEngine does.
        public var recordIDsNoLongerHeld: [RecordID]
        /// The file workspace's push: its deletions carry the change tag it synced (a record
        /// changed on the store since is a conflict, not deleted), `force` overwrites, and the
        /// send names itself with the pending-push note's client change token.
        var deletionTags: [RecordID: String] = [:]
        var savePolicy = SavePolicy.ifServerRecordUnchanged
        var clientChangeTokenData: String?

        public init(recordsToSave: [Record] = [], recordIDsToDelete: [RecordID] = [], atomicByZone: Bool = false) {
            self.recordsToSave = recordsToSave
            self.recordIDsToDelete = recordIDsToDelete
            self.atomicByZone = atomicByZone
            recordIDsNoLongerHeld = []
        }

        /// The batch of the first `limit` of `pendingChanges`, asking `recordProvider` for each
        /// record to save: a record it returns nil for is one the app no longer has, and its
        /// pending save is dropped.
        public init(
            pendingChanges: [PendingRecordZoneChange], limit: Int = 200, atomicByZone: Bool = false,
            recordProvider: (RecordID) async throws -> Record?
        ) async rethrows {
            self.init(atomicByZone: atomicByZone)
            for change in pendingChanges.prefix(max(1, limit)) {
                switch change {
                case .saveRecord(let id):
                    if let record = try await recordProvider(id) { recordsToSave.append(record) } else { recordIDsNoLongerHeld.append(id) }
                case .deleteRecord(let id):
                    recordIDsToDelete.append(id)
                }
            }
        }

        /// The pending changes the batch settles once it went.
        var changes: [PendingRecordZoneChange] {
            recordsToSave.map { .saveRecord($0.recordID) } + recordIDsToDelete.map { .deleteRecord($0) }
                + recordIDsNoLongerHeld.map { .saveRecord($0) }
        }

        /// Nothing to send or drop.
        public var isEmpty: Bool { recordsToSave.isEmpty && recordIDsToDelete.isEmpty && recordIDsNoLongerHeld.isEmpty }
    }
}
