import RecSyncModel
import RecSyncSystem
import RecSyncTestSupport
import RecSyncWorkspace
import Testing

/// `MergePatch` (RFC 7386) and `Workspace.patch`.
@Suite struct MergePatchTests {
    /// RFC 7386's appendix A, every example: original, patch, result.
    @Test(arguments: [
        (#"{"a":"b"}"#, #"{"a":"c"}"#, #"{"a":"c"}"#),
        (#"{"a":"b"}"#, #"{"b":"c"}"#, #"{"a":"b","b":"c"}"#),
        (#"{"a":"b"}"#, #"{"a":null}"#, #"{}"#),
        (#"{"a":"b","b":"c"}"#, #"{"a":null}"#, #"{"b":"c"}"#),
        (#"{"a":["b"]}"#, #"{"a":"c"}"#, #"{"a":"c"}"#),
        (#"{"a":"c"}"#, #"{"a":["b"]}"#, #"{"a":["b"]}"#),
        (#"{"a":{"b":"c"}}"#, #"{"a":{"b":"d","c":null}}"#, #"{"a":{"b":"d"}}"#),
        (#"{"a":[{"b":"c"}]}"#, #"{"a":[1]}"#, #"{"a":[1]}"#),
        (#"["a","b"]"#, #"["c","d"]"#, #"["c","d"]"#),
        (#"{"a":"b"}"#, #"["c"]"#, #"["c"]"#),
        (#"{"a":"foo"}"#, "null", "null"),
        (#"{"a":"foo"}"#, #""bar""#, #""bar""#),
        (#"{"e":null}"#, #"{"a":1}"#, #"{"a":1,"e":null}"#),
        (#"[1,2]"#, #"{"a":"b","c":null}"#, #"{"a":"b"}"#),
        ("{}", #"{"a":{"bb":{"ccc":null}}}"#, #"{"a":{"bb":{}}}"#),
    ])
    func theRFCsExamples(original: String, patch: String, result: String) throws {
        let applied = MergePatch.apply(try JSON.parse(patch), to: try JSON.parse(original)) ?? .null
        #expect(applied == (try JSON.parse(result)))
    }

    @Test func patchSetsRemovesAndKeepsFieldsOfSeveralRecords() throws {
        let dir = TempDirectory("merge-patch")
        let ws = try Workspace.create(at: dir.file("ws"), config: WorkspaceConfig(user: "alice", remote: "memory"))
        let zone = Build.zone("todo")
        let a = Build.id("a", in: zone), b = Build.id("b", in: zone)
        try ws.put(a, fields: ["title": .string("milk"), "n": .int64(1), "note": .string("x")])
        try ws.put(b, fields: ["title": .string("eggs"), "done": .boolean(true)])
        let changed = try ws.patch([a, b], with: try JSON.parse(#"{"done": true, "note": null, "due": {"$date": "2026-11-28T00:00:00Z"}}"#))
        #expect(changed == [true, true])
        #expect(try ws.recordFields(a) == ["title": .string("milk"), "n": .int64(1), "done": .boolean(true), "due": .timestamp(1_795_824_000_000)])
        #expect(try ws.recordFields(b) == ["title": .string("eggs"), "done": .boolean(true), "due": .timestamp(1_795_824_000_000)])
        #expect(try ws.patch([b], with: try JSON.parse(#"{"done": true}"#)) == [false])

        // A tagged value is one value: replaced whole, never merged into or out of.
        try ws.patch([b], with: try JSON.parse(#"{"due": {"$date": "2026-11-29T00:00:00Z"}}"#))
        #expect(try ws.recordFields(b)?["due"] == .timestamp(1_795_910_400_000))
        #expect(throws: RecSyncError.self) { try ws.patch([b], with: try JSON.parse(#"{"due": {"$date": null}}"#)) }
        try ws.patch([b], with: try JSON.parse(#"{"due": {"at": 1}}"#))
        #expect(try ws.recordFields(b)?["due"] == .json(.object(["at": .int(1)])))

        // Refusals write nothing: a record with no file, a bad result, a patch that is not an object.
        let before = try ws.recordFields(a)
        for (ids, patch) in [
            ([a, Build.id("none", in: zone)], #"{"n": 2}"#), ([a], #"{"n": {"$bad": 1}}"#), ([a], "[1]"), ([a], #"{"_bad": 1}"#),
        ] {
            #expect(throws: RecSyncError.self) { try ws.patch(ids, with: try JSON.parse(patch)) }
            #expect(try ws.recordFields(a) == before, "\(patch)")
        }
    }
}
