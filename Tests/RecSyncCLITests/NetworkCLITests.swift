import Foundation
import RecSyncTestSupport
import Testing

/// The command line over a real git server on 127.0.0.1 (git daemon, git://).
@Suite struct NetworkCLITests {
    @Test func twoDevicesSyncThroughAGitServer() async throws {
        let f = try CLIFixture().withStore()
        let daemon = try GitDaemon(basePath: f.directory.path)
        let url = daemon.url("store.git")
        try f.run(["clone", url, "laptop"])
        try f.run(["clone", url, "phone"])
        #expect(FileManager.default.fileExists(atPath: "\(f.ws("laptop"))/.recsync/mirror"), "a bare mirror under .recsync/")
        let config = try #require(readFile("\(f.ws("laptop"))/.recsync/config"))
        #expect(config.contains(url))

        try f.run(["zone", "create", "notes"], in: "laptop")
        try f.put("notes/r", #"{"title": "t"}"#, in: "laptop")
        try f.run(["push"], in: "laptop")
        try f.run(["pull"], in: "phone")
        #expect(try f.fields("phone", "private/notes/r.json")?["title"] as? String == "t")

        // Both edit the same record: the second push is a conflict (exit 2), nothing is lost.
        try f.put("notes/r", #"{"title": "laptop"}"#, in: "laptop")
        try f.put("notes/r", #"{"title": "phone"}"#, in: "phone")
        try f.run(["push"], in: "laptop")
        try f.run(["push"], in: "phone", expect: 2)
        try f.run(["resolve", "--ours"], in: "phone")
        try f.run(["push"], in: "phone")
        try f.run(["pull"], in: "laptop")
        #expect(try f.fields("laptop", "private/notes/r.json")?["title"] as? String == "phone")
        #expect(f.records("laptop") == f.records("phone"))

        // The server goes away: a clear network error (exit 5) naming the remote; nothing changes.
        daemon.stop()
        try f.put("notes/r", #"{"title": "offline"}"#, in: "laptop")
        let before = f.records("laptop")
        let failed = try f.run(["push"], in: "laptop", expect: 5)
        #expect(failed.stderr.contains("127.0.0.1"))
        #expect(f.records("laptop") == before)
        try daemon.start()
        try f.run(["push"], in: "laptop")
        try f.run(["pull"], in: "phone")
        #expect(try f.fields("phone", "private/notes/r.json")?["title"] as? String == "offline")
        try GitCLI.run(["fsck", "--no-dangling"], in: f.storePath)
    }

    /// Round trips, counted at the server: a push that lands on the mirror's head is one
    /// connection (git push's count), a pull or a status one, however many zones.
    @Test func aPushIsOneConnectionAndAPullOneWhateverTheZones() async throws {
        let f = try CLIFixture().withStore()
        let daemon = try GitDaemon(basePath: f.directory.path)
        let url = daemon.url("store.git")
        try f.run(["clone", url, "laptop"])
        try f.run(["clone", url, "phone"])
        for zone in ["a", "b", "c"] {
            try f.put("\(zone)/r", #"{"n": 0}"#, in: "laptop")
        }
        try f.run(["push"], in: "laptop")
        try f.run(["pull"], in: "phone")

        func connections(_ arguments: [String], in ws: String, expect: Int32 = 0) throws -> Int {
            let before = daemon.connectionsAccepted
            try f.run(arguments, in: ws, expect: expect)
            return daemon.connectionsAccepted - before
        }
        try f.put("b/r", #"{"n": 1}"#, in: "laptop")
        #expect(try connections(["push"], in: "laptop") == 1)
        #expect(try connections(["pull"], in: "phone") == 1)
        #expect(try f.fields("phone", "private/b/r.json")?["n"] as? Int == 1)
        #expect(try connections(["pull"], in: "phone") == 1, "a pull with nothing to bring")
        #expect(try connections(["status"], in: "phone") == 1)

        // The phone's mirror is behind: its push is refused, it fetches, and the record it
        // changed is decided against the store as it is (a conflict, exit 2), nothing lost.
        try f.put("b/r", #"{"n": 2}"#, in: "laptop")
        try f.run(["push"], in: "laptop")
        try f.put("b/r", #"{"n": 3}"#, in: "phone")
        #expect(try connections(["push"], in: "phone", expect: 2) == 2, "the refused push, then one fetch")
        try f.run(["resolve", "--ours"], in: "phone")
        try f.run(["push"], in: "phone")
        try f.run(["pull"], in: "laptop")
        #expect(try f.fields("laptop", "private/b/r.json")?["n"] as? Int == 3)
        // And an edit elsewhere while behind lands on top of what it had not seen.
        try f.put("a/r", #"{"n": 4}"#, in: "laptop")
        try f.run(["push"], in: "laptop")
        try f.put("c/r", #"{"n": 5}"#, in: "phone")
        try f.run(["push"], in: "phone")
        try f.run(["pull"], in: "laptop")
        try f.run(["pull"], in: "phone")
        #expect(f.records("laptop") == f.records("phone"))
        #expect(try f.fields("phone", "private/a/r.json")?["n"] as? Int == 4)
        #expect(try f.fields("laptop", "private/c/r.json")?["n"] as? Int == 5)

        // A zone deleted on the store after the phone's last look: the push that finds out
        // (its write refused there) removes it as a pull would, edits kept in lost+found,
        // while its edit in another zone lands; no second push needed, nothing brought back.
        try f.run(["zone", "delete", "a", "--yes"], in: "laptop")
        try f.put("a/r", #"{"n": 6}"#, in: "phone")
        try f.put("c/r", #"{"n": 7}"#, in: "phone")
        let pushed = try f.run(["push", "--json"], in: "phone")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(pushed.stdout.utf8)) as? [String: Any])
        #expect((report["zonesRemoved"] as? [[String: Any]])?.compactMap { $0["zone"] as? String } == ["a"], "\(pushed.stdout)")
        #expect((report["notSent"] as? [Any])?.isEmpty == true, "\(pushed.stdout)")
        #expect(!FileManager.default.fileExists(atPath: "\(f.ws("phone"))/private/a"))
        let kept = try FileManager.default.subpathsOfDirectory(atPath: "\(f.ws("phone"))/.recsync/lost+found")
        #expect(kept.contains { $0.hasSuffix("alice/a/r.json") }, "\(kept)")
        try f.run(["status", "--exit-code"], in: "phone")
        try f.run(["pull"], in: "laptop")
        #expect(try f.fields("laptop", "private/c/r.json")?["n"] as? Int == 7)
        #expect(!FileManager.default.fileExists(atPath: "\(f.ws("laptop"))/private/a"))
    }

    @Test func watchPollsANetworkStoreAndSurvivesARestart() async throws {
        let f = try CLIFixture().withStore()
        let daemon = try GitDaemon(basePath: f.directory.path)
        let url = daemon.url("store.git")
        try f.run(["clone", url, "laptop"])
        try f.run(["clone", url, "phone"])
        try f.run(["zone", "create", "notes"], in: "laptop")
        try f.run(["subscribe", "--database", "private"], in: "phone")

        let watch = try WatchProcess(f, in: "phone", ["watch", "--pull"])
        try await Task.sleep(nanoseconds: 1_500_000_000)

        // The server is down for a while, then back; a change after that is still reported.
        // Down for longer than the slowest poll (5 s), so watch must notice.
        daemon.stop()
        try await Task.sleep(nanoseconds: 6_500_000_000)
        try daemon.start()
        try f.put("notes/a", #"{"v": 1}"#, in: "laptop")
        try f.run(["push"], in: "laptop")
        // The pull comes before the notification it prompts, so wait for the line itself.
        let lines = try await watch.waitForLines(1)
        #expect(watch.stop() == 0, "\(watch.stderr)")
        #expect(FileManager.default.fileExists(atPath: "\(f.ws("phone"))/private/notes/a.json"), "watch --pull brought the change")
        #expect(lines.contains { $0["subscriptionID"] as? String == "database-private" }, "\(lines)")
        let log = watch.stderr
        #expect(log.contains("cannot reach"), "the outage was reported on stderr: \(log)")
    }
}
