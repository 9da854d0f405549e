import Crypto
import Foundation
import RecSyncModel
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

@testable import RecSyncEncryption
@testable import RecSyncStore

/// Someone who can push to the store but holds no reader's key (mallory) rewrites an
/// encrypted zone's keys with plain git; the zone's readers refuse to seal or open anything
/// with them, and nothing reaches the store in clear.
@Suite(.ownThreads) struct EncryptedZoneTamperingTests {
    typealias Pair = EncryptedZoneTests.Pair

    /// alice's zone `diary` sealing `title` and `body`, shared with bob; both have read a
    /// record through a workspace's pins (`alice-pins`, `bob-pins`).
    struct Scene {
        let p: Pair
        let zone: ZoneID
        let pins: [String: String]

        init(name: String) async throws {
            p = try Pair(.git, name: name)
            zone = try await p.diary(fields: ["title", "body"])
            var pins: [String: String] = [:]
            for user in ["alice", "bob"] {
                pins[user] = p.keys.file("\(user)-pins")
                try FileManager.default.createDirectory(atPath: p.keys.file("\(user)-pins"), withIntermediateDirectories: true)
            }
            self.pins = pins
            let alice = try client("alice")
            try await alice.share(zone, with: "bob", permission: .readWrite)
            #expect(
                try await alice.modifyRecords(saving: [Build.record("r1", in: zone, ["title": .string("first"), "body": .string("first body")])])
                    .errors.isEmpty)
            #expect(try await client("bob").fetchRecords([Build.id("r1", in: zone)])[0].result.get().fields["title"] == .string("first"))
        }

        /// A later run of `user`'s workspace: a new client over the same pins.
        func client(_ user: String) throws -> EncryptingStore {
            EncryptingStore(try p.fixture.store(as: user), keyStore: p.keyStore(user), pinDirectory: pins[user])
        }

        /// The zone as the store holds it.
        func stored() async throws -> RecordZone {
            try #require(try await p.fixture.store(as: "alice").fetchAllRecordZones(scope: .private).first)
        }

        /// Commits files to the store with plain git, as a hostile store writer would.
        func write(_ files: [(String, [UInt8])]) throws {
            try GitCLI.commitFiles(files, toStore: p.fixture.path)
        }

        /// A generation of mallory's choosing, wrapped for every reader's published key.
        func addedGeneration(to encryption: ZoneEncryption) async throws -> ZoneEncryption {
            var e = encryption
            let chosen = ZoneCrypto.newZoneKey()
            for user in ["alice", "bob"] {
                let key = try #require(try await p.fixture.store(as: "mallory").fetchUserPublicKey(user)).publicKey
                e.keys.append(try ZoneCrypto.wrap(chosen, generation: encryption.currentGeneration + 1, zone: zone, for: user, publicKey: key))
            }
            return e
        }

