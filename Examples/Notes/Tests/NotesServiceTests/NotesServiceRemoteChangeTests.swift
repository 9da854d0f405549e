import Foundation
import NotesService
import RecSyncModel
import RecSyncStore
import Synchronization
import Testing

/// A store that runs `hook` once, before the next record write: another device's sync and
/// the user's own edits landing while this device's send is out.
actor HookedStore: RemoteStore {
    nonisolated let userRecordName: String
    nonisolated let storeID: String
    let inner: any RemoteStore
    var hook: (@Sendable () async throws -> Void)?
    var hookError: (any Error)?

    init(_ inner: any RemoteStore) {
        self.inner = inner
        userRecordName = inner.userRecordName
        storeID = inner.storeID
    }

    func beforeNextRecordWrite(_ hook: @escaping @Sendable () async throws -> Void) { self.hook = hook }

    func databaseChanges(scope: DatabaseScope, since token: ServerChangeToken?, resultsLimit: Int) async throws(RecSyncError) -> DatabaseChanges {
        try await inner.databaseChanges(scope: scope, since: token, resultsLimit: resultsLimit)
    }

    func recordZoneChanges(zone: ZoneID, since token: ServerChangeToken?, resultsLimit: Int, desiredKeys: [String]?) async throws(RecSyncError)
        -> RecordZoneChanges
    {
        try await inner.recordZoneChanges(zone: zone, since: token, resultsLimit: resultsLimit, desiredKeys: desiredKeys)
    }

    func modifyRecords(
        saving: [RecSyncModel.Record], deleting: [RecordDeletion], savePolicy: SavePolicy, atomically: Bool, clientChangeTokenData: String?
    ) async throws(RecSyncError) -> ModifyRecordsResult {
        if let hook {
            self.hook = nil
            do { try await hook() } catch { hookError = error }
        }
        return try await inner.modifyRecords(
            saving: saving, deleting: deleting, savePolicy: savePolicy, atomically: atomically, clientChangeTokenData: clientChangeTokenData)
    }

    func modifyRecordZones(_ operations: [ZoneOperation]) async throws(RecSyncError) -> [ZoneOperationResult] {
        try await inner.modifyRecordZones(operations)
    }

    func fetchAllRecordZones(scope: DatabaseScope) async throws(RecSyncError) -> [RecordZone] {
        try await inner.fetchAllRecordZones(scope: scope)
    }

    func fetchZoneDeletions(_ zoneIDs: [ZoneID]) async throws(RecSyncError) -> [ZoneDeletion] {
        try await inner.fetchZoneDeletions(zoneIDs)
    }

    func publishUserPublicKey(_ key: [UInt8], signingKey: [UInt8]) async throws(RecSyncError) -> UserPublicKey {
        try await inner.publishUserPublicKey(key, signingKey: signingKey)
    }

    func fetchUserPublicKey(_ user: String) async throws(RecSyncError) -> UserPublicKey? {
        try await inner.fetchUserPublicKey(user)
    }

    nonisolated var maxAssetBytes: Int64 { inner.maxAssetBytes }

    func uploadAsset(fd: Int32, path: String, for recordID: RecordID, field: String) async throws(RecSyncError) -> AssetReference {
        try await inner.uploadAsset(fd: fd, path: path, for: recordID, field: field)
    }

    func downloadAsset(_ asset: AssetReference, zone: ZoneID, fd: Int32, path: String) async throws(RecSyncError) {
        try await inner.downloadAsset(asset, zone: zone, fd: fd, path: path)
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
        try await inner.fetchRecords(ids, desiredKeys: desiredKeys)
    }

    func fetchRecordVersion(_ id: RecordID, changeTag: String) async throws(RecSyncError) -> RecSyncModel.Record? {
        try await inner.fetchRecordVersion(id, changeTag: changeTag)
    }
}

/// The notes service when changes made elsewhere (another device, the store's owner) land
/// while it syncs or between its syncs: edits racing a send, its zone reset, deleted and
/// restored.
@Suite struct NotesServiceRemoteChangeTests {
    let directory: String
    let storePath: String

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("notes-remote-change-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        storePath = directory + "/store.git"
        try NotesService.createStore(at: storePath, user: "alice")
    }

