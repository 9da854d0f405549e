import Foundation
import RecSyncEngine
import RecSyncEngineFixtures
import RecSyncModel
import RecSyncTestSupport
import RecSyncWorkspace
import Testing

/// A partial workspace's pull reads the record changes of the zones it tracks, and no others.
@Suite struct PartialPullTests {
    /// A laptop holding every zone, which pushed notes/a and work/b, and a phone that tracks
    /// only notes, through a store that logs which zones' changes it was asked for.
    func laptopAndPartialPhone(_ f: EngineFixture) async throws -> (laptop: SyncEngine, phone: SyncEngine, store: FaultInjectingStore) {
        let laptop = try f.device("laptop")
        try laptop.write("notes", "a", #"{"v": 1}"#)
        try laptop.write("work", "b", #"{"v": 1}"#)
        _ = try await laptop.push()
        let ws = try Workspace.create(at: f.directory.file("phone"), config: WorkspaceConfig(user: "alice", remote: "memory"))
        let store = FaultInjectingStore(try f.store("alice", deviceID: try ws.deviceID()))
        return (laptop, SyncEngine(workspace: try ws.trackingOnly(["notes"]), store: store), store)
    }

    @Test func onlyTheTrackedZonesAreRead() async throws {
        let f = EngineFixture()
        let (laptop, phone, store) = try await laptopAndPartialPhone(f)
        let first = try await phone.pull()
        #expect(first.zonesChanged == [zone("notes")])
        #expect(await store.zoneChangesRead == [zone("notes")])
        #expect(try phone.fields("notes", "a") == ["v": .int64(1)])
        #expect(!phone.workspace.hasZoneDirectory(zone("work")))

        try laptop.write("work", "c", #"{"v": 2}"#)
        try laptop.write("notes", "d", #"{"v": 2}"#)
        try laptop.write("later", "e", #"{"v": 2}"#)
        _ = try await laptop.push()
        _ = try await phone.pull()
        #expect(await store.zoneChangesRead == [zone("notes"), zone("notes")], "work and the new zone were not read")
        #expect(Set(phone.workspace.localZones().zones) == [zone("notes")])
    }

    @Test func aTrackedZoneIsFetchedWholeByTheNextPull() async throws {
        let f = EngineFixture()
        let (_, phone, store) = try await laptopAndPartialPhone(f)
        _ = try await phone.pull()
        let change = try SyncEngine.trackZones(["work"], all: false, in: phone.workspace, from: phone.workspace.root)
        #expect(change.changed)
        let tracking = SyncEngine(workspace: change.workspace, store: store)
        _ = try await tracking.pull()
        #expect(try tracking.fields("work", "b") == ["v": .int64(1)])
        // The zone held already is not read again whole: only the new one is listed.
        #expect(await store.zoneChangesRead.filter { $0 == zone("work") }.count == 1)

        // Untracked, then tracked again: fetched whole again, as the store has it.
        try tracking.write("work", "b", #"{"v": 9}"#)
        await #expect(throws: RecSyncError.self) {
            _ = try await SyncEngine.untrackZone("work", force: false, in: tracking.workspace, from: tracking.workspace.root)
        }
        // Nor while a stopped push is unsettled, even forced: a pull settles it first.
        try tracking.workspace.writePendingPushNote(Array("{}".utf8))
        await #expect(throws: RecSyncError.localChanges("a push was stopped before it finished; nothing was untracked")) {
            _ = try await SyncEngine.untrackZone("work", force: true, in: tracking.workspace, from: tracking.workspace.root)
        }
        try tracking.workspace.clearPendingPushNote()
        let untracked = try await SyncEngine.untrackZone("work", force: true, in: tracking.workspace, from: tracking.workspace.root)
        #expect(untracked.lostAndFound != nil)
        let again = try SyncEngine.trackZones(["work"], all: false, in: untracked.workspace, from: untracked.workspace.root)
        let back = SyncEngine(workspace: again.workspace, store: store)
        _ = try await back.pull()
        #expect(try back.fields("work", "b") == ["v": .int64(1)])
    }
}
