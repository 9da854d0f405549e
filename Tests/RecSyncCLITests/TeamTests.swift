import Foundation
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

/// Many users: sharing zones, watching for changes, snapshots in git.
@Suite(.ownThreads) struct TeamTests {
    /// `recsync` as another user in the same fixture.
    func run(_ f: CLIFixture, as user: String, _ arguments: [String], in dir: String, input: String? = nil, expect status: Int32 = 0) throws
        -> ProcessOutput
    {
        let output = try f.recsync.run(arguments, in: f.ws(dir), input: input, environment: ["RECSYNC_USER": user])
        #expect(output.status == status, "recsync \(arguments.joined(separator: " ")) as \(user):\n\(output)")
        return output
    }

    @Test func sharingAcrossThreeUsers() throws {
        let f = try CLIFixture().withStore()
        for user in ["alice", "bob", "carol"] {
            _ = try f.recsync.run(["clone", "store.git", user], in: f.directory.path, environment: ["RECSYNC_USER": user])
        }
        try f.run(["zone", "create", "plans"], in: "alice")
        try f.put("plans/trip", #"{"where": "Lisbon"}"#, in: "alice")
        try f.run(["push"], in: "alice")
        _ = try run(f, as: "alice", ["share", "plans", "--with", "bob"], in: "alice")
        _ = try run(f, as: "alice", ["share", "plans", "--with", "carol", "--read-only"], in: "alice")
        let list = try f.json(["zone", "list"], in: "alice")
        let zones = try #require(list["zones"] as? [[String: Any]])
        #expect((zones.first?["participants"] as? [[String: Any]])?.count == 2)
        // Your permission: owner of your own zones, a participant's permission on shared ones.
        #expect(zones.map { $0["permission"] as? String } == ["owner"], "\(zones)")
        #expect(try f.run(["zone", "list"], in: "alice").stdout.hasPrefix("private\tplans\towner alice\towner\t"))
        let asBob = try run(f, as: "bob", ["zone", "list", "--json"], in: "bob")
        let bobZones = (try JSONSerialization.jsonObject(with: Data(asBob.stdout.utf8)) as? [String: Any])?["zones"] as? [[String: Any]]
        #expect(bobZones?.map { $0["permission"] as? String } == ["readWrite"], "\(asBob)")
        #expect(try run(f, as: "carol", ["zone", "list"], in: "carol").stdout.contains("shared\talice/plans\towner alice\treadOnly"))

        _ = try run(f, as: "bob", ["pull"], in: "bob")
        _ = try run(f, as: "carol", ["pull"], in: "carol")
        #expect(try f.fields("bob", "shared/alice/plans/trip.json")?["where"] as? String == "Lisbon")
        #expect(try f.fields("carol", "shared/alice/plans/trip.json") != nil)

        _ = try run(f, as: "carol", ["zone", "create", "mine"], in: "carol")
        // bob (read-write) edits; carol (read-only) is refused before anything is sent.
        try writeFile("\(f.ws("bob"))/shared/alice/plans/trip.json", #"{"where": "Porto"}"#)
        _ = try run(f, as: "bob", ["push"], in: "bob")
        try writeFile("\(f.ws("carol"))/shared/alice/plans/trip.json", #"{"where": "Faro"}"#)
        // status says so before any push.
        let status = try run(f, as: "carol", ["status"], in: "carol")
        #expect(status.stdout.contains("! shared/alice/plans/: read-only"), "\(status)")
        let head = try f.storeHead()
        let refused = try run(f, as: "carol", ["push"], in: "carol", expect: 1)
        #expect(refused.stderr.contains("read-only"))
        #expect(try f.storeHead() == head)
        // Her own zones are not held back by it: they go, the read-only edit is named.
        try writeFile("\(f.ws("carol"))/private/mine/note.json", #"{"v": 1}"#)
        let partial = try run(f, as: "carol", ["push", "--json"], in: "carol", expect: 1)
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(partial.stdout.utf8)) as? [String: Any])
        #expect((doc["saved"] as? [[String: Any]])?.compactMap { $0["recordName"] as? String } == ["note"], "\(partial)")
        let notSent = (doc["notSent"] as? [[String: Any]])?.compactMap { $0["path"] as? String } ?? []
        #expect(notSent.contains("shared/alice/plans"), "\(partial)")
        #expect(
            try GitCLI.run(["rev-parse", "main:zones/alice/plans/records"], in: f.storePath)
                == GitCLI.run(["rev-parse", "\(head):zones/alice/plans/records"], in: f.storePath))
        try f.run(["pull"], in: "alice")
        #expect(try f.fields("alice", "private/plans/trip.json")?["where"] as? String == "Porto")

        // Unshared: the zone leaves carol's workspace; her unpushed edit is kept aside.
        _ = try run(f, as: "alice", ["unshare", "plans", "--with", "carol"], in: "alice")
        let planned = try run(f, as: "carol", ["pull", "-n"], in: "carol")
        #expect(planned.stdout.contains("would remove shared/alice/plans/ (alice stopped sharing it with you, or deleted it)"), "\(planned)")
        let pulled = try run(f, as: "carol", ["pull", "--json"], in: "carol")
        #expect(!FileManager.default.fileExists(atPath: "\(f.ws("carol"))/shared/alice/plans"))
        #expect(pulled.stdout.contains("lost+found"))
        _ = try run(f, as: "bob", ["pull"], in: "bob")
        #expect(FileManager.default.fileExists(atPath: "\(f.ws("bob"))/shared/alice/plans/trip.json"), "bob still has it")
    }

    @Test func watchNotifiesOncePerSubscriptionAndPulls() async throws {
        let f = try CLIFixture().withStore()
        try f.clone("laptop")
        try f.clone("phone")
        try f.run(["zone", "create", "notes"], in: "laptop")
        try f.run(["zone", "create", "other"], in: "laptop")
        try f.run(["pull"], in: "phone")
        try f.run(["subscribe", "--database", "private"], in: "phone")
        try f.run(["subscribe", "--zone", "notes"], in: "phone")
        try f.run(["subscribe", "--zone", "other"], in: "phone")
        try f.run(["subscribe", "--query", "Task", "--database", "private", "--field", "urgent", "--equals", "true", "--id", "urgent"], in: "phone")
        let list = try f.run(["subscriptions"], in: "phone")
        #expect(list.lines.count == 4)

        let watch = try WatchProcess(f, in: "phone", ["watch", "--pull", "--settle", "300"])
        try await Task.sleep(nanoseconds: 1_000_000_000)

        try f.put("notes/a", #"{"v": 1}"#, in: "laptop")
        try f.put("notes/b", #"{"urgent": true}"#, in: "laptop", type: "Task")
        try f.run(["push"], in: "laptop")
        try f.put("notes/c", #"{"v": 3}"#, in: "laptop")
        try f.run(["push"], in: "laptop")
        // Wait for the pull to bring the records in and for every subscription's line (the
        // pull comes before the lines it prompts), then for stragglers.
        let expected: Set<String> = ["database-private", "zone-alice-notes", "urgent"]
        func delivered() -> [String] {
            watch.stdout.split(separator: "\n").compactMap { line in
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
                return object["subscriptionID"] as? String
            }
        }
        // A deadline for a hung watch only: on a busy 2-core machine the whole suite runs beside it.
        let arrived = await waitUntil(seconds: 90) {
            FileManager.default.fileExists(atPath: "\(f.ws("phone"))/private/notes/c.json") && expected.isSubset(of: Set(delivered()))
        }
        #expect(arrived, "watch --pull delivered \(delivered()) and pulled: \(watch.stderr)")
        try await Task.sleep(nanoseconds: 1_500_000_000)
        #expect(watch.stop() == 0, "SIGTERM stops watch cleanly: \(watch.stderr)")
        let lines = try SubscriptionCLITests.parseLines(watch.stdout)
        var ids: [String] = []
        for object in lines {
            #expect(object["version"] as? Int == 1)
            ids.append(object["subscriptionID"] as? String ?? "")
        }
        // Two pushes may land in one burst or two: each matching subscription is told once per burst.
        #expect(Set(ids) == expected, "\(ids)")
        #expect(ids.filter { $0 == "urgent" }.count == 1)
        #expect(ids.count <= 5)
        #expect(FileManager.default.fileExists(atPath: "\(f.ws("phone"))/private/notes/c.json"), "--pull applied the changes")
    }

    @Test func pullCommitKeepsSnapshotsInGit() throws {
        let f = try CLIFixture().withStore()
        try f.clone("laptop")
        try f.clone("phone")
        try f.run(["init", "--commit-snapshots"], in: "phone")
        try f.run(["zone", "create", "notes"], in: "laptop")
        try f.put("notes/a", #"{"v": 1}"#, in: "laptop")
        try f.run(["push"], in: "laptop")
        try f.run(["pull"], in: "phone")
        try f.put("notes/a", #"{"v": 2}"#, in: "laptop")
        try f.run(["push"], in: "laptop")
        try f.run(["pull"], in: "phone")
        let log = try GitCLI.run(["log", "--format=%s"], in: f.ws("phone")).split(separator: "\n")
        #expect(log.count == 2)
        #expect(log.first?.hasPrefix("recsync pull: 1 written") == true)
        // An old snapshot, checked out with git, pulls forward.
        try GitCLI.run(["checkout", "-q", "HEAD~1"], in: f.ws("phone"))
        #expect(try f.fields("phone", "private/notes/a.json")?["v"] as? Int == 1)
        try f.run(["pull", "--no-commit"], in: "phone")
        #expect(try f.fields("phone", "private/notes/a.json")?["v"] as? Int == 2)
        let status = try f.json(["status"], in: "phone")
        #expect((status["changes"] as? [Any])?.isEmpty == true)
    }
}
