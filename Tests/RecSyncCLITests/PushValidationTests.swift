import Foundation
import RecSyncTestSupport
import Testing

/// A push with a malformed file sends nothing and changes nothing.
@Suite struct PushValidationTests {
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
        #expect(((status["problems"] as? [String]) ?? []).count == 2)
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
