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
