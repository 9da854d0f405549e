import Foundation
import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import Testing

/// `StoreLocation`: one reading of a store's address for the command line and the library.
@Suite struct StoreLocationTests {
    @Test func networkLocationsGoThroughAMirrorAndFileURLsDoNot() {
        for remote in [
            "ssh://git@host/srv/store.git", "git@github.com:me/store.git", "host:store.git", "https://host/x.git", "git://127.0.0.1:9418/s.git",
        ] {
            #expect(StoreLocation.isNetwork(remote), "\(remote)")
        }
        for local in ["file:///srv/store.git", "/srv/store.git", "store.git", "./a:b", "dir/with:colon", ""] {
            #expect(!StoreLocation.isNetwork(local), "\(local)")
        }
    }

    @Test func localLocationsBecomePaths() throws {
        #expect(try StoreLocation.storePath("file:///srv/my%20store.git", relativeTo: "/home/a") == "/srv/my store.git")
        #expect(try StoreLocation.storePath("../s.git", relativeTo: "/home/a/w") == "/home/a/s.git")
        #expect(try StoreLocation.normalized("file:///srv/s.git", relativeTo: "/x") == "file:///srv/s.git")
        #expect(try StoreLocation.normalized("ssh://h/s.git", relativeTo: "/x") == "ssh://h/s.git")
        #expect(StoreLocation.defaultDirectoryName("git@host:team/notes.git/") == "notes")
        // An unknown scheme was taken for a network remote, and failed later, obscurely.
        #expect(throws: RecSyncError.self) { try StoreLocation.normalized("ftp://host/s.git", relativeTo: "/x") }
        #expect(throws: RecSyncError.self) { try StoreLocation.storePath("file://relative/s.git", relativeTo: "/x") }
        #expect(throws: RecSyncError.self) { try StoreLocation.storePath("ssh://h/s.git", relativeTo: "/x") }
    }
}

/// `GitStore.withStore`: one look at a store; a network one leaves no mirror behind.
@Suite struct OneLookTests {
    func mirrors() -> Set<String> {
        Set(
            ((try? FileManager.default.contentsOfDirectory(atPath: FileManager.default.temporaryDirectory.path)) ?? []).filter {
                $0.hasPrefix("recsync-look-")
            })
    }

    @Test func aNetworkStoreIsReadThroughAMirrorThatGoesAwayAfterwards() async throws {
        let fixture = try StoreFixture(.network)
        let daemon = try #require(fixture.daemon)
        let before = mirrors()
        let zones = try await GitStore.withStore(at: daemon.url("store.git"), relativeTo: "/", actor: StoreActor(userRecordName: "alice")) {
            store throws(RecSyncError) in
            #expect(!mirrors().subtracting(before).isEmpty, "read through a mirror")
            return try await store.fetchAllRecordZones(scope: .private)
        }
        #expect(zones.isEmpty)
        #expect(mirrors().subtracting(before).isEmpty, "and it is gone")
        // A failing look removes it too, and reports the look's error.
        await #expect(throws: RecSyncError.zoneNotFound(Build.zone("nope"))) {
            _ = try await GitStore.withStore(at: daemon.url("store.git"), relativeTo: "/", actor: StoreActor(userRecordName: "alice")) {
                store throws(RecSyncError) in
                try await store.recordZoneChanges(zone: Build.zone("nope"), since: nil)
            }
        }
        #expect(mirrors().subtracting(before).isEmpty)
    }
}
