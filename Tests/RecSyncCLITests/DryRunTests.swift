import Foundation
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

/// `push --dry-run` and `pull --dry-run` say what would happen, change nothing, and are right.
@Suite(.ownThreads) struct DryRunTests {
    /// Every file under the workspace, .recsync/ included, byte for byte: the lock files and
    /// the device ID aside (made once, by the first command that talks to the store).
    func snapshot(_ f: CLIFixture, _ ws: String) -> [String: [UInt8]] {
        TreeSnapshot.files(f.ws(ws)) { [".recsync/lock", ".recsync/device", ".recsync/device.lock"].contains($0) }
    }

    /// The files that differ, by name (a readable failure).
    func changed(_ a: [String: [UInt8]], _ b: [String: [UInt8]]) -> [String] {
        Set(a.keys).union(b.keys).filter { a[$0] != b[$0] }.sorted()
    }

    @Test func aDryRunPushListsWhatWouldBeSentAndConflictsAndChangesNothing() throws {
        let f = try CLIFixture().withStore()
        try f.clone("a")
        try f.put("notes/r1", #"{"n": 1}"#, in: "a")
        try f.put("notes/r2", #"{"n": 2}"#, in: "a")
        try f.run(["push"], in: "a")
        try f.clone("b")
        try f.put("notes/r1", #"{"n": 10}"#, in: "b")
        try f.run(["push"], in: "b")
        // a: edits r1 (changed on the store meanwhile), deletes r2, adds a zone.
        try f.put("notes/r1", #"{"n": 100}"#, in: "a")
        try f.run(["rm", "notes/r2"], in: "a")
        try f.put("todo/t1", #"{"t": true}"#, in: "a")

        let head = try f.storeHead()
        let before = snapshot(f, "a")
        // r1 is listed once, as the conflict it would be, not also as sent; the exit status is
        // the push's (2: a conflict).
        let text = try f.run(["push", "-n"], in: "a", expect: 2)
        #expect(
            text.lines == [
                "would create zone todo",
                "would send A private/todo/t1.json",
                "would conflict: private/notes/r1.json changed on the store since you last pulled it",
                "held back: private/notes/r2.json (a record of its zone would conflict, and a zone lands whole)",
            ], "\(text)")
        let json = try f.json(["push", "--dry-run"], in: "a", expect: 2)
        #expect((json["conflicts"] as? [[String: Any]])?.compactMap { $0["recordName"] as? String } == ["r1"], "\(json)")
        #expect(json["conflictsChecked"] as? Bool == true)
        #expect(try f.storeHead() == head)
        #expect(changed(snapshot(f, "a"), before).isEmpty, "a dry run changed the workspace")

        // The real push does what it said.
        let pushed = try f.json(["push"], in: "a", expect: 2)
        #expect((pushed["conflicts"] as? [[String: Any]])?.compactMap { $0["recordName"] as? String } == ["r1"])
        #expect((pushed["saved"] as? [[String: Any]])?.compactMap { $0["recordName"] as? String } == ["t1"])
        #expect((pushed["deleted"] as? [[String: Any]])?.isEmpty == true, "\(pushed)")
        #expect((pushed["notSent"] as? [[String: Any]])?.compactMap { $0["path"] as? String } == ["private/notes/r2.json"], "\(pushed)")
        #expect((json["heldBack"] as? [[String: Any]])?.compactMap { $0["recordName"] as? String } == ["r2"], "\(json)")
        #expect((pushed["zonesCreated"] as? [[String: Any]])?.count == 1)
    }

    @Test func anUnreachableStoreStillListsWhatWouldBeSent() throws {
        let f = try CLIFixture().withStore()
        try f.clone("a")
        try f.put("notes/r1", #"{"n": 1}"#, in: "a")
        try f.run(["push"], in: "a")
        try f.put("notes/r1", #"{"n": 2}"#, in: "a")
        // The remote now names a server that is not there (port 9: nothing listens).
        let config = f.ws("a") + "/.recsync/config"
        try writeFile(config, try #require(readFile(config)).replacingOccurrences(of: f.storePath, with: "git://127.0.0.1:9/none.git"))
        let plan = try f.run(["push", "--dry-run"], in: "a")
        #expect(plan.lines == ["would send M private/notes/r1.json"], "\(plan)")
        #expect(plan.stderr.contains("conflicts were not checked"), "\(plan)")
        #expect(try f.json(["push", "-n"], in: "a")["conflictsChecked"] as? Bool == false)
        try f.run(["push"], in: "a", expect: 5)
    }

    @Test func aDryRunPullListsWritesDeletionsAndConflictsAndChangesNothing() throws {
        let f = try CLIFixture().withStore()
        try f.clone("a")
        for n in 1...3 { try f.put("notes/r\(n)", #"{"n": \#(n)}"#, in: "a") }
        try f.run(["push"], in: "a")
        try f.clone("b")
        try f.put("notes/r1", #"{"n": 10}"#, in: "a")
        try f.put("notes/r2", #"{"n": 20}"#, in: "a")
        try f.run(["rm", "notes/r3"], in: "a")
        try f.put("notes/r4", #"{"n": 4}"#, in: "a")
        try f.run(["push"], in: "a")
        try f.put("notes/r2", #"{"n": 200}"#, in: "b")  // edited on both sides

        let before = snapshot(f, "b")
        let text = try f.run(["pull", "--dry-run"], in: "b")
        #expect(
            text.lines == [
                "would write private/notes/r1.json",
                "would write private/notes/r4.json",
                "would delete private/notes/r3.json",
                "would conflict: private/notes/r2.json (edited here, changed on the store)",
            ], "\(text)")
        #expect(changed(snapshot(f, "b"), before).isEmpty, "a dry run changed the workspace")
        let real = try f.json(["pull"], in: "b", expect: 2)
        #expect((real["conflicts"] as? [[String: Any]])?.compactMap { $0["recordName"] as? String } == ["r2"], "\(real)")
        #expect(try f.run(["pull", "-n"], in: "b").lines == ["already up to date"])
    }

    /// A workspace that pushed a zone but never pulled it has no zone token: the pull lists the
    /// whole zone and deletes what it no longer holds. The dry run says so too (it said only
    /// "would write", or "already up to date" with only the deletion).
    @Test func aDryRunPullOfAZoneNeverPulledListsItsDeletions() throws {
        let f = try CLIFixture().withStore()
        try f.clone("a")
        try f.put("notes/r1", #"{"n": 1}"#, in: "a")
        try f.put("notes/r2", #"{"n": 2}"#, in: "a")
        try f.put("notes/r3", #"{"n": 3}"#, in: "a")
        try f.run(["push"], in: "a")
        try f.clone("b")
        try f.run(["rm", "notes/r2"], in: "b")
        try f.put("notes/r3", #"{"n": 30}"#, in: "b")
        try f.run(["push"], in: "b")

        let plan = try f.json(["pull", "-n"], in: "a")
        let real = try f.json(["pull"], in: "a")
        func names(_ doc: [String: Any], _ key: String) -> [String] {
            (doc[key] as? [[String: Any]])?.compactMap { $0["recordName"] as? String } ?? []
        }
        #expect(names(plan, "recordsToDelete") == ["r2"], "\(plan)")
        #expect(names(plan, "recordsToWrite") == ["r3"], "\(plan)")
        #expect(real["recordsDeleted"] as? Int == 1 && real["recordsWritten"] as? Int == 1, "\(real)")

        // Only a deletion: the dry run is not "already up to date".
        try f.put("todo/t1", #"{"n": 1}"#, in: "a")
        try f.put("todo/t2", #"{"n": 2}"#, in: "a")
        try f.run(["push"], in: "a")
        try f.run(["pull"], in: "b")
        try f.run(["rm", "todo/t2"], in: "b")
        try f.run(["push"], in: "b")
        #expect(try f.run(["pull", "-n"], in: "a").lines == ["would delete private/todo/t2.json"])
        #expect(try f.json(["pull"], in: "a")["recordsDeleted"] as? Int == 1)
    }
}
