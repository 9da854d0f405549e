import Foundation
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

/// `recsync changes`: the raw feed as JSON lines, with no workspace.
@Suite(.ownThreads) struct ChangesFeedTests {
    /// Every line of a JSON-lines output, parsed; each must carry "version": 1.
    func jsonLines(_ output: ProcessOutput, sourceLocation: SourceLocation = #_sourceLocation) throws -> [[String: Any]] {
        try output.lines.map { line in
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            let parsed = try #require(object, "not a JSON object: \(line)", sourceLocation: sourceLocation)
            #expect(parsed["version"] as? Int == 1, sourceLocation: sourceLocation)
            return parsed
        }
    }

    @Test func databaseAndZoneFeeds() throws {
        let f = try CLIFixture().withStore()
        try f.clone("laptop")
        try f.run(["zone", "create", "notes", "--default-type", "Note"], in: "laptop")
        try f.run(["zone", "create", "old"], in: "laptop")
        for r in ["r1", "r2", "r3"] { try f.put("notes/\(r)", #"{"title": "\#(r)", "n": 1}"#, in: "laptop") }
        try f.run(["push"], in: "laptop")

        let db = try jsonLines(f.run(["changes", "--store", "store.git"]))
        #expect(db.filter { $0["kind"] as? String == "zone" }.compactMap { $0["zone"] as? String }.sorted() == ["notes", "old"])
        let dbToken = try #require(db.last?["token"] as? String)
        #expect(db.last?["moreComing"] as? Bool == false)

        // Page by page with --limit, following the token by hand.
        var names: [String] = []
        var token: String?
        var pages = 0
        repeat {
            let page = try jsonLines(
                f.run(["changes", "--store", "store.git", "--zone", "notes", "--limit", "1"] + (token.map { ["--since", $0] } ?? [])))
            pages += 1
            names += page.filter { $0["kind"] as? String == "record" }.compactMap { $0["recordName"] as? String }
            let last = try #require(page.last)
            #expect(last["kind"] as? String == "token")
            token = last["token"] as? String
            if last["moreComing"] as? Bool == false { break }
        } while pages < 10
        #expect(names.sorted() == ["r1", "r2", "r3"])
        let zoneToken = try #require(token)

        let whole = try jsonLines(f.run(["changes", "--store", "file://" + f.storePath, "--zone", "notes"]))
        let r1 = try #require(whole.first { $0["recordName"] as? String == "r1" })
        #expect(r1["recordType"] as? String == "Note")
        #expect((r1["fields"] as? [String: Any])?["n"] as? Int == 1)
        #expect((r1["changeTag"] as? String)?.count == 40)

        // After a deletion and a zone deletion, the feeds from the tokens show only those.
        try f.run(["rm", "notes/r2"], in: "laptop")
        try f.run(["push"], in: "laptop")
        try f.run(["zone", "delete", "old", "--yes"], in: "laptop")
        let zoneFeed = try jsonLines(f.run(["changes", "--store", "store.git", "--zone", "notes", "--since", zoneToken]))
        #expect(zoneFeed.count == 2)
        #expect(zoneFeed.first?["kind"] as? String == "recordDeleted" && zoneFeed.first?["recordName"] as? String == "r2")
        #expect(zoneFeed.first?["recordType"] as? String == "Note")
        let dbFeed = try jsonLines(f.run(["changes", "--store", "store.git", "--since", dbToken]))
        let deleted = try #require(dbFeed.first { $0["kind"] as? String == "zoneDeleted" })
        #expect(deleted["zone"] as? String == "old" && deleted["reason"] as? String == "deleted")

        // Bob sees nothing of alice's private zones; a garbled token is an error.
        let bob = try jsonLines(f.run(["changes", "--store", "store.git", "--user", "bob"]))
        #expect(bob.count == 1 && bob[0]["kind"] as? String == "token")
        try f.run(["changes", "--store", "store.git", "--since", "garbage"], expect: 1)
    }
}
