import Foundation
import RecSyncEngine
import RecSyncEngineFixtures
import RecSyncModel
import RecSyncStore
import RecSyncSystem
import RecSyncTestSupport
import RecSyncWorkspace
import Testing

/// Asset files (`<record>.assets/<field>`) between workspaces and the store.
@Suite struct AssetSyncTests {
    func writeBytes(_ path: String, _ bytes: [UInt8]) throws {
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    func bytes(_ path: String) -> [UInt8]? { FileManager.default.contents(atPath: path).map(Array.init) }
    func holds(_ path: String, _ expected: [UInt8]) -> Bool { bytes(path) == expected }

    func assetPath(_ e: SyncEngine, _ zone: String, _ record: String, _ field: String) -> String {
        "\(e.workspace.root)/private/\(zone)/\(record).assets/\(field)"
    }

    let photo = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }

    /// A file the user put into a record's `.assets` directory, not (yet) named by the
    /// record, is theirs: a pull that rewrites the record, drops its asset field or deletes
    /// it removes the record's asset files only.
    @Test func aFileTheRecordDoesNotNameSurvivesPulls() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        let phone = try f.device("phone")
        try laptop.write("notes", "trip", #"{"title": "Trip", "photo": {"$asset": "photo"}}"#)
        try writeBytes(assetPath(laptop, "notes", "trip", "photo"), photo)
        _ = try await laptop.push()
        _ = try await phone.pull()
        let scan = assetPath(phone, "notes", "trip", "scan")
        try writeBytes(scan, [1, 2, 3])

        try laptop.write("notes", "trip", #"{"title": "Trip, edited", "photo": {"$asset": "photo"}}"#)
        _ = try await laptop.push()
        _ = try await phone.pull()
        #expect(holds(scan, [1, 2, 3]), "an edit pulled")
        try laptop.write("notes", "trip", #"{"title": "Trip"}"#)
        _ = try await laptop.push()
        _ = try await phone.pull()
        #expect(!FileManager.default.fileExists(atPath: assetPath(phone, "notes", "trip", "photo")), "the dropped field's file goes")
        #expect(holds(scan, [1, 2, 3]), "a field dropped")
        try laptop.write("notes", "trip", #"{"title": "Trip", "photo": {"$asset": "photo"}}"#)
        try writeBytes(assetPath(laptop, "notes", "trip", "photo"), photo)
        _ = try await laptop.push()
        _ = try await phone.pull()
        try FileManager.default.removeItem(atPath: laptop.path("notes", "trip"))
        _ = try await laptop.push()
        _ = try await phone.pull()
        #expect(!FileManager.default.fileExists(atPath: phone.path("notes", "trip")))
        #expect(!FileManager.default.fileExists(atPath: assetPath(phone, "notes", "trip", "photo")), "the deleted record's file goes")
        #expect(holds(scan, [1, 2, 3]), "the record deleted")
    }

    @Test func anAssetRoundTripsBetweenTwoWorkspacesAndAnEditIsAChange() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        let phone = try f.device("phone")
        try laptop.write("notes", "trip", #"{"title": "Trip", "photo": {"$asset": "photo"}}"#)
        try writeBytes(assetPath(laptop, "notes", "trip", "photo"), photo)
        #expect(try await laptop.status().changes.map(\.kind) == [.new])
        let pushed = try await laptop.push()
        #expect(pushed.saved.count == 1)
        #expect(try await laptop.status().isClean)

        let pulled = try await phone.pull()
        #expect(pulled.recordsWritten == 1)
        #expect(holds(assetPath(phone, "notes", "trip", "photo"), photo))
        #expect(String(decoding: bytes(phone.path("notes", "trip")) ?? [], as: UTF8.self).contains(#""$asset": "photo""#))
        #expect(try await phone.status().isClean)
        // No temp file is left beside the asset.
        #expect(try FileManager.default.contentsOfDirectory(atPath: "\(phone.workspace.root)/private/notes/trip.assets") == ["photo"])

        // Editing the file is editing the field: status sees it, push sends it, pull brings it.
        var edited = photo
        edited[7] ^= 0xFF
        try writeBytes(assetPath(phone, "notes", "trip", "photo"), edited)
        #expect(try await phone.status().changes.map(\.kind) == [.modified])
        let second = try await phone.push()
        #expect(second.saved.count == 1 && second.conflicts.isEmpty)
        _ = try await laptop.pull()
        #expect(holds(assetPath(laptop, "notes", "trip", "photo"), edited))
        #expect(try await laptop.status().isClean)
        #expect(try await phone.status().isClean)

        // Dropping the field removes the file on the other side.
        try laptop.write("notes", "trip", #"{"title": "Trip"}"#)
        _ = try await laptop.push()
        _ = try await phone.pull()
        #expect(!FileManager.default.fileExists(atPath: assetPath(phone, "notes", "trip", "photo")))
        #expect(String(decoding: bytes(phone.path("notes", "trip")) ?? [], as: UTF8.self) == "{\n  \"title\": \"Trip\"\n}\n")
    }

    @Test func aMissingAssetFileStopsThePushNamingIt() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        try laptop.write("notes", "r", #"{"photo": {"$asset": "photo"}}"#)
        let error = await pushError(laptop)
        guard case .invalidFiles(let problems) = error?.reason else {
            Issue.record("expected invalidFiles, got \(String(describing: error))")
            return
        }
        #expect(problems.map(\.message).joined().contains("private/notes/r.assets/photo is missing"))
    }

    @Test func anAssetOverTheStoreLimitIsRefusedBeforeAnythingIsSent() async throws {
        let dir = TempDirectory()
        let storage = MemoryStorage(maxAssetBytes: 1000)
        let ws = try Workspace.create(at: dir.file("laptop"), config: WorkspaceConfig(user: "alice", remote: "memory"))
        let laptop = SyncEngine(
            workspace: ws,
            store: MemoryStore(
                storage: storage, actor: try StoreActor(userRecordName: "alice", deviceID: try ws.deviceID(), clock: FixedClock().read)))
        try laptop.write("notes", "ok", #"{"n": 1}"#)
        try laptop.write("notes", "big", #"{"photo": {"$asset": "photo"}}"#)
        try writeBytes(assetPath(laptop, "notes", "big", "photo"), [UInt8](repeating: 0, count: 1001))
        let error = await pushError(laptop)
        guard case .invalidFiles(let problems) = error?.reason else {
            Issue.record("expected invalidFiles, got \(String(describing: error))")
            return
        }
        #expect(problems.map(\.path) == ["private/notes/big.assets/photo"])
        #expect(problems[0].message.contains("at most 1000 bytes"))
        #expect(try await laptop.store.fetchAllRecordZones(scope: .private).isEmpty, "nothing was sent")
    }

    @Test func equalFilesInTwoRecordsAreOneAssetAndBothArrive() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        let phone = try f.device("phone")
        for name in ["a", "b"] {
            try laptop.write("notes", name, #"{"scan": {"$asset": "scan"}}"#)
            try writeBytes(assetPath(laptop, "notes", name, "scan"), photo)
        }
        _ = try await laptop.push()
        let stored = try await laptop.store.fetchRecords([Build.id("a", in: zone("notes")), Build.id("b", in: zone("notes"))])
        let refs = try stored.map { try $0.result.get().fields["scan"] }
        #expect(refs[0] == refs[1] && refs[0] != nil)
        _ = try await phone.pull()
        #expect(holds(assetPath(phone, "notes", "a", "scan"), photo))
        #expect(holds(assetPath(phone, "notes", "b", "scan"), photo))
    }

    @Test func aPullThatFailsMidAssetLeavesNoAssetAndAKilledOnesLeftoverIsNeverSent() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        try laptop.write("notes", "r", #"{"photo": {"$asset": "photo"}}"#)
        try writeBytes(assetPath(laptop, "notes", "r", "photo"), photo)
        _ = try await laptop.push()

        // The download breaks off half-way (the store cut off, the disk full).
        let ws = try Workspace.create(at: f.directory.file("phone"), config: WorkspaceConfig(user: "alice", remote: "memory"))
        let breaking = HalfAssetStore(try f.store("alice", deviceID: try ws.deviceID()))
        let phone = SyncEngine(workspace: ws, store: breaking)
        #expect(await pullError(phone) != nil)
        let dir = "\(ws.root)/private/notes"
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/r.assets/photo"), "no half asset where a scan reads it")
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/r.json"))

        // What a killed pull leaves (its hidden temp file, half-written) is never an asset.
        try writeBytes("\(dir)/r.assets/.tmp-a999-1", Array(photo.prefix(1000)))
        let healthy = SyncEngine(workspace: ws, store: try f.store("alice", deviceID: try ws.deviceID()))
        _ = try await healthy.pull()
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/r.assets/.tmp-a999-1"), "the killed pull's temp file is cleared")
        #expect(holds("\(dir)/r.assets/photo", photo))
        #expect(try await healthy.status().isClean)
        let pushed = try await healthy.push()
        #expect(pushed.saved.isEmpty && pushed.commit == nil)
    }

    /// A record in the store whose asset cannot be delivered as its reference says (the blob
    /// missing, or other content than its SHA-256: a writer around recsync) fails alone: the
    /// rest of the pull lands and the token moves on; the record is reported and kept on the
    /// retry list, as an undecodable one is; a good version of it later arrives as usual.
    @Test(arguments: [StoreKind.memory, .git, .network])
    func aBadAssetInTheStoreFailsItsRecordOnly(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind, name: "bad-asset-\(kind)")
        func device(_ name: String) throws -> SyncEngine {
            let ws = try Workspace.create(at: fixture.directory.file(name), config: WorkspaceConfig(user: "alice", remote: "memory"))
            return SyncEngine(workspace: ws, store: try fixture.store(as: "alice", deviceID: try ws.deviceID()))
        }
        let laptop = try device("laptop")
        let phone = try device("phone")
        try laptop.write("notes", "a", #"{"v": 1, "photo": {"$asset": "photo"}}"#)
        try writeBytes(assetPath(laptop, "notes", "a", "photo"), photo)
        try laptop.write("notes", "b", #"{"v": 1}"#)
        _ = try await laptop.push()
        _ = try await phone.pull()

        // A writer around recsync commits two records whose assets cannot be had; the
        // laptop meanwhile edits b as usual.
        let notes = zone("notes")
        let alice = try fixture.store(as: "alice")
        guard case .asset(let good)? = try await alice.fetchRecords([Build.id("a", in: notes)])[0].result.get().fields["photo"] else {
            Issue.record("a's photo is not an asset")
            return
        }
        let missing = try AssetReference(oid: String(repeating: "ab", count: 20), size: 5, sha256: String(repeating: "0", count: 64))
        let lying = try AssetReference(oid: good.oid, size: good.size, sha256: String(repeating: "1", count: 64))
        let hostile = [Build.record("gone", in: notes, ["f": .asset(missing)]), Build.record("lying", in: notes, ["f": .asset(lying)])]
        if kind == .memory {
            for r in hostile { fixture.storage.commitRawRecord(r.recordID, bytes: StoreEncoding.encode(r)) }
        } else {
            try GitCLI.commitFiles(hostile.map { (StoreLayout.recordPath($0.recordID), StoreEncoding.encode($0)) }, toStore: fixture.path)
        }
        try laptop.write("notes", "b", #"{"v": 2}"#)
        _ = try await laptop.push()

        let first = try await phone.pull()
        #expect(try phone.fields("notes", "b") == ["v": .int64(2)], "the rest of the batch lands")
        #expect(
            first.warnings.contains { $0.contains("alice/notes/gone") && $0.contains("field 'f'") && $0.contains("lacks asset object") },
            "\(first.warnings)")
        #expect(first.warnings.contains { $0.contains("alice/notes/lying") && $0.contains("does not match") }, "\(first.warnings)")
        let dir = "\(phone.workspace.root)/private/notes"
        for name in ["gone", "lying"] {
            #expect(!FileManager.default.fileExists(atPath: "\(dir)/\(name).json"))
            #expect(!FileManager.default.fileExists(atPath: "\(dir)/\(name).assets"), "no temp file or empty directory is left")
        }
        let status = try await phone.status()
        #expect(status.problems.map(\.path) == ["private/notes/gone.json", "private/notes/lying.json"], "\(status.problems)")
        #expect(status.changes.isEmpty)

        // Nothing changed: the next pull asks again, by ID, and still goes through.
        let second = try await phone.pull()
        #expect(second.warnings.contains { $0.contains("alice/notes/gone") && $0.contains("still cannot be fetched") }, "\(second.warnings)")

        // A good version of one arrives as any change does, and leaves the list.
        let upload = fixture.directory.file("good-copy")
        try writeBytes(upload, photo)
        let fixed = try await alice.uploadAsset(fileAt: upload, for: Build.id("gone", in: notes), field: "f")
        var repaired = try await alice.fetchRecords([Build.id("gone", in: notes)])[0].result.get()
        repaired.fields["f"] = .asset(fixed)
        _ = try await alice.save([repaired])
        let third = try await phone.pull()
        #expect(!third.warnings.contains { $0.contains("alice/notes/gone") }, "\(third.warnings)")
        #expect(holds("\(dir)/gone.assets/f", photo))
        #expect(try await phone.status().problems.map(\.path) == ["private/notes/lying.json"])
    }

    /// status reads nothing of a synced record with assets whose files are as recsync left
    /// them (the record file and each asset file by `stat`), as for a record without.
    @Test func statusTrustsTheStatOfARecordWithAssets() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        let phone = try f.device("phone")
        try laptop.write("notes", "r", #"{"v": 1, "photo": {"$asset": "photo"}}"#)
        try writeBytes(assetPath(laptop, "notes", "r", "photo"), photo)
        _ = try await laptop.push()
        _ = try await phone.pull()
        for engine in [laptop, phone] {
            #expect(try await engine.status().isClean)
            // Same size, same mtime, same inode, other content: only a read would tell.
            let path = engine.path("notes", "r")
            let before = try #require(try FileIO.info(path)).stamp
            let text = try #require(readFile(path))
            let fd = open(path, O_WRONLY)
            #expect(fd >= 0)
            _ = Array(text.replacingOccurrences(of: "1", with: "7").utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            close(fd)
            var times = [
                timespec(tv_sec: Int(before.mtimeNanos / 1_000_000_000), tv_nsec: Int(before.mtimeNanos % 1_000_000_000)),
                timespec(tv_sec: Int(before.mtimeNanos / 1_000_000_000), tv_nsec: Int(before.mtimeNanos % 1_000_000_000)),
            ]
            #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
            #expect(try FileIO.info(path)?.stamp == before)
            #expect(try await engine.status().isClean, "the record file was not read")
            // The asset file is looked at by stat: a new one is a change.
            var edited = photo
            edited[0] ^= 0xFF
            try writeBytes(assetPath(engine, "notes", "r", "photo"), edited)
            #expect(try await engine.status().changes.map(\.kind) == [.modified])
            try writeBytes(assetPath(engine, "notes", "r", "photo"), photo)
        }
    }

    /// Push sends a modified record's assets only when they changed: an unchanged file (same
    /// as the synced version) is neither read nor uploaded again.
    @Test func pushDoesNotUploadAnUnchangedAssetAgain() async throws {
        let f = EngineFixture()
        let ws = try Workspace.create(at: f.directory.file("laptop"), config: WorkspaceConfig(user: "alice", remote: "memory"))
        let counting = FaultInjectingStore(try f.store("alice", deviceID: try ws.deviceID()))
        let laptop = SyncEngine(workspace: ws, store: counting)
        try laptop.write("notes", "r", #"{"v": 1, "photo": {"$asset": "photo"}, "scan": {"$asset": "scan"}}"#)
        try writeBytes(assetPath(laptop, "notes", "r", "photo"), photo)
        try writeBytes(assetPath(laptop, "notes", "r", "scan"), [1, 2, 3])
        _ = try await laptop.push()
        #expect(await counting.assetUploads.count == 2)

        try laptop.write("notes", "r", #"{"v": 2, "photo": {"$asset": "photo"}, "scan": {"$asset": "scan"}}"#)
        let edited = try await laptop.push()
        #expect(edited.saved.count == 1)
        #expect(await counting.assetUploads.count == 2, "neither file was sent again")

        try writeBytes(assetPath(laptop, "notes", "r", "scan"), [4, 5, 6])
        _ = try await laptop.push()
        #expect(
            await counting.assetUploads == [
                assetPath(laptop, "notes", "r", "photo"), assetPath(laptop, "notes", "r", "scan"), assetPath(laptop, "notes", "r", "scan"),
            ], "only the changed file")
        let phone = try f.device("phone")
        _ = try await phone.pull()
        #expect(holds(assetPath(phone, "notes", "r", "photo"), photo))
        #expect(holds(assetPath(phone, "notes", "r", "scan"), [4, 5, 6]))
    }

    /// A record's `.assets` directory goes when a pull deletes the record or drops its last
    /// asset, if nothing is left in it; a file of the user's there keeps it.
    @Test func anEmptiedAssetDirectoryIsRemoved() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        let phone = try f.device("phone")
        for name in ["a", "b", "c"] {
            try laptop.write("notes", name, #"{"photo": {"$asset": "photo"}}"#)
            try writeBytes(assetPath(laptop, "notes", name, "photo"), photo)
        }
        _ = try await laptop.push()
        _ = try await phone.pull()
        let dir = "\(phone.workspace.root)/private/notes"
        try writeBytes("\(dir)/c.assets/mine", [1])

        try FileManager.default.removeItem(atPath: laptop.path("notes", "a"))
        try laptop.write("notes", "b", #"{"title": "no photo"}"#)
        try FileManager.default.removeItem(atPath: laptop.path("notes", "c"))
        _ = try await laptop.push()
        _ = try await phone.pull()
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/a.assets"), "the deleted record's")
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/b.assets"), "the record whose last asset went")
        #expect(try FileManager.default.contentsOfDirectory(atPath: "\(dir)/c.assets") == ["mine"], "a user's file stays, and its directory")
        #expect(try await phone.status().changes.isEmpty)
    }
}

/// A store whose asset downloads write half the content and then fail.
actor HalfAssetStore: RemoteStore {
    nonisolated let userRecordName: String
    nonisolated let storeID: String
    let inner: any RemoteStore

    init(_ inner: any RemoteStore) {
        self.inner = inner
        userRecordName = inner.userRecordName
        storeID = inner.storeID
    }

    func downloadAsset(_ asset: AssetReference, zone: ZoneID, fd: Int32, path: String) async throws(RecSyncError) {
        try await inner.downloadAsset(asset, zone: zone, fd: fd, path: path)
        // Cut the file to half, as a download broken off would leave it, then fail.
        ftruncate(fd, off_t(asset.size / 2))
        throw .networkFailure("connection reset half-way through asset \(asset.oid)")
    }

    func uploadAsset(fd: Int32, path: String, for recordID: RecordID, field: String) async throws(RecSyncError) -> AssetReference {
        try await inner.uploadAsset(fd: fd, path: path, for: recordID, field: field)
    }
    func publishUserPublicKey(_ key: [UInt8], signingKey: [UInt8]) async throws(RecSyncError) -> UserPublicKey {
        try await inner.publishUserPublicKey(key, signingKey: signingKey)
    }
    func fetchUserPublicKey(_ user: String) async throws(RecSyncError) -> UserPublicKey? { try await inner.fetchUserPublicKey(user) }
    func databaseChanges(scope: DatabaseScope, since token: ServerChangeToken?, resultsLimit: Int) async throws(RecSyncError) -> DatabaseChanges {
        try await inner.databaseChanges(scope: scope, since: token, resultsLimit: resultsLimit)
    }
    func recordZoneChanges(zone: ZoneID, since token: ServerChangeToken?, resultsLimit: Int, desiredKeys: [String]?) async throws(RecSyncError)
        -> RecordZoneChanges
    {
        try await inner.recordZoneChanges(zone: zone, since: token, resultsLimit: resultsLimit, desiredKeys: desiredKeys)
    }
    func modifyRecords(saving: [Record], deleting: [RecordDeletion], savePolicy: SavePolicy, atomically: Bool, clientChangeTokenData: String?)
        async throws(RecSyncError) -> ModifyRecordsResult
    {
        try await inner.modifyRecords(
            saving: saving, deleting: deleting, savePolicy: savePolicy, atomically: atomically, clientChangeTokenData: clientChangeTokenData)
    }
    func modifyRecordZones(_ operations: [ZoneOperation]) async throws(RecSyncError) -> [ZoneOperationResult] {
        try await inner.modifyRecordZones(operations)
    }
    func fetchAllRecordZones(scope: DatabaseScope) async throws(RecSyncError) -> [RecordZone] { try await inner.fetchAllRecordZones(scope: scope) }
    func fetchZoneDeletions(_ zoneIDs: [ZoneID]) async throws(RecSyncError) -> [ZoneDeletion] { try await inner.fetchZoneDeletions(zoneIDs) }
    func currentDatabaseToken(scope: DatabaseScope) async throws(RecSyncError) -> ServerChangeToken {
        try await inner.currentDatabaseToken(scope: scope)
    }
    func checkSubscriptions(_ subscriptions: [Subscription], scope: DatabaseScope, since token: ServerChangeToken?) async throws(RecSyncError)
        -> SubscriptionCheck
    {
        try await inner.checkSubscriptions(subscriptions, scope: scope, since: token)
    }
    func fetchRecords(_ ids: [RecordID], desiredKeys: [String]?) async throws(RecSyncError) -> [RecordResult] {
        try await inner.fetchRecords(ids, desiredKeys: desiredKeys)
    }
    func fetchRecordVersion(_ id: RecordID, changeTag: String) async throws(RecSyncError) -> Record? {
        try await inner.fetchRecordVersion(id, changeTag: changeTag)
    }
}
