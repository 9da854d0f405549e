import Foundation
import RecSyncModel
import RecSyncStore

extension RecordSyncEngine {
    /// Everything the engine must remember between runs: where each scope and zone was last
    /// fetched to, what the app still has to send, and records the store could not deliver.
    ///
    /// CloudKit's `CKSyncEngine.State.Serialization`. The engine hands a new value to the app in a
    /// `.stateUpdate` event whenever it changes; the app saves it (``serialized()`` gives JSON
    /// bytes) and passes it back to ``RecordSyncEngine/init(store:state:delegate:options:executorPreference:)``
    /// next time. A token moves only after the event carrying the data it covers was handled,
    /// so an app killed at any point fetches that data again rather than losing it.
    public struct State: Sendable, Hashable, Codable {
        /// The format this recsync writes; a state of a later format is refused.
        public static let currentVersion = 1

        public private(set) var version: Int
        /// The store the tokens belong to (set on first use).
        public internal(set) var storeID: String?
        /// The user the tokens were fetched as (set on first use).
        public internal(set) var userRecordName: String?
        /// Saves and deletes of records the app made and the store has not confirmed, in order.
        public internal(set) var pendingRecordZoneChanges: [PendingRecordZoneChange]
        /// Zone saves and deletes the store has not confirmed, in order.
        public internal(set) var pendingDatabaseChanges: [PendingDatabaseChange]
        /// Records the store listed as changed but could not deliver (an unreadable stored
        /// form); fetched again on every fetch until they arrive or are gone.
        public internal(set) var retryRecords: [RecordID]
        var scopeTokens: [ScopeToken]
        var zoneTokens: [ZoneToken]
        /// Scopes whose zone tokens moved ahead of the scope token (a fetch stopped part-way).
        var interruptedScopes: [DatabaseScope]
        /// Zones this app created or saved records into that no fetch has brought in yet (no
        /// token): made after the scope token, they are in neither end of the next database
        /// changes if they go away first, so the fetch asks about them. Optional: states saved
        /// before it existed decode.
        var writtenZones: [ZoneID]?
        /// Zones a fetch removed ahead of its scope token (until that token is saved): a fetch
        /// stopped before it reads the feed from the old token, in which a zone that came back
        /// as it was (shared again with the same participants) is not named. Optional: states
        /// saved before it existed decode.
        var removedZones: [ZoneID]?
        /// Zones a database feed named whose record changes a fetch left out (outside its
        /// `FetchChangesOptions.scope`): fetched by the next fetch that covers them. Optional:
        /// states saved before it existed decode.
        var unfetchedZones: [ZoneID]?

        /// Records this app saved since their zone's token, or took in from a page of changes
        /// before the token past it was saved, with their types: created after the token and
        /// deleted by someone else before the next fetch, a record is in neither end of that
        /// fetch's changes, so the fetch asks about these by ID. Optional: states saved before
        /// it existed decode.
        var savedSinceToken: [SavedRecord]?

        struct SavedRecord: Sendable, Hashable, Codable {
            var recordID: RecordID
            var recordType: String
        }

        /// Changes the app keeps track of itself and wants sent (CloudKit's
        /// `hasPendingUntrackedChanges`): set with
        /// ``RecordSyncEngine/setHasPendingUntrackedChanges(_:)``; the next send asks the
        /// delegate for batches even with nothing pending, and clears it when it completes.
        public var hasPendingUntrackedChanges: Bool { untrackedChanges ?? false }
        /// Optional: states saved before it existed decode.
        var untrackedChanges: Bool?

        /// Zones with changes on the store that no fetch has brought in yet, as far as the
        /// engine knows: those a scoped fetch left out (CloudKit's
        /// `CKSyncEngine.State.zoneIDsWithUnfetchedServerChanges`). Changes made since the last
        /// fetch are not known until the next.
        public var zoneIDsWithUnfetchedServerChanges: [ZoneID] { unfetchedZones ?? [] }

        struct ScopeToken: Sendable, Hashable, Codable {
            var scope: DatabaseScope
            var token: ServerChangeToken
        }

        struct ZoneToken: Sendable, Hashable, Codable {
            var zoneID: ZoneID
            var token: ServerChangeToken
        }

        /// A state for an app that never synced: everything is fetched.
        public init() {
            version = Self.currentVersion
            pendingRecordZoneChanges = []
            pendingDatabaseChanges = []
            retryRecords = []
            scopeTokens = []
            zoneTokens = []
            interruptedScopes = []
        }

        /// Reads a state saved with ``serialized()``.
        public init(serialized bytes: Data) throws(RecSyncError) {
            let decoded: State
            do {
                decoded = try JSONDecoder().decode(State.self, from: bytes)
            } catch {
                throw .malformedInput(
                    """
                    the saved sync state does not decode (\(error)); pass the bytes a .stateUpdate event gave, or\
                     start from RecordSyncEngine.State() to fetch everything again
                    """
                )
            }
            guard decoded.version <= Self.currentVersion else {
                throw .invalidArguments(
                    """
                    the saved sync state has format \(decoded.version); this recsync reads up to\
                     \(Self.currentVersion). Upgrade recsync, or start from RecordSyncEngine.State() to fetch\
                     everything again
                    """
                )
            }
            self = decoded
        }

