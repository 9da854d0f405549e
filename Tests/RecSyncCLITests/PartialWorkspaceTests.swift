import Foundation
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

/// Workspaces that hold only some zones: `clone --zone`, `zone track`, `zone untrack`.
@Suite(.ownThreads) struct PartialWorkspaceTests {
    /// A store with zones `todo` and `work` (a record each), pushed from workspace `full`.
    static func storeWithTwoZones(_ name: String = #function) throws -> CLIFixture {
        let f = try CLIFixture(name).withStore()
        try f.clone("full")
        try f.run(["zone", "create", "todo"], in: "full")
        try f.run(["zone", "create", "work"], in: "full")
        try f.put("todo/milk", #"{"done": false}"#, in: "full")
        try f.put("work/report", #"{"pages": 3}"#, in: "full")
        try f.run(["push"], in: "full")
        return f
    }

    func exists(_ f: CLIFixture, _ path: String) -> Bool { FileManager.default.fileExists(atPath: f.ws(path)) }

    @Test func cloneWithZoneFetchesOnlyThoseZones() throws {
        let f = try Self.storeWithTwoZones()
        let clone = try f.run(["clone", "store.git", "part", "--zone", "todo"])
        #expect(clone.stdout.contains("cloned 1 zone, 1 record"), "\(clone)")
        #expect(exists(f, "part/private/todo/milk.json"))
        #expect(!exists(f, "part/private/work"))

        // A change in the untracked zone, and a new zone: neither reaches the partial workspace.
        try f.put("work/plan", #"{"pages": 1}"#, in: "full")
        try f.run(["zone", "create", "later"], in: "full")
        try f.run(["push"], in: "full")
        try f.run(["pull"], in: "part")
        #expect(!exists(f, "part/private/work"))
        #expect(!exists(f, "part/private/later"))
        #expect(try f.run(["status", "--exit-code"], in: "part").status == 0)
        // watch --pull pulls the same way.
        try f.put("work/more", #"{"pages": 2}"#, in: "full")
        try f.run(["push"], in: "full")
        try f.run(["watch", "--once", "--pull"], in: "part")
        #expect(!exists(f, "part/private/work") && !exists(f, "part/private/later"))

        // zone list shows every zone, and which are tracked.
        let list = try f.json(["zone", "list"], in: "part")
        let zones = try #require(list["zones"] as? [[String: Any]])
        #expect(zones.map { "\($0["zone"] ?? "")=\($0["tracked"] ?? "")" } == ["later=0", "todo=1", "work=0"], "\(zones)")
        let text = try f.run(["zone", "list"], in: "part").lines
        #expect(text.filter { $0.hasSuffix("\tnot tracked") }.count == 2, "\(text)")
        #expect(try f.run(["config", "get", "trackedZones"], in: "part").stdout == "private/todo\n")

        // A workspace of every zone lists them all as tracked.
        let full = try #require(try f.json(["zone", "list"], in: "full")["zones"] as? [[String: Any]])
        #expect(full.allSatisfy { $0["tracked"] as? Bool == true }, "\(full)")
    }

    @Test func cloneNamesAZoneItDidNotFindAndRefusesANameThatIsNoZone() throws {
        let f = try Self.storeWithTwoZones()
        let clone = try f.run(["clone", "store.git", "part", "--zone", "todo", "--zone", "nosuch"])
        #expect(clone.stderr.contains("zone alice/nosuch is not on the store"), "\(clone)")
        // Made later, it comes with the next pull.
        try f.run(["zone", "create", "nosuch"], in: "full")
        try f.put("nosuch/r", #"{"v": 1}"#, in: "full")
        try f.run(["push"], in: "full")
        try f.run(["pull"], in: "part")
        #expect(exists(f, "part/private/nosuch/r.json"))

        let bad = try f.run(["clone", "store.git", "bad", "--zone", "a/b/c"], expect: 1)
        #expect(bad.stderr.contains("'a/b/c' does not name a zone"), "\(bad)")
        #expect(!exists(f, "bad"), "a failed clone leaves nothing")
    }

    @Test func trackThenPullFetchesTheZoneWhole() throws {
        let f = try Self.storeWithTwoZones()
        try f.run(["clone", "store.git", "part", "--zone", "todo"])
        let track = try f.json(["zone", "track", "work"], in: "part")
        #expect(track["changed"] as? Bool == true && track["partial"] as? Bool == true, "\(track)")
        #expect(!exists(f, "part/private/work"), "track fetches on the next pull, not right away")
        try f.run(["pull"], in: "part")
        #expect(try f.fields("part", "private/work/report.json")?["pages"] as? Int == 3)

        // Tracked again: nothing to do.
        #expect(try f.json(["zone", "track", "work"], in: "part")["changed"] as? Bool == false)
        // A workspace of every zone tracks them all already.
        let already = try f.run(["zone", "track", "work"], in: "full")
        #expect(already.stdout.contains("tracks every zone already"), "\(already)")
        #expect(try f.run(["config", "get", "trackedZones"], in: "full").stdout == "null\n")
    }

    @Test func untrackRefusesUnpushedWorkAndForceKeepsItInLostAndFound() throws {
        let f = try Self.storeWithTwoZones()
        try f.clone("part")
        try f.put("work/report", #"{"pages": 4}"#, in: "part")
        let refused = try f.json(["zone", "untrack", "work"], in: "part", expect: 1)
        #expect((refused["error"] as? [String: Any])?["kind"] as? String == "localChanges", "\(refused)")
        let hinted = try f.run(["zone", "untrack", "work"], in: "part", expect: 1)
        #expect(hinted.stderr.contains("private/work/report.json") && hinted.stderr.contains("--force"), "\(hinted)")
        #expect(try f.fields("part", "private/work/report.json")?["pages"] as? Int == 4, "a refused untrack changes nothing")
        #expect(try f.run(["config", "get", "trackedZones"], in: "part").stdout == "null\n")

        let forced = try f.json(["zone", "untrack", "work", "--force"], in: "part")
        let kept = try #require(forced["lostAndFound"] as? String, "\(forced)")
        #expect(!exists(f, "part/private/work"))
        let saved = try #require(FileManager.default.contents(atPath: "\(f.ws("part"))/\(kept)/report.json"))
        #expect(String(decoding: saved, as: UTF8.self).contains("4"))
        // A workspace of every zone became a partial one holding the rest.
        #expect(try f.run(["config", "get", "trackedZones"], in: "part").stdout == "private/todo\n")

        // Nothing of the zone is left to misread: tracked again, it is fetched whole, as the store has it.
        try f.run(["zone", "track", "work"], in: "part")
        try f.run(["pull"], in: "part")
        #expect(try f.fields("part", "private/work/report.json")?["pages"] as? Int == 3)
        #expect(try f.run(["status", "--exit-code"], in: "part").status == 0)

        // Back to every zone: a zone made meanwhile comes too.
        try f.run(["zone", "untrack", "work"], in: "part")
        try f.run(["zone", "create", "later"], in: "full")
        try f.run(["zone", "track", "--all"], in: "part")
        try f.run(["pull"], in: "part")
        #expect(exists(f, "part/private/work/report.json") && exists(f, "part/private/later"))
        #expect(try f.run(["config", "get", "trackedZones"], in: "part").stdout == "null\n")
    }

    @Test func pushAndZoneCreateInAPartialWorkspace() throws {
        let f = try Self.storeWithTwoZones()
        try f.run(["clone", "store.git", "part", "--zone", "todo"])
        try f.put("todo/eggs", #"{"done": true}"#, in: "part")
        try f.run(["push"], in: "part")
        try f.run(["pull"], in: "full")
        #expect(try f.fields("full", "private/todo/eggs.json")?["done"] as? Bool == true)

        // A zone made here is one this workspace wants: tracked, and its directory appears.
        try f.run(["zone", "create", "ideas"], in: "part")
        #expect(exists(f, "part/private/ideas"))
        #expect(try f.run(["config", "get", "trackedZones"], in: "part").stdout == "private/ideas,private/todo\n")
        try f.put("ideas/one", #"{"n": 1}"#, in: "full")
        try f.run(["push"], in: "full")
        try f.run(["pull"], in: "part")
        #expect(exists(f, "part/private/ideas/one.json"))
        #expect(!exists(f, "part/private/work"))
        // The set is not a setting to write by hand.
        let set = try f.run(["config", "set", "trackedZones", "work"], in: "part", expect: 1)
        #expect(set.stderr.contains("zone track"), "\(set)")
    }

    @Test func aSharedZoneCanBeTrackedAsOwnerSlashZone() throws {
        let f = try Self.storeWithTwoZones()
        _ = try f.recsync.run(["clone", "store.git", "bob"], in: f.directory.path, environment: ["RECSYNC_USER": "bob"])
        let bob = ["RECSYNC_USER": "bob"]
        try f.run(["zone", "create", "plans"], in: "bob", environment: bob)
        try f.run(["put", "plans/trip"], in: "bob", input: #"{"where": "Lisbon"}"#, environment: bob)
        try f.run(["push"], in: "bob", environment: bob)
        try f.run(["share", "plans", "--with", "alice"], in: "bob", environment: bob)

        try f.run(["clone", "store.git", "only-shared", "--zone", "bob/plans"])
        #expect(try f.fields("only-shared", "shared/bob/plans/trip.json")?["where"] as? String == "Lisbon")
        #expect(!exists(f, "only-shared/private"))

        try f.run(["clone", "store.git", "part", "--zone", "todo"])
        #expect(!exists(f, "part/shared"))
        try f.run(["zone", "track", "bob/plans"], in: "part")
        try f.run(["pull"], in: "part")
        #expect(try f.fields("part", "shared/bob/plans/trip.json")?["where"] as? String == "Lisbon")
        try f.run(["zone", "untrack", "bob/plans"], in: "part")
        #expect(!exists(f, "part/shared/bob/plans"))
    }
}
