import Foundation
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

/// Assets through the `recsync` binary: a file beside its record goes to the store as its
/// own blob and comes back byte for byte in another workspace; edits, dedupe and the limit.
@Suite(.ownThreads) struct AssetCLITests {
    func run(
        _ f: CLIFixture, as user: String, _ arguments: [String], in dir: String, expect status: Int32 = 0,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> ProcessOutput {
        try f.run(arguments, in: dir, environment: ["RECSYNC_USER": user], expect: status, sourceLocation: sourceLocation)
    }

    /// `count` bytes that compress badly (as a photo does), fixed by `seed`.
    func photo(_ count: Int, seed: UInt64) -> Data {
        var g = SeededRandom(seed: seed)
        return Data((0..<count).map { _ in UInt8.random(in: 0...255, using: &g) })
    }

    func blobSizes(_ f: CLIFixture) throws -> [Int] {
        try GitCLI.run(["cat-file", "--batch-all-objects", "--batch-check=%(objecttype) %(objectsize)"], in: f.storePath)
            .split(separator: "\n").compactMap { line in
                let parts = line.split(separator: " ")
                return parts.count == 2 && parts[0] == "blob" ? Int(parts[1]) : nil
            }
    }

    @Test func aFileBesideItsRecordRoundTripsBetweenWorkspaces() throws {
        let f = try CLIFixture().withStore()
        // Two workspaces of alice's (a laptop and a phone).
        for ws in ["alice", "bob"] { _ = try run(f, as: "alice", ["clone", "store.git", ws], in: ".") }
        _ = try run(f, as: "alice", ["zone", "create", "photos"], in: "alice")
        let trip = photo(300_000, seed: 1)
        try FileManager.default.createDirectory(atPath: f.ws("alice") + "/private/photos/trip.assets", withIntermediateDirectories: true)
        try trip.write(to: URL(fileURLWithPath: f.ws("alice") + "/private/photos/trip.assets/photo"))
        try writeFile(f.ws("alice") + "/private/photos/trip.json", #"{"title": "Trip", "photo": {"$asset": "photo"}}"#)
        // The same content in a second record is one blob in the store.
        try FileManager.default.createDirectory(atPath: f.ws("alice") + "/private/photos/copy.assets", withIntermediateDirectories: true)
        try trip.write(to: URL(fileURLWithPath: f.ws("alice") + "/private/photos/copy.assets/photo"))
        try writeFile(f.ws("alice") + "/private/photos/copy.json", #"{"photo": {"$asset": "photo"}}"#)
        _ = try run(f, as: "alice", ["push"], in: "alice")
        #expect(try blobSizes(f).filter { $0 == trip.count }.count == 1)
        _ = try GitCLI.run(["fsck", "--strict"], in: f.storePath)

        _ = try run(f, as: "alice", ["pull"], in: "bob")
        #expect(try Data(contentsOf: URL(fileURLWithPath: f.ws("bob") + "/private/photos/trip.assets/photo")) == trip)
        #expect(try Data(contentsOf: URL(fileURLWithPath: f.ws("bob") + "/private/photos/copy.assets/photo")) == trip)
        #expect(try f.fields("bob", "private/photos/trip.json")?["photo"] as? [String: String] == ["$asset": "photo"])

        // Editing the file is editing the record: status sees it, push sends it, pull brings it.
        let edited = photo(200_000, seed: 2)
        try edited.write(to: URL(fileURLWithPath: f.ws("bob") + "/private/photos/trip.assets/photo"))
        #expect(try run(f, as: "alice", ["status"], in: "bob").stdout.contains("trip"))
        _ = try run(f, as: "alice", ["push"], in: "bob")
        _ = try run(f, as: "alice", ["pull"], in: "alice")
        #expect(try Data(contentsOf: URL(fileURLWithPath: f.ws("alice") + "/private/photos/trip.assets/photo")) == edited)
        #expect(try Data(contentsOf: URL(fileURLWithPath: f.ws("alice") + "/private/photos/copy.assets/photo")) == trip)
        _ = try GitCLI.run(["fsck", "--strict"], in: f.storePath)
    }

    /// Resolving a conflict to the store's side takes the store's asset too: our file goes to
    /// lost+found, not over the store's photo with the next push; the next pull brings theirs.
    @Test func resolvingToTheStoresSideTakesItsAssetNotOurFile() throws {
        let f = try CLIFixture().withStore()
        for ws in ["alice", "bob"] { _ = try run(f, as: "alice", ["clone", "store.git", ws], in: ".") }
        _ = try run(f, as: "alice", ["zone", "create", "photos"], in: "alice")
        func save(_ ws: String, _ n: Int, _ content: Data) throws {
            try FileManager.default.createDirectory(atPath: f.ws(ws) + "/private/photos/r.assets", withIntermediateDirectories: true)
            try content.write(to: URL(fileURLWithPath: f.ws(ws) + "/private/photos/r.assets/photo"))
            try writeFile(f.ws(ws) + "/private/photos/r.json", #"{"n": \#(n), "photo": {"$asset": "photo"}}"#)
        }
        func photoIn(_ ws: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: f.ws(ws) + "/private/photos/r.assets/photo")) }
        try save("alice", 1, photo(1_000, seed: 1))
        _ = try run(f, as: "alice", ["push"], in: "alice")
        _ = try run(f, as: "alice", ["pull"], in: "bob")
        let theirs = photo(2_000, seed: 2), ours = photo(3_000, seed: 3)
        try save("alice", 2, theirs)
        _ = try run(f, as: "alice", ["push"], in: "alice")
        try save("bob", 3, ours)
        _ = try run(f, as: "alice", ["push"], in: "bob", expect: 2)  // a conflict

        let resolved = try run(f, as: "alice", ["resolve", "--theirs", "--json"], in: "bob").stdout
        let document = try JSONSerialization.jsonObject(with: Data(resolved.utf8)) as? [String: Any]
        let record = (document?["resolved"] as? [[String: Any]])?.first
        #expect(record?["assetsNotFetched"] as? [String] == ["photo"])
        #expect((record?["setAside"] as? [String])?.count == 1)
        #expect(try run(f, as: "alice", ["status"], in: "bob").stdout.contains("nothing to push"))
        #expect(try run(f, as: "alice", ["push"], in: "bob").stdout.contains("nothing to push"))
        // Our photo is kept aside, byte for byte.
        let aside = try FileManager.default.subpathsOfDirectory(atPath: f.ws("bob") + "/.recsync/lost+found").filter {
            $0.hasSuffix("r.assets/photo")
        }
        #expect(aside.count == 1)
        #expect(try aside.first.map { try Data(contentsOf: URL(fileURLWithPath: f.ws("bob") + "/.recsync/lost+found/" + $0)) } == ours)
        // The store still holds theirs; bob's next pull brings it.
        _ = try run(f, as: "alice", ["pull"], in: "bob")
        #expect(try photoIn("bob") == theirs)
        _ = try run(f, as: "alice", ["pull"], in: "alice")
        #expect(try photoIn("alice") == theirs)
        #expect(try f.fields("bob", "private/photos/r.json")?["n"] as? Int == 2)
    }

    /// `restore` puts the synced version back, its asset files included: an edited photo and
    /// a removed record come back byte for byte from the store.
    @Test func restoreBringsBackTheSyncedAssetFiles() throws {
        let f = try CLIFixture().withStore()
        _ = try run(f, as: "alice", ["clone", "store.git", "w"], in: ".")
        _ = try run(f, as: "alice", ["zone", "create", "photos"], in: "w")
        let original = photo(5_000, seed: 7)
        let file = f.ws("w") + "/private/photos/r.assets/photo"
        try FileManager.default.createDirectory(atPath: f.ws("w") + "/private/photos/r.assets", withIntermediateDirectories: true)
        try original.write(to: URL(fileURLWithPath: file))
        try writeFile(f.ws("w") + "/private/photos/r.json", #"{"photo": {"$asset": "photo"}}"#)
        _ = try run(f, as: "alice", ["push"], in: "w")

        try photo(6_000, seed: 8).write(to: URL(fileURLWithPath: file))
        #expect(try run(f, as: "alice", ["status"], in: "w").stdout.contains("r.json"))
        _ = try run(f, as: "alice", ["restore", "private/photos/r.json"], in: "w")
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == original)
        #expect(try run(f, as: "alice", ["status"], in: "w").stdout.contains("nothing to push"))

        _ = try run(f, as: "alice", ["rm", "private/photos/r.json"], in: "w")
        try? FileManager.default.removeItem(atPath: file)
        _ = try run(f, as: "alice", ["restore", "private/photos/r.json"], in: "w")
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == original)
        #expect(try run(f, as: "alice", ["status"], in: "w").stdout.contains("nothing to push"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: f.ws("w") + "/private/photos/r.assets") == ["photo"])  // no temp left
    }

    @Test func aFileOverTheLimitIsRefusedBeforeAnythingIsSent() throws {
        let f = try CLIFixture().withStore()
        _ = try run(f, as: "alice", ["clone", "store.git", "alice"], in: ".")
        _ = try run(f, as: "alice", ["zone", "create", "photos"], in: "alice")
        let head = try GitCLI.run(["rev-parse", "main"], in: f.storePath)
        let objects = try GitCLI.run(["count-objects", "-v"], in: f.storePath)
        try FileManager.default.createDirectory(atPath: f.ws("alice") + "/private/photos/big.assets", withIntermediateDirectories: true)
        // 50 MB and one byte, sparse: the limit is checked on the size, before reading.
        let big = f.ws("alice") + "/private/photos/big.assets/video"
        #expect(FileManager.default.createFile(atPath: big, contents: nil))
        #expect(truncate(big, 50 * 1024 * 1024 + 1) == 0)
        try writeFile(f.ws("alice") + "/private/photos/big.json", #"{"video": {"$asset": "video"}}"#)
        try writeFile(f.ws("alice") + "/private/photos/small.json", #"{"title": "fine"}"#)
        let push = try run(f, as: "alice", ["push"], in: "alice", expect: 1)
        #expect(push.stderr.contains("big") && push.stderr.contains("52428800"), "\(push)")
        #expect(try GitCLI.run(["rev-parse", "main"], in: f.storePath) == head, "nothing was committed")
        #expect(try GitCLI.run(["count-objects", "-v"], in: f.storePath) == objects, "nothing was written")
    }

    /// `pull --no-assets` lands the records without their files; status is clean, a push of
    /// another field keeps the asset, `get --asset` brings one file, a plain pull the rest.
    @Test func aPullWithoutAssetsThenGetAssetAndAPlainPull() throws {
        let f = try CLIFixture().withStore()
        for ws in ["alice", "bob"] { _ = try run(f, as: "alice", ["clone", "store.git", ws], in: ".") }
        _ = try run(f, as: "alice", ["zone", "create", "photos"], in: "alice")
        let trip = photo(120_000, seed: 3), scan = photo(5_000, seed: 4)
        let dir = f.ws("alice") + "/private/photos/trip.assets"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try trip.write(to: URL(fileURLWithPath: dir + "/photo"))
        try scan.write(to: URL(fileURLWithPath: dir + "/scan"))
        try writeFile(f.ws("alice") + "/private/photos/trip.json", #"{"title": "Trip", "photo": {"$asset": "photo"}, "scan": {"$asset": "scan"}}"#)
        _ = try run(f, as: "alice", ["push"], in: "alice")

        _ = try run(f, as: "alice", ["pull", "--no-assets"], in: "bob")
        let bobAssets = f.ws("bob") + "/private/photos/trip.assets"
        #expect(FileManager.default.fileExists(atPath: f.ws("bob") + "/private/photos/trip.json"))
        #expect(!FileManager.default.fileExists(atPath: bobAssets))
        #expect(!(try run(f, as: "alice", ["status"], in: "bob").stdout.contains("trip")))
        try writeFile(
            f.ws("bob") + "/private/photos/trip.json", #"{"title": "Trip, renamed", "photo": {"$asset": "photo"}, "scan": {"$asset": "scan"}}"#)
        _ = try run(f, as: "alice", ["push"], in: "bob")
        _ = try run(f, as: "alice", ["pull"], in: "alice")
        #expect(try f.fields("alice", "private/photos/trip.json")?["title"] as? String == "Trip, renamed")
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir + "/photo")) == trip, "the other workspace keeps the asset")

        // A field that is no asset is refused, and leaves nothing behind.
        let wrong = try run(f, as: "alice", ["get", "--asset", "title", "photos/trip"], in: "bob", expect: 1)
        #expect(wrong.stderr.contains("photo, scan"), "\(wrong)")
        #expect(!FileManager.default.fileExists(atPath: bobAssets))

        let got = try run(f, as: "alice", ["get", "--asset", "photo", "photos/trip"], in: "bob")
        #expect(got.stdout == "private/photos/trip.assets/photo\n", "\(got)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: bobAssets + "/photo")) == trip)
        #expect(try FileManager.default.contentsOfDirectory(atPath: bobAssets) == ["photo"], "no temporary file is left")
        let json = try run(f, as: "alice", ["get", "--asset", "photo", "photos/trip", "--json"], in: "bob")
        #expect(json.stdout.contains(#""downloaded" : false"#) || json.stdout.contains(#""downloaded": false"#), "\(json)")
        #expect(!(try run(f, as: "alice", ["status"], in: "bob").stdout.contains("trip")))

        _ = try run(f, as: "alice", ["pull"], in: "bob")
        #expect(try Data(contentsOf: URL(fileURLWithPath: bobAssets + "/scan")) == scan)
        _ = try GitCLI.run(["fsck", "--strict"], in: f.storePath)
    }

    /// An asset over the store's limit is named by status, the dry run and the push alike, by
    /// its size: a 10 GiB sparse file is never read (hashing it took 72 s), and the record's
    /// zone is held back while the other zones go.
    @Test func anOversizedAssetIsRefusedByItsSizeEverywhere() throws {
        let f = try CLIFixture().withStore()
        _ = try run(f, as: "alice", ["clone", "store.git", "alice"], in: ".")
        _ = try run(f, as: "alice", ["zone", "create", "photos"], in: "alice")
        _ = try run(f, as: "alice", ["zone", "create", "notes"], in: "alice")
        let dir = f.ws("alice") + "/private/photos/big.assets"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: dir + "/photo", contents: nil))
        let big = try #require(FileHandle(forWritingAtPath: dir + "/photo"))
        try big.truncate(atOffset: 10 << 30)
        try big.close()
        try writeFile(f.ws("alice") + "/private/photos/big.json", #"{"photo": {"$asset": "photo"}}"#)
        try writeFile(f.ws("alice") + "/private/notes/small.json", #"{"n": 1}"#)

        let sizeNote = "is \(10 << 30) bytes; the store takes assets of at most"
        let status = try run(f, as: "alice", ["status"], in: "alice")
        #expect(status.stdout.contains("! private/photos/big.json") && status.stdout.contains(sizeNote), "\(status)")
        let plan = try run(f, as: "alice", ["push", "-n"], in: "alice", expect: 1)
        #expect(plan.stdout.contains("would not send: private/photos/big.json") && plan.stdout.contains(sizeNote), "\(plan)")
        #expect(!plan.stdout.contains("would send A private/photos/big.json"), "\(plan)")
        let pushed = try run(f, as: "alice", ["push", "--json"], in: "alice", expect: 1)
        #expect(pushed.stdout.contains(sizeNote), "\(pushed)")
        #expect(try GitCLI.run(["ls-tree", "-r", "--name-only", "main", "zones/alice"], in: f.storePath).contains("small"), "the other zone went")
    }

    /// `put` and `import` take an asset spelled out as `show --json` prints it only when it is
    /// the file the record file names: otherwise the record would name a file that is not
    /// there, and no push could send it. Refused, and nothing written.
    @Test func anAssetGivenByReferenceMustBeTheFileTheRecordNames() throws {
        let f = try CLIFixture().withStore()
        _ = try run(f, as: "alice", ["clone", "store.git", "alice"], in: ".")
        _ = try run(f, as: "alice", ["zone", "create", "photos"], in: "alice")
        try FileManager.default.createDirectory(atPath: f.ws("alice") + "/private/photos/trip.assets", withIntermediateDirectories: true)
        try writeFile(f.ws("alice") + "/private/photos/trip.assets/photo", "hello\n")
        try writeFile(f.ws("alice") + "/private/photos/trip.json", #"{"photo": {"$asset": "photo"}, "n": 1}"#)
        _ = try run(f, as: "alice", ["push"], in: "alice")

        let zero =
            #"{"photo": {"$asset": {"oid": "0000000000000000000000000000000000000000", "sha256": "0000000000000000000000000000000000000000000000000000000000000000", "size": 0}}}"#
        let refused = try f.run(["put", "photos/other"], in: "alice", input: zero, expect: 1)
        #expect(refused.stderr.contains("private/photos/other.assets/photo"), "\(refused)")
        #expect(!FileManager.default.fileExists(atPath: f.ws("alice") + "/private/photos/other.json"))
        try writeFile(
            f.directory.file("in.jsonl"),
            #"{"name": "other", "photo": {"$asset": {"oid": "0000000000000000000000000000000000000000", "sha256": "0000000000000000000000000000000000000000000000000000000000000000", "size": 0}}}"#
                + "\n")
        let imported = try f.run(["import", "photos", f.directory.file("in.jsonl"), "--id", "name"], in: "alice", expect: 1)
        #expect(imported.stderr.contains("private/photos/other.assets/photo"), "\(imported)")
        #expect(!FileManager.default.fileExists(atPath: f.ws("alice") + "/private/photos/other.json"))

        // The reference `show --json` prints for the file that is there: taken.
        let shown = try #require(
            try JSONSerialization.jsonObject(with: Data(f.run(["show", "photos/trip", "--json"], in: "alice").stdout.utf8)) as? [String: Any])
        var fields = try #require(shown["fields"] as? [String: Any])
        fields["n"] = 2
        let again = String(decoding: try JSONSerialization.data(withJSONObject: fields), as: UTF8.self)
        _ = try f.run(["put", "photos/trip"], in: "alice", input: again)
        let status = try f.run(["status"], in: "alice")
        #expect(status.stdout.contains("M private/photos/trip.json") && !status.stdout.contains("!"), "\(status)")
    }
}
