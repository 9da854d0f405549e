import RecSyncModel
import RecSyncTestSupport
import RecSyncWorkspace
import Testing

/// `Workspace.record(named:from:)` and `zone(named:from:)`: how people name records and zones.
@Suite struct RecordNamesTests {
    let dir = TempDirectory("record-names")
    let ws: Workspace

    init() throws {
        ws = try Workspace.create(at: dir.file("ws"), config: WorkspaceConfig(user: "alice", remote: "memory"))
    }

    @Test func aRecordIsNamedByZoneAndNameOrByItsFileOrSidecar() throws {
        let id = Build.id("a/b", in: Build.zone("notes"))
        #expect(try ws.record(named: "notes/a/b", from: ws.root) == id)
        #expect(try ws.record(named: "private/notes/a%2Fb.json", from: ws.root) == id)
        #expect(try ws.record(named: "notes/a%2Fb.json", from: "\(ws.root)/private") == id)
        #expect(try ws.record(named: "private/notes/.system/a%2Fb.json", from: ws.root) == id)
        #expect(try ws.record(named: "shared/bob/recipes/r.json", from: ws.root) == Build.id("r", in: Build.zone("recipes", owner: "bob")))
    }

    @Test func aLongNameIsFoundThroughItsSidecar() throws {
        let long = try RecordID(recordName: String(repeating: "n", count: 255), zoneID: Build.zone("notes"))
        try ws.put(long, fields: [:], type: "Note")
        #expect(try ws.record(named: ws.recordPath(long), from: "/") == long)
    }

    @Test func somethingThatIsNotARecordIsAnError() {
        #expect(throws: RecSyncError.self) { try ws.record(named: "nothing-here", from: ws.root) }
        #expect(throws: RecSyncError.self) { try ws.record(named: "elsewhere/notes/r.json", from: ws.root) }
    }

    @Test func aZoneIsNamedByNameOrDirectory() throws {
        #expect(try ws.zone(named: "notes", from: ws.root) == Build.zone("notes"))
        #expect(try ws.zone(named: "private/notes", from: ws.root) == Build.zone("notes"))
        #expect(try ws.zone(named: "shared/bob/recipes", from: ws.root) == Build.zone("recipes", owner: "bob"))
        #expect(throws: RecSyncError.self) { try ws.zone(named: "private/notes/r.json", from: ws.root) }
        #expect(ws.namesZone("notes", from: ws.root))
        #expect(!ws.namesZone("notes/r", from: ws.root))
    }
}
