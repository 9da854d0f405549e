import Foundation
import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

/// One user must not break everyone: names and entries some user (or plain git) put in
/// the shared store are checked before anything is written, and an entry a workspace cannot
/// hold is reported and skipped, never fatal for the rest of a pull or a clone.
@Suite(.ownThreads) struct NameAndEntryCheckTests {
    /// A store with zone `notes` holding record `kept`, pushed from workspace `alice`.
    func storeWithNotes() throws -> CLIFixture {
        let f = try CLIFixture().withStore()
        try f.clone("alice")
        try f.run(["zone", "create", "notes"], in: "alice")
        try f.put("notes/kept", #"{"n": 1}"#, in: "alice")
        try f.run(["push"], in: "alice")
        return f
    }

    /// A `zone.json` for a zone of alice's, as plain git would commit it.
    func zoneFile(_ escapedName: String, _ text: String = #"{"capabilities": ["atomic", "fetchChanges"]}"#) -> (path: String, bytes: [UInt8]) {
        ("zones/alice/\(escapedName)/zone.json", Array(text.utf8))
    }

    @Test func zoneCreateRefusesANameNoWorkspaceCanHoldBeforeWriting() throws {
        let f = try CLIFixture().withStore()
        try f.clone("alice")
        let head = try f.storeHead()
        let refused = try f.run(["zone", "create", String(repeating: "%", count: 100)], in: "alice", expect: 1)
        #expect(refused.stderr.contains("takes 300 bytes once escaped"), "\(refused)")
        #expect(try f.storeHead() == head, "nothing reached the store")
        try f.run(["pull"], in: "alice")
    }

    @Test func storeZonesNoWorkspaceCanHoldAreReportedAndSkipped() throws {
        let f = try storeWithNotes()
        // 255 bytes starting with '.': 257 bytes once escaped; and two spellings of "café".
        let long = "%2E" + String(repeating: "a", count: 254)
        let nfc = "caf\u{E9}", nfd = "cafe\u{301}"
        try GitCLI.commitFiles([zoneFile(long), zoneFile(nfc), zoneFile(nfd)], toStore: f.storePath)
        try f.run(["put", "notes/second"], in: "alice", input: #"{"n": 2}"#)
        try f.run(["push"], in: "alice")

        for pulled in [try f.run(["pull"], in: "alice"), try f.run(["clone", "store.git", "fresh"])] {
            #expect(pulled.stderr.contains("\(long): zone skipped"), "\(pulled)")
            #expect(pulled.stderr.contains("not in Unicode NFC"), "\(pulled)")
        }
        for ws in ["alice", "fresh"] {
            #expect(try f.fields(ws, "private/notes/second.json")?["n"] as? Int == 2)
            // The NFC spelling is the one kept: it is the only one recsync itself writes.
            let zones = try FileManager.default.contentsOfDirectory(atPath: "\(f.ws(ws))/private")
            #expect(zones.map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) } == [Array(nfc.utf8), Array("notes".utf8)])
        }
    }

    @Test func cloneSkipsAZoneWithMalformedMetadataLikePull() throws {
        let f = try storeWithNotes()
        try GitCLI.commitFiles([zoneFile("broken", "{ not json")], toStore: f.storePath)
        let cloned = try f.run(["clone", "store.git", "fresh"])
        #expect(cloned.stderr.contains("zone alice/broken skipped: zones/alice/broken/zone.json is not valid JSON"), "\(cloned)")
        #expect(cloned.stdout.contains("cloned 1 zone,"), "the skipped zone is not counted as cloned: \(cloned)")
        #expect(
            !FileManager.default.fileExists(atPath: "\(f.ws("fresh"))/private/broken"), "no empty directory that a push would take for a new zone")
        try f.run(["push"], in: "fresh")
        #expect(try f.fields("fresh", "private/notes/kept.json")?["n"] as? Int == 1)
        let pulled = try f.run(["pull"], in: "alice")
        #expect(pulled.stderr.contains("broken/zone.json is not valid JSON"), "\(pulled)")
    }

    @Test func userNamesThatWouldBreakACommitAreRefusedBeforeWriting() throws {
        let f = try storeWithNotes()
        let head = try f.storeHead()
        let byOption = try f.run(["clone", "store.git", "eve", "--user", "eve <e@x>"], expect: 1)
        #expect(byOption.stderr.contains("--user: owner name 'eve <e@x>'"), "\(byOption)")
        #expect(!FileManager.default.fileExists(atPath: f.ws("eve")))
        let byEnvironment = try f.recsync.run(["clone", "store.git", "mallory"], in: f.directory.path, environment: ["RECSYNC_USER": "eve\nmallory"])
        #expect(byEnvironment.status == 1)
        #expect(byEnvironment.stderr.contains("RECSYNC_USER: owner name 'eve\\u{a}mallory'"), "\(byEnvironment)")
        #expect(!FileManager.default.fileExists(atPath: f.ws("mallory")))
        let config = "\(f.ws("alice"))/.recsync/config"
        let text = try String(contentsOfFile: config, encoding: .utf8)
        try text.replacingOccurrences(of: #""user" : "alice""#, with: #""user" : "alice\nx""#).write(
            toFile: config, atomically: true, encoding: .utf8)
        let byConfig = try f.run(["zone", "create", "third"], in: "alice", expect: 1)
        #expect(byConfig.stderr.contains("control characters"), "\(byConfig)")
        #expect(try f.storeHead() == head)
        try GitCLI.run(["fsck", "--strict", "--no-dangling"], in: f.storePath)
    }

    @Test func twoSpellingsOfAZoneOnDiskAreAProblemNotACrash() throws {
        let f = try CLIFixture().withStore()
        try f.clone("alice")
        for spelling in ["caf\u{E9}", "cafe\u{301}"] {
            try FileManager.default.createDirectory(atPath: "\(f.ws("alice"))/private/\(spelling)", withIntermediateDirectories: true)
            try #"{"n": 1}"#.write(toFile: "\(f.ws("alice"))/private/\(spelling)/r.json", atomically: true, encoding: .utf8)
        }
        // The spelling that is not NFC is named and not sent; the other zone goes (one
        // directory's problem does not hold back the rest).
        let pushed = try f.run(["push"], in: "alice", expect: 1)
        #expect(
            pushed.stdout.contains("not sent: private/cafe\u{301}: not a valid zone directory") && pushed.stdout.contains("not in Unicode NFC"),
            "\(pushed)")
        #expect(
            try GitCLI.run(["-c", "core.quotepath=false", "ls-tree", "-r", "--name-only", "main", "zones/alice"], in: f.storePath).contains(
                "caf\u{E9}/records/"))
        let status = try f.run(["status"], in: "alice")
        #expect(status.stdout.contains("private/cafe\u{301}: not a valid zone directory (zone name 'cafe\u{301}' is not in Unicode NFC"), "\(status)")
    }

    /// A record someone committed in the wrong fan-out directory is reported; once moved
    /// where it belongs (as the warning says), it arrives: the misplaced entry's removal is not
    /// a deletion of the record.
    @Test func aMisplacedStoreRecordMovedWhereItBelongsArrives() throws {
        let f = try storeWithNotes()
        let zone = try ZoneID(zoneName: "notes", ownerName: "alice")
        let record = Build.record("ok", in: zone, ["a": .string("hi")])
        let right = StoreLayout.recordPath(record.recordID)
        let fanout = StoreLayout.fanout("ok")
        let wrong = right.replacingOccurrences(of: "/records/\(fanout)/", with: "/records/\(fanout == "00" ? "01" : "00")/")
        try GitCLI.commitFiles([(wrong, StoreEncoding.encode(record))], toStore: f.storePath)
        let warned = try f.run(["pull"], in: "alice")
        #expect(warned.stderr.contains("belongs in fan-out directory"), "\(warned)")
        try GitCLI.commitFiles([(right, StoreEncoding.encode(record))], removing: [wrong], toStore: f.storePath)
        try f.run(["pull"], in: "alice")
        #expect(try f.fields("alice", "private/notes/ok.json")?["a"] as? String == "hi")
        try f.run(["pull"], in: "alice")
        #expect(try f.fields("alice", "private/notes/ok.json")?["a"] as? String == "hi", "and it stays")
    }

    /// A zone whose `records` or `client-tokens` directory (or a fan-out directory of its
    /// records) someone replaced by a file with plain git is named and left alone until it is
    /// put back: a pull deletes nothing here (read as it is, the records under it would be
    /// gone), a push holds that zone back while the other zones go, and doctor finds it.
    @Test(arguments: [StoreLayout.recordsDir, StoreLayout.clientTokensDir, "\(StoreLayout.recordsDir)/\(StoreLayout.fanout("kept"))"])
    func aZoneDirectoryReplacedByAFileIsReportedAndLeftAlone(_ entry: String) throws {
        let f = try storeWithNotes()
        try f.run(["zone", "create", "todo"], in: "alice")
        try f.put("todo/a", #"{"n": 1}"#, in: "alice")
        try f.run(["push"], in: "alice")
        let notes = try ZoneID(zoneName: "notes", ownerName: "alice")
        let todo = try ZoneID(zoneName: "todo", ownerName: "alice")
        func stored(_ name: String, in zone: ZoneID) throws -> FieldValue? {
            let id = try RecordID(recordName: name, zoneID: zone)
            let text = try GitCLI.run(["show", "refs/heads/main:\(StoreLayout.recordPath(id))"], in: f.storePath)
            return try StoreEncoding.decode(Array(text.utf8), zoneID: zone, changeTag: nil).fields["n"]
        }
        let path = "\(StoreLayout.zoneDir(notes))/\(entry)"
        let before = try f.storeHead()
        try GitCLI.commitFiles([(path, Array("not a directory\n".utf8))], toStore: f.storePath)

        let runs = try [["pull", "--dry-run"], ["pull"]].map { try f.run($0, in: "alice") } + [f.run(["clone", "store.git", "fresh"])]
        for pulled in runs {
            #expect(pulled.stderr.contains("zone alice/notes skipped: \(path) is a file"), "\(pulled)")
        }
        #expect(try f.fields("alice", "private/notes/kept.json")?["n"] as? Int == 1, "nothing deleted here")
        try f.put("notes/kept", #"{"n": 2}"#, in: "alice")
        try f.put("todo/a", #"{"n": 2}"#, in: "alice")
        let pushed = try f.run(["push"], in: "alice", expect: 1)
        #expect(pushed.stdout.contains("not sent: private/notes/kept.json: \(path) is a file"), "\(pushed)")
        #expect(try stored("a", in: todo) == .int64(2), "the other zone went")
        #expect(try GitCLI.run(["cat-file", "-t", "refs/heads/main:\(path)"], in: f.storePath) == "blob\n", "the file stays as it was")
        let doctor = try f.json(["doctor"], in: "alice", expect: 1)
        let found = (doctor["findings"] as? [[String: Any]] ?? []).filter { $0["kind"] as? String == "storeEntry" }
        // The zone as a whole, by its ID; the detail says where in the store.
        #expect(
            found.contains { ($0["detail"] as? String)?.contains("\(path) is a file") == true && $0["path"] as? String == "\(notes)" }, "\(doctor)")

        // Put back as it was, the zone syncs again: the edit held back lands.
        let files = try GitCLI.run(["ls-tree", "-r", "--name-only", before, "--", path], in: f.storePath).split(separator: "\n").map { name in
            (String(name), Array(try GitCLI.run(["show", "\(before):\(name)"], in: f.storePath).utf8))
        }
        #expect(!files.isEmpty)
        try GitCLI.commitFiles(files, toStore: f.storePath)
        let pulled = try f.run(["pull"], in: "alice")
        #expect(!pulled.stderr.contains("skipped"), "\(pulled)")
        try f.run(["push"], in: "alice")
        #expect(try stored("kept", in: notes) == .int64(2))
        #expect(try f.fields("alice", "private/notes/kept.json")?["n"] as? Int == 2)
        try f.run(["doctor"], in: "alice")
    }

    @Test func aStoreRecordOverTheSizeLimitIsReportedAndSkipped() throws {
        let f = try storeWithNotes()
        let zone = try ZoneID(zoneName: "notes", ownerName: "alice")
        let huge = Build.record("huge", in: zone, ["s": .string(String(repeating: "x", count: 1_100_000))])
        // Far over: refused from the object's header, never read into memory.
        let vast = Build.record("vast", in: zone, ["s": .string(String(repeating: "y", count: 17_000_000))])
        let small = Build.record("small", in: zone, ["n": .int64(3)])
        try GitCLI.commitFiles([huge, vast, small].map { (StoreLayout.recordPath($0.recordID), StoreEncoding.encode($0)) }, toStore: f.storePath)
        for pulled in [try f.run(["pull"], in: "alice"), try f.run(["clone", "store.git", "fresh"])] {
            #expect(pulled.stderr.contains("over the 1 MB limit"), "\(pulled)")
            #expect(pulled.stderr.contains("skipped unread"), "\(pulled)")
        }
        for ws in ["alice", "fresh"] {
            #expect(try f.fields(ws, "private/notes/small.json")?["n"] as? Int == 3)
            #expect(try f.fields(ws, "private/notes/huge.json") == nil)
            #expect(try f.fields(ws, "private/notes/vast.json") == nil)
        }
    }
}
