import Foundation
import RecSyncStore
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

/// `show RECORD@REV`, `log -p` and `restore`, through the built binary.
@Suite(.ownThreads) struct HistoryCLITests {
    /// A workspace `a` where todo/milk went through three versions: {qty 1}, {qty 2, note},
    /// then deleted; returns the fixture and the store's commits, newest first.
    static func milkHistory(_ name: String = #function) throws -> (CLIFixture, [String]) {
        let f = try CLIFixture(name).withStore()
        try f.clone("a")
        try f.put("todo/milk", #"{"qty": 1}"#, in: "a")
        try f.run(["push"], in: "a")
        try f.put("todo/milk", #"{"qty": 2, "note": "x"}"#, in: "a")
        try f.run(["push"], in: "a")
        try f.run(["rm", "todo/milk"], in: "a")
        try f.run(["push"], in: "a")
        let log = try f.json(["log"], in: "a")
        let commits = ((log["commits"] as? [[String: Any]]) ?? []).compactMap { $0["commit"] as? String }
        return (f, commits)
    }

    @Test func showPrintsARecordAtAStoreRevision() throws {
        let (f, commits) = try Self.milkHistory()
        // commits: delete, v2, v1, zone creation..., store creation.
        #expect(commits.count >= 4)
        let v1 = commits[2], v2 = commits[1]
        let byHash = try f.run(["show", "todo/milk@\(v1.prefix(8))"], in: "a")
        #expect(try JSONSerialization.jsonObject(with: Data(byHash.stdout.utf8)) as? [String: Int] == ["qty": 1])
        let back = try f.run(["show", "private/todo/milk.json@~1"], in: "a")
        #expect(back.stdout.contains(#""note""#) && back.stdout.contains("2"), "\(back)")
        let doc = try f.json(["show", "todo/milk@~2"], in: "a")
        #expect(doc["command"] as? String == "show" && doc["commit"] as? String == v1)
        #expect(doc["recordName"] as? String == "milk" && doc["zone"] as? String == "todo" && doc["path"] as? String == "private/todo/milk.json")
        #expect((doc["fields"] as? [String: Any])?["qty"] as? Int == 1 && doc["changeTag"] is String && doc["time"] is Int)
        let full = try f.json(["show", "todo/milk@\(v2)"], in: "a")
        #expect((full["fields"] as? [String: Any])?["note"] as? String == "x")
    }

    @Test func showRefusesUnknownRevisionsAndAbsentRecords() throws {
        let (f, commits) = try Self.milkHistory()
        let unknown = try f.run(["show", "todo/milk@deadbeef"], in: "a", expect: 1)
        #expect(unknown.stderr.contains("unknown revision 'deadbeef'"), "\(unknown)")
        let tooFar = try f.run(["show", "todo/milk@~3"], in: "a", expect: 1)
        #expect(tooFar.stderr.contains("has 3 versions"), "\(tooFar)")
        // Deleted now: the current version does not exist.
        let gone = try f.json(["show", "todo/milk"], in: "a", expect: 1)
        #expect((gone["error"] as? [String: Any])?["kind"] as? String == "unknownItem", "\(gone)")
        // Before it was created (the store's first commit).
        let before = try f.run(["show", "todo/milk@\(commits.last!.prefix(10))"], in: "a", expect: 1)
        #expect(before.stderr.contains("does not exist") && before.stderr.contains("did not exist at revision"), "\(before)")
        let missing = try f.run(["show", "todo/nothing@~0"], in: "a", expect: 1)
        #expect(missing.stderr.contains("version"), "\(missing)")
    }

    @Test func logPatchShowsTheFieldsEachVersionChanged() throws {
        let (f, _) = try Self.milkHistory()
        let text = try f.run(["log", "-p", "todo/milk"], in: "a")
        for line in ["+  qty: 1", "-  qty: 1", "+  qty: 2", #"+  note: "x""#, #"-  note: "x""#, "-  qty: 2", "[deleted]"] {
            #expect(text.stdout.contains(line), "missing '\(line)' in\n\(text)")
        }
        let doc = try f.json(["log", "--patch", "todo/milk"], in: "a")
        let commits = try #require(doc["commits"] as? [[String: Any]])
        #expect(commits.map { $0["kind"] as? String } == ["deleted", "modified", "new"])
        let modified = try #require(commits[1]["fields"] as? [[String: Any]])
        #expect(modified.count == 2)
        let note = try #require(modified.first { $0["key"] as? String == "note" })
        #expect(note["old"] is NSNull && note["new"] as? String == "x")
        let limited = try f.json(["log", "-p", "-n", "1", "todo/milk"], in: "a")
        #expect((limited["commits"] as? [[String: Any]])?.count == 1)
        #expect((try f.json(["log", "-n2"], in: "a")["commits"] as? [[String: Any]])?.count == 2, "-n2 as git takes it")
        // -p is about a record or a zone.
        let bare = try f.run(["log", "-p"], in: "a", expect: 1)
        #expect(bare.stderr.contains("a record or a zone; name one"), "\(bare)")
    }

    /// One version someone wrote with plain git that does not decode: `log -p` shows the
    /// other versions and names that one, instead of failing as a whole.
    @Test func logPatchShowsTheReadableVersionsAndNamesABadOne() throws {
        let f = try CLIFixture().withStore()
        try f.clone("a")
        try f.put("todo/milk", #"{"qty": 1}"#, in: "a")
        try f.run(["push"], in: "a")
        let path = StoreLayout.recordPath(Build.record("milk", in: Build.zone("todo")).recordID)
        try GitCLI.commitFiles([(path, Array("not a record".utf8))], toStore: f.storePath)
        try f.put("todo/milk", #"{"qty": 3}"#, in: "a")
        try f.run(["push", "--force"], in: "a")
        let text = try f.run(["log", "-p", "todo/milk"], in: "a")
        #expect(text.stdout.contains("+  qty: 1"), "the first version is shown: \(text)")
        #expect(text.stdout.contains("changes unknown") && text.stderr.contains("cannot be read"), "\(text)")
        let doc = try f.json(["log", "-p", "todo/milk"], in: "a")
        let commits = try #require(doc["commits"] as? [[String: Any]])
        #expect(commits.count == 3 && commits.filter { $0["unreadable"] is String }.count == 2, "\(commits)")
    }

    /// A workspace `a` with todo/milk {qty 1} and todo/eggs {n 1} pushed.
    static func twoSynced(_ name: String = #function) throws -> CLIFixture {
        let f = try CLIFixture(name).withStore()
        try f.clone("a")
        try f.put("todo/milk", #"{"qty": 1}"#, in: "a")
        try f.put("todo/eggs", #"{"n": 1}"#, in: "a")
        try f.run(["push"], in: "a")
        return f
    }

    @Test func restoreUndoesEditsAndRemovals() throws {
        let f = try Self.twoSynced()
        try f.put("todo/milk", #"{"qty": 5, "extra": true}"#, in: "a")
        try f.run(["rm", "todo/eggs"], in: "a")
        let doc = try f.json(["restore", "todo/milk", "private/todo/eggs.json"], in: "a")
        let restored = try #require(doc["restored"] as? [[String: Any]])
        #expect(restored.map { $0["kind"] as? String } == ["deleted", "modified"])  // eggs, milk
        #expect(try f.fields("a", "private/todo/milk.json") as? [String: Int] == ["qty": 1])
        #expect(try f.fields("a", "private/todo/eggs.json") as? [String: Int] == ["n": 1])
        let status = try f.json(["status"], in: "a")
        #expect((status["changes"] as? [Any])?.isEmpty == true, "\(status)")
        let again = try f.json(["restore", "todo/milk"], in: "a")
        #expect(paths(again, "unchanged") == ["private/todo/milk.json"] && paths(again, "restored").isEmpty)
        try f.run(["push"], in: "a")  // nothing to push, no error
    }

    @Test func restoreAtARevisionIsALocalEditThatPushSends() throws {
        let (f, commits) = try Self.milkHistory()
        let v1 = commits[2]
        // Deleted on the store: the older version comes back as a new record of its type.
        try f.run(["restore", "todo/milk@\(v1.prefix(8))"], in: "a")
        #expect(try f.fields("a", "private/todo/milk.json") as? [String: Int] == ["qty": 1])
        #expect(try f.run(["status"], in: "a").lines.contains("A private/todo/milk.json"))
        try f.run(["push"], in: "a")
        // ~1 of a live record: the version before its newest, as a modification.
        try f.put("todo/milk", #"{"qty": 3}"#, in: "a")
        try f.run(["push"], in: "a")
        let doc = try f.json(["restore", "todo/milk@~1"], in: "a")
        let restored = try #require((doc["restored"] as? [[String: Any]])?.first)
        #expect(restored["kind"] as? String == "modified" && (restored["commit"] as? String)?.count == 40)
        #expect(try f.fields("a", "private/todo/milk.json") as? [String: Int] == ["qty": 1])
        let diff = try f.run(["diff", "--exit-code", "todo/milk"], in: "a", expect: 1).stdout
        #expect(diff.contains("-  qty: 3") && diff.contains("+  qty: 1"))
        // Once more is nothing to do; restore without a revision undoes it.
        #expect(try f.run(["restore", "todo/milk@~1"], in: "a").stdout.contains("already holds that version"))
        try f.run(["restore", "todo/milk"], in: "a")
        try f.run(["diff", "--exit-code"], in: "a")
        // Edits not pushed are not overwritten, unless --force.
        try f.put("todo/milk", #"{"qty": 9}"#, in: "a")
        let refused = try f.run(["restore", "todo/milk@~1"], in: "a", expect: 1)
        #expect(refused.stderr.contains("private/todo/milk.json has edits not pushed"), "\(refused)")
        #expect(try f.fields("a", "private/todo/milk.json") as? [String: Int] == ["qty": 9])
        try f.run(["restore", "--source", "~1", "todo/milk", "--force"], in: "a")
        #expect(try f.fields("a", "private/todo/milk.json") as? [String: Int] == ["qty": 1])
        try f.run(["restore", "todo/milk"], in: "a")
        try f.run(["restore", "--force", "todo/milk"], in: "a", expect: 64)
        // Refusals: a revision the record has no version at, mixing forms, ~N for a zone.
        #expect(try f.run(["restore", "todo/milk@~9"], in: "a", expect: 1).stderr.contains("unknown revision '~9'"))
        try f.run(["restore", "todo/milk@~1", "todo/milk"], in: "a", expect: 1)
        try f.run(["restore", "--source", "~1", "todo"], in: "a", expect: 1)
        try f.run(["restore", "--source", String(commits[2].prefix(8)), "nosuchzone"], in: "a", expect: 1)
        try f.run(["restore", "--source", "nothex", "todo/milk"], in: "a", expect: 64)
        try f.run(["diff", "--exit-code"], in: "a")
    }

    @Test func logPatchOfAZoneShowsEachCommitsRecords() throws {
        let (f, _) = try Self.milkHistory()
        try f.put("todo/eggs", #"{"n": 6}"#, in: "a")
        try f.put("other/x", #"{"n": 1}"#, in: "a")
        try f.run(["push"], in: "a")
        let text = try f.run(["log", "-p", "-n", "2", "todo", "--color", "never"], in: "a").lines
        #expect(text.count == 7, "\(text)")
        #expect(text[0].hasSuffix("alice: saved 2 in other, todo") && text[1] == "  new private/todo/eggs.json" && text[2] == "    +  n: 6")
        #expect(text[3].hasSuffix("alice: deleted todo/milk") && text[4] == "  deleted private/todo/milk.json")
        let doc = try f.json(["log", "-p", "todo"], in: "a")
        let commits = (doc["commits"] as? [[String: Any]]) ?? []
        let kinds = commits.map { (($0["records"] as? [[String: Any]]) ?? []).map { "\($0["recordName"] ?? ""):\($0["kind"] ?? "")" } }
        #expect(kinds.prefix(4) == [["eggs:new"], ["milk:deleted"], ["milk:modified"], ["milk:new"]], "\(kinds)")
        let second = try #require((commits[2]["records"] as? [[String: Any]])?.first?["fields"] as? [[String: Any]])
        #expect(second.map { $0["key"] as? String } == ["note", "qty"])
    }

    @Test func restoreSourceMakesAZoneWhatItWasAtACommit() throws {
        let f = try CLIFixture().withStore()
        try f.clone("a")
        try f.put("todo/milk", #"{"v": 1}"#, in: "a")
        try f.put("todo/eggs", #"{"v": 1}"#, in: "a")
        try f.run(["push"], in: "a")
        let first = try #require(((try f.json(["log", "-n", "1"], in: "a")["commits"] as? [[String: Any]])?.first)?["commit"] as? String)
        try f.put("todo/milk", #"{"v": 2}"#, in: "a")
        try f.put("todo/tea", #"{"v": 1}"#, in: "a")
        try f.run(["rm", "todo/eggs"], in: "a")
        try f.run(["push"], in: "a")
        try f.put("todo/draft", #"{"v": 0}"#, in: "a")  // never pushed: left alone
        let doc = try f.json(["restore", "--source", String(first.prefix(10)), "todo"], in: "a")
        let kinds = Dictionary(
            uniqueKeysWithValues: ((doc["restored"] as? [[String: Any]]) ?? []).map {
                ($0["recordName"] as? String ?? "", $0["kind"] as? String ?? "")
            })
        #expect(kinds == ["eggs": "new", "milk": "modified", "tea": "deleted"])
        #expect(
            try f.run(["status"], in: "a").lines.sorted() == [
                "A private/todo/draft.json", "A private/todo/eggs.json", "D private/todo/tea.json", "M private/todo/milk.json",
            ])
        try f.run(["rm", "--force", "todo/draft"], in: "a")
        try f.run(["push"], in: "a")
        // The zone is what it was: the same records and fields as at the first commit.
        try f.clone("b")
        #expect(try f.fields("b", "private/todo/milk.json") as? [String: Int] == ["v": 1])
        #expect(try f.fields("b", "private/todo/eggs.json") as? [String: Int] == ["v": 1])
        #expect(try f.fields("b", "private/todo/tea.json") == nil)
    }

    @Test func restoreAllLeavesNewRecordsAlone() throws {
        let f = try Self.twoSynced()
        try f.put("todo/milk", #"{"qty": 9}"#, in: "a")
        try f.run(["rm", "todo/eggs"], in: "a")
        try f.put("todo/bread", #"{"x": 1}"#, in: "a")
        let out = try f.run(["restore", "--all"], in: "a")
        #expect(out.stdout.contains("restored private/todo/eggs.json (its removal undone)"), "\(out)")
        let status = try f.json(["status"], in: "a")
        #expect(paths(status, "changes") == ["private/todo/bread.json"])
        try f.run(["restore"], in: "a", expect: 64)
        try f.run(["restore", "--all", "todo/milk"], in: "a", expect: 64)
    }

    @Test func restoreRefusesNewAndConflictedRecordsWritingNothing() throws {
        let f = try Self.twoSynced()
        try f.put("todo/bread", #"{"x": 1}"#, in: "a")
        try f.put("todo/milk", #"{"qty": 7}"#, in: "a")
        let refused = try f.run(["restore", "todo/milk", "todo/bread"], in: "a", expect: 1)
        #expect(
            refused.stderr.contains("private/todo/bread.json is a new record (never pushed)") && refused.stderr.contains("remove it instead"),
            "\(refused)")
        #expect(try f.fields("a", "private/todo/milk.json") as? [String: Int] == ["qty": 7], "nothing half-written")
        #expect(try f.fields("a", "private/todo/bread.json") as? [String: Int] == ["x": 1])
        let nothing = try f.run(["restore", "todo/none"], in: "a", expect: 1)
        #expect(nothing.stderr.contains("no such record here"), "\(nothing)")

        // A conflict: b changed milk on the store, a's edit meets it on pull.
        try f.clone("b")
        try f.put("todo/milk", #"{"qty": 3}"#, in: "b")
        try f.run(["push"], in: "b")
        try f.run(["pull"], in: "a", expect: 2)
        let conflicted = try f.run(["restore", "todo/milk"], in: "a", expect: 1)
        #expect(
            conflicted.stderr.contains("is in conflict; settle it first")
                && conflicted.stderr.contains("settle it with 'recsync resolve --ours|--theirs|--merge private/todo/milk.json'"), "\(conflicted)")
        #expect(try f.fields("a", "private/todo/milk.json") as? [String: Int] == ["qty": 7])
    }
}

/// `resolve --merge` field by field, identical sides, and the hints after resolve.
@Suite(.ownThreads) struct ConflictCLITests {
    /// Workspaces a and b share todo/r {title t, qty 1, note n}; b changes title and note and
    /// pushes, a changes title and qty and pulls into a conflict.
    static func clash(_ name: String = #function) throws -> CLIFixture {
        let f = try CLIFixture(name).withStore()
        try f.clone("a")
        try f.put("todo/r", #"{"title": "t", "qty": 1, "note": "n"}"#, in: "a")
        try f.run(["push"], in: "a")
        try f.clone("b")
        try f.put("todo/r", #"{"title": "b", "qty": 1, "note": "b note"}"#, in: "b")
        try f.run(["push"], in: "b")
        try f.put("todo/r", #"{"title": "a", "qty": 2, "note": "n"}"#, in: "a")
        try f.run(["pull"], in: "a", expect: 2)
        return f
    }

    @Test func mergeTakesWhatItCanAndLeavesTheTrueClash() throws {
        let f = try Self.clash()
        let out = try f.run(["resolve", "--merge"], in: "a", expect: 2)
        #expect(out.stdout.contains("both sides changed 'title' differently (the file keeps ours)"), "\(out)")
        #expect(out.stdout.contains("1 conflict still pending"), "\(out)")
        let file = try f.fields("a", "private/todo/r.json")
        #expect(file?["title"] as? String == "a" && file?["qty"] as? Int == 2 && file?["note"] as? String == "b note", "\(String(describing: file))")
        let doc = try f.json(["resolve", "--merge"], in: "a", expect: 2)
        let clashes = try #require(doc["clashes"] as? [[String: Any]])
        #expect(clashes.count == 1 && clashes[0]["fields"] as? [String] == ["title"] && clashes[0]["path"] as? String == "private/todo/r.json")
        #expect(paths(doc, "conflictsPending") == ["private/todo/r.json"])
        // Taking their title by hand, then merging again, settles it; qty is left to push.
        var edited = try #require(file)
        edited["title"] = "b"
        try f.put("todo/r", String(decoding: try JSONSerialization.data(withJSONObject: edited), as: UTF8.self), in: "a")
        let done = try f.run(["resolve", "--merge"], in: "a")
        #expect(done.stdout.contains("resolved private/todo/r.json (merge)") && done.stderr.contains("recsync push"), "\(done)")
        try f.run(["push"], in: "a")
        try f.run(["pull"], in: "b")
        #expect(try f.fields("b", "private/todo/r.json")?["qty"] as? Int == 2)
    }

    @Test func theirsAfterAPartialMergeTakesTheStoreVersionAndSaysNothingOfPush() throws {
        let f = try Self.clash()
        try f.run(["resolve", "--merge"], in: "a", expect: 2)
        let theirs = try f.run(["resolve", "--theirs"], in: "a")
        #expect(theirs.stdout.contains("resolved private/todo/r.json (the store's version)"), "\(theirs)")
        #expect(!theirs.stdout.contains("push") && !theirs.stderr.contains("push"), "nothing is left to push:\n\(theirs)")
        #expect(try f.fields("a", "private/todo/r.json")?["title"] as? String == "b")
        let status = try f.json(["status"], in: "a")
        #expect((status["changes"] as? [Any])?.isEmpty == true && (status["conflicts"] as? [Any])?.isEmpty == true, "\(status)")
    }

    @Test func oursAfterAPartialMergeKeepsTheMergedFile() throws {
        let f = try Self.clash()
        try f.run(["resolve", "--merge"], in: "a", expect: 2)
        let ours = try f.run(["resolve", "--ours", "todo/r"], in: "a")
        #expect(ours.stderr.contains("recsync push"), "\(ours)")
        try f.run(["push"], in: "a")
        try f.run(["pull"], in: "b")
        let r = try f.fields("b", "private/todo/r.json")
        #expect(r?["title"] as? String == "a" && r?["qty"] as? Int == 2 && r?["note"] as? String == "b note")
    }

    @Test func aConflictWhoseSidesBecameTheSameResolvesItself() throws {
        let f = try Self.clash()
        // b makes the very change a made: the pull that brings it has nothing to decide.
        try f.put("todo/r", #"{"title": "a", "qty": 2, "note": "n"}"#, in: "b")
        try f.run(["push"], in: "b")
        let pull = try f.json(["pull"], in: "a")
        #expect(paths(pull, "conflicts").isEmpty && paths(pull, "conflictsPending").isEmpty, "\(pull)")
        let status = try f.json(["status"], in: "a")
        #expect((status["conflicts"] as? [Any])?.isEmpty == true && (status["changes"] as? [Any])?.isEmpty == true, "\(status)")
    }

    @Test func editingTheFileToTheirVersionResolvesItAtStatus() throws {
        let f = try Self.clash()
        try f.put("todo/r", #"{"title": "b", "qty": 1, "note": "b note"}"#, in: "a")
        let status = try f.json(["status"], in: "a")
        #expect((status["conflicts"] as? [Any])?.isEmpty == true && (status["changes"] as? [Any])?.isEmpty == true, "\(status)")
        try f.run(["push"], in: "a")
    }
}
