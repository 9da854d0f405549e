import Foundation
import RecSyncEngine
import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import RecSyncTestTraits
import Synchronization
import Testing

/// An app as the embedding engine sees it: records in memory, the saved state, every event.
/// It can be killed at any event: before it stores the event (the process died on the way
/// in) or after (it stored the event and died before it returned); `failOn` kills it on the
/// first event whose name starts with it. What it stores (records, whole-zone marks, the
/// saved state) survives the kill, as a database would.
final class KillableApp: RecordSyncEngineDelegate, @unchecked Sendable {
    struct Data {
        var records: [RecordID: Record] = [:]
        var savedState = RecordSyncEngine.State()
        var wholeZones: [ZoneID: Set<RecordID>] = [:]
        var events: [String] = []
        var conflicts: [RecordConflict] = []
        var failedSaves: [RecordID: RecSyncError] = [:]
        var zonesGone: [ZoneDeletion] = []
        /// Every zone deletion fetched, whatever the reason.
        var fetchedDeletions: [ZoneDeletion] = []
        /// Records delivered as undeliverable (an unreadable stored form).
        var undeliverable: [RecordID] = []
        /// Kill before storing the first event whose name starts with this.
        var failOn: String?
        /// Events to let through before the kill; nil: never killed.
        var killAfter: Int?
        var killAfterStoring = false
        var killed = false
        var onEvent: (@Sendable (RecordSyncEngine.Event, RecordSyncEngine) async throws -> Void)?
        var provide: (@Sendable ([RecordID]) -> [Record])?
    }

    let data = Mutex(Data())
    struct Crash: Error {}

    func handleEvent(_ event: RecordSyncEngine.Event, syncEngine: RecordSyncEngine) async throws {
        let hook = data.withLock { $0.onEvent }
        try await hook?(event, syncEngine)
        try data.withLock { d in
            var kill = false
            if let n = d.killAfter {
                if n == 0 { kill = true; d.killAfter = nil; d.killed = true } else { d.killAfter = n - 1 }
            }
            if kill, !d.killAfterStoring { throw Crash() }
            if let f = d.failOn, event.name.hasPrefix(f) {
                d.failOn = nil
                throw Crash()
            }
            d.events.append(event.name)
            switch event {
            case .stateUpdate(let state):
                d.savedState = try RecordSyncEngine.State(serialized: state.serialized())
            case .fetchedDatabaseChanges(let changes):
                d.fetchedDeletions += changes.deletions
                for deletion in changes.deletions where deletion.reason != .encryptedDataReset {
                    d.records = d.records.filter { $0.key.zoneID != deletion.zoneID }
                    d.wholeZones[deletion.zoneID] = nil
                    d.zonesGone.append(deletion)
                }
            case .fetchingWholeZone(let zone):
                d.wholeZones[zone] = []
            case .didFetchRecordZoneChanges(let zone, nil):
                if let arrived = d.wholeZones.removeValue(forKey: zone) {
                    d.records = d.records.filter { $0.key.zoneID != zone || $0.value.changeTag == nil || arrived.contains($0.key) }
                }
            case .fetchedRecordZoneChanges(let changes):
                d.wholeZones[changes.zoneID]?.formUnion(changes.modifications.map(\.recordID) + changes.undeliverable.map(\.recordID))
                for record in changes.modifications { d.records[record.recordID] = record }
                for deletion in changes.deletions { d.records[deletion.recordID] = nil }
                d.undeliverable += changes.undeliverable.map(\.recordID)
            case .sentRecordZoneChanges(let sent):
                for record in sent.savedRecords { d.records[record.recordID] = record }
                for failure in sent.failedRecordSaves {
                    d.failedSaves[failure.record.recordID] = failure.error
                    if case .serverRecordChanged(let conflict) = failure.error.reason { d.conflicts.append(conflict) }
                }
                d.zonesGone += sent.zonesGone
            default:
                break
            }
            if kill { throw Crash() }
        }
    }

