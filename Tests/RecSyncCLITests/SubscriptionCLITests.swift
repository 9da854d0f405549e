import Foundation
import Glibc
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

/// Durable subscriptions through the built binary: `subscribe`, `watch`, `watch --once`,
/// `notifications`. Notifications are compared field by field, never as whole lines.
@Suite(.ownThreads) struct SubscriptionCLITests {
    /// A notification line or document entry, parsed.
    typealias Notification = [String: Any]

    /// The JSON lines `watch` printed.
    static func parseLines(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [Notification] {
        try text.split(separator: "\n").map { line in
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? Notification
            let n = try #require(object, "not a JSON object: \(line)", sourceLocation: sourceLocation)
            #expect(n["version"] as? Int == 1, sourceLocation: sourceLocation)
            return n
        }
    }

    /// `recsync watch --once` (plus `extra`) in `dir`: the notification lines it printed.
    func watchOnce(_ f: CLIFixture, in dir: String, _ extra: [String] = [], sourceLocation: SourceLocation = #_sourceLocation) throws
        -> [Notification]
    {
        try Self.parseLines(try f.run(["watch", "--once"] + extra, in: dir, sourceLocation: sourceLocation).stdout, sourceLocation: sourceLocation)
    }

    /// `recsync notifications --json` (plus `extra`) in `dir`: the notifications it listed.
    func notifications(_ f: CLIFixture, in dir: String, _ extra: [String] = [], sourceLocation: SourceLocation = #_sourceLocation) throws
        -> [Notification]
    {
        let doc = try f.json(["notifications"] + extra, in: dir, sourceLocation: sourceLocation)
        return try #require(doc["notifications"] as? [Notification], "\(doc)", sourceLocation: sourceLocation)
    }

    /// The notification for a subscription, if there is exactly one.
    func only(_ id: String, in list: [Notification], sourceLocation: SourceLocation = #_sourceLocation) throws -> Notification {
        let matching = list.filter { $0["subscriptionID"] as? String == id }
        #expect(matching.count == 1, "\(id) in \(list)", sourceLocation: sourceLocation)
        return try #require(matching.first, sourceLocation: sourceLocation)
    }

    /// The records a query notification names, as "reason owner/zone/name", sorted.
    func records(_ n: Notification) -> [String] {
        ((n["records"] as? [[String: Any]]) ?? []).map { r in
            "\(r["reason"] as? String ?? "?") \(r["owner"] as? String ?? "?")/\(r["zone"] as? String ?? "?")/\(r["recordName"] as? String ?? "?")"
        }.sorted()
    }

    /// Two workspaces of alice's (laptop, phone) with the zone `notes` pulled into both.
    func twoDevices(_ name: String = #function) throws -> CLIFixture {
        let f = try CLIFixture(name).withStore()
        try f.clone("laptop")
        try f.clone("phone")
        try f.run(["zone", "create", "notes"], in: "laptop")
        try f.run(["pull"], in: "phone")
        return f
    }

    // MARK: - Durable: nothing missed while nothing runs

    @Test func changePushedBeforeWatchStartsIsReportedAtStart() async throws {
        let f = try twoDevices()
        try f.run(["subscribe", "--zone", "notes"], in: "phone")
        try f.put("notes/a", #"{"v": 1}"#, in: "laptop")
        try f.put("notes/b", #"{"v": 2}"#, in: "laptop")
        try f.run(["push"], in: "laptop")

        // Nothing has run on the phone since; watch reports the push as it starts.
        let watch = try WatchProcess(f, in: "phone", ["watch"])
        let lines = try await watch.waitForLines(1)
        let status = watch.stop()
        #expect(status == 0, "SIGTERM stops watch cleanly\n\(watch.stderr)")
        let n = try #require(lines.first)
        #expect(n["subscriptionID"] as? String == "zone-alice-notes")
        #expect(n["kind"] as? String == "zone")
        #expect(n["scope"] as? String == "private")
        #expect(n["zone"] as? String == "alice/notes")
        #expect(n["count"] as? Int == 2)
        #expect(n["zones"] as? [String] == ["alice/notes"])
        #expect(n["records"] == nil, "a zone notification names no records")
        // Delivered: the cursor moved.
        #expect(try watchOnce(f, in: "phone").isEmpty)
    }

    @Test func killedWatchReportsTheBurstAgainAndNeverSkips() throws {
        let f = try twoDevices()
        try f.run(["subscribe", "--database", "private"], in: "phone")
        try f.run(["subscribe", "--query", "Note", "--database", "private", "--id", "notes-query"], in: "phone")
        try f.put("notes/a", #"{"v": 1}"#, in: "laptop", type: "Note")
        try f.put("notes/b", #"{"v": 2}"#, in: "laptop", type: "Note")
        try f.run(["push"], in: "laptop")

        // The cursor is saved only after --exec returns: this --exec kills watch first.
        let killed = try f.recsync.run(["watch", "--exec", "kill -9 $PPID"], in: f.ws("phone"))
        #expect(killed.status == SIGKILL, "\(killed)")
        let printed = try Self.parseLines(killed.stdout)
        #expect(printed.count == 1, "killed during the first notification's --exec: \(killed)")
        #expect(printed.first?["count"] as? Int == 2)

        // Meanwhile another change; the restarted watch reports the old burst and it, coalesced.
        try f.put("notes/c", #"{"v": 3}"#, in: "laptop", type: "Note")
        try f.run(["push"], in: "laptop")
        let again = try watchOnce(f, in: "phone")
        #expect(again.count == 2, "\(again)")
        let database = try only("database-private", in: again)
        #expect(database["count"] as? Int == 3)
        #expect(database["zones"] as? [String] == ["alice/notes"])
        let query = try only("notes-query", in: again)
        #expect(query["count"] as? Int == 3)
        #expect(records(query) == ["created alice/notes/a", "created alice/notes/b", "created alice/notes/c"])
        #expect(try watchOnce(f, in: "phone").isEmpty, "delivered this time")
    }

    @Test func onceThenOnceAndNotificationsAck() throws {
        let f = try twoDevices()
        try f.run(["subscribe", "--database", "private"], in: "phone")
        try f.put("notes/a", #"{"v": 1}"#, in: "laptop")
        try f.run(["push"], in: "laptop")

        // watch --once delivers and acknowledges: the second reports nothing new.
        let first = try watchOnce(f, in: "phone")
        #expect(first.count == 1)
        #expect(first.first?["count"] as? Int == 1)
        let second = try f.run(["watch", "--once"], in: "phone")
        #expect(second.stdout.isEmpty, "\(second)")
        #expect(second.stderr.contains("nothing new"))

        // notifications looks without moving anything, until --ack.
        try f.put("notes/a", #"{"v": 2}"#, in: "laptop")
        try f.put("notes/b", #"{"v": 1}"#, in: "laptop")
        try f.run(["push"], in: "laptop")
        let look = try notifications(f, in: "phone")
        #expect(look.count == 1)
        #expect(look.first?["count"] as? Int == 2)
        #expect(NSArray(array: try notifications(f, in: "phone")).isEqual(to: look), "looking twice shows the same")
        let text = try f.run(["notifications", "-q"], in: "phone")
        #expect(text.stdout == "database-private\t2 changes\tin alice/notes\n", "\(text)")

        let acked = try f.json(["notifications", "--ack"], in: "phone")
        #expect(acked["acknowledged"] as? Bool == true)
        #expect(NSArray(array: acked["notifications"] as? [Any] ?? []).isEqual(to: look), "--ack shows what it acknowledges")
        #expect(try notifications(f, in: "phone").isEmpty)
        #expect(try f.run(["notifications"], in: "phone").stdout == "nothing new\n")
        #expect(try watchOnce(f, in: "phone").isEmpty)
    }

    @Test func subscribeSinceBeginningReportsWhatIsAlreadyInTheStore() throws {
        let f = try twoDevices()
        try f.put("notes/a", #"{"v": 1}"#, in: "laptop", type: "Note")
        try f.put("notes/b", #"{"v": 2}"#, in: "laptop", type: "Note")
        try f.run(["push"], in: "laptop")
        try f.run(["subscribe", "--zone", "notes", "--since-beginning"], in: "phone")
        try f.run(["subscribe", "--query", "Note", "--database", "private", "--since-beginning"], in: "phone")
        try f.run(["subscribe", "--query", "Note", "--database", "private", "--id", "from-now"], in: "phone")
        let pending = try notifications(f, in: "phone")
        #expect(Set(pending.compactMap { $0["subscriptionID"] as? String }) == ["zone-alice-notes", "query-Note"], "a new subscription starts now")
        #expect(try only("zone-alice-notes", in: pending)["count"] as? Int == 2)
        #expect(records(try only("query-Note", in: pending)) == ["created alice/notes/a", "created alice/notes/b"])
    }

    // MARK: - Query subscriptions

    @Test func firesOnFiltersCreateUpdateDelete() throws {
        let f = try twoDevices()
        try f.put("notes/kept", #"{"v": 1}"#, in: "laptop", type: "Note")
        try f.put("notes/gone", #"{"v": 1}"#, in: "laptop", type: "Note")
        try f.run(["push"], in: "laptop")
        try f.run(["subscribe", "--query", "Note", "--database", "private", "--fires-on", "create", "--id", "on-create"], in: "phone")
        try f.run(["subscribe", "--query", "Note", "--database", "private", "--fires-on", "update", "--id", "on-update"], in: "phone")
        try f.run(["subscribe", "--query", "Note", "--database", "private", "--fires-on", "delete", "--id", "on-delete"], in: "phone")
        try f.run(["subscribe", "--query", "Note", "--database", "private", "--fires-on", "create,delete", "--id", "on-create-delete"], in: "phone")
        let list = try f.run(["subscriptions"], in: "phone")
        #expect(list.lines.contains("on-create-delete\tquery Note in private on create,delete"), "\(list)")

        // One push that creates, updates and deletes.
        try f.put("notes/new", #"{"v": 1}"#, in: "laptop", type: "Note")
        try f.put("notes/kept", #"{"v": 2}"#, in: "laptop", type: "Note")
        try f.run(["rm", "notes/gone"], in: "laptop")
        try f.run(["push"], in: "laptop")

        let got = try watchOnce(f, in: "phone")
        #expect(got.count == 4, "\(got)")
        for n in got {
            #expect(n["kind"] as? String == "query")
            #expect(n["scope"] as? String == "private")
            for r in n["records"] as? [[String: Any]] ?? [] {
                #expect(Set(r.keys) == ["recordName", "zone", "owner", "reason"], "\(r)")
            }
        }
        let create = try only("on-create", in: got), update = try only("on-update", in: got), delete = try only("on-delete", in: got)
        #expect(records(create) == ["created alice/notes/new"])
        #expect(create["count"] as? Int == 1)
        #expect(records(update) == ["updated alice/notes/kept"])
        #expect(update["count"] as? Int == 1)
        #expect(records(delete) == ["deleted alice/notes/gone"])
        #expect(delete["count"] as? Int == 1)
        #expect(records(try only("on-create-delete", in: got)) == ["created alice/notes/new", "deleted alice/notes/gone"])
    }

    @Test func severalFieldConditionsMustAllHold() throws {
        let f = try twoDevices()
        try f.run(
            [
                "subscribe", "--query", "T", "--database", "private", "--field", "a", "--equals", "1", "--field", "b", "--equals", #""x""#,
                "--exists", "c", "--id", "abc",
            ],
            in: "phone")
        let list = try f.run(["subscriptions"], in: "phone")
        #expect(list.lines == ["abc\tquery T in private where a = 1 and b = \"x\" and c exists"], "\(list)")
        try f.put("notes/all", #"{"a": 1, "b": "x", "c": false}"#, in: "laptop", type: "T")
        try f.put("notes/no-c", #"{"a": 1, "b": "x"}"#, in: "laptop", type: "T")
        try f.put("notes/a-differs", #"{"a": 2, "b": "x", "c": 1}"#, in: "laptop", type: "T")
        try f.put("notes/b-differs", #"{"a": 1, "b": "y", "c": 1}"#, in: "laptop", type: "T")
        try f.put("notes/other-type", #"{"a": 1, "b": "x", "c": 1}"#, in: "laptop", type: "U")
        try f.run(["push"], in: "laptop")
        let got = try watchOnce(f, in: "phone")
        #expect(got.count == 1)
        #expect(records(try only("abc", in: got)) == ["created alice/notes/all"])
        #expect(got.first?["count"] as? Int == 1)
    }

    @Test func badSubscribeArgumentsAreUsageErrorsNamingTheArgument() throws {
        let f = try twoDevices()
        let cases: [([String], String)] = [
            (["--field", "a", "--field", "b", "--equals", "1"], "one --equals for each --field"),
            (["--equals", "1"], "one --equals for each --field"),
            (["--fires-on", "create,upsert"], "--fires-on create,upsert: 'upsert' is not create, update or delete"),
            (["--fires-on", ","], "--fires-on needs one or more"),
            (["--field", "a", "--equals", "x"], "--field a --equals x: the value 'x' for field 'a' is not JSON"),
            (["--field", "a", "--equals", "null"], "--field a --equals null:"),
            (["--field", "bad key", "--equals", "1"], "--field bad key --equals 1: field key 'bad key'"),
            (["--exists", "bad key"], "--exists bad key: field key 'bad key'"),
            (["--database", "public"], "--database public: give private or shared"),
            (["--database", "shared", "--zone", "notes"], "give --database or --zone, not both"),
        ]
        for (extra, message) in cases {
            let out = try f.run(["subscribe", "--query", "T"] + extra, in: "phone", expect: 64)
            #expect(out.stderr.contains(message), "\(extra): \(out)")
        }
        #expect(try f.run(["subscribe", "--query", "bad type"], in: "phone", expect: 64).stderr.contains("--query bad type:"))
        #expect(
            try f.run(["subscribe", "--database", "private", "--fires-on", "create"], in: "phone", expect: 64).stderr.contains("go with --query"))
        #expect(try f.run(["subscribe"], in: "phone", expect: 64).stderr.contains("exactly one of --database, --zone, --query"))
        #expect(try f.run(["watch", "--settle", "-1"], in: "phone", expect: 64).stderr.contains("--settle"))
        // Nothing was saved by any of them; and watch with nothing to watch says what to do.
        #expect((try f.json(["subscriptions"], in: "phone")["subscriptions"] as? [Any])?.isEmpty == true)
        #expect(try f.run(["watch", "--once"], in: "phone", expect: 1).stderr.contains("recsync subscribe"))
    }

    @Test func sharedZoneQuerySubscriptionNamesTheOwner() throws {
        let f = try CLIFixture().withStore()
        try f.clone("alice")
        try f.run(["clone", "store.git", "bob", "--user", "bob"])
        try f.run(["zone", "create", "plans"], in: "alice")
        try f.put("plans/trip", #"{"where": "Lisbon"}"#, in: "alice", type: "Trip")
        try f.run(["push"], in: "alice")
        try f.run(["share", "plans", "--with", "bob"], in: "alice")
        try f.run(["pull"], in: "bob")
        try f.run(["subscribe", "--query", "Trip", "--database", "shared"], in: "bob")
        try f.run(["subscribe", "--query", "Trip", "--database", "private", "--id", "bobs-own"], in: "bob")

        try f.put("plans/trip", #"{"where": "Porto"}"#, in: "alice", type: "Trip")
        try f.run(["push"], in: "alice")
        let got = try watchOnce(f, in: "bob")
        #expect(got.count == 1, "only the shared subscription: \(got)")
        let n = try only("query-Trip-shared", in: got)
        #expect(n["scope"] as? String == "shared")
        #expect(n["zones"] as? [String] == ["alice/plans"])
        #expect(records(n) == ["updated alice/plans/trip"])
        let record = try #require((n["records"] as? [[String: Any]])?.first)
        #expect(record["owner"] as? String == "alice")
        #expect(record["zone"] as? String == "plans")
    }

    // MARK: - No echo

    @Test func ownPushDoesNotNotifyUnlessIncludeOwn() throws {
        let f = try twoDevices()
        for dir in ["laptop", "phone"] { try f.run(["subscribe", "--database", "private"], in: dir) }
        try f.run(["subscribe", "--database", "private", "--include-own", "--id", "mine-too"], in: "phone")

        try f.put("notes/from-phone", #"{"v": 1}"#, in: "phone")
        try f.run(["push"], in: "phone")
        // The phone's own push: only the subscription that asked for own changes.
        let phone = try notifications(f, in: "phone")
        #expect(phone.compactMap { $0["subscriptionID"] as? String } == ["mine-too"], "\(phone)")
        // --include-own on the command asks it of every subscription (without moving anything).
        let all = try notifications(f, in: "phone", ["--include-own"])
        #expect(Set(all.compactMap { $0["subscriptionID"] as? String }) == ["database-private", "mine-too"])
        // Another workspace's push notifies the laptop.
        let laptop = try watchOnce(f, in: "laptop")
        #expect(laptop.count == 1)
        #expect(laptop.first?["count"] as? Int == 1)

        // The laptop pushes too: the phone is told of that push only, counted alone.
        try f.put("notes/from-laptop", #"{"v": 1}"#, in: "laptop")
        try f.run(["push"], in: "laptop")
        let both = try watchOnce(f, in: "phone")
        #expect(try only("database-private", in: both)["count"] as? Int == 1, "\(both)")
        #expect(try only("mine-too", in: both)["count"] as? Int == 2)

        // watch --include-own reports the phone's own next push to every subscription.
        try f.put("notes/from-phone", #"{"v": 2}"#, in: "phone")
        try f.run(["push"], in: "phone")
        let own = try watchOnce(f, in: "phone", ["--include-own"])
        #expect(Set(own.compactMap { $0["subscriptionID"] as? String }) == ["database-private", "mine-too"], "\(own)")
        #expect(try watchOnce(f, in: "phone", ["--include-own"]).isEmpty)
    }

    // MARK: - --pull

    @Test func watchPullPullsAtStartAndOnChange() async throws {
        let f = try twoDevices()
        try f.put("notes/before", #"{"v": 1}"#, in: "laptop")
        try f.run(["push"], in: "laptop")

        // No subscription: --pull pulls at start, with no new change.
        let watch = try WatchProcess(f, in: "phone", ["watch", "--pull", "--settle", "100"])
        let pulledAtStart = await waitUntil { FileManager.default.fileExists(atPath: "\(f.ws("phone"))/private/notes/before.json") }
        #expect(pulledAtStart, "pulled at start\n\(watch.stderr)")
        try f.put("notes/after", #"{"v": 2}"#, in: "laptop")
        try f.run(["push"], in: "laptop")
        let pulledOnChange = await waitUntil { FileManager.default.fileExists(atPath: "\(f.ws("phone"))/private/notes/after.json") }
        #expect(pulledOnChange, "pulled on change\n\(watch.stderr)")
        #expect(watch.stop() == 0, "\(watch.stderr)")
        #expect(try f.fields("phone", "private/notes/after.json")?["v"] as? Int == 2)
        #expect((try f.json(["status"], in: "phone")["changes"] as? [Any])?.isEmpty == true)
    }

    @Test func zoneSubscriptionWithPullPullsWhenItsZoneChanges() async throws {
        let f = try twoDevices()
        try f.run(["zone", "create", "other"], in: "laptop")
        try f.run(["pull"], in: "phone")
        try f.run(["subscribe", "--zone", "notes"], in: "phone")
        try f.put("notes/before", #"{"v": 1}"#, in: "laptop")
        try f.run(["push"], in: "laptop")

        let watch = try WatchProcess(f, in: "phone", ["watch", "--pull", "--settle", "100"])
        let first = try await watch.waitForLines(1)
        #expect(first.first?["count"] as? Int == 1)
        let pulledAtStart = await waitUntil { FileManager.default.fileExists(atPath: "\(f.ws("phone"))/private/notes/before.json") }
        #expect(pulledAtStart, "\(watch.stderr)")

        // A change to another zone notifies nothing; the next change to notes pulls.
        try f.put("other/x", #"{"v": 1}"#, in: "laptop")
        try f.run(["push"], in: "laptop")
        try f.put("notes/after", #"{"v": 1}"#, in: "laptop")
        try f.run(["push"], in: "laptop")
        let pulled = await waitUntil { FileManager.default.fileExists(atPath: "\(f.ws("phone"))/private/notes/after.json") }
        #expect(pulled, "\(watch.stderr)")
        let lines = try await watch.waitForLines(2)
        #expect(watch.stop() == 0, "\(watch.stderr)")
        #expect(lines.allSatisfy { $0["subscriptionID"] as? String == "zone-alice-notes" && $0["zones"] as? [String] == ["alice/notes"] }, "\(lines)")
        #expect(lines.compactMap { $0["count"] as? Int }.reduce(0, +) == 2, "before and after, never other/x: \(lines)")
        #expect(FileManager.default.fileExists(atPath: "\(f.ws("phone"))/private/other/x.json"), "--pull pulls the whole workspace")
    }
}

/// Polls `condition` every 100 ms for up to `seconds` (generous, for busy machines).
func waitUntil(seconds: Double = 40, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        try? await Task.sleep(nanoseconds: 100_000_000)
    }
    return condition()
}

/// A long-running `recsync watch`, its stdout and stderr going to files in the fixture.
final class WatchProcess {
    let process = Process()
    let outPath: String
    let errPath: String

    init(_ f: CLIFixture, in dir: String, _ arguments: [String], environment: [String: String] = [:]) throws {
        let name = "watch-\(UUID().uuidString.prefix(8))"
        outPath = f.directory.file("\(name).out")
        errPath = f.directory.file("\(name).err")
        _ = FileManager.default.createFile(atPath: outPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        process.executableURL = URL(fileURLWithPath: f.recsync.executable)
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: f.ws(dir))
        process.environment = f.recsync.environment.merging(environment) { _, new in new }
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    var stdout: String { readFile(outPath) ?? "" }
    var stderr: String { readFile(errPath) ?? "" }

    /// The complete lines printed so far, once there are at least `count` (or the time is up).
    func waitForLines(_ count: Int, seconds: Double = 40, sourceLocation: SourceLocation = #_sourceLocation) async throws -> [[String: Any]] {
        let complete = {
            self.stdout.split(separator: "\n", omittingEmptySubsequences: true).count - (self.stdout.hasSuffix("\n") || self.stdout.isEmpty ? 0 : 1)
        }
        let arrived = await waitUntil(seconds: seconds) { complete() >= count || !self.process.isRunning }
        #expect(arrived && complete() >= count, "waited for \(count) lines:\n\(stdout)\n--- stderr\n\(stderr)", sourceLocation: sourceLocation)
        let text = stdout
        let whole = text.hasSuffix("\n") ? text : String(text[..<(text.lastIndex(of: "\n").map { text.index(after: $0) } ?? text.startIndex)])
        return try SubscriptionCLITests.parseLines(whole, sourceLocation: sourceLocation)
    }

    /// Sends SIGTERM and returns the exit status.
    func stop() -> Int32 {
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        return process.terminationStatus
    }
}
