import Foundation
import RecSyncEngine
import RecSyncEngineFixtures
import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import RecSyncWorkspace
import Testing

/// Pulling records without their assets' content (`pull --no-assets`, CloudKit's
/// `desiredKeys`), and fetching the assets later (`get --asset`, a plain pull).
@Suite struct AssetNotFetchedTests {
    let photo = (0..<150_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
    let scan: [UInt8] = Array("a scan".utf8)

    func writeBytes(_ path: String, _ bytes: [UInt8]) throws {
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    func bytes(_ path: String) -> [UInt8]? { FileManager.default.contents(atPath: path).map(Array.init) }
    func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

    func assetPath(_ e: SyncEngine, _ record: String, _ field: String) -> String {
        "\(e.workspace.root)/private/notes/\(record).assets/\(field)"
    }

    /// A laptop that pushed notes/trip with a photo and a scan, and a phone that pulled it
    /// without assets.
    func laptopAndAssetlessPhone(_ f: EngineFixture) async throws -> (laptop: SyncEngine, phone: SyncEngine) {
        let laptop = try f.device("laptop")
        var phone = try f.device("phone")
        try laptop.write("notes", "trip", #"{"title": "Trip", "photo": {"$asset": "photo"}, "scan": {"$asset": "scan"}}"#)
        try writeBytes(assetPath(laptop, "trip", "photo"), photo)
        try writeBytes(assetPath(laptop, "trip", "scan"), scan)
        _ = try await laptop.push()
        phone.fetchesAssets = false
        let pulled = try await phone.pull()
        #expect(pulled.recordsWritten == 1)
        return (laptop, phone)
    }

    @Test func aRecordPulledWithoutItsAssetsIsCleanAndPushesItsReferenceUnchanged() async throws {
        let f = EngineFixture()
        let (laptop, phone) = try await laptopAndAssetlessPhone(f)
        #expect(exists(phone.path("notes", "trip")))
        #expect(!exists(assetPath(phone, "trip", "photo")))
        #expect(!exists("\(phone.workspace.root)/private/notes/trip.assets"))
        #expect(try await phone.status().isClean)
        let noted = try phone.workspace.unfetchedAssets(in: zone("notes"))
        #expect(noted.values.first?.keys.sorted() == ["photo", "scan"])

        // Another field edited and pushed: the assets go unchanged, nothing is uploaded.
        try phone.write("notes", "trip", #"{"title": "Trip, from the phone", "photo": {"$asset": "photo"}, "scan": {"$asset": "scan"}}"#)
        #expect(try await phone.status().changes.map(\.kind) == [.modified])
        let pushed = try await phone.push()
        #expect(pushed.saved.count == 1)
        #expect(try await phone.status().isClean)
        #expect(!exists(assetPath(phone, "trip", "photo")))

        _ = try await laptop.pull()
        let trip = try RecordID(recordName: "trip", zoneID: zone("notes"))
        #expect(try laptop.workspace.recordFields(trip)?["title"] == .string("Trip, from the phone"))
        #expect(bytes(assetPath(laptop, "trip", "photo")) == photo, "the other workspace keeps the asset intact")
        #expect(try await laptop.status().isClean)
        let stored = try await laptop.store.fetchRecords([trip], desiredKeys: nil)
        #expect(try stored.first?.result.get().assetFields["photo"]?.size == Int64(photo.count))
    }

    @Test func getAssetBringsOneFileByteForByteAndAPlainPullBringsTheRest() async throws {
        let f = EngineFixture()
        let (_, assetless) = try await laptopAndAssetlessPhone(f)
        var phone = assetless
        let trip = try RecordID(recordName: "trip", zoneID: zone("notes"))

        let fetched = try await phone.fetchAssets([trip], field: "photo")
        #expect(fetched.map(\.downloaded) == [true])
        #expect(bytes(assetPath(phone, "trip", "photo")) == photo)
        #expect(!exists(assetPath(phone, "trip", "scan")))
        #expect(try FileManager.default.contentsOfDirectory(atPath: "\(phone.workspace.root)/private/notes/trip.assets") == ["photo"])
        #expect(try await phone.status().isClean)
        #expect(try await phone.fetchAssets([trip], field: "photo").map(\.downloaded) == [false], "already there")

        // Still without assets: the pull leaves the scan alone.
        _ = try await phone.pull()
        #expect(!exists(assetPath(phone, "trip", "scan")))
        phone.fetchesAssets = true
        _ = try await phone.pull()
        #expect(bytes(assetPath(phone, "trip", "scan")) == scan)
        #expect(try phone.workspace.unfetchedAssets(in: zone("notes")).isEmpty)
        #expect(!exists(phone.workspace.unfetchedAssetsPath(zone("notes"))))
        #expect(try await phone.status().isClean)
    }

    @Test func aKilledGetAssetLeavesNoPartialFile() async throws {
        let f = EngineFixture()
        let (_, assetless) = try await laptopAndAssetlessPhone(f)
        var phone = assetless
        let trip = try RecordID(recordName: "trip", zoneID: zone("notes"))
        let error = await phone.killed(at: .assetDownloaded(trip)) { e in
            do throws(RecSyncError) { _ = try await e.fetchAssets([trip], field: "photo"); return nil } catch { return error }
        }
        #expect(error != nil)
        #expect(!exists(assetPath(phone, "trip", "photo")))
        #expect(try await phone.status().isClean)
        // The next command under the lock clears the hidden temporary file.
        _ = try await phone.fetchAssets([trip], field: "scan")
        #expect(try FileManager.default.contentsOfDirectory(atPath: "\(phone.workspace.root)/private/notes/trip.assets") == ["scan"])
        #expect(try phone.workspace.unfetchedAssets(in: zone("notes"))[trip]?.keys.sorted() == ["photo"])
    }

    /// A file the user puts at the asset's place while `get --asset` downloads it is theirs:
    /// the download does not land over it, and the field is that file.
    @Test func aFileWrittenDuringGetAssetIsNotReplaced() async throws {
        let f = EngineFixture()
        var (_, phone) = try await laptopAndAssetlessPhone(f)
        let trip = try RecordID(recordName: "trip", zoneID: zone("notes"))
        let mine: [UInt8] = Array("written while the download ran".utf8)
        let path = assetPath(phone, "trip", "photo")
        phone.checkpoint = { (reached: SyncEngine.Checkpoint) throws(RecSyncError) in
            if reached == .assetDownloaded(trip) { try? writeBytes(path, mine) }
        }
        let fetched = try await phone.fetchAssets([trip], field: "photo")
        phone.checkpoint = nil
        #expect(fetched.map(\.downloaded) == [false])
        #expect(bytes(path) == mine)
        // No temporary file is left.
        #expect(try FileManager.default.contentsOfDirectory(atPath: "\(phone.workspace.root)/private/notes/trip.assets") == ["photo"])
        #expect(try await phone.status().changes.map(\.kind) == [.modified])
    }

    @Test func aFileTheUserPutsThereIsAnEditOfTheField() async throws {
        let f = EngineFixture()
        let (laptop, phone) = try await laptopAndAssetlessPhone(f)
        let mine: [UInt8] = Array("my own photo".utf8)
        try writeBytes(assetPath(phone, "trip", "photo"), mine)
        #expect(try await phone.status().changes.map(\.kind) == [.modified])
        _ = try await phone.push()
        #expect(try await phone.status().isClean)
        _ = try await laptop.pull()
        #expect(bytes(assetPath(laptop, "trip", "photo")) == mine)
        #expect(bytes(assetPath(laptop, "trip", "scan")) == scan)
    }

    @Test func aChangedAssetPulledWithoutAssetsReplacesTheOldFileByANote() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        var phone = try f.device("phone")
        try laptop.write("notes", "trip", #"{"title": "Trip", "photo": {"$asset": "photo"}}"#)
        try writeBytes(assetPath(laptop, "trip", "photo"), photo)
        _ = try await laptop.push()
        _ = try await phone.pull()
        #expect(bytes(assetPath(phone, "trip", "photo")) == photo)
        try writeBytes(assetPath(laptop, "trip", "photo"), scan)
        _ = try await laptop.push()
        phone.fetchesAssets = false
        _ = try await phone.pull()
        #expect(!exists(assetPath(phone, "trip", "photo")), "the old version's file would read as an edit")
        #expect(try await phone.status().isClean)
        phone.fetchesAssets = true
        _ = try await phone.pull()
        #expect(bytes(assetPath(phone, "trip", "photo")) == scan)
    }

    @Test func aZoneSetToPullWithoutAssetsDoes() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        try laptop.write("notes", "trip", #"{"title": "Trip", "photo": {"$asset": "photo"}}"#)
        try writeBytes(assetPath(laptop, "trip", "photo"), photo)
        _ = try await laptop.push()
        let phone = try f.device("phone")
        let change = try await SyncEngine.changeSetting(.noAssetZones, to: "notes", in: phone.workspace, relativeTo: phone.workspace.root)
        #expect(change.value == .array([.string("private/notes")]))
        let configured = SyncEngine(workspace: change.workspace, store: phone.store)
        _ = try await configured.pull()
        #expect(exists(configured.path("notes", "trip")))
        #expect(!exists(assetPath(configured, "trip", "photo")))
        #expect(try await configured.status().isClean)
        let cleared = try await SyncEngine.changeSetting(.noAssetZones, to: "", in: configured.workspace, relativeTo: phone.workspace.root)
        _ = try await SyncEngine(workspace: cleared.workspace, store: phone.store).pull()
        #expect(bytes(assetPath(configured, "trip", "photo")) == photo)
    }

    @Test func aRecordDeletedElsewhereDropsItsNotes() async throws {
        let f = EngineFixture()
        let (laptop, phone) = try await laptopAndAssetlessPhone(f)
        try FileManager.default.removeItem(atPath: laptop.path("notes", "trip"))
        _ = try await laptop.push()
        _ = try await phone.pull()
        #expect(!exists(phone.path("notes", "trip")))
        #expect(try phone.workspace.unfetchedAssets(in: zone("notes")).isEmpty)
    }
}
