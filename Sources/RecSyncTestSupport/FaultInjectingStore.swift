import RecSyncModel
import RecSyncStore

/// A `RemoteStore` that forwards to another and can fail around a write the way a killed
/// process does: before the write is sent, or after the store committed it but before the
/// caller heard back. It also logs what every write landed, for tests that model the store.
public actor FaultInjectingStore: RemoteStore {
    /// Where the next write fails.
    public enum Fault: String, Sendable, Hashable, CaseIterable {
        /// The write is never sent.
        case beforeWrite
        /// The store committed the write; the caller is killed before it hears so.
        case afterWrite
    }

    /// One record write the store committed: the fields saved, or nil for a deletion.
    public struct Landed: Sendable, Hashable {
        public var recordID: RecordID
        public var fields: [String: FieldValue]?
    }

    public nonisolated let userRecordName: String
    public nonisolated let storeID: String
    public let inner: any RemoteStore
    /// Fails the next record or zone write this way (then clears itself).
    public var fault: Fault?
    /// Record writes that landed, oldest first.
    public private(set) var landed: [Landed] = []
    /// The files uploaded as assets through this handle, oldest first.
    public private(set) var assetUploads: [String] = []
    /// Zones created through this handle.
    public private(set) var zonesCreated: [ZoneID] = []
    /// How many times a scope's zones were listed through this handle (`fetchAllRecordZones`).
    public private(set) var zoneListings = 0
    /// The zones whose record changes were read through this handle (`recordZoneChanges`), in order.
    public private(set) var zoneChangesRead: [ZoneID] = []
    /// How many records were asked for by ID through this handle (`fetchRecords`).
    public private(set) var recordsFetchedByID = 0
    /// How many of the next zone listings fail, as a dropped connection would.
    public private(set) var failingZoneListings = 0
    /// Called with the operation's name as `fetchRecordVersion` or `downloadAsset` begins:
    /// for tests that change the workspace while an operation is under way.
    public private(set) var hook: (@Sendable (String) -> Void)?

    public init(_ inner: any RemoteStore, fault: Fault? = nil) {
        self.inner = inner
        self.fault = fault
        userRecordName = inner.userRecordName
        storeID = inner.storeID
    }

    /// How many of the next calls that read or write records or zones fail, as a dropped
    /// connection would, before reaching the store.
    public private(set) var failingCalls = 0
    /// The next record or zone write lands, and its answer is lost (a connection that dropped
    /// after the store committed).
    public private(set) var losingAnswer = false
    /// Calls that failed through `failNextCalls` or `loseNextAnswer`.
    public private(set) var droppedCalls = 0

    public func setFault(_ fault: Fault?) { self.fault = fault }

    public func failNextCalls(_ count: Int) { failingCalls = count }

    /// Zones whose changes fail to read, with the error given, until cleared with nil.
    public private(set) var failingZones: [ZoneID: RecSyncError] = [:]

    public func failZone(_ zone: ZoneID, with error: RecSyncError?) { failingZones[zone] = error }

    /// Zones whose creation the store refuses, with the error given, until cleared with nil:
    /// a save or recreate of one fails alone, the other operations of the call go through.
    public private(set) var refusedZoneSaves: [ZoneID: RecSyncError] = [:]

    public func refuseZoneSaves(_ zone: ZoneID, with error: RecSyncError?) { refusedZoneSaves[zone] = error }

    public func loseNextAnswer() { losingAnswer = true }

    private func drop(_ call: String) throws(RecSyncError) {
        guard failingCalls > 0 else { return }
        failingCalls -= 1
        droppedCalls += 1
        throw .networkFailure("simulated: the connection dropped during \(call)")
    }

    private func loseAnswer(_ call: String) throws(RecSyncError) {
        guard losingAnswer else { return }
        losingAnswer = false
        droppedCalls += 1
        throw .networkFailure("simulated: the connection dropped after the store committed \(call)")
    }

    public func failZoneListings(_ count: Int) { failingZoneListings = count }

    public func setHook(_ hook: (@Sendable (String) -> Void)?) { self.hook = hook }

    private func fail(_ point: Fault) throws(RecSyncError) {
        guard fault == point else { return }
        fault = nil
        throw .internalError("simulated crash \(point == .beforeWrite ? "before a write was sent" : "after the store committed a write")")
    }

    public func databaseChanges(scope: DatabaseScope, since token: ServerChangeToken?, resultsLimit: Int) async throws(RecSyncError)
        -> DatabaseChanges
    {
        try drop("databaseChanges")
        return try await inner.databaseChanges(scope: scope, since: token, resultsLimit: resultsLimit)
    }

    public func recordZoneChanges(zone: ZoneID, since token: ServerChangeToken?, resultsLimit: Int, desiredKeys: [String]?) async throws(RecSyncError)
        -> RecordZoneChanges
    {
        try drop("recordZoneChanges")
        zoneChangesRead.append(zone)
        if let error = failingZones[zone] { throw error }
        return try await inner.recordZoneChanges(zone: zone, since: token, resultsLimit: resultsLimit, desiredKeys: desiredKeys)
    }

    public func modifyRecords(saving: [Record], deleting: [RecordDeletion], savePolicy: SavePolicy, atomically: Bool, clientChangeTokenData: String?)
        async throws(RecSyncError) -> ModifyRecordsResult
    {
        try drop("modifyRecords")
        try fail(.beforeWrite)
        let result = try await inner.modifyRecords(
            saving: saving, deleting: deleting, savePolicy: savePolicy, atomically: atomically, clientChangeTokenData: clientChangeTokenData)
        for item in result.saveResults {
            if case .success(let stored) = item.result { landed.append(Landed(recordID: stored.recordID, fields: stored.fields)) }
        }
        for item in result.deleteResults {
            if case .success = item.result { landed.append(Landed(recordID: item.recordID, fields: nil)) }
        }
        try fail(.afterWrite)
        try loseAnswer("modifyRecords")
        return result
    }

    public func modifyRecordZones(_ operations: [ZoneOperation]) async throws(RecSyncError) -> [ZoneOperationResult] {
        try drop("modifyRecordZones")
        try fail(.beforeWrite)
        let refusal = { [refusedZoneSaves] (operation: ZoneOperation) -> RecSyncError? in
            switch operation {
            case .save(let zone), .recreate(let zone), .uploadAfterReset(let zone): refusedZoneSaves[zone.zoneID]
            default: nil
            }
        }
        let sent = operations.filter { refusal($0) == nil }
        var answered = sent.isEmpty ? [] : try await inner.modifyRecordZones(sent)
        answered.reverse()
        let results = operations.map { operation in
            refusal(operation).map { ZoneOperationResult(operation: operation, result: .failure($0)) } ?? answered.removeLast()
        }
        for r in results {
            switch (r.operation, r.result) {
            case (.save(let zone), .success), (.recreate(let zone), .success), (.uploadAfterReset(let zone), .success):
                zonesCreated.append(zone.zoneID)
            default: break
            }
        }
        try fail(.afterWrite)
        try loseAnswer("modifyRecordZones")
        return results
    }

    public func fetchAllRecordZones(scope: DatabaseScope) async throws(RecSyncError) -> [RecordZone] {
        zoneListings += 1
        try drop("fetchAllRecordZones")
        if failingZoneListings > 0 {
            failingZoneListings -= 1
            throw .networkFailure("simulated: the connection dropped while the zones were listed")
        }
        return try await inner.fetchAllRecordZones(scope: scope)
    }

    @discardableResult
    public func publishUserPublicKey(_ key: [UInt8], signingKey: [UInt8]) async throws(RecSyncError) -> UserPublicKey {
        try await inner.publishUserPublicKey(key, signingKey: signingKey)
    }

    public func fetchUserPublicKey(_ user: String) async throws(RecSyncError) -> UserPublicKey? {
        try await inner.fetchUserPublicKey(user)
    }

    public func fetchZoneDeletions(_ zoneIDs: [ZoneID]) async throws(RecSyncError) -> [ZoneDeletion] {
        try drop("fetchZoneDeletions")
        return try await inner.fetchZoneDeletions(zoneIDs)
    }

    public func currentDatabaseToken(scope: DatabaseScope) async throws(RecSyncError) -> ServerChangeToken {
        try await inner.currentDatabaseToken(scope: scope)
    }

    public func checkSubscriptions(_ subscriptions: [Subscription], scope: DatabaseScope, since token: ServerChangeToken?) async throws(RecSyncError)
        -> SubscriptionCheck
    {
        try await inner.checkSubscriptions(subscriptions, scope: scope, since: token)
    }

    public func fetchRecords(_ ids: [RecordID], desiredKeys: [String]?) async throws(RecSyncError) -> [RecordResult] {
        try drop("fetchRecords")
        recordsFetchedByID += ids.count
        return try await inner.fetchRecords(ids, desiredKeys: desiredKeys)
    }

    public nonisolated var maxAssetBytes: Int64 { inner.maxAssetBytes }

    public func uploadAsset(fd: Int32, path: String, for recordID: RecordID, field: String) async throws(RecSyncError) -> AssetReference {
        assetUploads.append(path)
        return try await inner.uploadAsset(fd: fd, path: path, for: recordID, field: field)
    }

    public func downloadAsset(_ asset: AssetReference, zone: ZoneID, fd: Int32, path: String) async throws(RecSyncError) {
        hook?("downloadAsset")
        try await inner.downloadAsset(asset, zone: zone, fd: fd, path: path)
    }

    public func fetchRecordVersion(_ id: RecordID, changeTag: String) async throws(RecSyncError) -> Record? {
        hook?("fetchRecordVersion")
        return try await inner.fetchRecordVersion(id, changeTag: changeTag)
    }

    public func beginOperation(fromLastLook: Bool) async { await inner.beginOperation(fromLastLook: fromLastLook) }

    public func endOperation() async { await inner.endOperation() }
}
