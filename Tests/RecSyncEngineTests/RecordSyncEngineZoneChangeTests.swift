import Foundation
import RecSyncEngine
import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import RecSyncTestTraits
import Synchronization
import Testing

/// Writes records as another device of the zone's owner would.
struct OtherDevice {
    let storage: MemoryStorage

    func save(_ id: RecordID, _ value: String) async throws {
        let s = MemoryStore(storage: storage, actor: try StoreActor(userRecordName: id.zoneID.ownerName, deviceID: "writer"))
        var record: Record
        switch try await s.fetchRecords([id])[0].result {
        case .success(let stored): record = stored
        case .failure(let error) where error.kind == .unknownItem: record = try Record(recordID: id, recordType: "Note")
        case .failure(let error): throw error
        }
        record.fields = ["v": .string(value)]
        _ = try await s.modifyRecords(saving: [record])
    }
}

/// Zones that change under an app's engine: deleted, created again, reset or unshared
/// between its fetches (or during one), and saved again from a new device.
@Suite(.dedicatedThreads) struct RecordSyncEngineZoneChangeTests: AppsOnOneStore {
    let storage = MemoryStorage()
    let zone = Build.zone("notes")
    let other = Build.zone("other")

    @Test func aZoneDeletedBetweenTheListingAndItsFetchIsDroppedNextTime() async throws {
        try await seed([zone.zoneName: ["a", "b"], other.zoneName: ["o"]])
        let app = KillableApp()
        let hooked = HookedStore(try store(device: "b"))
        try await engine(app, device: "b", store: hooked).fetchChanges()
        try await OtherDevice(storage: storage).save(id("a"), "a2")
        let admin = try store(device: "admin")
        let zoneID = zone
        await hooked.setHook { name in
            guard name == "recordZoneChanges" else { return }
            _ = try? await admin.modifyRecordZones([.delete(zoneID)])
        }
        try await engine(app, device: "b", store: hooked).fetchChanges()
        await hooked.setHook(nil)
        try await engine(app, device: "b", store: hooked).fetchChanges()
        #expect(app.records.keys.allSatisfy { $0.zoneID == other })
        #expect(!app.savedState.knownZones.contains(zone))
        #expect(app.data.withLock { $0.zonesGone } == [ZoneDeletion(zoneID: zone, reason: .deleted)])
    }

    @Test func aZoneDeletedAndCreatedAgainBetweenFetchesLeavesNoOldRecord() async throws {
        try await seed([zone.zoneName: ["a", "b"]])
        let app = KillableApp()
        try await engine(app, device: "b").fetchChanges()
        let admin = try store(device: "admin")
        _ = try await admin.modifyRecordZones([.delete(zone)])
        _ = try await admin.modifyRecordZones([.recreate(RecordZone(zoneID: zone))])
        try await OtherDevice(storage: storage).save(id("c"), "c")
        try await engine(app, device: "b").fetchChanges()
        #expect(Set(app.records.keys) == [try id("c")])
    }

    @Test func aZoneNoLongerSharedIsDroppedByTheParticipant() async throws {
        try await seed([zone.zoneName: ["a"]])
        let alice = try store(device: "admin")
        try await alice.share(zone, with: "bob", permission: .readWrite)
        let bob = KillableApp()
        let eb = try RecordSyncEngine(store: store("bob", device: "bob"), state: bob.savedState, delegate: bob, options: .manual)
        try await eb.fetchChanges()
        #expect(bob.records.count == 1)
        try await alice.unshare(zone, with: "bob")
        try await eb.fetchChanges()
        #expect(bob.records.isEmpty)
        #expect(bob.savedState.knownZones.isEmpty)
    }

