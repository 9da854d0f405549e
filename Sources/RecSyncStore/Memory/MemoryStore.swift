import RecSyncModel

/// An in-memory recsync store with the same semantics as `GitStore`, for engine tests.
///
/// Several handles (for several users, or to race each other) share one `MemoryStorage`.
public actor MemoryStore: RemoteStore {
    public nonisolated let userRecordName: String
    public nonisolated let storeID: String
    public nonisolated let storage: MemoryStorage
    let core: StoreCore<MemoryBackend>

    public init(storage: MemoryStorage = MemoryStorage(), actor: StoreActor) {
        self.storage = storage
        self.core = StoreCore(backend: MemoryBackend(storage: storage), actor: actor)
        self.userRecordName = actor.userRecordName
        self.storeID = storage.manifest.storeID
        self.maxAssetBytes = storage.manifest.assetLimit
    }

    public func databaseChanges(scope: DatabaseScope, since token: ServerChangeToken?, resultsLimit: Int) throws(RecSyncError) -> DatabaseChanges {
        try core.databaseChanges(scope: scope, since: token, resultsLimit: resultsLimit)
    }

    public func recordZoneChanges(zone: ZoneID, since token: ServerChangeToken?, resultsLimit: Int, desiredKeys: [String]?) throws(RecSyncError)
        -> RecordZoneChanges
    {
        try core.recordZoneChanges(zone: zone, since: token, resultsLimit: resultsLimit, desiredKeys: desiredKeys)
    }

    public func modifyRecords(saving: [Record], deleting: [RecordDeletion], savePolicy: SavePolicy, atomically: Bool, clientChangeTokenData: String?)
        throws(RecSyncError) -> ModifyRecordsResult
    {
        try core.modifyRecords(
            saving: saving, deleting: deleting, savePolicy: savePolicy, atomically: atomically, clientChangeTokenData: clientChangeTokenData)
    }

    public func modifyRecordZones(_ operations: [ZoneOperation]) throws(RecSyncError) -> [ZoneOperationResult] {
        try core.modifyRecordZones(operations)
    }

    public func fetchAllRecordZones(scope: DatabaseScope) throws(RecSyncError) -> [RecordZone] {
        try core.fetchAllRecordZones(scope: scope)
    }

    @discardableResult
    public func publishUserPublicKey(_ key: [UInt8], signingKey: [UInt8]) throws(RecSyncError) -> UserPublicKey {
        return try core.publishUserPublicKey(key, signingKey: signingKey)
    }

    public func fetchUserPublicKey(_ user: String) throws(RecSyncError) -> UserPublicKey? {
        return try core.fetchUserPublicKey(user)
    }

    public func fetchZoneDeletions(_ zoneIDs: [ZoneID]) throws(RecSyncError) -> [ZoneDeletion] {
        try core.fetchZoneDeletions(zoneIDs)
    }

    public func currentDatabaseToken(scope: DatabaseScope) throws(RecSyncError) -> ServerChangeToken {
        try core.currentDatabaseToken(scope: scope)
    }

    public func checkSubscriptions(_ subscriptions: [Subscription], scope: DatabaseScope, since token: ServerChangeToken?) throws(RecSyncError)
        -> SubscriptionCheck
    {
        try core.checkSubscriptions(subscriptions, scope: scope, since: token)
    }

    public func fetchRecords(_ ids: [RecordID], desiredKeys: [String]?) throws(RecSyncError) -> [RecordResult] {
        try core.fetchRecords(ids, desiredKeys: desiredKeys)
    }

    public nonisolated let maxAssetBytes: Int64

    public func uploadAsset(fd: Int32, path: String, for recordID: RecordID, field: String) throws(RecSyncError) -> AssetReference {
        try core.uploadAsset(fd: fd, path: path, for: recordID, field: field)
    }

    public func downloadAsset(_ asset: AssetReference, zone: ZoneID, fd: Int32, path: String) throws(RecSyncError) {
        try core.downloadAsset(asset, zone: zone, fd: fd, path: path)
    }

    public func fetchRecordVersion(_ id: RecordID, changeTag: String) throws(RecSyncError) -> Record? {
        try core.fetchRecordVersion(id, changeTag: changeTag)
    }
}
