import Foundation
import RecSyncEngine
import RecSyncEngineFixtures
import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import RecSyncWorkspace
import Testing

/// `SyncEngine.initialize` (recsync init) and `changeZone` (recsync zone create/delete/purge).
@Suite struct WorkspaceSetupTests {
    @Test func initCreatesSetsTheRemoteLaterAndTurnsOnSnapshots() throws {
        let fixture = try StoreFixture(.git)
        let dir = fixture.directory.file("ws")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let alice = { () throws(RecSyncError) in "alice" }

        // A store that is not there: nothing is made.
        #expect(throws: RecSyncError.self) {
            try SyncEngine.initialize(at: dir, remote: fixture.directory.file("nope.git"), user: alice, commitSnapshots: false)
        }
        #expect(FileManager.default.fileExists(atPath: dir + "/.recsync") == false)

        guard case .created(let ws, let remote) = try SyncEngine.initialize(at: dir, remote: nil, user: alice, commitSnapshots: false) else {
            Issue.record("not created"); return
        }
        #expect(remote.isEmpty && ws.user == "alice")
        guard case .remoteSet(let set, _) = try SyncEngine.initialize(at: dir, remote: fixture.path, user: alice, commitSnapshots: false) else {
            Issue.record("remote not set"); return
        }
        #expect(try Workspace.find(from: dir).config.remote == fixture.path && set.config.remote == fixture.path)
        // Once set, the remote is not replaced, and a workspace does not nest.
        #expect(throws: RecSyncError.self) { try SyncEngine.initialize(at: dir, remote: fixture.path, user: alice, commitSnapshots: false) }
        try FileManager.default.createDirectory(atPath: dir + "/inner", withIntermediateDirectories: true)
        #expect(throws: RecSyncError.self) { try SyncEngine.initialize(at: dir + "/inner", remote: nil, user: alice, commitSnapshots: false) }
        guard case .snapshotsEnabled = try SyncEngine.initialize(at: dir, remote: nil, user: alice, commitSnapshots: true) else {
            Issue.record("snapshots not enabled"); return
        }
        #expect(try Workspace.find(from: dir).config.commitSnapshots == true)
    }

    @Test func onlyAZonesOwnerChangesItAndThePullFollows() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        try laptop.write("notes", "a", #"{"n": 1}"#)
        _ = try await laptop.push()
        _ = try await laptop.pull()
        await #expect(throws: RecSyncError.self) {
            _ = try await laptop.changeZone(.delete(zone("notes", owner: "bob")), verb: "delete")
        }
        var applied = false
        let report = try await laptop.changeZone(.delete(zone("notes")), verb: "delete", applied: { applied = true })
        #expect(applied)
        #expect(report.zonesRemoved.map(\.zoneID) == [zone("notes")])
        #expect(!laptop.workspace.hasZoneDirectory(zone("notes")))
    }
}

/// A zone made here and pushed, never pulled, that goes away on the store: the next pull
/// removes it (status says so), keeping unpushed edits in lost+found. It used to take a push.
@Suite struct TokenlessZoneTests {
    @Test func aPushedNeverPulledZoneDeletedOnTheStoreIsRemovedByThePull() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        try laptop.write("notes", "a", #"{"n": 1}"#)
        _ = try await laptop.push()
        _ = try await f.store("alice", deviceID: "admin").modifyRecordZones([.delete(zone("notes"))])
        try laptop.write("notes", "a", #"{"n": 2}"#)  // an edit not pushed
        #expect(try await laptop.status().problems.contains { $0.description.contains("the next pull or push removes it") })
        let report = try await laptop.pull()
        #expect(report.zonesRemoved.map(\.zoneID) == [zone("notes")])
        #expect(!laptop.workspace.hasZoneDirectory(zone("notes")))
        #expect(report.lostAndFound.count == 1, "the unpushed edit is kept: \(report.lostAndFound)")
        // A zone that is new here (never pushed) is left alone.
        try laptop.write("fresh", "b", #"{"n": 1}"#)
        _ = try await laptop.pull()
        #expect(laptop.workspace.hasZoneDirectory(zone("fresh")))
        #expect(try await laptop.status().newZones == [zone("fresh")])
    }
}
