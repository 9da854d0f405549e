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
            guard let e = error as? RecSyncError, case .fileSystem(let path, _) = e else { return false }
            return path == "private/notes/r1.json"
        }
    }

    @Test func aDamagedSidecarIsAnErrorNamingItAndTheRemedy() throws {
        try writeFile(ws.sidecarPath(id), "{}")
        #expect {
            _ = try ws.systemFields(id)
        } throws: { error in
            guard let e = error as? RecSyncError, case .fileSystem(let path, let message) = e else { return false }
            return path == "private/notes/.system/r1.json" && message.contains("the sidecar is damaged") && message.contains("delete it")
        }
    }
}
