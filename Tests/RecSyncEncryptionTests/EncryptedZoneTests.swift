import Foundation
import RecSyncModel
import RecSyncTestSupport
import RecSyncTestTraits
import RecSyncWorkspace
import Testing

@testable import RecSyncEncryption
@testable import RecSyncStore

/// Encrypted zones through the library: fields sealed on the client, zone keys wrapped per
/// participant and rotated, tampering refused, the store never holding a clear value.
@Suite(.ownThreads) struct EncryptedZoneTests {
    /// Two users of one store, each with a key directory of their own.
    struct Pair {
        let fixture: StoreFixture
        let alice: EncryptingStore
        let bob: EncryptingStore
        let keys: TempDirectory

        init(_ kind: StoreKind, name: String = #function) throws {
            fixture = try StoreFixture(kind, name: name)
            keys = TempDirectory("\(name)-keys")
            alice = EncryptingStore(try fixture.store(as: "alice"), keyStore: UserKeyStore(directory: keys.file("alice")))
            bob = EncryptingStore(try fixture.store(as: "bob"), keyStore: UserKeyStore(directory: keys.file("bob")))
        }

        func keyStore(_ user: String) -> UserKeyStore { UserKeyStore(directory: keys.file(user)) }

        /// alice's encrypted zone `diary` (every field, or `fields`), keys made for both.
        func diary(fields: [String]? = nil) async throws -> ZoneID {
            _ = try await EncryptionKeys.initialize(user: "alice", keyStore: keyStore("alice"), store: alice)
            _ = try await EncryptionKeys.initialize(user: "bob", keyStore: keyStore("bob"), store: bob)
            let zone = Build.zone("diary")
            var z = RecordZone(zoneID: zone)
            z.encryption = ZoneEncryption(fields: fields)
            _ = try await alice.modifyRecordZones([.recreate(z)])[0].result.get()
            return zone
        }
    }

    static let secret = "the quick secret fox"

    @Test(arguments: [StoreKind.memory, .git])
    func roundTripBetweenTwoUsersKeepsValuesAndTypes(kind: StoreKind) async throws {
        let p = try Pair(kind, name: "roundtrip-\(kind)")
        let zone = try await p.diary()
        try await p.alice.share(zone, with: "bob", permission: .readWrite)
        let fields: [String: FieldValue] = [
            "title": .string(Self.secret), "count": .int64(42), "when": .timestamp(1_767_225_600_000),
            "tags": .list([.string("a"), .string("b")]), "blob": .bytes([0, 1, 2, 255]), "data": .json(.object(["k": .bool(true)])),
        ]
        let saved = try await p.alice.modifyRecords(saving: [Build.record("r1", in: zone, fields)])
        #expect(saved.errors.isEmpty)
        #expect(try saved.saveResults[0].result.get().fields == fields, "the saved record comes back opened")
        // The store underneath holds ciphertext only.
        let raw = try await p.fixture.store(as: "alice").fetchRecords([Build.id("r1", in: zone)])
        for (_, value) in try raw[0].result.get().fields {
            guard case .encrypted = value else { Issue.record("a field is in clear on the store: \(value)"); continue }
        }
        // bob reads it through the shared scope, and writes back.
        let changes = try await p.bob.recordZoneChanges(zone: zone, since: nil)
        #expect(try changes.modifications.map { try $0.result.get().fields } == [fields])
        var edited = try changes.modifications[0].result.get()
        edited.fields["title"] = .string("bob's edit")
        #expect(try await p.bob.modifyRecords(saving: [edited]).errors.isEmpty)
        let back = try await p.alice.fetchRecords([Build.id("r1", in: zone)])
        #expect(try back[0].result.get().fields["title"] == .string("bob's edit"))
    }

    /// Only the listed fields are sealed; the others stay plain on the store.
    @Test func onlyListedFieldsAreSealed() async throws {
        let p = try Pair(.memory)
        let zone = try await p.diary(fields: ["title"])
        _ = try await p.alice.modifyRecords(saving: [Build.record("r1", in: zone, ["title": .string(Self.secret), "n": .int64(7)])])
        let raw = try await p.fixture.store(as: "alice").fetchRecords([Build.id("r1", in: zone)])[0].result.get()
        #expect(raw.fields["n"] == .int64(7))
        if case .encrypted = raw.fields["title"] {} else { Issue.record("title is not sealed: \(String(describing: raw.fields["title"]))") }
    }

