import Foundation
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

/// Two workspaces of one store, driven only through the `recsync` binary.
@Suite(.ownThreads) struct SyncScenarioTests {
    /// Edits on both sides (new, modified, deleted records) converge after push and pull.
    @Test func twoWorkspacesConverge() throws {
        let f = try CLIFixture().withStore()
        try f.clone("laptop")
        try f.clone("phone")
        try f.run(["zone", "create", "notes", "--default-type", "Note"], in: "laptop")
        try f.put("notes/r1", #"{"title": "one"}"#, in: "laptop")
        try f.put("private/notes/r2.json", #"{"title": "two", "tags": ["a", "b"]}"#, in: "laptop", type: "Memo")
        try f.run(["push"], in: "laptop")
        try f.run(["pull"], in: "laptop")  // see deletionOfARecordPushedSinceTheLastPull
        let pulled = try f.json(["pull"], in: "phone")
        #expect(pulled["recordsWritten"] as? Int == 2)
        #expect(f.records("laptop") == f.records("phone"))

        try f.put("notes/r1", #"{"title": "one, edited on the laptop"}"#, in: "laptop")
        try f.put("notes/r3", #"{"title": "three", "due": {"$date": "2026-12-01T09:00:00.000Z"}}"#, in: "phone")
        try f.run(["rm", "notes/r2"], in: "phone")
        let status = try f.json(["status"], in: "phone")
        #expect(
            ((status["changes"] as? [[String: Any]]) ?? []).map { "\($0["kind"]!) \($0["path"]!)" }.sorted()
                == ["deleted private/notes/r2.json", "new private/notes/r3.json"])
        #expect(try f.run(["status"], in: "phone").lines == ["D private/notes/r2.json", "A private/notes/r3.json"])
        try f.run(["push"], in: "laptop")
        try f.run(["push"], in: "phone")
        try f.run(["pull"], in: "laptop")
        try f.run(["pull"], in: "phone")
        #expect(f.records("laptop") == f.records("phone"))
        #expect(try f.fields("phone", "private/notes/r1.json")?["title"] as? String == "one, edited on the laptop")
        #expect(try f.fields("laptop", "private/notes/r2.json") == nil)
        #expect(try f.json(["status"], in: "laptop")["clean"] as? Bool == true)
        #expect(try f.json(["status"], in: "phone")["clean"] as? Bool == true)
        // The type given with `put --type` reached the store.
        let remote = try f.json(["get", "notes/r3", "--remote"], in: "laptop")
        #expect((remote["records"] as? [[String: Any]])?.first?["recordType"] as? String == "Note")
    }

    /// A record this workspace pushed after its last pull, then deleted elsewhere, goes on the next pull.
    @Test func deletionOfARecordPushedSinceTheLastPull() throws {
        let f = try CLIFixture().withStore()
        try f.clone("laptop")
        try f.clone("phone")
        try f.run(["zone", "create", "notes", "--default-type", "Note"], in: "laptop")
        try f.put("notes/r1", #"{"title": "one"}"#, in: "laptop")
        try f.run(["push"], in: "laptop")
        try f.run(["pull"], in: "phone")
        try f.run(["rm", "notes/r1"], in: "phone")
        try f.run(["push"], in: "phone")
        try f.run(["pull"], in: "laptop")
        // The zone feed from the laptop's token (taken before r1 existed) nets r1's creation
        // and deletion to nothing; the pull checks what the laptop pushed since, and drops r1.
        let kept = try f.fields("laptop", "private/notes/r1.json")
        #expect(kept == nil)
    }

    /// A forced push of an edit to a record deleted on the store since it was pulled brings
    /// it back, and says so: in the dry run, the text and the JSON (`changeTag` null).
    @Test func aForcedPushOverADeletionOnTheStoreNamesWhatItBringsBack() throws {
        let f = try CLIFixture().withStore()
        try f.clone("a")
        try f.clone("b")
        try f.run(["zone", "create", "z"], in: "a")
        try f.put("z/r", #"{"v": 1}"#, in: "a")
        try f.run(["push"], in: "a")
        try f.run(["pull"], in: "b")
        try f.run(["rm", "z/r"], in: "b")
        try f.run(["push"], in: "b")
        try f.put("z/r", #"{"v": 2}"#, in: "a")

        let schema = try JSONSchema.load()
        let plan = try f.run(["push", "-n", "--force"], in: "a")
        #expect(plan.stdout.contains("would bring back private/z/r.json: it was deleted on the store since you last pulled it"), "\(plan)")
        let planDoc = try f.json(["push", "-n", "--force"], in: "a")
        #expect(schema.documentProblems(planDoc, command: "push").isEmpty, "\(schema.documentProblems(planDoc, command: "push"))")
        #expect(paths(planDoc, "deletedOnStore") == ["private/z/r.json"] && paths(planDoc, "conflicts") == ["private/z/r.json"], "\(planDoc)")

        let forced = try f.json(["push", "--force"], in: "a")
        #expect(schema.documentProblems(forced, command: "push").isEmpty, "\(schema.documentProblems(forced, command: "push"))")
        let overwritten = forced["overwritten"] as? [[String: Any]] ?? []
        #expect(overwritten.map { $0["path"] as? String } == ["private/z/r.json"], "\(forced)")
        #expect(overwritten.first?["changeTag"] is NSNull && overwritten.first?["knownTag"] is String, "\(forced)")

        // The text says it too.
        try f.run(["pull"], in: "b")
        try f.run(["rm", "z/r"], in: "b")
        try f.run(["push"], in: "b")
        try f.put("z/r", #"{"v": 3}"#, in: "a")
        let text = try f.run(["push", "--force"], in: "a")
        #expect(text.stdout.contains("brought back private/z/r.json: it was deleted on the store since you last pulled it"), "\(text)")
        #expect(try f.json(["get", "z/r", "--remote"], in: "b")["records"] != nil)
    }

    /// True conflicts exit 2 and are settled with --ours, --theirs and --merge.
    @Test func conflictsAreResolvedOursTheirsAndMerge() throws {
        let f = try CLIFixture().withStore()
        try f.clone("laptop")
        try f.clone("phone")
        try f.run(["zone", "create", "notes", "--default-type", "Note"], in: "laptop")
        for r in ["r1", "r2", "r3"] { try f.put("notes/\(r)", #"{"title": "\#(r)", "body": "start"}"#, in: "laptop") }
        try f.run(["push"], in: "laptop")
        try f.run(["pull"], in: "phone")

        for r in ["r1", "r2", "r3"] { try f.put("notes/\(r)", #"{"title": "\#(r) laptop", "body": "start"}"#, in: "laptop") }
        try f.run(["push"], in: "laptop")
        try f.put("notes/r1", #"{"title": "r1 phone", "body": "start"}"#, in: "phone")
        try f.put("notes/r2", #"{"title": "r2 phone", "body": "start"}"#, in: "phone")
        try f.put("notes/r3", #"{"title": "r3", "body": "phone body"}"#, in: "phone")
        let head = try f.storeHead()
        let push = try f.run(["push"], in: "phone", expect: 2)
        #expect(push.stdout.contains("3 conflicts pending"))
        #expect(try f.storeHead() == head)  // atomic per zone: nothing landed
        #expect(
            paths(try f.json(["status"], in: "phone"), "conflicts") == ["private/notes/r1.json", "private/notes/r2.json", "private/notes/r3.json"])
        let diff = try f.run(["diff", "notes/r3"], in: "phone")
        #expect(diff.stdout.contains(#"ours   body: "phone body""#) && diff.stdout.contains(#"theirs title: "r3 laptop""#), "\(diff)")

        try f.run(["resolve", "--ours", "notes/r1"], in: "phone", expect: 2)
        try f.run(["resolve", "--theirs", "private/notes/r2.json"], in: "phone", expect: 2)
        let merged = try f.json(["resolve", "--merge"], in: "phone")
        #expect(paths(merged, "resolved") == ["private/notes/r3.json"])
        #expect(try f.fields("phone", "private/notes/r1.json")?["title"] as? String == "r1 phone")
        #expect(try f.fields("phone", "private/notes/r2.json")?["title"] as? String == "r2 laptop")
        let r3 = try f.fields("phone", "private/notes/r3.json")
        #expect(r3?["title"] as? String == "r3 laptop" && r3?["body"] as? String == "phone body")

        try f.run(["push"], in: "phone")
        try f.run(["pull"], in: "laptop")
        #expect(f.records("laptop") == f.records("phone"))
        #expect(try f.fields("laptop", "private/notes/r1.json")?["title"] as? String == "r1 phone")
    }

    /// A merge of a field both sides changed keeps the conflict (exit 2), naming the field.
    @Test func mergeOfTheSameFieldKeepsTheConflict() throws {
        let f = try CLIFixture().withStore()
        try f.clone("laptop")
        try f.clone("phone")
        try f.put("notes/r1", #"{"title": "start"}"#, in: "laptop", type: "Note")
        try f.run(["push"], in: "laptop")
        try f.run(["pull"], in: "phone")
        try f.put("notes/r1", #"{"title": "laptop"}"#, in: "laptop")
        try f.run(["push"], in: "laptop")
        try f.put("notes/r1", #"{"title": "phone"}"#, in: "phone")
        try f.run(["pull"], in: "phone", expect: 2)
        let merge = try f.run(["resolve", "--merge"], in: "phone", expect: 2)
        #expect(merge.stdout.contains("merged private/notes/r1.json in part; both sides changed 'title' differently"), "\(merge)")
        try f.run(["push"], in: "phone", expect: 2)
    }

    /// Deleting and purging zones on one side removes them on the other, saving unpushed edits.
    @Test func zoneDeleteAndPurgeReachTheOtherWorkspace() throws {
        let f = try CLIFixture().withStore()
        try f.clone("laptop")
        try f.clone("phone")
        for zone in ["trash", "secret", "keep"] {
            try f.run(["zone", "create", zone, "--default-type", "Note"], in: "laptop")
            try f.put("\(zone)/r1", #"{"title": "in \#(zone)"}"#, in: "laptop")
        }
        try f.run(["push"], in: "laptop")
        try f.run(["pull"], in: "phone")
        try f.put("trash/r1", #"{"title": "edited, never pushed"}"#, in: "phone")
        try f.put("secret/r2", #"{"title": "new, never pushed"}"#, in: "phone")

        try f.run(["zone", "delete", "trash", "--yes"], in: "laptop")
        try f.run(["zone", "purge", "private/secret", "-y"], in: "laptop")
        #expect(!FileManager.default.fileExists(atPath: f.ws("laptop") + "/private/trash"))
        let list = try f.json(["zone", "list"], in: "laptop")
        #expect(((list["zones"] as? [[String: Any]]) ?? []).compactMap { $0["zone"] as? String } == ["keep"])

        let pull = try f.json(["pull"], in: "phone")
        let removed = ((pull["zonesRemoved"] as? [[String: Any]]) ?? []).map { "\($0["zone"]!) \($0["reason"]!)" }.sorted()
        #expect(removed == ["secret purged", "trash deleted"])
        for zone in ["trash", "secret"] {
            #expect(!FileManager.default.fileExists(atPath: f.ws("phone") + "/private/\(zone)"))
        }
        let saved = (pull["lostAndFound"] as? [String]) ?? []
        #expect(saved.count == 2)
        let savedFiles = saved.flatMap { dir in FileIOList.files(f.ws("phone") + "/" + dir) }.sorted()
        #expect(savedFiles == ["r1.json", "r2.json"])
        #expect(FileManager.default.fileExists(atPath: f.ws("phone") + "/private/keep/r1.json"))
        #expect(f.records("laptop") == f.records("phone"))
    }

    /// After the store's history is rewritten with plain git, tokens expire and pull still converges.
    @Test func pullConvergesAfterHistoryRewrite() throws {
        let f = try CLIFixture().withStore()
        try f.clone("laptop")
        try f.clone("phone")
        try f.run(["zone", "create", "notes", "--default-type", "Note"], in: "laptop")
        for r in ["r1", "r2", "r3"] { try f.put("notes/\(r)", #"{"title": "\#(r)"}"#, in: "laptop") }
        try f.run(["push"], in: "laptop")
        try f.run(["pull"], in: "phone")
        try f.put("notes/r1", #"{"title": "r1 edited"}"#, in: "laptop")
        try f.run(["rm", "notes/r2"], in: "laptop")
        try f.put("notes/r4", #"{"title": "r4"}"#, in: "laptop")
        try f.run(["push"], in: "laptop")

        // Squash the store's history to one commit of the head tree, as a force-push would.
        let tree = try GitCLI.run(["rev-parse", "refs/heads/main^{tree}"], in: f.storePath).trimmingCharacters(in: .whitespacesAndNewlines)
        let commit = try GitCLI.run(["commit-tree", tree, "-m", "rewritten history"], in: f.storePath).trimmingCharacters(in: .whitespacesAndNewlines)
        try GitCLI.run(["update-ref", "refs/heads/main", commit], in: f.storePath)

        let pull = try f.json(["pull"], in: "phone")
        #expect(!((pull["expiredTokens"] as? [String]) ?? []).isEmpty, "\(pull)")
        #expect(f.records("laptop").keys.sorted() == f.records("phone").keys.sorted())
        #expect(try f.fields("phone", "private/notes/r2.json") == nil)
        #expect(try f.fields("phone", "private/notes/r1.json")?["title"] as? String == "r1 edited")
        #expect(try f.json(["status"], in: "phone")["clean"] as? Bool == true)
        try f.run(["pull"], in: "laptop")
        #expect(f.records("laptop") == f.records("phone"))
    }
}

/// Directory listings for assertions.
enum FileIOList {
    /// The names of the plain files directly in a directory, sorted.
    static func files(_ dir: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
    }
}
