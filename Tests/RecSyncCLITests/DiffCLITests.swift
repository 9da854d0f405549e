import Foundation
import RecSyncTestSupport
import Testing

/// `recsync diff` as git users know it: several records, a zone, the whole workspace,
/// `--stat` and `--exit-code`.
@Suite struct DiffCLITests {
    /// Two zones pushed, then edits: todo/a changed and given a field, todo/b removed,
    /// todo/c new, other/x changed; todo/d untouched.
    func edited() throws -> CLIFixture {
        let f = try CLIFixture().withStore()
        try f.clone("ws")
        for (record, json) in [
            ("todo/a", #"{"t": "a", "n": 1}"#), ("todo/b", #"{"t": "b"}"#), ("todo/d", #"{"t": "d"}"#), ("other/x", #"{"t": "x"}"#),
        ] {
            try f.put(record, json, in: "ws", type: "Item")
        }
        try f.run(["push"], in: "ws")
        #expect(try f.run(["diff", "--exit-code"], in: "ws").stdout.isEmpty, "nothing differs after a push")
        try f.put("todo/a", #"{"t": "A", "due": true}"#, in: "ws")
        try f.run(["rm", "todo/b"], in: "ws")
        try f.put("todo/c", #"{"t": "c"}"#, in: "ws", type: "Item")
        try f.put("other/x", #"{"t": "X"}"#, in: "ws")
        return f
    }

    func names(_ doc: [String: Any]) -> [String] {
        ((doc["records"] as? [[String: Any]]) ?? []).map { "\($0["zone"] ?? "")/\($0["recordName"] ?? ""):\($0["kind"] ?? "")" }
    }

    @Test func takesRecordsZonesOrEverything() throws {
        let f = try edited()
        #expect(names(try f.json(["diff"], in: "ws")) == ["other/x:modified", "todo/a:modified", "todo/b:deleted", "todo/c:new"])
        #expect(names(try f.json(["diff", "todo"], in: "ws")) == ["todo/a:modified", "todo/b:deleted", "todo/c:new"])
        #expect(names(try f.json(["diff", "todo/a", "other/x"], in: "ws")) == ["other/x:modified", "todo/a:modified"])
        #expect(names(try f.json(["diff", "other", "todo/d"], in: "ws")) == ["other/x:modified", "todo/d:unchanged"])
        let text = try f.run(["diff", "todo/a", "private/other/x.json"], in: "ws").stdout
        #expect(text.contains("-  t: \"a\"") && text.contains("+  t: \"A\"") && text.contains("+  due: true") && text.contains("+  t: \"X\""))
        #expect(try f.run(["diff", "todo/nosuch"], in: "ws", expect: 1).stderr.contains("todo/nosuch"))
        #expect(try f.run(["diff", "nosuchzone"], in: "ws", expect: 1).stderr.contains("nosuchzone"))
    }

    @Test func exitCodeSaysWhetherSomethingDiffers() throws {
        let f = try edited()
        let changed = try f.run(["diff", "--exit-code", "--quiet"], in: "ws", expect: 1)
        #expect(changed.stderr.isEmpty && changed.stdout.isEmpty, "a difference is not an error, and --quiet prints nothing: \(changed)")
        #expect(try f.json(["diff", "--exit-code"], in: "ws", expect: 1)["differs"] as? Bool == true)
        try f.run(["diff", "--exit-code", "todo/d"], in: "ws")
        try f.run(["diff", "--exit-code", "todo/d", "todo/c"], in: "ws", expect: 1)
        try f.run(["diff", "todo"], in: "ws")  // without --exit-code, 0
        try f.run(["push"], in: "ws")
        #expect(try f.json(["diff", "--exit-code"], in: "ws")["differs"] as? Bool == false)
    }

    @Test func statCountsFieldsPerRecord() throws {
        let f = try edited()
        let lines = try f.run(["diff", "--stat", "--color", "never"], in: "ws").lines
        #expect(
            lines == [
                " private/other/x.json | 1 ~",
                " private/todo/a.json  | 3 +~-",
                " private/todo/b.json  | 1 - (deleted)",
                " private/todo/c.json  | 1 + (new)",
                " 4 records changed, 2 fields added, 2 changed, 2 removed",
            ], "\(lines)")
        let a = try #require((try f.json(["diff", "todo/a"], in: "ws")["records"] as? [[String: Any]])?.first)
        #expect(a["added"] as? Int == 1 && a["changed"] as? Int == 1 && a["removed"] as? Int == 1)
    }
}
