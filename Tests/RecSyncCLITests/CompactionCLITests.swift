import Foundation
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

/// `recsync store compact` through the built binary: workspaces whose tokens expired pull
/// from nothing and keep their unpushed edits; over git daemon, a workspace that pushes
/// against the old history is refused and its write recomputed on the new one.
@Suite(.ownThreads) struct CompactionCLITests {
    /// A store with some history, workspace `a` that made it and `b` that pulled it, and in `b`
    /// an edit and a new record that were never pushed; then two more commits from `a`.
    func history(_ f: CLIFixture, store: String) throws {
        try f.run(["clone", store, "a"])
        try f.run(["zone", "create", "notes"], in: "a")
        for i in 1...4 {
            try f.put("notes/r\(i)", #"{"v": \#(i)}"#, in: "a")
            try f.run(["push"], in: "a")
        }
        try f.run(["clone", store, "b"])
        try f.put("notes/r1", #"{"v": "edited in b"}"#, in: "b")
        try f.put("notes/new", #"{"v": "made in b"}"#, in: "b")
        for i in 2...3 {
            try f.put("notes/r\(i)", #"{"v": "edited in a"}"#, in: "a")
            try f.run(["push"], in: "a")
        }
    }

    func commits(_ f: CLIFixture) throws -> Int {
        try Int(GitCLI.run(["rev-list", "--count", "main"], in: f.storePath).trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    @Test func pullAfterCompactionRefetchesAndKeepsUnpushedEdits() throws {
        let f = try CLIFixture().withStore()
        try history(f, store: "store.git")
        let refused = try f.run(["store", "compact", "--keep-last", "1"], in: "a", expect: 1)
        #expect(refused.stderr.contains("pass --yes"), "\(refused)")
        let before = try commits(f)
        for bad in [
            ["--yes"], ["--keep-last", "0", "--yes"], ["--before", "last week", "--yes"], ["--keep-last", "1", "--before", "2026-01-01", "--yes"],
        ] {
            let usage = try f.run(["store", "compact"] + bad, in: "a", expect: 64)
            #expect(usage.stderr.contains("--keep-last") || usage.stderr.contains("--before"), "\(usage)")
        }
        #expect(try commits(f) == before)

        let report = try f.json(["store", "compact", "--keep-last", "1", "--yes"], in: "a")
        #expect(report["compacted"] as? Bool == true && report["commitsReplayed"] as? Int == 1, "\(report)")
        #expect(try commits(f) == 3 && before > 3)
        let nothing = try f.run(["store", "compact", "--keep-last", "5", "--yes"], in: "a")
        #expect(nothing.stdout.contains("nothing to compact"), "\(nothing)")
        #expect(try commits(f) == 3)

        // b's tokens named commits before the horizon: its pull starts over and keeps its edits.
        let pulled = try f.json(["pull"], in: "b")
        #expect(!(pulled["expiredTokens"] as? [String] ?? []).isEmpty, "\(pulled)")
        #expect(try f.fields("b", "private/notes/r1.json")?["v"] as? String == "edited in b")
        #expect(try f.fields("b", "private/notes/new.json")?["v"] as? String == "made in b")
        #expect(try f.fields("b", "private/notes/r2.json")?["v"] as? String == "edited in a")
        try f.run(["push"], in: "b")
        try f.run(["pull"], in: "a")
        #expect(f.records("a") == f.records("b"))
        try GitCLI.run(["fsck", "--strict", "--no-dangling"], in: f.storePath)
    }

    @Test func overGitDaemonAPushAgainstTheOldHistoryIsRecomputedOnTheNewOne() throws {
        let f = try CLIFixture().withStore()
        let daemon = try GitDaemon(basePath: f.directory.path)
        let url = daemon.url("store.git")
        try history(f, store: url)
        // c pulled the latest history: its tokens name a kept commit and go on working.
        try f.run(["clone", url, "c"])

        let text = try f.run(["store", "compact", "--keep-last", "2", "--yes"], in: "a")
        #expect(text.stdout.contains("compacted \(url)"), "\(text)")
        #expect(try commits(f) == 4)

        // b's mirror still holds the old history: its non-force push is refused, it fetches
        // the rewritten one and lands its changes on it.
        try f.run(["push"], in: "b")
        #expect(try commits(f) == 5)
        try f.run(["pull"], in: "b")
        #expect(try f.fields("b", "private/notes/r1.json")?["v"] as? String == "edited in b")
        let pulled = try f.json(["pull"], in: "c")
        #expect((pulled["expiredTokens"] as? [String] ?? []).isEmpty, "\(pulled)")
        try f.run(["pull"], in: "a")
        #expect(f.records("a") == f.records("b") && f.records("b") == f.records("c"))
        #expect(try f.fields("c", "private/notes/new.json")?["v"] as? String == "made in b")
        try GitCLI.run(["fsck", "--strict", "--no-dangling"], in: f.storePath)
    }
}
