import RecSyncModel
import Testing

/// Errors a script or a library user can tell apart: the kind, and where for malformed input.
@Suite struct ErrorKindTests {
    func caught(_ body: () throws -> Void) -> RecSyncError? {
        do { try body() } catch { return error as? RecSyncError }
        return nil
    }

    @Test func brokenJSONIsMalformedWithLineAndColumn() throws {
        let error = caught { _ = try JSON.parse(Array("{\n  \"a\": 1,\n  \"b\": ]\n}".utf8)) }
        guard case .malformed(let m) = error?.reason else { Issue.record("\(String(describing: error))"); return }
        #expect(m.line == 3 && m.column == 8, "\(m)")
        #expect(m.path == nil)
        #expect(error?.message.hasPrefix("line 3, column 8: ") == true)
        let located = try #require(error?.located(at: "private/notes/r.json"))
        #expect(located.message.hasPrefix("private/notes/r.json: line 3, column 8: "))
        let json = located.json
        guard case .object(let o) = json else { Issue.record("not an object"); return }
        #expect(o["kind"] == JSONValue.string("malformed") && o["code"] == JSONValue.int(12))
        #expect(o["path"] == JSONValue.string("private/notes/r.json") && o["line"] == JSONValue.int(3) && o["column"] == JSONValue.int(8))
    }

    @Test func aConflictHandsOutItsVersionsAndARecordItsDates() throws {
        let zone = try ZoneID(zoneName: "z", ownerName: "alice")
        let id = try RecordID(recordName: "r", zoneID: zone)
        let created = ChangeStamp(timestamp: 1_700_000_000_250, userRecordName: "alice")
        let modified = ChangeStamp(timestamp: 1_700_000_060_000, userRecordName: "bob")
        let server = try Record(recordID: id, recordType: "Note", fields: ["v": .int64(2)], changeTag: "t2", created: created, modified: modified)
        let client = try Record(recordID: id, recordType: "Note", fields: ["v": .int64(3)], changeTag: "t1")
        let ancestor = try Record(recordID: id, recordType: "Note", fields: ["v": .int64(1)], changeTag: "t1")
        let conflict = RecSyncError.serverRecordChanged(RecordConflict(recordID: id, server: server, client: client, ancestor: ancestor))
        #expect(conflict.serverRecord == server && conflict.clientRecord == client && conflict.ancestorRecord == ancestor)
        #expect(RecSyncError.zoneNotFound(zone).serverRecord == nil)
        #expect(server.creationDate?.timeIntervalSince1970 == 1_700_000_000.25)
        #expect(server.modificationDate?.timeIntervalSince1970 == 1_700_000_060)
        #expect(server.creatorUserRecordName == "alice" && server.lastModifiedUserRecordName == "bob")
        #expect(client.creationDate == nil && client.modificationDate == nil)
    }

    @Test func namesAndValuesHaveKindsOfTheirOwn() {
        #expect(caught { _ = try ZoneID(zoneName: "a/b", ownerName: "alice") }?.kind == .invalidName)
        #expect(caught { _ = try RecordID(recordName: "_x", zoneID: ZoneID(zoneName: "z", ownerName: "alice")) }?.kind == .invalidName)
        #expect(caught { try FieldValue.double(.nan).validate(key: "n") }?.kind == .invalidValue)
        #expect(caught { _ = try WorkspaceEncoding.decodeSystemFields(Array("{}".utf8)) }?.kind == .malformed)
        #expect(caught { _ = try WorkspaceEncoding.decodeFields(Array("{\"a\": 1e999}".utf8)) }?.code == .invalidArguments)
        // Every new kind keeps CloudKit's code, so code-based callers see no change.
        for kind in [RecSyncError.invalidName("x"), .invalidValue("x"), .malformedInput("x")] {
            #expect(kind.code == .invalidArguments)
        }
    }

    @Test func aBadFieldKeyOrValueInAFileIsMalformedThere() {
        let key = caught { _ = try WorkspaceEncoding.decodeFields(Array("{\"bad key\": 1}".utf8)) }
        #expect(key?.kind == .invalidName)
        guard case .malformed(let m) = key?.located(at: "private/notes/r.json").reason else { Issue.record("\(String(describing: key))"); return }
        #expect(m.path == "private/notes/r.json" && m.detail == key?.message)
        #expect(RecSyncError.invalidValue("v").located(at: "p").kind == .malformed)
    }

    @Test func aDecodingErrorLocatedAtAFileOtherThanMalformedBecomesAFileSystemError() {
        let error = RecSyncError.limitExceeded("too big").located(at: "private/notes/r.json")
        #expect(error == .fileSystem(path: "private/notes/r.json", message: "too big"))
    }

    /// The shape of swift-nio's FileSystemError: where it was made, what failed underneath,
    /// and a stable kind, none of which changes what the error means.
    @Test func anErrorRecordsWhereItWasMadeAndWhatFailedUnderneath() throws {
        func refuse() throws(RecSyncError) { throw .storeBusy("busy") }
        let line = #line - 1
        let busy = try #require(caught { try refuse() })
        #expect(busy.location.file == "RecSyncModelTests/ErrorKindTests.swift" && busy.location.line == line, "\(busy.location)")
        #expect(busy.location.function.hasPrefix("refuse"))
        #expect(busy == RecSyncError.storeBusy("busy"), "made elsewhere, the same error")
        #expect(Set([busy, .storeBusy("busy")]).count == 1)
        #expect(busy != RecSyncError.storeBusy("other") && busy.cause == nil)
        #expect(busy.kind == .storeBusy && busy.kind.rawValue == "storeBusy" && "\(busy.kind)" == "storeBusy")
        #expect(RecSyncError.Kind.allCases.count == Set(RecSyncError.Kind.allCases.map(\.rawValue)).count)

        let disk = RecSyncError.fileSystem(path: "p", message: "m", cause: SystemCallFailure(call: "open", errno: 13))
        #expect(disk.cause == .systemCall(SystemCallFailure(call: "open", errno: 13)))
        let failure = LibraryFailure(library: "libgit2", function: "git_odb_read", code: -3, errorClass: 9, message: "object not found")
        let git = RecSyncError.internalError("cannot read", cause: failure)
        #expect(git.cause == .library(failure))
        // A bug report needs the place; a script's document of any other error stays as it was.
        guard case .object(let o) = git.json, case .string(let place)? = o["location"] else { Issue.record("\(git.json)"); return }
        #expect(place.hasPrefix("RecSyncModelTests/ErrorKindTests.swift:"))
        guard case .object(let other) = busy.json else { Issue.record("\(busy.json)"); return }
        #expect(other["location"] == nil && Set(other.keys) == ["kind", "code", "message"])
    }
}
