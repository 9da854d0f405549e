import Foundation
import RecSyncEncryption
import RecSyncEngineFixtures
import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import RecSyncTestTraits
import RecSyncWorkspace
import Testing

@testable import RecSyncEngine

/// The engine and the workspace over an encrypting store: an app's zones sealed as it asks,
/// a push that would upload a file in clear refused whole, and a key reset recovered from.
@Suite(.ownThreads) struct EncryptedSyncTests {
    /// A store of `kind` and alice's encrypting store over it, her key made and published.
    static func alice(_ kind: StoreKind, name: String) async throws -> (fixture: StoreFixture, store: EncryptingStore, keys: UserKeyStore) {
        let fixture = try StoreFixture(kind, name: name)
        let keys = UserKeyStore(directory: fixture.directory.file("alice-keys"))
        let store = EncryptingStore(try fixture.store(as: "alice"), keyStore: keys)
        _ = try await EncryptionKeys.initialize(user: "alice", keyStore: keys, store: store)
        return (fixture, store, keys)
    }

    /// An app's engine over an encrypting store creates a zone it saves as the app describes
    /// it: a plain zone stays plain, one asking for encryption is sealed; and after a key reset
    /// the same save uploads the encrypted zone again.
    @Test func anAppsZoneSaveThroughAnEncryptingStoreEncryptsOnlyWhatItAsksFor() async throws {
        let (fixture, alice, keys) = try await Self.alice(.memory, name: "engine-zone-save")
        let plain = Build.zone("plain"), sealed = Build.zone("sealed")
        var sealedZone = RecordZone(zoneID: sealed)
        sealedZone.encryption = ZoneEncryption(fields: nil)
        let app = SilentApp()
        let engine = try RecordSyncEngine(store: alice, state: RecordSyncEngine.State(), delegate: app, options: .manual)
        try await engine.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: plain)), .saveZone(sealedZone)])
        try await engine.sendChanges()
        func encryption() async throws -> [ZoneID: Bool] {
            Dictionary(
                try await fixture.store(as: "alice").fetchAllRecordZones(scope: .private).map { ($0.zoneID, $0.encryption != nil) },
                uniquingKeysWith: { a, _ in a })
        }
        #expect(try await encryption() == [plain: false, sealed: true])
        #expect(await engine.state.pendingDatabaseChanges.isEmpty)

        // A key reset drops the encrypted zone with reason encryptedDataReset; saving it again
        // (the app's recovery) uploads it encrypted, under the new key.
        _ = try await EncryptionKeys.reset(user: "alice", keyStore: keys, store: alice)
        #expect(try await encryption() == [plain: false])
        try await engine.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: sealed))])
        try await engine.sendChanges()
        #expect(try await encryption() == [plain: false, sealed: true])
    }

    /// A push with a file in a field its zone seals stops before anything is uploaded: the
    /// store's objects hold no byte of it, nor of the record beside it.
    @Test func aPushWithAFileInASealedFieldSendsNothing() async throws {
        let (fixture, alice, _) = try await Self.alice(.git, name: #function)
        var diary = RecordZone(zoneID: Build.zone("diary"))
        diary.encryption = ZoneEncryption(fields: ["title"])
        _ = try await alice.modifyRecordZones([.recreate(diary)])[0].result.get()
        let ws = try Workspace.create(at: fixture.directory.file("laptop"), config: WorkspaceConfig(user: "alice", remote: "memory"))
        let laptop = SyncEngine(workspace: ws, store: alice)
        _ = try await laptop.pull()
        let marker = "sealed-field-file-marker-91ab"
        try writeFile("\(ws.root)/private/diary/r.json", #"{"title": {"$asset": "title"}}"#)
        try writeFile("\(ws.root)/private/diary/r.assets/title", "a scan: \(marker)")
        try writeFile("\(ws.root)/private/diary/s.json", #"{"photo": {"$asset": "photo"}}"#)
        try writeFile("\(ws.root)/private/diary/s.assets/photo", "beside it: \(marker)-clear")
        let error = await pushError(laptop)
        if case .invalidFiles(let problems) = error?.reason {
            #expect(problems.map(\.path) == ["private/diary/r.assets/title"], "\(problems)")
            #expect(problems.first?.message.contains("does not encrypt files") == true, "\(problems)")
        } else {
            Issue.record("the push was not refused: \(String(describing: error))")
        }
        let dump = try GitCLI.run(["cat-file", "--batch-all-objects", "--batch"], in: fixture.path)
        #expect(dump.contains("\"encryption\""), "the dump is the store's objects (the zone's keys)")
        #expect(!dump.contains(marker), "a file of the refused push is in the store")
    }

    /// A key reset of a zone that seals some fields only: the zone comes back sealing those
    /// same fields, not every field, so a file kept in a field it leaves in clear is uploaded
    /// again instead of being refused half-way through the push (and at every push after);
    /// the other device recovers with nothing lost. Both for a workspace that remembers the
    /// sealed fields (a pin directory and a new handle per command, as the CLI runs) and for
    /// one long-lived handle without a pin directory (the embedded engine).
    @Test(arguments: [true, false])
    func aResetZoneSealsTheFieldsItSealedBefore(pinned: Bool) async throws {
        let f = EngineFixture("encrypted-reset-fields-\(pinned)")
        let keys = UserKeyStore(directory: f.directory.file("keys"))
        let laptopWS = try Workspace.create(at: f.directory.file("laptop"), config: WorkspaceConfig(user: "alice", remote: "memory"))
        let phoneWS = try Workspace.create(at: f.directory.file("phone"), config: WorkspaceConfig(user: "alice", remote: "memory"))
        func handle(_ ws: Workspace) throws -> SyncEngine {
            SyncEngine(
                workspace: ws,
                store: EncryptingStore(try f.store("alice", deviceID: try ws.deviceID()), keyStore: keys, pinDirectory: pinned ? ws.stateDir : nil))
        }
        let (laptopOnce, phoneOnce) = (try handle(laptopWS), try handle(phoneWS))
        func laptop() throws -> SyncEngine { pinned ? try handle(laptopWS) : laptopOnce }
        func phone() throws -> SyncEngine { pinned ? try handle(phoneWS) : phoneOnce }

        _ = try await EncryptionKeys.initialize(user: "alice", keyStore: keys, store: try laptop().store)
        var album = RecordZone(zoneID: zone("album"))
        album.encryption = ZoneEncryption(fields: ["title"])
        _ = try await laptop().store.modifyRecordZones([.recreate(album)])[0].result.get()
        try laptop().write("album", "a", #"{"title": "zeta-a", "photo": {"$asset": "photo"}}"#)
        try writeFile("\(laptopWS.root)/private/album/a.assets/photo", "a photo kept in clear")
        _ = try await laptop().push()
        _ = try await phone().pull()
        #expect(try String(contentsOfFile: phone().path("album", "a"), encoding: .utf8).contains("zeta-a"))
        try phone().write("album", "b", #"{"title": "zeta-b, not pushed before the reset"}"#)

        let report = try await EncryptionKeys.reset(user: "alice", keyStore: keys, store: try laptop().store)
        #expect(report.zonesReset == [zone("album")])
        _ = try await phone().pull()
        _ = try await phone().push()
        let back = try #require(try await f.store("alice").fetchAllRecordZones(scope: .private).first)
        #expect(back.encryption?.fields == ["title"], "the zone came back sealing \(String(describing: back.encryption?.fields))")
        _ = try await laptop().pull()
        _ = try await laptop().push()
        _ = try await phone().pull()
        #expect(try laptop().recordFiles.keys.sorted() == phone().recordFiles.keys.sorted())
        #expect(try laptop().fields("album", "b") == ["title": .string("zeta-b, not pushed before the reset")])
        #expect(try String(contentsOfFile: laptop().path("album", "a"), encoding: .utf8).contains("zeta-a"))
        let photo = try #require(FileManager.default.contents(atPath: "\(laptopWS.root)/private/album/a.assets/photo"))
        #expect(String(decoding: photo, as: UTF8.self) == "a photo kept in clear")
        let raw = try await f.store("alice").fetchRecords([Build.id("a", in: zone("album"))])[0].result.get()
        if case .encrypted = raw.fields["title"] {} else { Issue.record("not sealed after the reset: \(String(describing: raw.fields["title"]))") }
        if case .asset = raw.fields["photo"] {} else { Issue.record("the file is not back: \(String(describing: raw.fields["photo"]))") }
    }

    /// Workspaces (SyncEngine) over an encrypted zone: a conflict is kept in plaintext, and a
    /// key reset is recovered from by another device with nothing lost.
    @Test func workspacesRecoverFromAKeyResetWithNothingLost() async throws {
        let f = EngineFixture("encrypted-reset")
        let keys = UserKeyStore(directory: f.directory.file("keys"))
        func device(_ name: String) throws -> SyncEngine {
            let ws = try Workspace.create(at: f.directory.file(name), config: WorkspaceConfig(user: "alice", remote: "memory"))
            return SyncEngine(workspace: ws, store: EncryptingStore(try f.store("alice", deviceID: try ws.deviceID()), keyStore: keys))
        }
        let laptop = try device("laptop")
        let phone = try device("phone")
        _ = try await EncryptionKeys.initialize(user: "alice", keyStore: keys, store: laptop.store)
        var diary = RecordZone(zoneID: zone("diary"))
        diary.encryption = ZoneEncryption()
        _ = try await laptop.store.modifyRecordZones([.recreate(diary)])[0].result.get()
        try laptop.write("diary", "a", #"{"title": "zeta-a"}"#)
        try laptop.write("diary", "b", #"{"title": "zeta-b"}"#)
        _ = try await laptop.push()
        _ = try await phone.pull()
        #expect(try phone.fields("diary", "a") == ["title": .string("zeta-a")])

        // A conflict: the phone's copy of the server version is plaintext.
        try laptop.write("diary", "a", #"{"title": "zeta-a from the laptop"}"#)
        _ = try await laptop.push()
        try phone.write("diary", "a", #"{"title": "zeta-a from the phone"}"#)
        let conflicted = try await phone.push()
        #expect(conflicted.conflicts == [Build.id("a", in: zone("diary"))])
        let kept = TreeSnapshot.files(phone.workspace.root + "/.recsync/conflicts").values.map { String(decoding: $0, as: UTF8.self) }.joined()
        #expect(kept.contains("zeta-a from the laptop") && !kept.contains("ENCRYPTED"), "\(kept)")
        _ = try phone.resolve(strategy: .ours)
        _ = try await phone.push()

        try phone.write("diary", "c", #"{"title": "zeta-c, not pushed before the reset"}"#)
        let report = try await EncryptionKeys.reset(user: "alice", keyStore: keys, store: laptop.store)
        #expect(report.zonesReset == [zone("diary")])
        let pulled = try await phone.pull()
        #expect(pulled.zonesRemoved == [ZoneDeletion(zoneID: zone("diary"), reason: .encryptedDataReset)])
        #expect(try phone.fields("diary", "c") != nil, "kept")
        _ = try await phone.push()
        _ = try await laptop.pull()
        _ = try await laptop.push()
        _ = try await phone.pull()
        #expect(try converged(laptop, phone))
        #expect(try laptop.fields("diary", "a") == ["title": .string("zeta-a from the phone")])
        #expect(try laptop.fields("diary", "c") == ["title": .string("zeta-c, not pushed before the reset")])
        let raw = try await f.store("alice").fetchRecords([Build.id("c", in: zone("diary"))])[0].result.get()
        if case .encrypted = raw.fields["title"] {} else { Issue.record("not sealed after the reset: \(String(describing: raw.fields["title"]))") }
    }
}
