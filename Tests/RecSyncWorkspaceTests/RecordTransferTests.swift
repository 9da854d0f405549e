import RecSyncModel
import RecSyncSystem
import RecSyncTestSupport
import RecSyncWorkspace
import Testing

/// `Workspace.importRecords` and `exportRecords`: many records in, and out again.
@Suite struct RecordTransferTests {
    let dir = TempDirectory("record-transfer")
    let ws: Workspace
    let zone = Build.zone("todo")

    init() throws {
        ws = try Workspace.create(at: dir.file("ws"), config: WorkspaceConfig(user: "alice", remote: "memory"))
    }

    func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func importsJSONLinesWithTypesAndCountsWhatChanged() throws {
        let input = bytes(#"{"id": "a", "n": 1, "due": {"$date": "2026-11-22T10:00:00.000Z"}}"# + "\n" + #"{"id": 7, "ok": true}"# + "\n")
        let report = try ws.importRecords(
            input, into: zone, options: ImportOptions(format: .jsonl, idField: "id", recordType: "Item"), source: "in.jsonl")
        #expect(report.created.map(\.recordName) == ["a", "7"])
        #expect(try ws.recordFields(Build.id("a", in: zone)) == ["n": .int64(1), "due": .timestamp(1_795_341_600_000)])
        #expect(try ws.systemFields(Build.id("7", in: zone))?.recordType == "Item")
        let again = try ws.importRecords(input, into: zone, options: ImportOptions(format: .jsonl, idField: "id"), source: "in.jsonl")
        #expect(again.unchanged.count == 2 && again.created.isEmpty)
    }

    @Test func aBadLineIsMalformedWithItsLineAndNothingIsWritten() throws {
        let input = bytes("{\"id\": \"a\"}\n\n{\"id\": \"b\", \"x\": }\n")
        do {
            _ = try ws.importRecords(input, into: zone, options: ImportOptions(format: .jsonl, idField: "id"), source: "in.jsonl")
            Issue.record("imported a bad line")
        } catch {
            guard case .malformed(let m) = error.reason else { Issue.record("\(error)"); return }
            #expect(m.path == "in.jsonl" && m.line == 3)
        }
        #expect(!FileIO.isDirectory(ws.zoneDirectory(zone)))
    }

    @Test func aTypeCannotChange() throws {
        try ws.put(Build.id("a", in: zone), fields: [:], type: "Item")
        #expect(throws: RecSyncError.self) {
            try ws.importRecords(
                bytes("{\"id\": \"a\"}\n"), into: zone, options: ImportOptions(format: .jsonl, idField: "id", recordType: "Other"), source: "x")
        }
    }

    @Test func exportIsSortedAndReadBackByImport() throws {
        let csv = bytes("k,t\nb,\"x, \"\"y\"\"\"\na,z\n")
        try ws.importRecords(csv, into: zone, options: ImportOptions(format: .csv, idField: "k"), source: "in.csv")
        let out = String(decoding: try ws.exportRecords(of: zone, format: .csv, system: true), as: UTF8.self)
        #expect(out == "recordName,zone,owner,recordType,changeTag,created,modified,t\na,todo,alice,,,,,z\nb,todo,alice,,,,,\"x, \"\"y\"\"\"\n")
        let other = Build.zone("other")
        try ws.importRecords(Array(out.utf8), into: other, options: ImportOptions(format: .csv, systemColumns: true), source: "out.csv")
        #expect(try ws.records(in: other).map(\.fields) == ws.records(in: zone).map(\.fields))
        #expect(throws: RecSyncError.self) { try ws.exportRecords(of: Build.zone("none"), format: .jsonl, system: false) }
    }
}