        /// Both readers push secrets and read `r1`: every push is refused saying `words`, the
        /// read fails the same way, and no secret is on the store in any form but sealed.
        func expectRefused(_ words: String..., sourceLocation: SourceLocation = #_sourceLocation) async throws {
            for user in ["alice", "bob"] {
                let client = try client(user)
                let record = Build.record(
                    "leak-\(user)", in: zone, ["title": .string("\(user)-secret-title"), "body": .string("\(user)-secret-body")])
                do throws(RecSyncError) {
                    _ = try await client.modifyRecords(saving: [record])
                    Issue.record("\(user) pushed with tampered keys", sourceLocation: sourceLocation)
                } catch {
                    guard case .permissionFailure(let message) = error.reason else {
                        Issue.record("\(user): \(error)", sourceLocation: sourceLocation); continue
                    }
                    for w in words { #expect(message.contains(w), "\(message)", sourceLocation: sourceLocation) }
                }
                let read = try await client.fetchRecords([Build.id("r1", in: zone)])[0].result
                guard case .failure(let failure) = read, case .permissionFailure(let message) = failure.reason else {
                    Issue.record("\(user) read r1 through tampered keys: \(read)", sourceLocation: sourceLocation)
                    continue
                }
                for w in words { #expect(message.contains(w), "\(message)", sourceLocation: sourceLocation) }
            }
            let dump = try GitCLI.run(["cat-file", "--batch-all-objects", "--batch"], in: p.fixture.path)
            for secret in ["alice-secret-title", "alice-secret-body", "bob-secret-title", "bob-secret-body"] {
                #expect(!dump.contains(secret), "\(secret) is in clear on the store", sourceLocation: sourceLocation)
            }
            let leaked = try await p.fixture.store(as: "alice").fetchRecords([Build.id("leak-alice", in: zone), Build.id("leak-bob", in: zone)])
            #expect(leaked.allSatisfy { if case .failure = $0.result { true } else { false } }, "nothing was pushed", sourceLocation: sourceLocation)
        }
    }

    enum Tampering: String, CaseIterable, Sendable {
        /// A new generation with a key mallory chose, the owner's signature left as it was.
        case addGeneration
        /// The same, with the signature removed.
        case addGenerationUnsigned
        /// A sealed field taken off the list, so clients would push it in clear.
        case shrinkFields
        /// The signature replaced by bytes of the right length.
        case forgeSignature
    }

    /// The hole this closes: the wrap uses a one-time sender key, so without the owner's
    /// signature anyone who can push could add a generation every client then sealed with.
    @Test(arguments: Tampering.allCases)
    func tamperedZoneKeysAreRefused(_ tampering: Tampering) async throws {
        let s = try await Scene(name: "tampered-\(tampering.rawValue)")
        var zone = try await s.stored()
        let e = try #require(zone.encryption)
        #expect(e.signature?.count == 64, "the owner signed the keys")
        switch tampering {
        case .addGeneration: zone.encryption = try await s.addedGeneration(to: e)
        case .addGenerationUnsigned:
            zone.encryption = try await s.addedGeneration(to: e)
            zone.encryption?.signature = nil
        case .shrinkFields: zone.encryption?.fields = ["title"]
        case .forgeSignature: zone.encryption?.signature = Array(repeating: 7, count: 64)
        }
        try s.write([(StoreLayout.zoneFilePath(s.zone), ZoneDocuments.encodeZone(zone))])
        if tampering == .addGenerationUnsigned {
            try await s.expectRefused("the keys of encrypted zone \(s.zone) are not signed by its owner alice", "can reset their key")
        } else {
            try await s.expectRefused("the keys of encrypted zone \(s.zone) do not carry a valid signature of its owner alice", "restore zone.json")
        }
    }

    /// mallory puts herself on the zone's share list (which is not signed) and waits for
    /// alice to share it with someone else: the zone key is wrapped for who alice signed it
    /// for and whom she adds, not for mallory.
    @Test func aParticipantAddedAroundRecsyncGetsNoKey() async throws {
        let s = try await Scene(name: "planted-participant")
        _ = try await EncryptionKeys.initialize(user: "mallory", keyStore: s.p.keyStore("mallory"), store: try s.p.fixture.store(as: "mallory"))
        _ = try await EncryptionKeys.initialize(user: "carol", keyStore: s.p.keyStore("carol"), store: try s.p.fixture.store(as: "carol"))
        var zone = try await s.stored()
        zone.participants.append(ShareParticipant(userRecordName: "mallory", permission: .readWrite))
        try s.write([(StoreLayout.zoneFilePath(s.zone), ZoneDocuments.encodeZone(zone))])

        try await s.client("alice").share(s.zone, with: "carol", permission: .readOnly)
        let keys = try #require(try await s.stored().encryption).keys
        #expect(Set(keys.map(\.userRecordName)) == ["alice", "bob", "carol"], "\(keys.map(\.userRecordName))")
        // Taken off the list around recsync, bob loses the key at the next change rather
        // than keeping it unseen.
        var dropped = try await s.stored()
        dropped.participants.removeAll { $0.userRecordName == "bob" }
        try s.write([(StoreLayout.zoneFilePath(s.zone), ZoneDocuments.encodeZone(dropped))])
        try await s.client("alice").unshare(s.zone, with: "carol")
        let after = try #require(try await s.stored().encryption)
        #expect(Set(after.keys.map(\.userRecordName)) == ["alice"] && after.currentGeneration == 2)
    }

    /// A forged generation is not pinned: once the genuine zone.json is put back, the
    /// zone works again instead of looking rolled back.
    @Test func aForgedGenerationIsNotPinned() async throws {
        let s = try await Scene(name: "forged-not-pinned")
        let genuine = try await s.stored()
        var forged = genuine
        forged.encryption = try await s.addedGeneration(to: try #require(genuine.encryption))
        try s.write([(StoreLayout.zoneFilePath(s.zone), ZoneDocuments.encodeZone(forged))])
        let bob = try s.client("bob")
        _ = try await bob.fetchAllRecordZones(scope: .shared)
        await EncryptedZoneTests.expectRefusal("do not carry a valid signature of its owner alice") {
            _ = try await bob.modifyRecords(saving: [Build.record("r2", in: s.zone, ["title": .string("refused")])])
        }
        try s.write([(StoreLayout.zoneFilePath(s.zone), ZoneDocuments.encodeZone(genuine))])
        let later = try s.client("bob")
        #expect(try await later.modifyRecords(saving: [Build.record("r2", in: s.zone, ["title": .string("taken")])]).errors.isEmpty)
    }

    /// mallory signs her generation with a signing key of her own and publishes it as
    /// alice's (beside alice's genuine encryption key): a reader that has checked alice's
    /// signature before refuses the swapped signing key.
    @Test func aSigningKeySwappedOnTheStoreIsRefused() async throws {
        let s = try await Scene(name: "swapped-signing-key")
        let malloryKey = Curve25519.KeyAgreement.PrivateKey()
        var zone = try await s.stored()
        zone.encryption = try ZoneCrypto.signed(
            try await s.addedGeneration(to: try #require(zone.encryption)), zone: s.zone, storeID: s.p.alice.storeID, by: malloryKey)
        var alice = try #require(try await s.p.fixture.store(as: "bob").fetchUserPublicKey("alice"))
        alice.signingPublicKey = try EncryptionKeys.publicKeys(of: malloryKey).signing
        try s.write([
            (StoreLayout.zoneFilePath(s.zone), ZoneDocuments.encodeZone(zone)),
            (StoreLayout.userKeyPath("alice"), ZoneDocuments.encodeUserKey(alice)),
        ])
        let bob = try s.client("bob")
        await EncryptedZoneTests.expectRefusal("the signing key published for alice is not the one this workspace used before") {
            _ = try await bob.modifyRecords(saving: [Build.record("leak", in: s.zone, ["title": .string("bob-secret-title")])])
        }
        // alice checks her own zone with the key on her machine, whatever the store publishes.
        let owner = try s.client("alice")
        await EncryptedZoneTests.expectRefusal("do not carry a valid signature of its owner alice") {
            _ = try await owner.modifyRecords(saving: [Build.record("leak", in: s.zone, ["title": .string("alice-secret-title")])])
        }
        let dump = try GitCLI.run(["cat-file", "--batch-all-objects", "--batch"], in: s.p.fixture.path)
        #expect(!dump.contains("bob-secret-title") && !dump.contains("alice-secret-title"))
    }

    /// A sealed-field list signed again by the owner's key (as after a key reset, or by
    /// whoever got hold of it) that leaves out a field this workspace saw sealed is refused:
    /// the field is not pushed in clear.
    @Test func aSealedFieldDroppedFromASignedListIsRefused() async throws {
        let s = try await Scene(name: "signed-shrink")
        var zone = try await s.stored()
        var e = try #require(zone.encryption)
        e.fields = ["title"]
        zone.encryption = try ZoneCrypto.signed(
            e, zone: s.zone, storeID: s.p.alice.storeID, by: try #require(try s.p.keyStore("alice").load("alice")))
        try s.write([(StoreLayout.zoneFilePath(s.zone), ZoneDocuments.encodeZone(zone))])
        try await s.expectRefused("encrypted zone \(s.zone) of alice no longer seals 'body'", "remove the zone's line from", "/sealed-fields")
    }

    /// A workspace that pinned nothing yet (a first pull) still takes the signed list: the
    /// pin guards against a shrink later, not the first look. Growing the list is fine.
    @Test func aSealedFieldListThatGrowsIsTaken() async throws {
        let s = try await Scene(name: "signed-grow")
        var zone = try await s.stored()
        var e = try #require(zone.encryption)
        e.fields = ["title", "body", "notes"]
        zone.encryption = try ZoneCrypto.signed(
            e, zone: s.zone, storeID: s.p.alice.storeID, by: try #require(try s.p.keyStore("alice").load("alice")))
        try s.write([(StoreLayout.zoneFilePath(s.zone), ZoneDocuments.encodeZone(zone))])
        let bob = try s.client("bob")
        #expect(try await bob.modifyRecords(saving: [Build.record("r2", in: s.zone, ["notes": .string("bob-notes")])]).errors.isEmpty)
        let pinned = try String(contentsOfFile: try #require(s.pins["bob"]) + "/sealed-fields", encoding: .utf8)
        #expect(pinned == "alice/diary\tbody\tnotes\ttitle\n", "\(pinned)")

        // A pin line that does not parse is refused, not skipped (which would drop the pin).
        try Data("alice/diary\tbody\nnot a zone\n".utf8).write(to: URL(fileURLWithPath: try #require(s.pins["bob"]) + "/sealed-fields"))
        let damaged = try s.client("bob")
        do throws(RecSyncError) {
            _ = try await damaged.modifyRecords(saving: [Build.record("r3", in: s.zone, ["notes": .string("bob-notes")])])
            Issue.record("a damaged pin file was used")
        } catch {
            guard case .fileSystem(let path, let message, _) = error.reason else { Issue.record("\(error)"); return }
            #expect(path.hasSuffix("/sealed-fields") && message.contains("'not a zone'"), "\(message)")
        }
    }
}