    /// recsync does not encrypt files: a file for a field the zone seals is refused at the
    /// upload, saying why, by the client and by the store alike, so its content never
    /// reaches the store's objects; in a field the zone leaves in clear it is stored. A file
    /// uploaded for a clear field and then put into a sealed one, or into another record, is
    /// refused at the save.
    @Test func aFileInASealedFieldIsRefused() async throws {
        let p = try Pair(.git)
        let zone = try await p.diary(fields: ["title"])
        let marker = "sealed-field-file-marker-7d1c"
        let file = p.keys.file("photo.jpg")
        try Data("not really a photo: \(marker)".utf8).write(to: URL(fileURLWithPath: file))
        let sealedID = Build.id("sealed", in: zone)
        for store in [p.alice as any RemoteStore, try p.fixture.store(as: "alice")] {
            do {
                _ = try await store.uploadAsset(fileAt: file, for: sealedID, field: "title")
                Issue.record("a file for a sealed field was uploaded through \(type(of: store))")
            } catch {
                guard case .invalidValue(let message) = error.reason else { Issue.record("refused with another error: \(error)"); continue }
                #expect(message.contains("does not encrypt files"), "\(message)")
            }
        }
        let dump = try GitCLI.run(["cat-file", "--batch-all-objects", "--batch"], in: p.fixture.path)
        #expect(dump.contains("\"encryption\""), "the dump is the store's objects (the zone's keys)")
        #expect(!dump.contains(marker), "the refused file's content is in the store")

        let asset = try await p.alice.uploadAsset(fileAt: file, for: Build.id("clear", in: zone), field: "photo")
        let refused = try await p.alice.modifyRecords(saving: [Build.record("sealed", in: zone, ["title": .asset(asset)])])
        #expect(throws: RecSyncError.self) { try refused.saveResults[0].result.get() }
        #expect("\(refused.errors)".contains("does not encrypt files"), "\(refused.errors)")
        // Nor may the upload go into a clear field of another record than the one it was made for.
        let moved = try await p.alice.modifyRecords(saving: [Build.record("other", in: zone, ["photo": .asset(asset)])])
        #expect("\(moved.errors)".contains("uploaded for field 'photo' of record 'clear'"), "\(moved.errors)")
        let saved = try await p.alice.modifyRecords(saving: [
            Build.record("clear", in: zone, ["title": .string(Self.secret), "photo": .asset(asset)])
        ])
        #expect(try saved.saveResults[0].result.get().fields["photo"] == .asset(asset))
    }

