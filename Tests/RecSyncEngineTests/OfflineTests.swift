import Foundation
import RecSyncEngine
import RecSyncEngineFixtures
import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import RecSyncWorkspace
import Testing

/// A workspace away from its store: when it last reached it, and its status without it.
@Suite struct OfflineTests {
    @Test func pullsAndPushesThatWorkNoteTheContactAndFailuresDoNot() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        #expect(try laptop.workspace.lastContact() == nil)
        #expect(try await laptop.status().lastContact == nil)

        let beforePull = StoreActor.systemClock()
        _ = try await laptop.pull()
        let pulled = try #require(try laptop.workspace.lastContact())
        #expect(pulled >= beforePull && pulled <= StoreActor.systemClock())

        try laptop.write("notes", "a", #"{"v": 1}"#)
        try await Task.sleep(nanoseconds: 5_000_000)
        _ = try await laptop.push()
        let pushed = try #require(try laptop.workspace.lastContact())
        #expect(pushed > pulled)
        #expect(try await laptop.status().lastContact == pushed)

        // A push that fails leaves the time of the last one that worked.
        try laptop.write("notes", "b", #"{"v": 2}"#)
        let failing = SyncEngine(workspace: laptop.workspace, store: FaultInjectingStore(laptop.store, fault: .beforeWrite))
        #expect(await pushError(failing) != nil)
        #expect(try laptop.workspace.lastContact() == pushed)

        // A damaged note is reported, not taken for a time.
        try writeFile(laptop.workspace.lastContactPath, "yesterday\n")
        let status = try await laptop.status()
        #expect(status.lastContact == nil)
        #expect(
            status.problems.contains { $0.path.contains("last-contact") && $0.message.contains("the next pull or push writes it again") },
            "\(status.problems)")
        _ = try await laptop.pull()
        #expect(try laptop.workspace.lastContact() != nil)
    }

    @Test func statusWithoutTheStoreShowsTheWorkspaceAlone() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        try laptop.write("notes", "a", #"{"v": 1}"#)
        _ = try await laptop.push()
        let contact = try laptop.workspace.lastContact()

        try laptop.write("notes", "a", #"{"v": 2}"#)
        try laptop.write("notes", "b", #"{"v": 3}"#)
        try laptop.write("drafts", "c", #"{"v": 4}"#)
        let down = RecSyncError.networkUnavailable("cannot reach git://example.invalid/store.git")
        let offline = try await SyncEngine.offlineStatus(workspace: laptop.workspace, storeError: down)
        let online = try await laptop.status()
        #expect(offline.storeError == down.message && online.storeError == nil)
        #expect(offline.lastContact == contact && online.lastContact == contact)
        #expect(offline.changes.map(\.path) == online.changes.map(\.path), "\(offline.changes) vs \(online.changes)")
        #expect(offline.changes.map(\.kind) == online.changes.map(\.kind))
        #expect(offline.newZones == [zone("drafts")] && online.newZones == [zone("drafts")])
        #expect(offline.conflicts.isEmpty && offline.problems.isEmpty, "\(offline.problems)")
    }
}
