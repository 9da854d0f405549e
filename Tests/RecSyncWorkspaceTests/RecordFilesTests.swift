import RecSyncModel
import RecSyncTestSupport
import RecSyncWorkspace
import Testing

/// `Workspace.recordFields` and `systemFields`: the one way to read a record's files.
@Suite struct RecordFilesTests {
    let dir = TempDirectory("record-files")
    let ws: Workspace
    let id = Build.id("r1", in: Build.zone("notes"))

    init() throws {
        ws = try Workspace.create(at: dir.file("ws"), config: WorkspaceConfig(user: "alice", remote: "memory"))
    }

    @Test func aMissingRecordHasNeitherFieldsNorSystemFields() throws {
        #expect(try ws.recordFields(id) == nil)
        #expect(try ws.systemFields(id) == nil)
    }

    @Test func readsTheFieldsAndTheSidecar() throws {
        try writeFile(ws.recordPath(id), #"{"title": "hi", "n": 2}"#)
        let system = SystemFields(recordID: id, recordType: "Note", changeTag: "abc", created: nil, modified: nil)
        try writeFile(ws.sidecarPath(id), String(decoding: WorkspaceEncoding.encodeSystemFields(system), as: UTF8.self))
        #expect(try ws.recordFields(id) == ["title": .string("hi"), "n": .int64(2)])
        #expect(try ws.systemFields(id)?.changeTag == "abc")
        #expect(try ws.systemFields(id)?.recordType == "Note")
    }

    @Test func aRecordFileThatIsNotRecordJSONIsAnErrorNamingIt() throws {
        try writeFile(ws.recordPath(id), "[1, 2")
        #expect {
            _ = try ws.recordFields(id)
        } throws: { error in
            // The file, and where in it the JSON breaks.
            guard let e = error as? RecSyncError, case .malformed(let m) = e.reason else { return false }
            return m.path == "private/notes/r1.json" && m.line == 1 && m.column == 6
        }
    }

    @Test func aDamagedSidecarIsAnErrorNamingItAndTheRemedy() throws {
        try writeFile(ws.sidecarPath(id), "{}")
        #expect {
            _ = try ws.systemFields(id)
        } throws: { error in
            guard let e = error as? RecSyncError, case .malformed(let m) = e.reason, let path = m.path else { return false }
            let message = m.detail
            return path == "private/notes/.system/r1.json" && message.contains("the sidecar is damaged") && message.contains("delete it")
        }
    }

    /// A sidecar as a pull leaves it: the record is synced at `tag`.
    func markSynced(type: String = "Note", tag: String = "t1") throws {
        let system = SystemFields(recordID: id, recordType: type, changeTag: tag, created: nil, modified: nil)
        try writeFile(ws.sidecarPath(id), String(decoding: WorkspaceEncoding.encodeSystemFields(system), as: UTF8.self))
    }

    @Test func putWritesANewRecordCanonicallyWithItsTypeNote() throws {
        #expect(try ws.put(id, fields: ["b": .int64(1), "a": .string("x")], type: "Note") == .new)
        #expect(readFile(ws.recordPath(id)) == String(decoding: WorkspaceEncoding.encodeFields(["a": .string("x"), "b": .int64(1)]), as: UTF8.self))
        let note = try #require(try ws.systemFields(id))
        #expect(note.recordType == "Note" && note.changeTag == nil)
    }

    @Test func putWithoutATypeWritesNoSidecar() throws {
        #expect(try ws.put(id, fields: ["a": .int64(1)]) == .new)
        #expect(try ws.systemFields(id) == nil)
    }

    @Test func putOfASyncedRecordIsModifiedOrRestored() throws {
        try markSynced()
        #expect(try ws.put(id, fields: ["a": .int64(1)]) == .restored)
        #expect(try ws.put(id, fields: ["a": .int64(2)]) == .modified)
        #expect(try ws.recordFields(id) == ["a": .int64(2)])
        #expect(try ws.systemFields(id)?.changeTag == "t1")
    }

    @Test func putRefusesToChangeASyncedRecordsTypeAndWritesNothing() throws {
        try markSynced(type: "Note")
        #expect(throws: RecSyncError.self) { try ws.put(id, fields: ["a": .int64(1)], type: "Task") }
        #expect(try ws.recordFields(id) == nil)
    }

    @Test func putRefusesFieldsAPushWouldRefuse() throws {
        #expect(throws: RecSyncError.self) { try ws.put(id, fields: ["a": .string(String(repeating: "x", count: 2 << 20))]) }
        #expect(throws: RecSyncError.self) { try ws.put(id, fields: ["a": .int64(1)], type: "not a type!") }
        #expect(try ws.recordFields(id) == nil)
    }

    @Test func putOfANameTooLongForAFileNeedsAType() throws {
        let long = try RecordID(recordName: String(repeating: "n", count: 255), zoneID: Build.zone("notes"))
        #expect(throws: RecSyncError.self) { try ws.put(long, fields: ["a": .int64(1)]) }
        #expect(try ws.put(long, fields: ["a": .int64(1)], type: "Note") == .new)
        #expect(try ws.systemFields(long)?.recordID == long)
    }

    @Test func removingANeverPushedRecordTakesItsTypeNoteToo() throws {
        try ws.put(id, fields: ["a": .int64(1)], type: "Note")
        #expect(try ws.removeRecord(id) == false)
        #expect(try ws.recordFields(id) == nil)
        #expect(try ws.systemFields(id) == nil)
    }

    @Test func removingASyncedRecordKeepsItsSidecarForThePush() throws {
        try markSynced()
        try ws.put(id, fields: ["a": .int64(1)])
        #expect(try ws.removeRecord(id) == true)
        #expect(try ws.recordFields(id) == nil)
        #expect(try ws.systemFields(id)?.changeTag == "t1")
    }

    @Test func removingARecordWithNoFileIsAnError() throws {
        try markSynced()
        #expect(throws: RecSyncError.notFound("no record file at private/notes/r1.json")) { try ws.removeRecord(id) }
    }
}
