import RecSyncModel
import RecSyncTestSupport
import Synchronization
import Testing

@testable import RecSyncWorkspace

/// `Workspace.scan`: each file of a zone read as new, clean, modified or deleted against
/// its synced version, and what is not a record reported or left alone.
@Suite struct LocalChangesTests {
    let dir = TempDirectory("local-changes")
    let ws: Workspace
    let notes = Build.zone("notes")

    init() throws {
        ws = try Workspace.create(at: dir.file("ws"), config: WorkspaceConfig(user: "alice", remote: "memory"))
    }

    func id(_ name: String) -> RecordID { Build.id(name, in: notes) }

    /// A record as a pull leaves it: its file and a sidecar naming its change tag.
    func synced(_ name: String, _ json: String, tag: String, file: Bool = true) throws {
        let system = SystemFields(recordID: id(name), recordType: "Note", changeTag: tag, created: nil, modified: nil)
        try writeFile(ws.sidecarPath(id(name)), String(decoding: WorkspaceEncoding.encodeSystemFields(system), as: UTF8.self))
        if file { try writeFile(ws.recordPath(id(name)), json) }
    }

    /// A base lookup that answers from `versions` (by record name and tag) and counts its calls.
    final class Store: Sendable {
        let versions: [String: [String: FieldValue]]
        let calls = Atomic<Int>(0)
        init(_ versions: [String: [String: FieldValue]]) { self.versions = versions }
        var lookup: Workspace.BaseLookup {
            { id, tag in
                self.calls.add(1, ordering: .relaxed)
                return self.versions["\(id.recordName)@\(tag)"]
            }
        }
    }

    func states(_ scan: ZoneScan) -> [String: LocalRecord.State] {
        Dictionary(uniqueKeysWithValues: scan.records.map { ($0.recordID.recordName, $0.state) })
    }

    @Test func eachFileIsReadAsNewCleanModifiedOrDeleted() async throws {
        try writeFile(ws.recordPath(id("fresh")), #"{"title": "new"}"#)
        try synced("same", #"{"title": "kept"}"#, tag: "t1")
        try synced("edited", #"{"title": "changed here"}"#, tag: "t1")
        try synced("gone", "", tag: "t1", file: false)
        try synced("unknown-base", #"{"title": "x"}"#, tag: "t9")
        let store = Store(["same@t1": ["title": .string("kept")], "edited@t1": ["title": .string("as synced")]])
        let scan = try await ws.scan(zone: notes, base: store.lookup)
        #expect(
            states(scan) == ["fresh": .new, "same": .clean, "edited": .modified, "gone": .deleted, "unknown-base": .modified],
            "\(states(scan))")
        #expect(scan.problems.isEmpty && scan.untracked.isEmpty)
        #expect(Set(scan.changes.map(\.recordID.recordName)) == ["fresh", "edited", "gone", "unknown-base"])
        let edited = try #require(scan.records.first { $0.recordID.recordName == "edited" })
        #expect(edited.knownTag == "t1" && edited.fields == ["title": .string("changed here")] && edited.system?.recordType == "Note")
        let gone = try #require(scan.records.first { $0.recordID.recordName == "gone" })
        #expect(gone.fields == nil && gone.fileStamp == nil && gone.knownTag == "t1")
    }

    @Test func aCleanRecordIsVouchedForByTheIndexWithoutAskingTheStoreAgain() async throws {
        try synced("same", #"{"n": 1}"#, tag: "t1")
        let store = Store(["same@t1": ["n": .int64(1)]])
        var scan = try await ws.scan(zone: notes, base: store.lookup)
        #expect(states(scan) == ["same": .clean] && store.calls.load(ordering: .relaxed) == 1)
        try scan.index.save()
        // The store no longer has the version: the index alone says it is unchanged.
        let forgetful = Store([:])
        let again = try await ws.scan(zone: notes, base: forgetful.lookup)
        #expect(states(again) == ["same": .clean])
        #expect(forgetful.calls.load(ordering: .relaxed) == 0)
        #expect(try await ws.scan(zone: notes, base: forgetful.lookup, changesOnly: true).records.isEmpty)
        // An edit is seen even though the index had vouched for the file before.
        try writeFile(ws.recordPath(id("same")), #"{"n": 2}"#)
        #expect(states(try await ws.scan(zone: notes, base: store.lookup, changesOnly: true)) == ["same": .modified])
    }

    @Test func fieldsSetToNullAreDeletionsToPush() async throws {
        try synced("r", #"{"keep": 1, "drop": null}"#, tag: "t1")
        let store = Store(["r@t1": ["keep": .int64(1), "drop": .int64(2)]])
        let scan = try await ws.scan(zone: notes, base: store.lookup)
        let record = try #require(scan.records.first)
        #expect(record.state == .modified && record.deletedFields == ["drop"] && record.fields == ["keep": .int64(1)])
    }

    @Test func filesThatAreNoRecordsAreUntrackedIgnoredOrProblems() async throws {
        try writeFile("\(ws.root)/.recsyncignore", "*.tmp\nscratch/\n")
        let zoneDir = ws.zoneDirectory(notes)
        try writeFile("\(zoneDir)/README", "about these notes")
        try writeFile("\(zoneDir)/draft.tmp", "ignored")
        try writeFile("\(zoneDir)/scratch/x.json", "{}")
        try writeFile("\(zoneDir)/other/y.json", "{}")
        try writeFile("\(zoneDir)/.hidden.json", "{}")
        try writeFile("\(zoneDir)/_hashed.json", "{}")
        try writeFile("\(zoneDir)/broken.json", "{not json")
        let scan = try await ws.scan(zone: notes, base: Store([:]).lookup)
        #expect(scan.records.isEmpty, "\(scan.records.map(\.fileName))")
        #expect(scan.untracked == ["private/notes/README", "private/notes/other/"])
        let problems = scan.problems.map(\.path).sorted()
        #expect(problems == ["private/notes/_hashed.json", "private/notes/broken.json"], "\(scan.problems)")
    }

    @Test func aFileUnderAnotherRecordsNameIsAProblem() async throws {
        // The sidecar names record "a": the file it sits beside must be a.json.
        try synced("a", #"{"v": 1}"#, tag: "t1")
        let zoneDir = ws.zoneDirectory(notes)
        try writeFile("\(zoneDir)/.system/b.json", try #require(readFile(ws.sidecarPath(id("a")))))
        try writeFile("\(zoneDir)/b.json", #"{"v": 1}"#)
        let scan = try await ws.scan(zone: notes, base: Store(["a@t1": ["v": .int64(1)]]).lookup)
        #expect(states(scan) == ["a": .clean])
        #expect(scan.problems.map(\.path) == ["private/notes/b.json"])
        #expect(scan.problems.first?.message.contains("holds record 'a'") == true)
    }
}
