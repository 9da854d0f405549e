import Foundation
import RecSyncEngine
import RecSyncEngineFixtures
import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import RecSyncWorkspace
import Testing

/// `SyncEngine.diff`: record files against the versions they were synced at.
@Suite struct DiffTests {
    let r = Build.id("r", in: zone("notes"))

    @Test func everyChangedRecordIsListedWithItsFieldChanges() async throws {
        let f = EngineFixture()
        defer { withExtendedLifetime(f) {} }
        let laptop = try f.device("laptop")
        try laptop.write("notes", "r", #"{"title": "t", "body": "b"}"#)
        try laptop.write("notes", "gone", #"{"x": 1}"#)
        try laptop.write("notes", "same", #"{"x": 1}"#)
        _ = try await laptop.push()
        try laptop.write("notes", "r", #"{"title": "t2"}"#)
        try laptop.write("notes", "new", #"{"n": true}"#)
        try FileManager.default.removeItem(atPath: laptop.path("notes", "gone"))

        let diffs = try await laptop.diff()
        #expect(diffs.map(\.recordID.recordName) == ["gone", "new", "r"])
        #expect(diffs.map(\.state) == [.deleted, .new, .modified])
        #expect(diffs[1].changes == [FieldChange(key: "n", old: nil, new: .boolean(true))])
        #expect(
            diffs[2].changes == [
                FieldChange(key: "body", old: .string("b"), new: nil),
                FieldChange(key: "title", old: .string("t"), new: .string("t2")),
            ])
        #expect(try await laptop.diff([Build.id("same", in: zone("notes"))]).map(\.state) == [.unchanged])
    }

    @Test func aConflictShowsBothSidesSinceTheAncestor() async throws {
        let f = EngineFixture()
        defer { withExtendedLifetime(f) {} }
        let (_, phone) = try await f.twoDevicesWithAConflict()

        let diffs = try await phone.diff()
        #expect(
            diffs == [
                RecordDiff(
                    recordID: r, state: .conflict,
                    changes: [FieldChange(key: "body", old: .string("b"), new: .string("phone"))],
                    theirs: [FieldChange(key: "title", old: .string("t"), new: .string("laptop"))])
            ])
    }

    @Test func aRecordWithNoFileAndNoSyncedVersionIsAnError() async throws {
        let f = EngineFixture()
        defer { withExtendedLifetime(f) {} }
        let laptop = try f.device("laptop")
        await #expect(throws: RecSyncError.notFound("no record file at private/notes/r.json")) {
            _ = try await laptop.diff([r])
        }
    }

    @Test func aRecordFileThatDoesNotDecodeIsAnErrorNamingIt() async throws {
        let f = EngineFixture()
        defer { withExtendedLifetime(f) {} }
        let laptop = try f.device("laptop")
        try laptop.write("notes", "r", "{not json")
        do {
            _ = try await laptop.diff([r])
            Issue.record("diff read a broken file")
        } catch {
            guard case .malformed(let m) = error.reason else { Issue.record("\(error)"); return }
            #expect(m.path == "private/notes/r.json")
            #expect(m.line == 1 && m.column == 2, "where the JSON breaks: \(m)")
        }
    }
}