    func open(_ name: String) throws -> any RemoteStore {
        try NotesService.openStore(storePath, user: "alice", databasePath: "\(directory)/\(name).sqlite", device: name)
    }

    func device(_ name: String, store: (any RemoteStore)? = nil) async throws -> NotesService {
        try await NotesService(databasePath: "\(directory)/\(name).sqlite", store: store ?? open(name), automaticallySync: false)
    }

    var zone: ZoneID { get throws { try ZoneID(zoneName: "notes", ownerName: "alice") } }

    /// A note both devices have, and the laptop with a hooked store.
    func twoDevicesWithANote() async throws -> (HookedStore, NotesService, NotesService, String) {
        let hooked = HookedStore(try open("laptop"))
        let laptop = try await device("laptop", store: hooked)
        let phone = try await device("phone")
        let note = try await laptop.add(title: "title", body: "body")
        try await laptop.sync()
        try await phone.sync()
        return (hooked, laptop, phone, note)
    }

    @Test func aNoteDeletedWhileItsConflictingSaveIsOutStaysDeleted() async throws {
        let (hooked, laptop, phone, note) = try await twoDevicesWithANote()
        try await laptop.edit(note, title: "laptop")
        await hooked.beforeNextRecordWrite {
            try await phone.edit(note, body: "phone")
            try await phone.sync()
            try await laptop.delete(note)
        }
        try await laptop.sync()
        #expect(await hooked.hookError == nil)
        try await laptop.sync()
        try await phone.sync()
        #expect(try await laptop.notes().isEmpty, "the deleted note came back")
        #expect(try await phone.notes().isEmpty)
    }

    @Test func anEditMadeWhileItsConflictingSaveIsOutIsKept() async throws {
        let (hooked, laptop, phone, note) = try await twoDevicesWithANote()
        try await laptop.edit(note, title: "laptop")
        await hooked.beforeNextRecordWrite {
            try await phone.edit(note, body: "phone")
            try await phone.sync()
            try await laptop.edit(note, title: "laptop, later")
        }
        try await laptop.sync()
        #expect(await hooked.hookError == nil)
        try await laptop.sync()
        try await phone.sync()
        let want = [Note(id: note, title: "laptop, later", body: "phone")]
        #expect(try await laptop.notes() == want)
        #expect(try await phone.notes() == want)
    }

    @Test func notesOfAZoneResetForItsEncryptedDataAreKeptAndUploadedAgain() async throws {
        let laptop = try await device("laptop")
        try await laptop.add(title: "a", body: "")
        try await laptop.add(title: "b", body: "")
        try await laptop.sync()
        _ = try await open("admin").modifyRecordZones([.markEncryptedDataReset(zone)])
        try await laptop.sync()
        #expect(try await laptop.notes().map(\.title) == ["a", "b"])
        let phone = try await device("phone")
        try await phone.sync()
        #expect(try await phone.notes().map(\.title) == ["a", "b"], "the laptop uploaded its notes again")
        #expect(try await laptop.pendingChanges() == 0)
    }

    @Test func aNoteDeletedHereBeforeItsZoneWentArrivesWhenTheZoneIsRestored() async throws {
        let laptop = try await device("laptop")
        let id = try await laptop.add(title: "kept", body: "")
        try await laptop.sync()
        try await laptop.sync()  // the laptop has fetched its zone: it learns of its deletion from a fetch
        try await laptop.delete(id)
        let admin = try open("admin")
        _ = try await admin.modifyRecordZones([.delete(zone)])
        try await laptop.sync()
        #expect(try await laptop.notes().isEmpty)
        // Restored from a backup: the zone and the note are back.
        _ = try await admin.modifyRecordZones([.recreate(RecordZone(zoneID: zone))])
        let restored = try RecSyncModel.Record(
            recordID: RecordID(recordName: id, zoneID: zone), recordType: "Note", fields: ["title": .string("kept"), "body": .string("")])
        _ = try await admin.modifyRecords(saving: [restored])
        try await laptop.sync()
        #expect(try await laptop.notes().map(\.title) == ["kept"], "a deletion the zone took with it still hid the note")
    }
}
