import Foundation
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

/// A store a newer recsync wrote in a newer format: this one refuses it by kind, says what to
/// do, and changes nothing on either side.
@Suite(.ownThreads) struct StoreFormatCLITests {
    @Test func aStoreInANewerFormatIsRefusedAndNothingChanges() throws {
        let f = try CLIFixture().withStore()
        try f.clone("a")
        try f.run(["zone", "create", "notes"], in: "a")
        try f.put("notes/x", #"{"v": 1}"#, in: "a")
        try f.run(["push"], in: "a")
        try f.put("notes/y", #"{"v": 2}"#, in: "a")  // an edit not pushed yet

        // What a newer recsync's upgrade leaves: a manifest that says format 2.
        let manifest = try GitCLI.run(["show", "refs/heads/main:recsync.json"], in: f.storePath)
        let newer = manifest.replacingOccurrences(of: #""format": 1"#, with: #""format": 2"#)
        try #require(newer != manifest, "the manifest: \(manifest)")
        try GitCLI.commitFiles([(path: "recsync.json", bytes: Array(newer.utf8))], toStore: f.storePath)
        let head = try f.storeHead()
        let before = f.records("a")

        for command in [["pull"], ["push"], ["status"]] {
            let doc = try f.json(command, in: "a", expect: 1)
            let error = try #require(doc["error"] as? [String: Any], "\(command): \(doc)")
            #expect(error["kind"] as? String == "unsupportedStoreFormat", "\(command): \(doc)")
            #expect(error["code"] as? Int == 35)
            #expect(error["storeFormat"] as? Int == 2)
            #expect(error["supportedFormat"] as? Int == 1)
            #expect((doc["hints"] as? [String] ?? []).contains { $0.contains("newer recsync") }, "\(command): \(doc)")
        }
        #expect(try f.storeHead() == head)
        #expect(f.records("a") == before)

        let cloned = try f.run(["clone", "store.git", "b"], expect: 1)
        #expect(cloned.stderr.contains("the store has format 2; this recsync reads format 1 and older"), "\(cloned)")
    }

    /// `store upgrade` on a workspace's store: refused without the experimental switch; with it,
    /// the workspaces go on from their zone tokens (only the zone list is read again), and an
    /// edit made before the upgrade is pushed after it.
    @Test func workspacesGoOnAfterTheirStoreIsUpgraded() throws {
        let f = try CLIFixture().withStore()
        try f.clone("a")
        try f.run(["zone", "create", "notes"], in: "a")
        try f.run(["zone", "create", "todo"], in: "a")
        for i in 1...3 { try f.put("notes/n\(i)", #"{"v": \#(i)}"#, in: "a") }
        try f.put("todo/t1", #"{"v": 0}"#, in: "a")
        try f.run(["push"], in: "a")
        try f.clone("b")
        try f.put("notes/n1", #"{"v": 10}"#, in: "a")  // not pushed before the upgrade

        let refused = try f.run(["store", "upgrade", "--yes"], in: "a", expect: 1)
        #expect(refused.stderr.contains("RECSYNC_EXPERIMENTAL_STORE_FORMAT=2"), "\(refused)")
        let experimental = ["RECSYNC_EXPERIMENTAL_STORE_FORMAT": "2"]
        let upgrade = try f.run(["store", "upgrade", "--yes", "--json"], in: "a", environment: experimental)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(upgrade.stdout.utf8)) as? [String: Any], "\(upgrade)")
        #expect(report["upgraded"] as? Bool == true && report["zones"] as? Int == 2, "\(report)")
        let refs = try GitCLI.run(["for-each-ref", "--format=%(refname)", "refs/recsync/zones/"], in: f.storePath)
        #expect(refs.split(separator: "\n") == ["refs/recsync/zones/alice/notes", "refs/recsync/zones/alice/todo"], "\(refs)")

        // Without the switch this recsync refuses the store as too new, and changes nothing.
        let before = f.records("a")
        let pull = try f.json(["pull"], in: "a", expect: 1)
        #expect((pull["error"] as? [String: Any])?["kind"] as? String == "unsupportedStoreFormat", "\(pull)")
        #expect(f.records("a") == before)

        let pushed = try f.run(["push", "--json"], in: "a", environment: experimental)
        #expect(pushed.stdout.contains("n1"), "\(pushed)")
        let pulled = try f.run(["pull", "--json"], in: "b", environment: experimental)
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(pulled.stdout.utf8)) as? [String: Any], "\(pulled)")
        // The database token from before expired; the zones' tokens did not.
        let expired = doc["expiredTokens"] as? [String] ?? []
        #expect(!expired.isEmpty && expired.allSatisfy { !$0.contains("notes") && !$0.contains("todo") }, "\(doc)")
        #expect(doc["recordsWritten"] as? Int == 1, "\(doc)")
        #expect(try f.fields("b", "private/notes/n1.json")?["v"] as? Int == 10)
        #expect(f.records("a") == f.records("b"))
        let status = try f.run(["status"], in: "b", environment: experimental)
        #expect(status.stdout.contains("nothing to push") || status.stdout.contains("up to date"), "\(status)")
    }

    /// A format no recsync writes (below the first) is damage, not a newer recsync's store.
    @Test func aFormatNoRecsyncWritesIsDamage() throws {
        let f = try CLIFixture().withStore()
        let manifest = try GitCLI.run(["show", "refs/heads/main:recsync.json"], in: f.storePath)
        let older = manifest.replacingOccurrences(of: #""format": 1"#, with: #""format": 0"#)
        try #require(older != manifest)
        try GitCLI.commitFiles([(path: "recsync.json", bytes: Array(older.utf8))], toStore: f.storePath)
        let doc = try f.json(["clone", "store.git", "b"], in: nil, expect: 1)
        let error = try #require(doc["error"] as? [String: Any], "\(doc)")
        #expect(error["kind"] as? String == "storeCorrupt", "\(doc)")
        #expect((error["message"] as? String ?? "").contains("says format 0"), "\(doc)")
    }
}
