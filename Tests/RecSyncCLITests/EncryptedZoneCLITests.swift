import Foundation
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

/// Encrypted zones through the `recsync` binary: two users, each with their own key
/// directory, sharing, unsharing, tampering, and a key reset other devices recover from.
@Suite(.ownThreads) struct EncryptedZoneCLITests {
    /// recsync as `user`, keys in `<fixture>/keys-<user>` (bob's machine is not alice's).
    func run(
        _ f: CLIFixture, as user: String, _ arguments: [String], in dir: String, expect status: Int32 = 0,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> ProcessOutput {
        try f.run(
            arguments, in: dir, environment: ["RECSYNC_USER": user, "XDG_CONFIG_HOME": f.directory.file("config-\(user)")], expect: status,
            sourceLocation: sourceLocation)
    }

    /// Every object of the store, as `git cat-file --batch-all-objects --batch` prints them.
    func storeObjects(_ f: CLIFixture) throws -> String {
        try GitCLI.run(["cat-file", "--batch-all-objects", "--batch"], in: f.storePath)
    }

    func setUp(_ name: String = #function) throws -> CLIFixture {
        let f = try CLIFixture(name).withStore()
        for user in ["alice", "bob"] {
            _ = try run(f, as: user, ["clone", "store.git", user], in: ".")
            _ = try run(f, as: user, ["keys", "init"], in: user)
        }
        return f
    }

    /// A workspace cloned from a store with an encrypted zone remembers it from the clone on:
    /// encryption stripped from zone.json with plain git later does not make it push in clear.
    @Test func cloneRemembersEncryptedZonesAgainstADowngrade() throws {
        let f = try setUp()
        _ = try run(f, as: "alice", ["zone", "create", "diary", "--encrypted"], in: "alice")
        _ = try run(f, as: "alice", ["clone", "store.git", "alice2"], in: ".")
        let zoneDoc = try GitCLI.run(["show", "main:zones/alice/diary/zone.json"], in: f.storePath)
        var zone = try #require(try JSONSerialization.jsonObject(with: Data(zoneDoc.utf8)) as? [String: Any])
        zone["encryption"] = nil
        let stripped = try JSONSerialization.data(withJSONObject: zone)
        _ = try GitCLI.commitFiles([("zones/alice/diary/zone.json", Array(stripped))], toStore: f.storePath)
        try writeFile(f.ws("alice2") + "/private/diary/leak.json", #"{"title": "epsilon-secret-after-strip"}"#)
        let refused = try run(f, as: "alice", ["push"], in: "alice2", expect: 1)
        #expect(refused.stderr.contains("no longer says so"), "\(refused)")
        #expect(!(try storeObjects(f)).contains("epsilon-secret-after-strip"))
    }

    /// A key generation added to zone.json with plain git (an entry the owner did not sign)
    /// makes push refuse, naming the zone and its owner; nothing goes to the store.
    @Test func aKeyGenerationAddedWithPlainGitIsRefusedByPush() throws {
        let f = try setUp()
        _ = try run(f, as: "alice", ["zone", "create", "diary", "--encrypted"], in: "alice")
        let zoneDoc = try GitCLI.run(["show", "main:zones/alice/diary/zone.json"], in: f.storePath)
        var zone = try #require(try JSONSerialization.jsonObject(with: Data(zoneDoc.utf8)) as? [String: Any])
        var encryption = try #require(zone["encryption"] as? [String: Any])
        var keys = try #require(encryption["keys"] as? [[String: Any]])
        var added = try #require(keys.first)
        added["generation"] = 2
        keys.append(added)
        encryption["keys"] = keys
        zone["encryption"] = encryption
        _ = try GitCLI.commitFiles([("zones/alice/diary/zone.json", Array(try JSONSerialization.data(withJSONObject: zone)))], toStore: f.storePath)
        try writeFile(f.ws("alice") + "/private/diary/leak.json", #"{"title": "zeta-secret-after-forgery"}"#)
        let refused = try run(f, as: "alice", ["push"], in: "alice", expect: 1)
        #expect(refused.stderr.contains("do not carry a valid signature of its owner alice"), "\(refused)")
        #expect(!(try storeObjects(f)).contains("zeta-secret-after-forgery"))
        #expect(!(try GitCLI.run(["ls-tree", "-r", "--name-only", "main"], in: f.storePath)).contains("leak"))
    }

    /// A users/<me>/key.json that does not parse: `keys init` on a machine without the key
    /// says so and points at `keys reset`, which replaces it.
    @Test func aGarbagePublishedKeyIsReportedByInitAndReplacedByReset() throws {
        let f = try CLIFixture().withStore()
        _ = try run(f, as: "alice", ["clone", "store.git", "alice"], in: ".")
        _ = try GitCLI.commitFiles([("users/alice/key.json", Array("garbage".utf8))], toStore: f.storePath)
        let refused = try run(f, as: "alice", ["keys", "init"], in: "alice", expect: 1)
        #expect(refused.stderr.contains("cannot be read") && refused.stderr.contains("'recsync keys reset'"), "\(refused)")
        _ = try run(f, as: "alice", ["keys", "reset", "--yes"], in: "alice")
        let shown = try run(f, as: "alice", ["keys", "show"], in: "alice")
        #expect(shown.stdout.contains("published\tyes") || shown.stderr.contains("published\tyes"), "\(shown)")
    }

    /// A key moves to another device with export and import; a FIFO or garbage given to
    /// import is refused at once, not waited on.
    @Test func aKeyMovesWithExportAndImportAndAFifoIsRefused() throws {
        let f = try CLIFixture().withStore()
        _ = try run(f, as: "alice", ["clone", "store.git", "alice"], in: ".")
        _ = try run(f, as: "alice", ["keys", "init"], in: "alice")
        _ = try run(f, as: "alice", ["keys", "export", "../alice.key"], in: "alice")
        let laptop = try run(f, as: "alice", ["keys", "show"], in: "alice").stdout
        // The phone is another machine: its own config directory.
        let phone = ["RECSYNC_USER": "alice", "XDG_CONFIG_HOME": f.directory.file("config-phone")]
        _ = try f.run(["clone", "store.git", "phone"], in: ".", environment: phone)
        #expect(mkfifo(f.directory.file("fifo.key"), 0o600) == 0)
        let fifo = try f.run(["keys", "import", "../fifo.key"], in: "phone", environment: phone, expect: 1)
        #expect(fifo.stderr.contains("fifo.key"), "\(fifo)")
        try writeFile(f.directory.file("garbage.key"), "not a key")
        _ = try f.run(["keys", "import", "../garbage.key"], in: "phone", environment: phone, expect: 1)
        _ = try f.run(["keys", "import", "../alice.key"], in: "phone", environment: phone)
        let shown = try f.run(["keys", "show"], in: "phone", environment: phone).stdout
        let fingerprint = { (text: String) in text.split(separator: "\n").first { $0.hasPrefix("fingerprint") } }
        #expect(fingerprint(shown) != nil && fingerprint(shown) == fingerprint(laptop), "\(shown) / \(laptop)")
    }

    @Test func twoUsersShareAnEncryptedZoneAndTheStoreHoldsNoClearValue() throws {
        let f = try CLIFixture().withStore()
        for user in ["alice", "bob"] { _ = try run(f, as: user, ["clone", "store.git", user], in: ".") }
        _ = try run(f, as: "alice", ["keys", "init"], in: "alice")
        _ = try run(f, as: "alice", ["zone", "create", "diary", "--encrypted"], in: "alice")
        try writeFile(f.ws("alice") + "/private/diary/monday.json", #"{"title": "alpha-secret-title", "mood": 7, "tags": ["beta-secret-tag"]}"#)
        _ = try run(f, as: "alice", ["push"], in: "alice")
        // bob has no key yet: sharing says what he must do.
        let refused = try run(f, as: "alice", ["share", "diary", "--with", "bob"], in: "alice", expect: 1)
        #expect(refused.stderr.contains("ask bob to run 'recsync keys init'"), "\(refused)")
        _ = try run(f, as: "bob", ["keys", "init"], in: "bob")
        _ = try run(f, as: "alice", ["share", "diary", "--with", "bob"], in: "alice")
        _ = try run(f, as: "bob", ["pull"], in: "bob")
        let seen = try f.fields("bob", "shared/alice/diary/monday.json")
        #expect(seen?["title"] as? String == "alpha-secret-title")
        #expect(seen?["mood"] as? Int == 7)
        try writeFile(f.ws("bob") + "/shared/alice/diary/tuesday.json", #"{"title": "gamma-secret-from-bob"}"#)
        _ = try run(f, as: "bob", ["push"], in: "bob")
        _ = try run(f, as: "alice", ["pull"], in: "alice")
        #expect(try f.fields("alice", "private/diary/tuesday.json")?["title"] as? String == "gamma-secret-from-bob")
        #expect(try run(f, as: "alice", ["zone", "list"], in: "alice").stdout.contains("encrypted"))
        // History reads open the sealed fields too.
        #expect(try run(f, as: "alice", ["show", "diary/tuesday"], in: "alice").stdout.contains("gamma-secret-from-bob"))
        #expect(try run(f, as: "alice", ["log", "-p", "diary/monday"], in: "alice").stdout.contains("alpha-secret-title"))

        // Unshared: a new key generation that bob never gets; alice still reads everything.
        _ = try run(f, as: "alice", ["unshare", "diary", "--with", "bob"], in: "alice")
        try writeFile(f.ws("alice") + "/private/diary/wednesday.json", #"{"title": "delta-secret-after-bob"}"#)
        _ = try run(f, as: "alice", ["push"], in: "alice")
        let zoneDoc = try GitCLI.run(["show", "main:zones/alice/diary/zone.json"], in: f.storePath)
        #expect(zoneDoc.contains("\"generation\" : 2") || zoneDoc.contains("\"generation\": 2"), "\(zoneDoc)")
        #expect(!zoneDoc.contains("\"bob\""), "\(zoneDoc)")
        _ = try run(f, as: "alice", ["pull"], in: "alice")
        #expect(try f.fields("alice", "private/diary/monday.json")?["title"] as? String == "alpha-secret-title")

        let objects = try storeObjects(f)
        #expect(objects.contains("\"ENCRYPTED\""))
        for clear in ["alpha-secret-title", "beta-secret-tag", "gamma-secret-from-bob", "delta-secret-after-bob"] {
            #expect(!objects.contains(clear), "\(clear) is in clear in the store")
        }
        // What stays in clear, as the README says: record names and types.
        #expect(objects.contains("monday"))
    }

    /// A ciphertext moved to another record with plain git: that record is reported by name
    /// and field and not written; the others arrive; nothing garbled lands in the workspace.
    @Test func movedCiphertextIsReportedAndTheOtherRecordsArrive() throws {
        let f = try setUp()
        _ = try run(f, as: "alice", ["zone", "create", "diary", "--encrypt", "title"], in: "alice")
        try writeFile(f.ws("alice") + "/private/diary/one.json", #"{"title": "first", "n": 1}"#)
        try writeFile(f.ws("alice") + "/private/diary/two.json", #"{"title": "second", "n": 2}"#)
        _ = try run(f, as: "alice", ["push"], in: "alice")
        let tree = try GitCLI.run(["ls-tree", "-r", "--name-only", "main", "zones/alice/diary/records"], in: f.storePath)
        let paths = tree.split(separator: "\n").map(String.init)
        let onePath = try #require(paths.first { $0.hasSuffix("/one") })
        let twoPath = try #require(paths.first { $0.hasSuffix("/two") })
        let one = try GitCLI.run(["show", "main:\(onePath)"], in: f.storePath)
        let two = try GitCLI.run(["show", "main:\(twoPath)"], in: f.storePath)
        // two's title replaced by one's (valid ciphertext, wrong record).
        func title(_ blob: String) throws -> String {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(blob.utf8)) as? [String: Any])
            return try #require(((object["fields"] as? [String: Any])?["title"] as? [String: Any])?["value"] as? String)
        }
        let forged = two.replacingOccurrences(of: try title(two), with: try title(one))
        try GitCLI.commitFiles([(twoPath, Array(forged.utf8))], toStore: f.storePath)
        _ = try run(f, as: "alice", ["clone", "store.git", "alice2"], in: ".")
        let pulled = try run(f, as: "alice", ["pull"], in: "alice2")
        #expect(pulled.stderr.contains("record 'two' in zone alice/diary, field 'title'") && pulled.stderr.contains("tampered"), "\(pulled)")
        #expect(try f.fields("alice2", "private/diary/one.json")?["title"] as? String == "first")
        #expect(try f.fields("alice2", "private/diary/two.json") == nil)
        // Written again over the copy that does not open: the push's hint must lead out.
        try writeFile(f.ws("alice2") + "/private/diary/two.json", #"{"title": "second, again", "n": 2}"#)
        let again = try run(f, as: "alice", ["push"], in: "alice2", expect: 1)
        #expect(
            again.stdout.contains("not sent: private/diary/two.json") && again.stderr.contains("'recsync push --force' replaces the store's copy"),
            "\(again)")
        // What the hint names works (writing it again alone did not, however often).
        _ = try run(f, as: "alice", ["push", "--force"], in: "alice2")
        _ = try run(f, as: "alice", ["pull"], in: "alice")
        #expect(try f.fields("alice", "private/diary/two.json")?["title"] as? String == "second, again")
    }

    /// `keys reset`: the zone is reset on the store; another device sees encryptedDataReset,
    /// keeps its copy and uploads it again (with its unpushed work), and nothing is lost.
    @Test func keyResetIsRecoveredFromWithNothingLost() throws {
        let f = try setUp()
        _ = try run(f, as: "alice", ["zone", "create", "diary", "--encrypted"], in: "alice")
        try writeFile(f.ws("alice") + "/private/diary/one.json", #"{"title": "epsilon-one"}"#)
        try writeFile(f.ws("alice") + "/private/diary/two.json", #"{"title": "epsilon-two"}"#)
        _ = try run(f, as: "alice", ["push"], in: "alice")
        // A second device of alice's, on the same machine (same key directory).
        _ = try run(f, as: "alice", ["clone", "store.git", "phone"], in: ".")
        try writeFile(f.ws("phone") + "/private/diary/three.json", #"{"title": "epsilon-three, not pushed yet"}"#)
        let before = try GitCLI.run(["show", "main:users/alice/key.json"], in: f.storePath)

        let reset = try run(f, as: "alice", ["keys", "reset", "--yes", "--json"], in: "alice")
        #expect(reset.stdout.contains("\"zonesReset\""), "\(reset)")
        #expect(try GitCLI.run(["show", "main:tombstones/alice/diary.json"], in: f.storePath).contains("encryptedDataReset"))
        #expect(try GitCLI.run(["show", "main:users/alice/key.json"], in: f.storePath) != before)

        let pulled = try run(f, as: "alice", ["pull"], in: "phone")
        #expect(pulled.stdout.contains("encryptedDataReset") || pulled.stderr.contains("encryptedDataReset"), "\(pulled)")
        #expect(try f.fields("phone", "private/diary/one.json")?["title"] as? String == "epsilon-one")
        _ = try run(f, as: "alice", ["push"], in: "phone")
        _ = try run(f, as: "alice", ["pull"], in: "alice")
        for (name, title) in [("one", "epsilon-one"), ("two", "epsilon-two"), ("three", "epsilon-three, not pushed yet")] {
            #expect(try f.fields("alice", "private/diary/\(name).json")?["title"] as? String == title, "\(name) lost on alice")
            #expect(try f.fields("phone", "private/diary/\(name).json")?["title"] as? String == title, "\(name) lost on the phone")
        }
        let status = try run(f, as: "alice", ["status", "--json"], in: "alice")
        #expect((try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])?["clean"] as? Bool == true, "\(status)")
        let objects = try storeObjects(f)
        #expect(!objects.contains("epsilon-"))
        // The zone came back encrypted, keyed to the new public key only.
        let zoneDoc = try GitCLI.run(["show", "main:zones/alice/diary/zone.json"], in: f.storePath)
        #expect(zoneDoc.contains("\"encryption\""), "\(zoneDoc)")
    }

    /// The owner's `keys reset` drops a shared zone for its participant like a deletion: only
    /// the owner can create it again. The participant's unpushed edit goes to lost+found, and
    /// their own zones keep syncing (before, every later push failed with "not shared").
    @Test func aParticipantLosesAZoneItsOwnerResetAndKeepsPushingTheirOwn() throws {
        let f = try setUp()
        _ = try run(f, as: "bob", ["zone", "create", "diary", "--encrypted"], in: "bob")
        try writeFile(f.ws("bob") + "/private/diary/monday.json", #"{"title": "zeta-monday"}"#)
        _ = try run(f, as: "bob", ["push"], in: "bob")
        _ = try run(f, as: "bob", ["share", "diary", "--with", "alice"], in: "bob")
        _ = try run(f, as: "alice", ["zone", "create", "todo"], in: "alice")
        _ = try run(f, as: "alice", ["pull"], in: "alice")
        #expect(try f.fields("alice", "shared/bob/diary/monday.json")?["title"] as? String == "zeta-monday")
        try writeFile(f.ws("alice") + "/shared/bob/diary/monday.json", #"{"title": "zeta-edited-by-alice"}"#)

        _ = try run(f, as: "bob", ["keys", "reset", "--yes"], in: "bob")
        let pulled = try run(f, as: "alice", ["pull"], in: "alice")
        #expect(pulled.stdout.contains("removed shared/bob/diary/") && pulled.stdout.contains("reset"), "\(pulled)")
        #expect(!FileManager.default.fileExists(atPath: f.ws("alice") + "/shared/bob/diary"))
        let saved = try FileManager.default.subpathsOfDirectory(atPath: f.ws("alice") + "/.recsync/lost+found")
        #expect(saved.contains { $0.hasSuffix("monday.json") }, "the unpushed edit is kept: \(saved)")

        try writeFile(f.ws("alice") + "/private/todo/milk.json", #"{"title": "milk"}"#)
        let pushed = try run(f, as: "alice", ["push"], in: "alice")
        #expect(!pushed.stdout.contains("not sent") && !pushed.stderr.contains("not shared"), "\(pushed)")
        #expect(try GitCLI.run(["ls-tree", "-r", "--name-only", "main", "zones/alice/todo/records"], in: f.storePath).contains("milk"))
        // bob's own copy is kept for his upload, and comes back with it.
        _ = try run(f, as: "bob", ["push"], in: "bob")
        #expect(try f.fields("bob", "private/diary/monday.json")?["title"] as? String == "zeta-monday")
    }

    /// A key file others can read is refused with what to do.
    @Test func keyFileWithWidePermissionsIsRefused() throws {
        let f = try setUp()
        let keyFile = f.directory.file("config-alice/recsync/keys/alice.key")
        #expect(chmod(keyFile, 0o644) == 0)
        let shown = try run(f, as: "alice", ["keys", "show"], in: "alice", expect: 1)
        #expect(shown.stderr.contains("chmod 600"), "\(shown)")
    }
}