    /// Every save seals afresh: the same value saved again gets a new ciphertext, so the
    /// store cannot tell which fields an edit touched (its change tag changes anyway, since
    /// the store stamps `modified`).
    @Test func savingAgainSealsEveryFieldAfresh() async throws {
        let p = try Pair(.git)
        let zone = try await p.diary()
        let first = try await p.alice.modifyRecords(saving: [Build.record("r1", in: zone, ["title": .string("x"), "n": .int64(1)])]).saveResults[0]
            .result.get()
        var edited = first
        edited.fields["n"] = .int64(2)
        let second = try await p.alice.modifyRecords(saving: [edited]).saveResults[0].result.get()
        #expect(second.fields == ["title": .string("x"), "n": .int64(2)])
        let raw = try p.fixture.store(as: "alice")
        let before = try await raw.fetchRecordVersion(Build.id("r1", in: zone), changeTag: try #require(first.changeTag))
        let after = try await raw.fetchRecords([Build.id("r1", in: zone)])[0].result.get()
        #expect(before?.fields["title"] != nil && after.fields["title"] != before?.fields["title"])
        #expect(try await p.alice.fetchRecordVersion(Build.id("r1", in: zone), changeTag: try #require(first.changeTag))?.fields == first.fields)
    }

    /// A ciphertext moved to another field or record, or altered, fails to open: that record
    /// alone fails, with a message naming it and the field; the others arrive.
    @Test func tamperedOrMovedCiphertextIsRefusedForThatRecordOnly() async throws {
        let p = try Pair(.git)
        let zone = try await p.diary()
        _ = try await p.alice.modifyRecords(saving: [
            Build.record("r1", in: zone, ["title": .string("one"), "body": .string("first body")]),
            Build.record("r2", in: zone, ["title": .string("two")]),
            Build.record("r3", in: zone, ["title": .string("three")]),
        ])
        let raw = try p.fixture.store(as: "alice")
        let stored = try await raw.fetchRecords([Build.id("r1", in: zone), Build.id("r2", in: zone), Build.id("r3", in: zone)]).map {
            try $0.result.get()
        }
        var moved = stored[1]
        moved.fields["title"] = stored[0].fields["title"]  // r1's title into r2
        var swapped = stored[0]
        swapped.fields["title"] = stored[0].fields["body"]  // r1's body into its title
        var flipped = stored[2]
        guard case .encrypted(var bytes)? = flipped.fields["title"] else { Issue.record("not sealed"); return }
        bytes[bytes.count - 1] ^= 1
        flipped.fields["title"] = .encrypted(bytes)
        #expect(try await raw.modifyRecords(saving: [moved, swapped, flipped], deleting: [], savePolicy: .allKeys, atomically: true).errors.isEmpty)
        // A fourth record written properly still arrives.
        _ = try await p.alice.modifyRecords(saving: [Build.record("r4", in: zone, ["title": .string("four")])])

        let changes = try await p.alice.recordZoneChanges(zone: zone, since: nil)
        var failures: [String: String] = [:]
        var ok: [String] = []
        for item in changes.modifications {
            switch item.result {
            case .success: ok.append(item.recordID.recordName)
            case .failure(let e): failures[item.recordID.recordName] = e.message
            }
        }
        #expect(ok == ["r4"])
        #expect(Set(failures.keys) == ["r1", "r2", "r3"])
        for (name, message) in failures {
            #expect(message.contains("record '\(name)'") && message.contains("field 'title'") && message.contains("tampered"), "\(message)")
        }
    }

    /// Fields sealed with a key generation this user holds no key for fail, naming it, and a
    /// page of them reads the zone once, not once per field (nor again on the next page);
    /// the records that open arrive. Both for a client that has not seen the zone yet and
    /// one that has.
    @Test func fieldsUnderAnUnknownGenerationReadTheZoneOnce() async throws {
        let p = try Pair(.git)
        let zone = try await p.diary()
        _ = try await p.alice.modifyRecords(saving: [Build.record("good", in: zone, ["title": .string("opens")])])
        // Sealed with generation 7, which the zone does not have (written around recsync).
        let raw = try p.fixture.store(as: "alice")
        let stranger = ZoneCrypto.newZoneKey()
        var records: [Record] = []
        for r in 0..<5 {
            var fields: [String: FieldValue] = [:]
            for f in 0..<10 {
                let binding = FieldBinding(storeID: raw.storeID, zoneID: zone, recordName: "r\(r)", field: "f\(f)")
                fields["f\(f)"] = try ZoneCrypto.seal(.int64(Int64(f)), key: stranger, generation: 7, binding: binding)
            }
            records.append(Build.record("r\(r)", in: zone, fields))
        }
        #expect(try await raw.modifyRecords(saving: records).errors.isEmpty)

        for seenBefore in [false, true] {
            let counting = FaultInjectingStore(try p.fixture.store(as: "alice"))
            let alice = EncryptingStore(counting, keyStore: p.keyStore("alice"))
            if seenBefore { _ = try await alice.fetchAllRecordZones(scope: .private) }
            let before = await counting.zoneListings
            let changes = try await alice.recordZoneChanges(zone: zone, since: nil)
            let onePage = await counting.zoneListings - before
            #expect(onePage <= 1, "the zone was read \(onePage) times for one page")
            let again = try await alice.fetchRecords(records.map(\.recordID))
            let twoPages = await counting.zoneListings - before
            #expect(twoPages <= 1, "a generation known missing was looked for again (\(twoPages) reads)")
            for item in changes.modifications + again {
                switch item.result {
                case .success(let record): #expect(record.recordID.recordName == "good" && record.fields == ["title": .string("opens")])
                case .failure(let e):
                    #expect(e.message.contains("generation 7") && e.message.contains("record '\(item.recordID.recordName)'"), "\(e.message)")
                }
            }
            #expect(changes.modifications.filter { (try? $0.result.get()) != nil }.count == 1, "the record that opens arrives")
        }
    }

    /// A zone read that fails while looking for a key generation (a dropped connection)
    /// fails the records that need it for that page only: the next page reads the zone
    /// again and opens them, instead of taking the generation for missing.
    @Test func aFailedZoneReadIsNotAMissingGeneration() async throws {
        let p = try Pair(.git)
        let zone = try await p.diary()
        try await p.alice.share(zone, with: "bob", permission: .readWrite)
        _ = try await p.alice.modifyRecords(saving: [Build.record("one", in: zone, ["title": .string("generation one")])])
        let flaky = FaultInjectingStore(try p.fixture.store(as: "alice"))
        let alice = EncryptingStore(flaky, keyStore: p.keyStore("alice"))
        #expect(try await alice.fetchRecords([Build.id("one", in: zone)])[0].result.get().fields["title"] == .string("generation one"))
        // A new generation (bob leaves), and a record sealed with it, written elsewhere.
        try await p.alice.unshare(zone, with: "bob")
        _ = try await p.alice.modifyRecords(saving: [Build.record("two", in: zone, ["title": .string("generation two")])])

        await flaky.failZoneListings(1)
        let first = try await alice.fetchRecords([Build.id("two", in: zone)])[0].result
        guard case .failure(let e) = first else { Issue.record("opened without reading the zone"); return }
        #expect(e.code == .networkFailure, "\(e.message)")
        let second = try await alice.fetchRecords([Build.id("two", in: zone)])[0].result
        #expect(try second.get().fields["title"] == .string("generation two"))
    }

    /// A zone read that fails on a first pull fails every record of that zone in the page:
    /// none of them passes unchecked, so a clear value planted where the zone seals the
    /// field cannot slip in behind the first record's network error.
    @Test func aFailedFirstZoneReadLetsNoRecordOfThePageThroughUnchecked() async throws {
        let p = try Pair(.git)
        let zone = try await p.diary(fields: ["title"])
        let planted = (1...3).map { Build.record("planted\($0)", in: zone, ["title": .string("not sealed \($0)")]) }
        try GitCLI.commitFiles(planted.map { (StoreLayout.recordPath($0.recordID), StoreEncoding.encode($0)) }, toStore: p.fixture.path)
        let flaky = FaultInjectingStore(try p.fixture.store(as: "alice"))
        let fresh = EncryptingStore(flaky, keyStore: p.keyStore("alice"))
        await flaky.failZoneListings(1)
        let results = try await fresh.fetchRecords(planted.map(\.recordID))
        for result in results {
            guard case .failure(let e) = result.result else { Issue.record("\(result.recordID.recordName) passed unchecked"); continue }
            #expect(e.code == .networkFailure, "\(e.message)")
        }
        // The next page reads the zone and refuses the clear values for what they are.
        for result in try await fresh.fetchRecords(planted.map(\.recordID)) {
            guard case .failure(let e) = result.result else { Issue.record("a clear value was accepted"); continue }
            #expect(e.message.contains("in clear") && e.message.contains("field 'title'"), "\(e.message)")
        }
    }

    /// An entry of the zone key wrapped for this user that does not open (here one wrapped
    /// for another user's key) costs only the fields sealed with its generation: the
    /// records sealed with a generation that opens arrive.
    @Test func aKeyEntryThatDoesNotOpenFailsOnlyItsGeneration() async throws {
        let p = try Pair(.git)
        let zone = try await p.diary()
        _ = try await p.alice.modifyRecords(saving: [Build.record("one", in: zone, ["title": .string("generation one")])])
        var stored = try #require(try await p.fixture.store(as: "alice").fetchAllRecordZones(scope: .private).first)
        var encryption = try #require(stored.encryption)
        let bob = try EncryptionKeys.publicKeys(of: try #require(try p.keyStore("bob").load("bob"))).agreement
        let second = ZoneCrypto.newZoneKey()
        encryption.keys.append(try ZoneCrypto.wrap(second, generation: 2, zone: zone, for: "alice", publicKey: bob))
        stored.encryption = try ZoneCrypto.signed(
            encryption, zone: zone, storeID: p.alice.storeID, by: try #require(try p.keyStore("alice").load("alice")))
        try GitCLI.commitFiles([(StoreLayout.zoneFilePath(zone), ZoneDocuments.encodeZone(stored))], toStore: p.fixture.path)
        let raw = try p.fixture.store(as: "alice")
        let binding = FieldBinding(storeID: raw.storeID, zoneID: zone, recordName: "two", field: "title")
        let sealed = try ZoneCrypto.seal(.string("generation two"), key: second, generation: 2, binding: binding)
        #expect(try await raw.modifyRecords(saving: [Build.record("two", in: zone, ["title": sealed])]).errors.isEmpty)

        let alice = EncryptingStore(try p.fixture.store(as: "alice"), keyStore: p.keyStore("alice"))
        let results = try await alice.fetchRecords([Build.id("one", in: zone), Build.id("two", in: zone)])
        #expect(try results[0].result.get().fields == ["title": .string("generation one")])
        guard case .failure(let e) = results[1].result else { Issue.record("a field sealed with a key that does not open was opened"); return }
        #expect(e.message.contains("record 'two'") && e.message.contains("generation 2") && e.message.contains("does not open"), "\(e.message)")
        // Nothing is sealed with it, nor are the keys wrapped again without it (sharing would
        // drop generation 2 for everyone).
        await Self.expectRefusal("generation 2", "does not open") {
            _ = try await alice.modifyRecords(saving: [Build.record("three", in: zone, ["title": .string("new")])])
        }
        await Self.expectRefusal("generation 2", "does not open") {
            try await alice.share(zone, with: "bob", permission: .readWrite)
        }
    }

    /// Fields that did not open with the key on this machine open once the right key is
    /// imported, through the same client: what was found missing is looked for again when
    /// the private key changes, not only when the zone does.
    @Test func importingTheRightKeyOpensWhatDidNotOpen() async throws {
        let p = try Pair(.git)
        _ = try await p.diary()  // both users' keys
        let zone = Build.zone("journal", owner: "bob")
        var journal = RecordZone(zoneID: zone)
        journal.encryption = ZoneEncryption()
        _ = try await p.bob.modifyRecordZones([.recreate(journal)])[0].result.get()
        try await p.bob.share(zone, with: "alice", permission: .readWrite)
        _ = try await p.bob.modifyRecords(saving: [Build.record("r", in: zone, ["title": .string(Self.secret)])])
        // A device of alice's holding a key that is not hers (not imported yet).
        let device = UserKeyStore(directory: p.keys.file("alice-device"))
        try device.save(try #require(try p.keyStore("bob").load("bob")), for: "alice")
        let alice = EncryptingStore(try p.fixture.store(as: "alice"), keyStore: device)
        let before = try await alice.fetchRecords([Build.id("r", in: zone)])[0].result
        guard case .failure(let e) = before else { Issue.record("opened with another key"); return }
        #expect(e.message.contains("generation 1") && e.message.contains("does not open"), "\(e.message)")

        let exported = try EncryptionKeys.export(user: "alice", keyStore: p.keyStore("alice"))
        _ = try EncryptionKeys.importKey(exported, from: "alice.key", user: "alice", keyStore: device, replace: true)
        let after = try await alice.fetchRecords([Build.id("r", in: zone)])[0].result
        #expect(try after.get().fields == ["title": .string(Self.secret)])
    }

    /// A key generation found missing is looked for again once the zone shows as changed
    /// (a pull's `databaseChanges`), through the same long-lived handle without a pin
    /// directory (the embedded engine's): bob, taken off the zone and put back on its list
    /// around recsync without generation 2, fails a field sealed with it; once alice
    /// re-shares the zone (generation 2 wrapped for him), his next pull opens it.
    @Test func aMissingGenerationIsLookedForAgainWhenTheZoneChanges() async throws {
        let p = try Pair(.git)
        let zone = try await p.diary()
        try await p.alice.share(zone, with: "bob", permission: .readWrite)
        _ = try await p.alice.modifyRecords(saving: [Build.record("one", in: zone, ["title": .string("generation one")])])
        #expect(try await p.bob.fetchRecords([Build.id("one", in: zone)])[0].result.get().fields["title"] == .string("generation one"))

        // Unshared: generation 2, without bob; then listed again around recsync, no key for him.
        try await p.alice.unshare(zone, with: "bob")
        _ = try await p.alice.modifyRecords(saving: [Build.record("two", in: zone, ["title": .string("generation two")])])
        var relisted = try #require(try await p.fixture.store(as: "alice").fetchAllRecordZones(scope: .private).first)
        relisted.participants = [ShareParticipant(userRecordName: "bob", permission: .readWrite)]
        try GitCLI.commitFiles([(StoreLayout.zoneFilePath(zone), ZoneDocuments.encodeZone(relisted))], toStore: p.fixture.path)
        let missing = try await p.bob.fetchRecords([Build.id("two", in: zone)])[0].result
        guard case .failure(let e) = missing else { Issue.record("opened a generation not wrapped for bob"); return }
        #expect(e.message.contains("generation 2"), "\(e.message)")

        // alice shares it with him properly: generation 2 is wrapped for bob.
        try await p.alice.unshare(zone, with: "bob")
        try await p.alice.share(zone, with: "bob", permission: .readWrite)
        #expect(
            try await p.fixture.store(as: "bob").fetchAllRecordZones(scope: .shared).first?.encryption?.keys.contains {
                $0.userRecordName == "bob" && $0.generation == 2
            } == true)
        let changes = try await p.bob.databaseChanges(scope: .shared, since: nil)
        #expect(changes.modifications.contains(zone))
        let after = try await p.bob.fetchRecords([Build.id("two", in: zone)])[0].result
        #expect(try after.get().fields["title"] == .string("generation two"))
    }

    /// The store refuses a clear value for a sealed field (a client that does not seal must
    /// not leak into an encrypted zone); one committed around recsync with plain git is
    /// refused when read.
    @Test func clearValueInAnEncryptedZoneIsRefused() async throws {
        let p = try Pair(.git)
        let zone = try await p.diary(fields: ["title"])
        let raw = try p.fixture.store(as: "alice")
        let refused = try await raw.modifyRecords(saving: [Build.record("plain", in: zone, ["title": .string("not sealed")])])
        #expect(refused.errors.first?.message.contains("arrived in clear") == true, "\(refused.errors)")
        #expect(
            try await raw.modifyRecords(saving: [Build.record("other", in: zone, ["n": .int64(1)])]).errors.isEmpty, "unsealed fields may be clear")

        let planted = Build.record("planted", in: zone, ["title": .string("not sealed")])
        try GitCLI.commitFiles([(StoreLayout.recordPath(planted.recordID), StoreEncoding.encode(planted))], toStore: p.fixture.path)
        // Read by a client that has not seen the zone yet (a first pull).
        let fresh = EncryptingStore(try p.fixture.store(as: "alice"), keyStore: p.keyStore("alice"))
        let result = try await fresh.fetchRecords([Build.id("planted", in: zone)])[0].result
        guard case .failure(let e) = result else { Issue.record("a clear value was accepted"); return }
        #expect(e.message.contains("in clear") && e.message.contains("field 'title'"), "\(e.message)")
    }

    /// Sharing needs bob's published key; unsharing rotates the key: bob can still open what
    /// was written before (he had it), not what is written after; alice reads both.
    @Test func unshareRotatesTheKey() async throws {
        let p = try Pair(.git)
        _ = try await EncryptionKeys.initialize(user: "alice", keyStore: p.keyStore("alice"), store: p.alice)
        let zone = Build.zone("diary")
        var z = RecordZone(zoneID: zone)
        z.encryption = ZoneEncryption()
        _ = try await p.alice.modifyRecordZones([.recreate(z)])[0].result.get()
        await #expect(throws: RecSyncError.self) { try await p.alice.share(zone, with: "bob", permission: .readOnly) }
        do { try await p.alice.share(zone, with: "bob", permission: .readOnly) } catch {
            #expect(error.message.contains("bob has published no public key"), "\(error.message)")
            #expect(error.remedies == [.askToPublishKey(user: "bob")])
        }
        _ = try await EncryptionKeys.initialize(user: "bob", keyStore: p.keyStore("bob"), store: p.bob)
        try await p.alice.share(zone, with: "bob", permission: .readOnly)
        _ = try await p.alice.modifyRecords(saving: [Build.record("before", in: zone, ["title": .string("bob may read this")])])
        #expect(try await p.bob.fetchRecords([Build.id("before", in: zone)])[0].result.get().fields["title"] == .string("bob may read this"))
        let keptByBob = try await p.fixture.store(as: "bob").fetchAllRecordZones(scope: .shared).first?.encryption

        try await p.alice.unshare(zone, with: "bob")
        let after = try #require(try await p.fixture.store(as: "alice").fetchAllRecordZones(scope: .private).first?.encryption)
        #expect(after.currentGeneration == 2)
        #expect(!after.keys.contains { $0.userRecordName == "bob" })
        _ = try await p.alice.modifyRecords(saving: [Build.record("after", in: zone, ["title": .string("not for bob")])])
        let both = try await p.alice.fetchRecords([Build.id("before", in: zone), Build.id("after", in: zone)])
        #expect(try both.map { try $0.result.get().fields["title"] } == [.string("bob may read this"), .string("not for bob")])

        // Even holding the zone document he saw before (generation 1 wrapped for him) and
        // reading the store directly, bob cannot open what was sealed with generation 2.
        let bobKey = try #require(try p.keyStore("bob").load("bob"))
        let wrapped = try #require(keptByBob?.keys.first { $0.userRecordName == "bob" })
        #expect(wrapped.generation == 1)
        let raw = try await p.fixture.store(as: "alice").fetchRecords([Build.id("after", in: zone)])[0].result.get()
        guard case .encrypted(let sealed)? = raw.fields["title"] else { Issue.record("not sealed"); return }
        #expect(sealed[1...4] == [0, 0, 0, 2], "written with generation 2")
        let generation1 = try ZoneCrypto.unwrap(wrapped, zone: zone, with: bobKey)
        let binding = FieldBinding(storeID: p.alice.storeID, zoneID: zone, recordName: "after", field: "title")
        #expect(throws: RecSyncError.self) { try ZoneCrypto.open(sealed, keys: [2: generation1], binding: binding) }
        #expect(throws: RecSyncError.self) { try ZoneCrypto.open(sealed, keys: [1: generation1], binding: binding) }
        // What bob had: generation 1 still opens the record written before.
        let rawBefore = try await p.fixture.store(as: "alice").fetchRecords([Build.id("before", in: zone)])[0].result.get()
        guard case .encrypted(let old)? = rawBefore.fields["title"] else { Issue.record("not sealed"); return }
        let opened = try ZoneCrypto.open(
            old, keys: [1: generation1], binding: FieldBinding(storeID: p.alice.storeID, zoneID: zone, recordName: "before", field: "title"))
        #expect(opened == .string("bob may read this"))
    }

    /// The user's key file is refused when others can read it.
    @Test func keyFileReadableByOthersIsRefused() async throws {
        let p = try Pair(.memory)
        _ = try await EncryptionKeys.initialize(user: "alice", keyStore: p.keyStore("alice"), store: p.alice)
        let path = p.keyStore("alice").path(for: "alice")
        var st = stat()
        #expect(stat(path, &st) == 0 && st.st_mode & 0o777 == 0o600)
        #expect(stat(p.keys.file("alice"), &st) == 0 && st.st_mode & 0o777 == 0o700)
        chmod(path, 0o644)
        #expect(throws: RecSyncError.self) { try p.keyStore("alice").load("alice") }
        do { _ = try p.keyStore("alice").load("alice") } catch { #expect(error.message.contains("chmod 600"), "\(error.message)") }
    }

    /// A key a handle has read already is read again, and checked again, once its file's
    /// permissions change: a key file others could read since is refused, not used from memory.
    @Test func aKeyFileMadeReadableByOthersIsRefusedByAHandleThatReadItBefore() async throws {
        let p = try Pair(.git)
        let diary = try await p.diary()
        var journal = RecordZone(zoneID: Build.zone("journal"))
        journal.encryption = ZoneEncryption(fields: nil)
        _ = try await p.alice.modifyRecordZones([.recreate(journal)])[0].result.get()
        for zone in [diary, journal.zoneID] {
            _ = try await p.alice.modifyRecords(saving: [Build.record("r", in: zone, ["title": .string("sealed")])])
        }
        let reader = EncryptingStore(try p.fixture.store(as: "alice"), keyStore: p.keyStore("alice"))
        #expect(try await reader.fetchRecords([Build.id("r", in: diary)])[0].result.get().fields["title"] == .string("sealed"))
        chmod(p.keyStore("alice").path(for: "alice"), 0o644)
        let result = try await reader.fetchRecords([Build.id("r", in: journal.zoneID)])[0].result
        guard case .failure(let e) = result else { Issue.record("a key file others can read was used"); return }
        #expect(e.message.contains("chmod 600"), "\(e.message)")
    }

    /// A key reset drops the user's encrypted zones with reason encryptedDataReset and
    /// publishes a new key; a zone created again is keyed to it.
    @Test func keyResetMarksZonesAndPublishesANewKey() async throws {
        let p = try Pair(.git)
        let zone = try await p.diary()
        let old = try await p.alice.fetchUserPublicKey("alice")
        let report = try await EncryptionKeys.reset(user: "alice", keyStore: p.keyStore("alice"), store: p.alice)
        #expect(report.zonesReset == [zone])
        #expect(try await p.alice.fetchZoneDeletions([zone]) == [ZoneDeletion(zoneID: zone, reason: .encryptedDataReset)])
        let new = try await p.alice.fetchUserPublicKey("alice")
        #expect(new != nil && new?.publicKey != old?.publicKey && new?.publicKey == report.publicKey)
        // The upload after the reset makes the zone encrypted again, under a new key.
        let back = try #require(try await p.alice.modifyRecordZones([.uploadAfterReset(RecordZone(zoneID: zone))])[0].result.get())
        #expect(back.encryption?.keys.map(\.userRecordName) == ["alice"])
        #expect(try await p.alice.modifyRecords(saving: [Build.record("r", in: zone, ["title": .string("again")])]).errors.isEmpty)
        #expect(try await p.alice.fetchRecords([Build.id("r", in: zone)])[0].result.get().fields["title"] == .string("again"))
    }

    /// A version sealed before a key reset (the ancestor another device merges against) is
    /// unavailable, not an error: the pull falls back to a conflict instead of failing.
    @Test func versionSealedBeforeAResetIsUnavailable() async throws {
        let p = try Pair(.git)
        let zone = try await p.diary()
        let first = try await p.alice.modifyRecords(saving: [Build.record("r", in: zone, ["title": .string("before")])]).saveResults[0].result.get()
        _ = try await EncryptionKeys.reset(user: "alice", keyStore: p.keyStore("alice"), store: p.alice)
        _ = try await p.alice.modifyRecordZones([.uploadAfterReset(RecordZone(zoneID: zone))])[0].result.get()
        #expect(try await p.alice.modifyRecords(saving: [Build.record("r", in: zone, ["title": .string("after")])]).errors.isEmpty)
        let ancestor = try await p.alice.fetchRecordVersion(Build.id("r", in: zone), changeTag: try #require(first.changeTag))
        #expect(ancestor == nil)
    }

    /// After pushes into an encrypted zone, no clear value appears in any object of the store.
    @Test func noClearValueInAnyStoreObject() async throws {
        let p = try Pair(.git)
        let zone = try await p.diary()
        try await p.alice.share(zone, with: "bob", permission: .readWrite)
        _ = try await p.alice.modifyRecords(saving: [
            Build.record("r1", in: zone, ["title": .string(Self.secret), "n": .string("second-secret-value")])
        ])
        _ = try await p.bob.modifyRecords(saving: [Build.record("r2", in: zone, ["title": .string("bob-secret-value")])])
        try await p.alice.unshare(zone, with: "bob")
        let dump = try GitCLI.run(["cat-file", "--batch-all-objects", "--batch"], in: p.fixture.path)
        #expect(dump.contains("ENCRYPTED"), "the dump is the store's objects")
        for value in [Self.secret, "second-secret-value", "bob-secret-value"] {
            #expect(!dump.contains(value), "\(value) is in clear in the store")
        }
    }

    /// A zone.json stripped of its `encryption` with plain git (a downgrade by a store writer)
    /// does not make a client that saw the zone encrypted push its values in clear.
    @Test func strippedEncryptionIsNotADowngrade() async throws {
        let p = try Pair(.git)
        let zone = try await p.diary()
        let pins = p.keys.file("alice-pins")
        try FileManager.default.createDirectory(atPath: pins, withIntermediateDirectories: true)
        let alice = EncryptingStore(try p.fixture.store(as: "alice"), keyStore: p.keyStore("alice"), pinDirectory: pins)
        #expect(try await alice.modifyRecords(saving: [Build.record("r1", in: zone, ["title": .string("first")])]).errors.isEmpty)

        var stripped = try #require(try await p.fixture.store(as: "alice").fetchAllRecordZones(scope: .private).first)
        stripped.encryption = nil
        try GitCLI.commitFiles([(StoreLayout.zoneFilePath(zone), ZoneDocuments.encodeZone(stripped))], toStore: p.fixture.path)

        // A later run of the same workspace (a new EncryptingStore, the same pin file).
        let later = EncryptingStore(try p.fixture.store(as: "alice"), keyStore: p.keyStore("alice"), pinDirectory: pins)
        await Self.expectRefusal("zone \(zone) was encrypted", "no longer says so", "not pushed in clear") {
            _ = try await later.modifyRecords(saving: [Build.record("r2", in: zone, ["title": .string(Self.secret)])])
        }
        let dump = try GitCLI.run(["cat-file", "--batch-all-objects", "--batch"], in: p.fixture.path)
        #expect(!dump.contains(Self.secret), "a value went to the store in clear after a downgrade")
    }

    /// The pins live wherever the client keeps its state: with an app's own state store (here
    /// in memory) the downgrade is refused the same way, and nothing is written to disk.
    @Test func pinsKeptInAClientsOwnStateRefuseTheDowngradeToo() async throws {
        let p = try Pair(.git)
        let zone = try await p.diary()
        let state = MemoryClientState()
        let alice = EncryptingStore(try p.fixture.store(as: "alice"), keyStore: p.keyStore("alice"), state: state)
        #expect(try await alice.modifyRecords(saving: [Build.record("r1", in: zone, ["title": .string("first")])]).errors.isEmpty)
        #expect(try state.readState("encrypted-zones") != nil, "the zone was not pinned in the client's state")

        var stripped = try #require(try await p.fixture.store(as: "alice").fetchAllRecordZones(scope: .private).first)
        stripped.encryption = nil
        try GitCLI.commitFiles([(StoreLayout.zoneFilePath(zone), ZoneDocuments.encodeZone(stripped))], toStore: p.fixture.path)

        let later = EncryptingStore(try p.fixture.store(as: "alice"), keyStore: p.keyStore("alice"), state: state)
        await Self.expectRefusal("zone \(zone) was encrypted", "no longer says so", "not pushed in clear") {
            _ = try await later.modifyRecords(saving: [Build.record("r2", in: zone, ["title": .string(Self.secret)])])
        }
        let dump = try GitCLI.run(["cat-file", "--batch-all-objects", "--batch"], in: p.fixture.path)
        #expect(!dump.contains(Self.secret), "a value went to the store in clear after a downgrade")
    }

    /// A public key swapped on the store by someone writing around recsync is not given the
    /// zone key once the client has used the genuine one (trust on first use).
    @Test func swappedPublicKeyIsRefused() async throws {
        let p = try Pair(.git)
        let zone = try await p.diary()
        let pins = p.keys.file("alice-pins")
        try FileManager.default.createDirectory(atPath: pins, withIntermediateDirectories: true)
        let alice = EncryptingStore(try p.fixture.store(as: "alice"), keyStore: p.keyStore("alice"), pinDirectory: pins)
        try await alice.share(zone, with: "bob", permission: .readWrite)
        try await alice.unshare(zone, with: "bob")

        let mallory = UserKeyStore(directory: p.keys.file("mallory"))
        _ = try await EncryptionKeys.initialize(user: "mallory", keyStore: mallory, store: try p.fixture.store(as: "mallory"))
        let malloryKeys = try EncryptionKeys.publicKeys(of: try #require(try mallory.load("mallory")))
        try await p.fixture.store(as: "bob").publishUserPublicKey(malloryKeys.agreement, signingKey: malloryKeys.signing)
        let published = try #require(try await p.fixture.store(as: "bob").fetchUserPublicKey("bob"))
        #expect(
            published.publicKey != Array(try #require(try p.keyStore("bob").load("bob")).publicKey.rawRepresentation),
            "the store holds mallory's key for bob")

        let later = EncryptingStore(try p.fixture.store(as: "alice"), keyStore: p.keyStore("alice"), pinDirectory: pins)
        await Self.expectRefusal("public key published for bob", "is not the one this workspace used before") {
            try await later.share(zone, with: "bob", permission: .readWrite)
        }
        let zoneNow = try #require(try await p.fixture.store(as: "alice").fetchAllRecordZones(scope: .private).first)
        #expect(
            !zoneNow.participants.contains { $0.userRecordName == "bob" }
                && !(zoneNow.encryption?.keys.contains { $0.userRecordName == "bob" } ?? true),
            "nothing was wrapped for the swapped key")
    }

    /// Runs `body`, which must fail with `permissionFailure` saying each of `words`.
    static func expectRefusal(_ words: String..., sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void) async {
        do {
            try await body()
            Issue.record("not refused", sourceLocation: sourceLocation)
        } catch {
            guard case .permissionFailure(let message) = (error as? RecSyncError)?.reason else {
                Issue.record("refused with another error: \(error)", sourceLocation: sourceLocation)
                return
            }
            for w in words { #expect(message.contains(w), "\(message)", sourceLocation: sourceLocation) }
        }
    }

    /// A zone.json put back to a version from before an unshare (the removed participant's
    /// keys back, the old generation current) does not make a client seal with the old key.
    @Test func rolledBackZoneKeysAreRefused() async throws {
        let p = try Pair(.git)
        let zone = try await p.diary()
        let pins = p.keys.file("alice-pins")
        try FileManager.default.createDirectory(atPath: pins, withIntermediateDirectories: true)
        let alice = EncryptingStore(try p.fixture.store(as: "alice"), keyStore: p.keyStore("alice"), pinDirectory: pins)
        try await alice.share(zone, with: "bob", permission: .readWrite)
        let shared = try #require(try await p.fixture.store(as: "alice").fetchAllRecordZones(scope: .private).first)
        try await alice.unshare(zone, with: "bob")

        // Put back right after the unshare, before this client read the zone again.
        try GitCLI.commitFiles([(StoreLayout.zoneFilePath(zone), ZoneDocuments.encodeZone(shared))], toStore: p.fixture.path)
        let later = EncryptingStore(try p.fixture.store(as: "alice"), keyStore: p.keyStore("alice"), pinDirectory: pins)
        await Self.expectRefusal("zone \(zone) on the store has key generation 1, older than generation 2 seen before") {
            _ = try await later.modifyRecords(saving: [Build.record("r2", in: zone, ["title": .string(Self.secret)])])
        }
        if case .success = try await p.fixture.store(as: "alice").fetchRecords([Build.id("r2", in: zone)])[0].result {
            Issue.record("a record was pushed")
        }
    }

    /// The same rollback in two steps: first the zone hidden (a zone.json that does not
    /// parse, so the zone is missing from the listing, without a tombstone), then the old one
    /// put back. Hiding is not deleting: the pin stays, and the old key is still refused.
    @Test func aZoneHiddenThenRolledBackIsRefused() async throws {
        let p = try Pair(.git)
        let zone = try await p.diary()
        let pins = p.keys.file("alice-pins")
        try FileManager.default.createDirectory(atPath: pins, withIntermediateDirectories: true)
        let alice = EncryptingStore(try p.fixture.store(as: "alice"), keyStore: p.keyStore("alice"), pinDirectory: pins)
        try await alice.share(zone, with: "bob", permission: .readWrite)
        let shared = try #require(try await p.fixture.store(as: "alice").fetchAllRecordZones(scope: .private).first)
        try await alice.unshare(zone, with: "bob")
        _ = try await alice.fetchAllRecordZones(scope: .private)  // generation 2 seen and pinned

        try GitCLI.commitFiles([(StoreLayout.zoneFilePath(zone), Array(#"{"encryption": "hidden"}"#.utf8))], toStore: p.fixture.path)
        #expect(try await alice.fetchAllRecordZones(scope: .private).isEmpty, "the zone is hidden")
        try GitCLI.commitFiles([(StoreLayout.zoneFilePath(zone), ZoneDocuments.encodeZone(shared))], toStore: p.fixture.path)
        let later = EncryptingStore(try p.fixture.store(as: "alice"), keyStore: p.keyStore("alice"), pinDirectory: pins)
        do {
            let saved = try await later.modifyRecords(saving: [Build.record("r2", in: zone, ["title": .string(Self.secret)])])
            Issue.record("a save sealed with the key of before the unshare: \(saved.saveResults)")
        } catch {
            #expect(error.message.contains("older than generation 2"), "\(error)")
        }
    }

}