    /// An app's first sync fetches (nothing yet), then sends its new zone. Deleted or reset
    /// before the app's next fetch, that zone was in neither end of the database changes: the
    /// app never heard, and kept (or never uploaded again) what the store no longer had.
    @Test(arguments: [ZoneDeletionReason.deleted, .encryptedDataReset])
    func aZoneThisAppCreatedAndThatWentBeforeItsNextFetchIsReported(reason: ZoneDeletionReason) async throws {
        let app = KillableApp()
        let e = try engine(app, device: "app")
        try await e.fetchChanges()
        try app.edit(id("a"), ["v": .string("a")])
        try await e.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: zone))])
        try await e.add(pendingRecordZoneChanges: [.saveRecord(id("a"))])
        try await e.sendChanges()
        _ = try await store(device: "admin").modifyRecordZones([reason == .deleted ? .delete(zone) : .markEncryptedDataReset(zone)])
        // A restart in between: the state says what to ask about.
        try await engine(app, device: "app").fetchChanges()
        #expect(app.data.withLock { $0.fetchedDeletions } == [ZoneDeletion(zoneID: zone, reason: reason)])
        #expect(app.records.isEmpty == (reason == .deleted), "a reset keeps the local copy, a deletion drops it")
        try await engine(app, device: "app").fetchChanges()
        #expect(app.data.withLock { $0.fetchedDeletions }.count == 1, "reported once")
        #expect(app.savedState.knownZones.isEmpty)
    }

    /// The owner's encrypted-data reset of a zone shared with this app's user is a removal for
    /// the participant: only an owner can create the zone again, so its pending changes go
    /// with it (sending them could only fail), as for a deletion.
    @Test func aResetOfAZoneSharedWithTheAppDropsItLikeADeletion() async throws {
        try await seed([zone.zoneName: ["a"]])
        try await store(device: "admin").share(zone, with: "bob", permission: .readWrite)
        let app = KillableApp()
        let e = try engine(app, device: "bob-phone", store: store("bob", device: "bob-phone"))
        try await e.fetchChanges()
        #expect(app.records[try id("a")] != nil)
        try app.edit(id("a"), ["v": .string("bob's edit")])
        try await e.add(pendingRecordZoneChanges: [.saveRecord(id("a"))])
        _ = try await store(device: "admin").modifyRecordZones([.markEncryptedDataReset(zone)])
        try await e.fetchChanges()
        #expect(app.data.withLock { $0.fetchedDeletions } == [ZoneDeletion(zoneID: zone, reason: .encryptedDataReset)])
        #expect(app.data.withLock { $0.fetchedDeletions }.allSatisfy { !$0.keepsRecordsForUpload(by: "bob") })
        #expect(app.savedState.pendingRecordZoneChanges.isEmpty, "nothing left to send to a zone only its owner can bring back")
        try await e.sendChanges()
    }

    /// A new device of the owner makes sure its zone exists, as the documentation and the
    /// example app do: `.saveZone(RecordZone(zoneID:))`. That must not unshare the zone.
    @Test func aSaveZoneFromANewDeviceKeepsTheZoneShared() async throws {
        try await seed([zone.zoneName: ["a"]])
        try await store(device: "admin").share(zone, with: "bob", permission: .readWrite)
        let phone = KillableApp()
        let e = try engine(phone, device: "phone")
        try await e.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: zone))])
        try await e.sendChanges()
        var zones = try await store(device: "x").fetchAllRecordZones(scope: .private)
        #expect(zones.first { $0.zoneID == zone }?.participants.map(\.userRecordName) == ["bob"])
        #expect(phone.savedState.pendingDatabaseChanges.isEmpty)
        // A save that changes the zone's default type keeps its participants too.
        try await e.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: zone, defaultRecordType: "Note"))])
        try await e.sendChanges()
        zones = try await store(device: "x").fetchAllRecordZones(scope: .private)
        #expect(zones.first { $0.zoneID == zone }?.defaultRecordType == "Note")
        #expect(zones.first { $0.zoneID == zone }?.participants.map(\.userRecordName) == ["bob"])
    }

    /// An app stopped after a fetch removed an unshared zone but before it saved the scope
    /// token; the owner then shares the zone again as it was. On git the shared feed from the
    /// old token names nothing (the zone's entry is the same again): the engine fetches that
    /// zone whole anyway, since it noted the removal ahead of the scope token.
    @Test func aZoneRemovedByAStoppedFetchAndSharedAgainComesBack() async throws {
        let fixture = try StoreFixture(.git)
        let bob = try fixture.store(as: "bob")
        let diary = try ZoneID(zoneName: "diary", ownerName: "bob")
        _ = try await bob.modifyRecordZones([.save(RecordZone(zoneID: diary))])
        _ = try await bob.modifyRecords(
            saving: [try Record(recordID: RecordID(recordName: "d", zoneID: diary), recordType: "Note", fields: ["v": .int64(1)])], deleting: [])
        try await bob.share(diary, with: "alice", permission: .readWrite)

        let app = KillableApp()
        try await RecordSyncEngine(store: fixture.store(as: "alice"), state: app.savedState, delegate: app, options: .manual).fetchChanges()
        #expect(app.records.keys.map(\.zoneID) == [diary])

        try await bob.unshare(diary, with: "alice")
        let before = app.savedState.token(for: .shared)
        app.data.withLock {
            $0.onEvent = { event, _ in
                if case .stateUpdate(let state) = event, state.token(for: .shared) != before { throw KillableApp.Crash() }
            }
        }
        do {
            try await RecordSyncEngine(store: fixture.store(as: "alice"), state: app.savedState, delegate: app, options: .manual).fetchChanges()
            Issue.record("the app was to stop before saving the shared scope token")
        } catch {}
        #expect(app.records.isEmpty, "the unshared zone went")

        try await bob.share(diary, with: "alice", permission: .readWrite)
        app.data.withLock { $0.onEvent = nil }
        try await RecordSyncEngine(store: fixture.store(as: "alice"), state: app.savedState, delegate: app, options: .manual).fetchChanges()
        #expect(app.records.keys.map(\.recordName) == ["d"], "shared again: its record is back")
    }
}
