import RecSyncEngine
import RecSyncEngineFixtures
import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import RecSyncWorkspace
import Testing

/// `SyncEngine.restore(_:from:)` and `restore(zone:from:)`: older versions put into record
/// files as local edits, read from a git store's history.
@Suite struct RestoreRevisionTests {
    let notes = Build.zone("notes")

    func engine(_ fixture: StoreFixture, _ dir: TempDirectory, _ name: String) throws -> SyncEngine {
        let ws = try Workspace.create(at: dir.file(name), config: WorkspaceConfig(user: "alice", remote: fixture.path))
        let store = try GitStore(path: fixture.path, actor: StoreActor(userRecordName: "alice", deviceID: try ws.deviceID()))
        return SyncEngine(workspace: ws, store: store)
    }

    @Test func aRecordsOlderVersionIsALocalEditAndAZoneGoesBackWhole() async throws {
        let fixture = try StoreFixture(.git)
        let dir = TempDirectory("restore-revision")
        let laptop = try engine(fixture, dir, "laptop")
        let a = Build.id("a", in: notes), b = Build.id("b", in: notes), c = Build.id("c", in: notes)
        try laptop.workspace.put(a, fields: ["v": .int64(1)], type: "Note")
        try laptop.workspace.put(b, fields: ["v": .int64(1)], type: "Note")
        _ = try await laptop.push()
        let history = try #require(laptop.store as? any StoreHistory)
        let first = try #require(try await history.log(limit: 1, zone: nil).first)
        try laptop.workspace.put(a, fields: ["v": .int64(2)])
        try laptop.workspace.put(c, fields: ["v": .int64(1)], type: "Note")
        _ = try laptop.workspace.removeRecord(b)
        _ = try await laptop.push()

        // One record, ~1 back: written as an edit; the store is not touched.
        let head = try await history.log(limit: 1, zone: nil).first
        let one = try await laptop.restore([a], from: .versionsBack(1))
        #expect(one == [RestoreOutcome(recordID: a, undone: nil, written: .modified, commit: first.commit)])
        #expect(try laptop.workspace.recordFields(a) == ["v": .int64(1)])
        #expect(try await laptop.status().changes.map(\.recordID) == [a])
        #expect(try await history.log(limit: 1, zone: nil).first == head)

        // The zone at the first commit: b back (new: the store deleted it), c removed.
        let zone = try await laptop.restore(zone: notes, from: .commit(String(first.commit.prefix(8))))
        #expect(zone.map(\.written) == [nil, .new, .deleted])
        #expect(try laptop.workspace.systemFields(b)?.recordType == "Note", "the type comes back with the record")
        _ = try await laptop.push()
        let phone = try engine(fixture, dir, "phone")
        _ = try await phone.pull()
        #expect(try phone.workspace.records(in: notes).map(\.fields) == [["v": .int64(1)], ["v": .int64(1)]])
        #expect(try phone.workspace.recordFields(c) == nil)
    }

    @Test func aStoreWithoutHistoryIsRefused() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        let a = Build.id("a", in: notes)
        try laptop.workspace.put(a, fields: ["v": .int64(1)])
        await #expect(throws: RecSyncError.self) { _ = try await laptop.restore([a], from: .versionsBack(0)) }
        do {
            _ = try await laptop.restore(zone: notes, from: .current)
            Issue.record("restored from a store that keeps no history")
        } catch {
            #expect(error.kind == .unsupported)
        }
    }
}
