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
        let out = String(decoding: try ws.exportRecords(of: zone, options: ExportOptions(format: .csv, system: true)), as: UTF8.self)
        #expect(out == "recordName,zone,owner,recordType,changeTag,created,modified,t\na,todo,alice,,,,,z\nb,todo,alice,,,,,\"x, \"\"y\"\"\"\n")
        let other = Build.zone("other")
        try ws.importRecords(Array(out.utf8), into: other, options: ImportOptions(format: .csv, systemColumns: true), source: "out.csv")
        #expect(try ws.records(in: other).map(\.fields) == ws.records(in: zone).map(\.fields))
        #expect(throws: RecSyncError.self) { try ws.exportRecords(of: Build.zone("none"), options: ExportOptions(format: .jsonl)) }
    }

    /// Import after export gives the same records: the same names and the same fields, of
    /// every type, in both formats, with names under the default key and under another.
    @Test(arguments: [RecordFileFormat.jsonl, .csv], [nil, "id"])
    func importOfAnExportIsTheSameRecords(format: RecordFileFormat, key: String?) throws {
        var g = SeededRandom(seed: 20_261_128)
        var names = Set<String>()
        for _ in 0..<150 {
            var record = RecordGenerator.record(using: &g, zoneID: zone)
            record.fields[key ?? "recordName"] = nil
            guard names.insert(record.recordID.recordName).inserted else { continue }
            try ws.put(record.recordID, fields: record.fields, type: "Item")
        }
        for (i, text) in ["42", "true", "null", "", "\"q\"", "[1]", " 7 ", "007", "a, b", "x\ny", "-0", "1e5"].enumerated() {
            try ws.put(Build.id("s\(i)", in: zone), fields: ["s": .string(text), "l": .list([.string(text)])], type: "Item")
        }
        let out = try ws.exportRecords(of: zone, options: ExportOptions(format: format, nameKey: key ?? "recordName"))
        let copy = Build.zone("copy")
        let report = try ws.importRecords(out, into: copy, options: ImportOptions(format: format, idField: key), source: "out")
        #expect(report.created.count == names.count + 12)
        let original = try ws.records(in: zone), copied = try ws.records(in: copy)
        #expect(copied.map(\.recordID.recordName) == original.map(\.recordID.recordName))
        for (a, b) in zip(original, copied) where a.fields != b.fields {
            Issue.record("\(a.recordID.recordName): \(a.fields) came back as \(b.fields)")
        }
        // And the copy exports to the same bytes.
        #expect(try ws.exportRecords(of: copy, options: ExportOptions(format: format, nameKey: key ?? "recordName")) == out)
    }

    @Test func aFieldNamedLikeTheNameKeyIsRefusedOnExport() throws {
        try ws.put(Build.id("a", in: zone), fields: ["recordName": .string("b")], type: "Item")
        do {
            _ = try ws.exportRecords(of: zone, options: ExportOptions(format: .jsonl))
            Issue.record("exported a field that the name would hide")
        } catch {
            #expect(error.kind == .invalidArguments && error.message.contains("'recordName'"))
            #expect(error.remedies == [.nameRecordsByAnotherKey])
        }
        #expect(
            try ws.exportRecords(of: zone, options: ExportOptions(format: .jsonl, nameKey: "id")) == bytes(#"{"id":"a","recordName":"b"}"# + "\n"))
        #expect(try ws.exportRecords(of: zone, options: ExportOptions(format: .jsonl, nameKey: nil)) == bytes(#"{"recordName":"b"}"# + "\n"))
    }

    @Test func csvCellsAreReadAsJSONUnlessStringsAreAsked() throws {
        let csv = bytes("recordName,n,s,q\na,42,Dune,\"\"\"42\"\"\"\n")
        try ws.importRecords(csv, into: zone, options: ImportOptions(format: .csv), source: "in.csv")
        #expect(try ws.recordFields(Build.id("a", in: zone)) == ["n": .int64(42), "s": .string("Dune"), "q": .string("42")])
        let plain = Build.zone("plain")
        try ws.importRecords(csv, into: plain, options: ImportOptions(format: .csv, plainStrings: true), source: "in.csv")
        #expect(try ws.recordFields(Build.id("a", in: plain)) == ["n": .string("42"), "s": .string("Dune"), "q": .string("\"42\"")])
    }
}
