import RecSyncModel
import RecSyncSystem
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

    @Test func aSharedRecordIsNamedByOwnerZoneAndName() throws {
        // Only once the shared zone is in the workspace; before, the first part is the zone.
        #expect(try ws.record(named: "bob/recipes/r", from: ws.root) == Build.id("recipes/r", in: Build.zone("bob")))
        try FileIO.makeDirectories("\(ws.root)/shared/bob/recipes")
        #expect(try ws.record(named: "bob/recipes/r", from: ws.root) == Build.id("r", in: Build.zone("recipes", owner: "bob")))
        #expect(try ws.zone(named: "bob/recipes", from: ws.root) == Build.zone("recipes", owner: "bob"))
        // An own zone named like the owner wins.
        try FileIO.makeDirectories("\(ws.root)/private/bob")
        #expect(try ws.record(named: "bob/recipes/r", from: ws.root) == Build.id("recipes/r", in: Build.zone("bob")))
    }

    @Test func pathsAreReadFromTheCurrentDirectoryThenTheRoot() throws {
        try FileIO.makeDirectories("\(ws.root)/private/notes")
        let id = Build.id("r", in: Build.zone("notes"))
        #expect(try ws.record(named: "r.json", from: "\(ws.root)/private/notes") == id)
        #expect(try ws.record(named: "private/notes/r.json", from: "\(ws.root)/private/notes") == id)
        #expect(try ws.zone(named: "private/notes", from: "\(ws.root)/private/notes") == Build.zone("notes"))
    }

    @Test func printedPathsAreRelativeToTheDirectoryFoundFrom() throws {
        try FileIO.makeDirectories("\(ws.root)/private/notes")
        let here = try Workspace.find(from: "\(ws.root)/private/notes")
        #expect(here.relative("\(ws.root)/private/notes/r.json") == "r.json")
        #expect(here.relative("\(ws.root)/private/todo/r.json") == "../todo/r.json")
        #expect(here.relative("\(ws.root)/private/notes") == ".")
        #expect(here.rootRelative("\(ws.root)/private/todo/r.json") == "private/todo/r.json")
        #expect(here.relative("/elsewhere/x") == "/elsewhere/x")
        #expect(ws.relative("\(ws.root)/private/notes/r.json") == "private/notes/r.json")
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
        #expect(try ws.namesZone("notes", from: ws.root))
        #expect(try !ws.namesZone("notes/r", from: ws.root))
    }
}