    func recordsToSave(_ recordIDs: [RecordID], syncEngine: RecordSyncEngine) async throws -> [Record] {
        if let provide = data.withLock({ $0.provide }) { return provide(recordIDs) }
        return data.withLock { d in recordIDs.compactMap { d.records[$0] } }
    }

    var records: [RecordID: Record] { data.withLock { $0.records } }
    var savedState: RecordSyncEngine.State { data.withLock { $0.savedState } }
    var events: [String] { data.withLock { $0.events } }

    func edit(_ id: RecordID, _ fields: [String: FieldValue]) throws {
        try data.withLock { d in
            var record = try d.records[id] ?? Record(recordID: id, recordType: "Note")
            record.fields = fields
            d.records[id] = record
        }
    }

    func forget(_ id: RecordID) { data.withLock { $0.records[id] = nil } }
    func kill(after events: Int, storing: Bool) {
        data.withLock {
            $0.killAfter = events; $0.killAfterStoring = storing; $0.killed = false
        }
    }
    var wasKilled: Bool { data.withLock { $0.killed } }
    func clearEvents() { data.withLock { $0.events = [] } }
}

/// A store that calls `hook` before each operation named, as another writer racing the
/// engine would (a hook may write the store through another handle).
actor HookedStore: RemoteStore {
    nonisolated let userRecordName: String
    nonisolated let storeID: String
    let inner: any RemoteStore
    var hook: (@Sendable (String) async -> Void)?

    init(_ inner: any RemoteStore) {
        self.inner = inner
        userRecordName = inner.userRecordName
        storeID = inner.storeID
    }

    func setHook(_ hook: (@Sendable (String) async -> Void)?) { self.hook = hook }

    private func call(_ name: String) async { await hook?(name) }

    func databaseChanges(scope: DatabaseScope, since token: ServerChangeToken?, resultsLimit: Int) async throws(RecSyncError) -> DatabaseChanges {
        await call("databaseChanges")
        return try await inner.databaseChanges(scope: scope, since: token, resultsLimit: resultsLimit)
    }

    func recordZoneChanges(zone: ZoneID, since token: ServerChangeToken?, resultsLimit: Int, desiredKeys: [String]?) async throws(RecSyncError)
        -> RecordZoneChanges
    {
        await call("recordZoneChanges")
        return try await inner.recordZoneChanges(zone: zone, since: token, resultsLimit: resultsLimit, desiredKeys: desiredKeys)
    }

    func modifyRecords(saving: [Record], deleting: [RecordDeletion], savePolicy: SavePolicy, atomically: Bool, clientChangeTokenData: String?)
        async throws(RecSyncError) -> ModifyRecordsResult
    {
        await call("modifyRecords")
        return try await inner.modifyRecords(
            saving: saving, deleting: deleting, savePolicy: savePolicy, atomically: atomically, clientChangeTokenData: clientChangeTokenData)
    }

    func modifyRecordZones(_ operations: [ZoneOperation]) async throws(RecSyncError) -> [ZoneOperationResult] {
        await call("modifyRecordZones")
        return try await inner.modifyRecordZones(operations)
    }

    func fetchAllRecordZones(scope: DatabaseScope) async throws(RecSyncError) -> [RecordZone] {
        try await inner.fetchAllRecordZones(scope: scope)
    }

    @discardableResult
    func publishUserPublicKey(_ key: [UInt8], signingKey: [UInt8]) async throws(RecSyncError) -> UserPublicKey {
        try await inner.publishUserPublicKey(key, signingKey: signingKey)
    }

    func fetchUserPublicKey(_ user: String) async throws(RecSyncError) -> UserPublicKey? {
        try await inner.fetchUserPublicKey(user)
    }

    func fetchZoneDeletions(_ zoneIDs: [ZoneID]) async throws(RecSyncError) -> [ZoneDeletion] {
        try await inner.fetchZoneDeletions(zoneIDs)
    }

    func currentDatabaseToken(scope: DatabaseScope) async throws(RecSyncError) -> ServerChangeToken {
        try await inner.currentDatabaseToken(scope: scope)
    }

    func checkSubscriptions(_ subscriptions: [Subscription], scope: DatabaseScope, since token: ServerChangeToken?) async throws(RecSyncError)
        -> SubscriptionCheck
    {
        try await inner.checkSubscriptions(subscriptions, scope: scope, since: token)
    }

    func fetchRecords(_ ids: [RecordID], desiredKeys: [String]?) async throws(RecSyncError) -> [RecordResult] {
        await call("fetchRecords")
        return try await inner.fetchRecords(ids, desiredKeys: desiredKeys)
    }

    func uploadAsset(fd: Int32, path: String, for recordID: RecordID, field: String) async throws(RecSyncError) -> AssetReference {
        try await inner.uploadAsset(fd: fd, path: path, for: recordID, field: field)
    }

    func downloadAsset(_ asset: AssetReference, zone: ZoneID, fd: Int32, path: String) async throws(RecSyncError) {
        try await inner.downloadAsset(asset, zone: zone, fd: fd, path: path)
    }

    func fetchRecordVersion(_ id: RecordID, changeTag: String) async throws(RecSyncError) -> Record? {
        try await inner.fetchRecordVersion(id, changeTag: changeTag)
    }
}

