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