        /// The state as JSON bytes, to save.
        public func serialized() throws(RecSyncError) -> Data {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            do {
                return try encoder.encode(self)
            } catch {
                throw .internalError("the sync state could not be encoded (\(error)); nothing was saved")
            }
        }

        /// Where the scope was last fetched to; nil: never.
        public func token(for scope: DatabaseScope) -> ServerChangeToken? {
            scopeTokens.first { $0.scope == scope }?.token
        }

        /// Where the zone was last fetched to; nil: never.
        public func token(for zone: ZoneID) -> ServerChangeToken? {
            zoneTokens.first { $0.zoneID == zone }?.token
        }

        /// The zones this state holds tokens for.
        public var knownZones: [ZoneID] { zoneTokens.map(\.zoneID) }

        mutating func setToken(_ token: ServerChangeToken?, for scope: DatabaseScope) {
            scopeTokens.removeAll { $0.scope == scope }
            if let token { scopeTokens.append(ScopeToken(scope: scope, token: token)) }
        }

        mutating func setToken(_ token: ServerChangeToken?, for zone: ZoneID) {
            if let i = zoneTokens.firstIndex(where: { $0.zoneID == zone }) {
                if let token { zoneTokens[i].token = token } else { zoneTokens.remove(at: i) }
            } else if let token {
                zoneTokens.append(ZoneToken(zoneID: zone, token: token))
            }
            // Fetched, or gone: either way no longer one to ask about.
            writtenZones?.removeAll { $0 == zone }
        }

        /// Saved records noted per zone before the zone is read whole instead (an app that
        /// sends much and fetches rarely would otherwise carry an ever longer state).
        public static let savedNoteLimit = 2_000

        /// Notes records the store confirmed saving (or a page delivered ahead of its token),
        /// for the next fetch of their zones. Past `savedNoteLimit` in a zone, the zone's
        /// token is dropped instead: its next fetch lists it whole, which names every record.
        mutating func noteSaved(_ records: [Record]) {
            guard !records.isEmpty else { return }
            var saved = adding(records)
            var perZone: [ZoneID: Int] = [:]
            for entry in saved { perZone[entry.recordID.zoneID, default: 0] += 1 }
            let overflowing = Set(perZone.filter { $0.value > Self.savedNoteLimit }.keys)
            if !overflowing.isEmpty {
                saved.removeAll { overflowing.contains($0.recordID.zoneID) }
                for zone in overflowing.sorted() {
                    setToken(nil, for: zone)
                    noteWritten([zone])
                }
            }
            savedSinceToken = saved.isEmpty ? nil : saved
        }

        /// Notes a page's new records before it is delivered; the page's token, saved right
        /// after, drops them again (no cap: a page is bounded, and its zone is being read).
        mutating func notePage(_ records: [Record]) {
            guard !records.isEmpty else { return }
            savedSinceToken = adding(records)
        }

        private func adding(_ records: [Record]) -> [SavedRecord] {
            let ids = Set(records.map(\.recordID))
            return (savedSinceToken ?? []).filter { !ids.contains($0.recordID) }
                + records.map { SavedRecord(recordID: $0.recordID, recordType: $0.recordType) }
        }

        /// Forgets the saved records of a zone (fetched past them, or gone).
        mutating func forgetSaved(in zone: ZoneID) {
            savedSinceToken?.removeAll { $0.recordID.zoneID == zone }
            if savedSinceToken?.isEmpty == true { savedSinceToken = nil }
        }

        /// Notes zones the app wrote to that it holds no token for.
        mutating func noteWritten(_ zones: [ZoneID]) {
            for zone in zones where token(for: zone) == nil && !(writtenZones ?? []).contains(zone) {
                writtenZones = (writtenZones ?? []) + [zone]
            }
        }
    }

    /// A record the app changed: CloudKit's `CKSyncEngine.PendingRecordZoneChange`.
    public enum PendingRecordZoneChange: Sendable, Hashable, Codable {
        case saveRecord(RecordID)
        case deleteRecord(RecordID)

        public var recordID: RecordID {
            switch self {
            case .saveRecord(let id), .deleteRecord(let id): id
            }
        }
    }

    /// A zone the app created or deleted: CloudKit's `CKSyncEngine.PendingDatabaseChange`.
    public enum PendingDatabaseChange: Sendable, Hashable, Codable {
        /// Creates the zone, or updates its default record type. A zone that exists keeps its
        /// participants (share it with `RemoteStore.share`): making sure a zone exists, as a
        /// new device does, never unshares it. A zone deleted or purged on the store is
        /// not brought back this way (the send reports it with the reason); one reset for its
        /// encrypted data is: that is how the app uploads it again.
        case saveZone(RecordZone)
        /// As `saveZone`, and brings back a zone deleted or purged on the store: an explicit
        /// create, for when the user asks for the zone again (`recsync zone create`). The old
        /// zone's records do not come back with it.
        case recreateZone(RecordZone)
        case deleteZone(ZoneID)

        public var zoneID: ZoneID {
            switch self {
            case .saveZone(let zone), .recreateZone(let zone): zone.zoneID
            case .deleteZone(let id): id
            }
        }
    }
}
