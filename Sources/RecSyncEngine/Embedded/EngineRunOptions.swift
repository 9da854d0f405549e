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
