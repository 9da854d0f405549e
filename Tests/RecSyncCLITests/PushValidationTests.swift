import Foundation
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

/// A push with a malformed file sends nothing and changes nothing.
@Suite(.ownThreads) struct PushValidationTests {
    @Test func oneMalformedFileStopsTheWholePush() throws {
        let f = try CLIFixture().withStore()
        try f.clone("laptop")
        try f.put("notes/r1", #"{"title": "one"}"#, in: "laptop", type: "Note")
        try f.run(["push"], in: "laptop")

        try f.put("notes/r1", #"{"title": "one, edited"}"#, in: "laptop")
        try f.put("notes/r2", #"{"title": "two"}"#, in: "laptop")
        try writeFile(f.ws("laptop") + "/private/notes/bad.json", "{\"title\": }\n")
        try writeFile(f.ws("laptop") + "/private/notes/worse.json", "{\"no-dashes\": 1}\n")
        let head = try f.storeHead()
        let before = TreeSnapshot.files(f.ws("laptop")) { $0 == ".recsync/lock" }

        let push = try f.run(["push"], in: "laptop", expect: 1)
        #expect(push.stderr.hasPrefix("recsync: nothing was sent; fix these files first:"), "\(push)")
        #expect(push.stderr.contains("  private/notes/bad.json: line 1"), "\(push)")
        #expect(push.stderr.contains("  private/notes/worse.json: field key 'no-dashes'"), "\(push)")
        #expect(push.stdout.isEmpty)
        #expect(try f.storeHead() == head)
        #expect(TreeSnapshot.files(f.ws("laptop")) { $0 == ".recsync/lock" } == before)

        // status names the same problems; fixing them lets the push through.
        let status = try f.json(["status"], in: "laptop")
        let problems = (status["problems"] as? [[String: Any]]) ?? []
        #expect(problems.compactMap { $0["path"] as? String } == ["private/notes/bad.json", "private/notes/worse.json"], "\(status)")
        try FileManager.default.removeItem(atPath: f.ws("laptop") + "/private/notes/bad.json")
        try FileManager.default.removeItem(atPath: f.ws("laptop") + "/private/notes/worse.json")
        let pushed = try f.json(["push"], in: "laptop")
        #expect(paths(pushed, "saved") == ["private/notes/r1.json", "private/notes/r2.json"])
        #expect(try f.storeHead() != head)
    }

    /// `put` refuses fields a push would refuse, and writes nothing.
    @Test func putValidatesFields() throws {
        let f = try CLIFixture().withStore()
        try f.clone("laptop")
        let bad = try f.run(["put", "notes/r1"], in: "laptop", input: #"{"when": {"$date": "yesterday"}}"#, expect: 1)
        #expect(bad.stderr.contains("recsync: the fields of 'notes/r1' are not valid: field 'when'"), "\(bad)")
        #expect(!FileManager.default.fileExists(atPath: f.ws("laptop") + "/private/notes/r1.json"))
        // Canonical output: sorted keys, two-space indent, trailing newline.
        try f.put("notes/r1", #"{"b":1,"a":{"$bytes":"AAE="}}"#, in: "laptop")
        #expect(readFile(f.ws("laptop") + "/private/notes/r1.json") == "{\n  \"a\": {\n    \"$bytes\": \"AAE=\"\n  },\n  \"b\": 1\n}\n")
        let got = try f.run(["get", "private/notes/r1.json"], in: "laptop")
        #expect(got.stdout == readFile(f.ws("laptop") + "/private/notes/r1.json"))
    }
}

/// Files that are not records: a warning in status and push, never a reason to refuse the
/// push; `.recsyncignore` (gitignore syntax) and the built-in rules hide them.
@Suite(.ownThreads) struct IgnoreRulesCLITests {
    @Test func aStrayFileIsAWarningNotAReasonToRefuseThePush() throws {
        let f = try CLIFixture().withStore()
        try f.clone("w")
        try f.put("notes/r1", #"{"title": "one"}"#, in: "w")
        try writeFile(f.ws("w") + "/private/notes/notes.txt", "mine\n")
        try writeFile(f.ws("w") + "/private/notes/r1.json~", "{}\n")  // an editor backup
        try writeFile(f.ws("w") + "/private/notes/.r1.json.swp", "x")  // a swap file
        try writeFile(f.ws("w") + "/private/todo.txt", "stray\n")  // not in a zone at all

        let status = try f.run(["status"], in: "w")
        #expect(
            status.lines == [
                "Z private/notes/",
                "A private/notes/r1.json",
                "? private/notes/notes.txt (not a record file; add it to .recsyncignore to hide it)",
                "? private/todo.txt (not a record file; add it to .recsyncignore to hide it)",
            ], "\(status)")
        let json = try f.json(["status"], in: "w")
        #expect((json["untracked"] as? [[String: Any]])?.compactMap { $0["path"] as? String } == ["private/notes/notes.txt", "private/todo.txt"])
        // Not something to push: --exit-code says 1 for the record only.
        try f.run(["status", "--exit-code"], in: "w", expect: 1)

        let push = try f.run(["push"], in: "w")
        #expect(push.stdout.contains("1 record saved"), "\(push)")
        #expect(push.stderr.contains("private/notes/notes.txt was not sent"), "\(push)")
        try f.run(["status", "--exit-code"], in: "w")
        #expect(readFile(f.ws("w") + "/private/notes/notes.txt") == "mine\n")

        // Hidden by a rule; a rule never hides a synced record.
        try writeFile(f.ws("w") + "/.recsyncignore", "# mine\n*.txt\n!private/todo.txt\nr1.json\n")
        let ignored = try f.run(["status"], in: "w")
        #expect(ignored.lines.first == "? private/todo.txt (not a record file; add it to .recsyncignore to hide it)", "\(ignored)")
        #expect(!ignored.stdout.contains("notes.txt"), "\(ignored)")
        try FileManager.default.removeItem(atPath: f.ws("w") + "/private/notes/r1.json")
        #expect(try f.run(["status"], in: "w").lines.first == "D private/notes/r1.json")
    }

    @Test func aNewRecordFileARuleCoversIsNotSent() throws {
        let f = try CLIFixture().withStore()
        try f.clone("w")
        try f.put("notes/keep", #"{"a": 1}"#, in: "w")
        try f.put("notes/draft-1", #"{"a": 2}"#, in: "w")
        try writeFile(f.ws("w") + "/.recsyncignore", "draft-*\n")
        let pushed = try f.json(["push"], in: "w")
        #expect((pushed["saved"] as? [[String: Any]])?.compactMap { $0["recordName"] as? String } == ["keep"], "\(pushed)")
        #expect(FileManager.default.fileExists(atPath: f.ws("w") + "/private/notes/draft-1.json"))
    }

    /// A zone deleted on the store takes its directory away; files that are not records go to
    /// lost+found with it, never to nothing.
    @Test func aZoneRemovalKeepsStrayAndIgnoredFiles() throws {
        let f = try CLIFixture().withStore()
        try f.clone("a")
        try f.put("notes/r1", #"{"a": 1}"#, in: "a")
        try f.run(["push"], in: "a")
        try f.clone("b")
        try writeFile(f.ws("b") + "/private/notes/notes.txt", "mine\n")
        try writeFile(f.ws("b") + "/private/notes/r1.json~", "backup\n")
        try f.run(["zone", "delete", "notes", "--yes"], in: "a")
        let pulled = try f.json(["pull"], in: "b")
        let saved = try #require((pulled["lostAndFound"] as? [String])?.first, "\(pulled)")
        #expect(readFile(f.ws("b") + "/\(saved)/notes.txt") == "mine\n")
        #expect(readFile(f.ws("b") + "/\(saved)/r1.json~") == "backup\n")
        #expect(!FileManager.default.fileExists(atPath: f.ws("b") + "/private/notes"))
    }
}