/// Runs a send the store refuses part of, and returns the refusals its `partialFailure`
/// names (an issue is recorded when it throws anything else, or nothing).
func refusedBySend(_ engine: RecordSyncEngine, sourceLocation: SourceLocation = #_sourceLocation) async -> PartialFailure? {
    do {
        try await engine.sendChanges()
    } catch {
        if case .partialFailure(let failure) = error.reason { return failure }
        Issue.record("the send failed: \(error)", sourceLocation: sourceLocation)
        return nil
    }
    Issue.record("the send refused nothing", sourceLocation: sourceLocation)
    return nil
}

/// A suite whose apps (`KillableApp`) run their engines on one in-memory store, with
/// alice's zones `zone` ("notes") and `other`.
protocol AppsOnOneStore {
    var storage: MemoryStorage { get }
    var zone: ZoneID { get }
    var other: ZoneID { get }
}

extension AppsOnOneStore {
    func store(_ user: String = "alice", device: String) throws -> MemoryStore {
        MemoryStore(storage: storage, actor: try StoreActor(userRecordName: user, deviceID: device))
    }

    func engine(_ app: KillableApp, device: String, store given: (any RemoteStore)? = nil, options: RecordSyncEngine.Options = .manual) throws
        -> RecordSyncEngine
    {
        try RecordSyncEngine(store: given ?? store(device: device), state: app.savedState, delegate: app, options: options)
    }

    func id(_ name: String, in zoneID: ZoneID? = nil) throws -> RecordID { try RecordID(recordName: name, zoneID: zoneID ?? zone) }

    /// What the store holds now, every zone of alice's, as fields by record.
    func storeContents() async throws -> [RecordID: [String: FieldValue]] {
        try await store(device: "observer").readableContents()
    }

    /// Seeds the store through an engine of its own: `zone` and `other`, with records.
    func seed(_ names: [String: [String]]) async throws {
        let writer = KillableApp()
        let e = try engine(writer, device: "seed")
        try await e.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: zone)), .saveZone(RecordZone(zoneID: other))])
        for (zoneName, records) in names {
            let z = zoneName == zone.zoneName ? zone : other
            for name in records {
                try writer.edit(id(name, in: z), ["v": .string(name)])
                try await e.add(pendingRecordZoneChanges: [.saveRecord(id(name, in: z))])
            }
        }
        try await e.sendChanges()
    }
}
