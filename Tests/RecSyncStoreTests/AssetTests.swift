import Foundation
import Glibc
import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

/// Assets (CloudKit's `CKAsset`) in the store: uploaded as their own blobs, referenced from
/// records, kept reachable beside the records tree, checked when saved and when read.
@Suite(.ownThreads) struct AssetTests {
    let notes = Build.zone("notes")

    func file(_ fixture: StoreFixture, _ name: String, _ bytes: [UInt8]) throws -> String {
        let path = fixture.directory.file(name)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    func bytes(_ path: String) -> [UInt8]? { FileManager.default.contents(atPath: path).map(Array.init) }
    func holds(_ path: String, _ expected: [UInt8]) -> Bool { bytes(path) == expected }

    @Test(arguments: [StoreKind.memory, .git, .network])
    func anAssetRoundTripsAndEqualContentIsStoredOnce(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let alice = try fixture.store(as: "alice")
        try await alice.createZones([notes])
        let content = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let asset = try await alice.uploadAsset(fileAt: try file(fixture, "photo.jpg", content), for: Build.id("a", in: notes), field: "photo")
        #expect(asset.size == 300_000)
        #expect(try await alice.uploadAsset(fileAt: try file(fixture, "copy.jpg", content), for: Build.id("b", in: notes), field: "scan") == asset)
        let saved = try await alice.save([
            Build.record("a", in: notes, ["photo": .asset(asset), "title": .string("A")]),
            Build.record("b", in: notes, ["scan": .asset(asset)]),
        ])

        // Another user's handle (another device, for a network store) reads it back.
        let phone = try fixture.store(as: "alice")
        let fetched = try await phone.fetchRecords([saved[0].recordID])[0].result.get()
        #expect(fetched.fields["photo"] == .asset(asset))
        let out = fixture.directory.file("out.jpg")
        try await phone.downloadAsset(asset, zone: notes, to: out)
        #expect(holds(out, content))
        // The target must not exist: nothing is overwritten.
        #expect(await caught { try await phone.downloadAsset(asset, zone: notes, to: out) }?.message.contains("cannot create the asset file") == true)
        #expect(holds(out, content))

        guard kind != .memory else { return }
        try GitCLI.run(["fsck", "--strict", "--no-dangling"], in: fixture.path)
        let a = try GitCLI.run(["rev-parse", "refs/heads/main:\(StoreLayout.assetPath(saved[0].recordID, field: "photo"))"], in: fixture.path)
        let b = try GitCLI.run(["rev-parse", "refs/heads/main:\(StoreLayout.assetPath(saved[1].recordID, field: "scan"))"], in: fixture.path)
        #expect(a == b && a.hasPrefix(asset.oid), "one blob for equal content, reachable from both records")
        #expect(try GitCLI.run(["cat-file", "-s", asset.oid], in: fixture.path) == "300000\n")
    }

    @Test(arguments: [StoreKind.memory, .git])
    func descriptorsAreReadFromTheStartAndWrittenFromEmpty(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let alice = try fixture.store(as: "alice")
        try await alice.createZones([notes])
        let content = (0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let path = try file(fixture, "photo.jpg", content)
        // A descriptor something has read from already: the whole file is still the asset.
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        #expect(fd >= 0)
        defer { close(fd) }
        var scratch = [UInt8](repeating: 0, count: 1000)
        #expect(read(fd, &scratch, 1000) == 1000)
        let asset = try await alice.uploadAsset(fd: fd, path: path, for: Build.id("a", in: notes), field: "photo")
        #expect(asset == (try await alice.uploadAsset(fileAt: path, for: Build.id("a", in: notes), field: "photo")))
        #expect(asset.size == 70_000)
        _ = try await alice.save([Build.record("a", in: notes, ["photo": .asset(asset)])])
        // A file a failed try half wrote: the download leaves exactly the asset in it.
        let out = fixture.directory.file("out.jpg")
        try Data(repeating: 0xEE, count: 90_000).write(to: URL(fileURLWithPath: out))
        let wfd = open(out, O_WRONLY | O_CLOEXEC)
        #expect(wfd >= 0)
        defer { close(wfd) }
        #expect(lseek(wfd, 500, SEEK_SET) == 500)
        try await alice.downloadAsset(asset, zone: notes, fd: wfd, path: out)
        #expect(holds(out, content))
    }

    @Test(arguments: StoreKind.allCases)
    func aRecordWhoseAssetIsNotInTheStoreIsRefusedAlone(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let alice = try fixture.store(as: "alice")
        try await alice.createZones([notes])
        let real = try await alice.uploadAsset(fileAt: try file(fixture, "f", Array("hello".utf8)), for: Build.id("ok", in: notes), field: "f")
        let missing = try AssetReference(oid: String(repeating: "ab", count: 20), size: 5, sha256: String(repeating: "0", count: 64))
        let wrongSize = try AssetReference(oid: real.oid, size: 6, sha256: real.sha256)
        let result = try await alice.modifyRecords(
            saving: [
                Build.record("ok", in: notes, ["f": .asset(real)]),
                Build.record("missing", in: notes, ["f": .asset(missing)]),
                Build.record("wrong", in: notes, ["f": .asset(wrongSize)]),
            ], deleting: [], savePolicy: .ifServerRecordUnchanged, atomically: false)
        #expect(result.saveResults[0].result.failureCode == nil)
        guard case .failure(let e1) = result.saveResults[1].result, case .failure(let e2) = result.saveResults[2].result else {
            Issue.record("records with unusable assets were saved")
            return
        }
        #expect(e1.message.contains("asset 'f' of record 'missing'") && e1.message.contains("upload the file"))
        #expect(e2.message.contains("says 6 bytes"))
    }

    /// A save checks an asset's content against its SHA-256, and that the blob is the
    /// record's: uploaded through this handle, or already one of the record's assets. A blob
    /// that merely exists (another zone's asset) is refused, for that record only.
    @Test(arguments: [StoreKind.memory, .git, .network])
    func aSaveChecksTheAssetsContentAndThatItIsTheRecords(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind, name: "asset-owner-\(kind)")
        let other = Build.zone("other")
        let alice = try fixture.store(as: "alice")
        try await alice.createZones([notes, other])
        let content = Array("the content".utf8)
        let real = try await alice.uploadAsset(fileAt: try file(fixture, "f", content), for: Build.id("kept", in: other), field: "f")
        let kept = try await alice.save([Build.record("kept", in: other, ["f": .asset(real)])])[0]
        _ = try await alice.uploadAsset(fileAt: try file(fixture, "f", content), for: Build.id("lying", in: notes), field: "f")
        let wrongSum = try AssetReference(oid: real.oid, size: real.size, sha256: String(repeating: "1", count: 64))
        let refused = try await alice.modifyRecords(
            saving: [Build.record("lying", in: notes, ["f": .asset(wrongSum)])], deleting: [], savePolicy: .ifServerRecordUnchanged, atomically: false
        )
        #expect(refused.saveResults[0].result.failureCode == .assetFileModified)
        #expect(
            refused.errors.first?.message.contains("says SHA-256 \(wrongSum.sha256) but object \(real.oid) hashes to \(real.sha256)") == true,
            "\(refused.errors)")

        // Another device, which uploaded nothing: it may keep the record's own asset, not
        // take another record's, and the content is hashed here too.
        let phone = try fixture.store(as: "alice")
        let result = try await phone.modifyRecords(
            saving: [
                Build.record("borrowed", in: notes, ["f": .asset(real)]),
                {
                    var r = kept; r.fields["title"] = .string("edited"); return r
                }(),
                Build.record("ok", in: notes, ["n": .int64(1)]),
            ], deleting: [], savePolicy: .ifServerRecordUnchanged, atomically: false)
        guard case .failure(let borrowed) = result.saveResults[0].result else {
            Issue.record("a record took another record's asset blob")
            return
        }
        #expect(
            borrowed.message.contains("asset 'f' of record 'borrowed' in zone 'alice/notes'") && borrowed.message.contains("upload the file"),
            "\(borrowed.message)")
        #expect(result.saveResults[1].result.failureCode == nil, "a record keeps its own asset")
        #expect(result.saveResults[2].result.failureCode == nil, "the others are saved")
        var lying = try await phone.fetchRecords([kept.recordID])[0].result.get()
        lying.fields["f"] = .asset(wrongSum)
        let lied = try await phone.modifyRecords(saving: [lying], deleting: [], savePolicy: .ifServerRecordUnchanged, atomically: false)
        #expect(lied.errors.first?.message.contains("hashes to \(real.sha256)") == true, "\(lied.errors)")
        // Uploaded here for it, the same content may go into that record.
        _ = try await phone.uploadAsset(fileAt: try file(fixture, "g", content), for: Build.id("borrowed", in: notes), field: "f")
        #expect(try await phone.modifyRecords(saving: [Build.record("borrowed", in: notes, ["f": .asset(real)])]).errors.isEmpty)
    }

    /// An upload is for the record field it names: its reference saved in another field, or
    /// in another record, is refused, naming what it was uploaded for (the upload's checks,
    /// such as that the zone leaves the field in clear, were made for that field only); in
    /// its own field it is saved, and a record keeps an asset it holds already.
    @Test(arguments: [StoreKind.memory, .git])
    func anUploadIsTakenOnlyForTheFieldItWasMadeFor(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let alice = try fixture.store(as: "alice")
        try await alice.createZones([notes])
        let photo = try await alice.uploadAsset(fileAt: try file(fixture, "p", Array("a photo".utf8)), for: Build.id("a", in: notes), field: "photo")
        let result = try await alice.modifyRecords(
            saving: [
                Build.record("a", in: notes, ["scan": .asset(photo)]),
                Build.record("b", in: notes, ["photo": .asset(photo)]),
            ], deleting: [], savePolicy: .ifServerRecordUnchanged, atomically: false)
        for (i, name) in ["a", "b"].enumerated() {
            guard case .failure(let e) = result.saveResults[i].result else {
                Issue.record("record '\(name)' took an upload made for another field"); continue
            }
            #expect(
                e.message.contains("uploaded for field 'photo' of record 'a'") && e.message.contains("upload the file for this record and field"),
                "\(e.message)")
        }
        var saved = try await alice.save([Build.record("a", in: notes, ["photo": .asset(photo)])])[0]
        // Held by the record now: it may move to another of its fields, from any handle.
        saved.fields = ["scan": .asset(photo)]
        let phone = try fixture.store(as: "alice")
        #expect(try await phone.modifyRecords(saving: [saved]).errors.isEmpty)
        let other = try await phone.modifyRecords(saving: [Build.record("b", in: notes, ["photo": .asset(photo)])])
        #expect(other.errors.first?.message.contains("neither uploaded for it nor is one of its assets") == true, "\(other.errors)")
    }

    /// An asset the record's current version holds, with the same reference, was checked
    /// when that version was saved: editing another field does not read it again (it reads
    /// not at all here: its object is damaged), while any other reference is still checked.
    @Test func anAssetTheCurrentVersionHoldsIsNotReadAgain() async throws {
        let fixture = try StoreFixture(.git)
        let alice = try fixture.store(as: "alice")
        try await alice.createZones([notes])
        let photo = try await alice.uploadAsset(
            fileAt: try file(fixture, "p", Array(repeating: 7, count: 10_000)), for: Build.id("r", in: notes), field: "f")
        let saved = try await alice.save([Build.record("r", in: notes, ["f": .asset(photo), "n": .int64(1)])])[0]
        // The loose object, overwritten behind the store's back: any read of it fails.
        let object = "\(fixture.path)/objects/\(photo.oid.prefix(2))/\(photo.oid.dropFirst(2))"
        #expect(FileManager.default.fileExists(atPath: object))
        try FileManager.default.removeItem(atPath: object)
        try Data("not a zlib stream".utf8).write(to: URL(fileURLWithPath: object))

        let phone = try fixture.store(as: "alice")  // uploaded nothing, hashed nothing
        var edited = saved
        edited.fields["n"] = .int64(2)
        let result = try await phone.modifyRecords(saving: [edited], deleting: [], savePolicy: .ifServerRecordUnchanged, atomically: false)
        #expect(result.saveResults[0].result.failureCode == nil, "\(result.errors)")
        // Another record naming the same object is checked as before: the damaged object is
        // read, and the save fails.
        do {
            let other = try await phone.modifyRecords(
                saving: [Build.record("other", in: notes, ["f": .asset(photo)])], deleting: [], savePolicy: .ifServerRecordUnchanged,
                atomically: false)
            #expect(other.saveResults[0].result.failureCode != nil, "a record took a damaged object unchecked")
        } catch {
            #expect(error.message.contains("failed while reading the size of asset \(photo.oid)"), "\(error)")
        }
    }

    @Test func anAssetOverTheStoreLimitIsRefusedBeforeAnythingIsWritten() async throws {
        let fixture = try StoreFixture(.git)
        // The limit is the store's own setting, in its recsync.json.
        let manifest = try GitCLI.run(["show", "refs/heads/main:recsync.json"], in: fixture.path)
        var json = try #require(try JSONSerialization.jsonObject(with: Data(manifest.utf8)) as? [String: Any])
        json["maxAssetBytes"] = 1000
        try GitCLI.commitFiles([("recsync.json", Array(try JSONSerialization.data(withJSONObject: json)))], toStore: fixture.path)
        let alice = try fixture.store(as: "alice")
        #expect(alice.maxAssetBytes == 1000)
        try await alice.createZones([notes])
        let objectsBefore = try GitCLI.run(["count-objects", "-v"], in: fixture.path)
        let error = await caught {
            try await alice.uploadAsset(
                fileAt: try file(fixture, "big", [UInt8](repeating: 1, count: 1001)), for: Build.id("r", in: notes), field: "f")
        }
        #expect(error?.code == .limitExceeded)
        #expect(error?.message.contains("at most 1000 bytes") == true)
        #expect(try GitCLI.run(["count-objects", "-v"], in: fixture.path) == objectsBefore, "nothing was written")
        _ = try await alice.uploadAsset(
            fileAt: try file(fixture, "ok", [UInt8](repeating: 1, count: 1000)), for: Build.id("r", in: notes), field: "f")

        // A reference over the limit is refused at save too (a client that skipped upload).
        let big = try AssetReference(oid: String(repeating: "cd", count: 20), size: 2000, sha256: String(repeating: "1", count: 64))
        let result = try await alice.modifyRecords(
            saving: [Build.record("r", in: notes, ["f": .asset(big)])], deleting: [], savePolicy: .ifServerRecordUnchanged, atomically: true)
        #expect(result.saveResults[0].result.failureCode == .limitExceeded)
    }

    @Test func theAssetTreeFollowsItsRecords() async throws {
        let fixture = try StoreFixture(.git)
        let alice = try fixture.store(as: "alice")
        try await alice.createZones([notes, Build.zone("other")])
        let one = try await alice.uploadAsset(fileAt: try file(fixture, "1", Array("one".utf8)), for: Build.id("r", in: notes), field: "a")
        let two = try await alice.uploadAsset(fileAt: try file(fixture, "2", Array("two".utf8)), for: Build.id("r", in: notes), field: "b")
        _ = try await alice.uploadAsset(fileAt: try file(fixture, "2", Array("two".utf8)), for: Build.id("r", in: notes), field: "a")
        _ = try await alice.uploadAsset(fileAt: try file(fixture, "1", Array("one".utf8)), for: Build.id("s", in: notes), field: "a")
        var r = try await alice.save([Build.record("r", in: notes, ["a": .asset(one), "b": .asset(two)])])[0]
        let dir = StoreLayout.assetDir(r.recordID)
        func listing() throws -> String {
            try GitCLI.run(["ls-tree", "-r", "--name-only", "refs/heads/main", StoreLayout.assetsPath(notes)], in: fixture.path)
        }
        #expect(try listing() == "\(dir)/a\n\(dir)/b\n")
        let firstTag = r.changeTag

        // Changing an asset changes the record's change tag; a dropped field drops its blob.
        r.fields = ["a": .asset(two)]
        r = try await alice.save([r])[0]
        #expect(r.changeTag != firstTag)
        #expect(try listing() == "\(dir)/a\n")
        #expect(try GitCLI.run(["rev-parse", "refs/heads/main:\(dir)/a"], in: fixture.path).hasPrefix(two.oid))

        // Deleting the record removes its assets; the record walk never saw them.
        _ = try await alice.delete([r])
        #expect(try listing() == "")
        let changes = try await alice.recordZoneChanges(zone: notes, since: nil)
        #expect(changes.modifications.isEmpty && changes.deletions.isEmpty)

        // A deleted zone takes its assets along.
        let s = try await alice.save([Build.record("s", in: notes, ["a": .asset(one)])])[0]
        #expect(try listing() == "\(StoreLayout.assetDir(s.recordID))/a\n")
        try await alice.zoneOp(.delete(notes))
        #expect(try listing() == "")
        try GitCLI.run(["fsck", "--strict"], in: fixture.path)
    }

    @Test func aGarbageOrMissingAssetBlobFailsThatAssetOnly() async throws {
        let fixture = try StoreFixture(.git)
        let alice = try fixture.store(as: "alice")
        try await alice.createZones([notes])
        let good = try await alice.uploadAsset(fileAt: try file(fixture, "g", Array("good".utf8)), for: Build.id("good", in: notes), field: "f")
        _ = try await alice.save([Build.record("good", in: notes, ["f": .asset(good)])])
        // Someone with plain git commits a record whose asset blob does not hold what it says,
        // and one whose blob is not there at all.
        let garbage = try GitCLI.run(["hash-object", "-w", "--stdin"], in: fixture.path, input: "xxxx").trimmingCharacters(
            in: .whitespacesAndNewlines)
        let lying = try AssetReference(oid: garbage, size: 4, sha256: good.sha256)
        let absent = try AssetReference(oid: String(repeating: "ef", count: 20), size: 4, sha256: good.sha256)
        let bad = Build.record("bad", in: notes, ["f": .asset(lying)])
        let gone = Build.record("gone", in: notes, ["f": .asset(absent)])
        try GitCLI.commitFiles(
            [
                (StoreLayout.recordPath(bad.recordID), StoreEncoding.encode(bad)),
                (StoreLayout.recordPath(gone.recordID), StoreEncoding.encode(gone)),
            ], toStore: fixture.path)

        // The records themselves still read; each broken asset fails alone, leaving no file.
        let phone = try fixture.store(as: "alice")
        let page = try await phone.recordZoneChanges(zone: notes, since: nil)
        #expect(page.modifications.count == 3)
        let out = fixture.directory.file("out")
        let e1 = await caught { try await phone.downloadAsset(lying, zone: notes, to: out) }
        #expect(e1?.code == .serverRejectedRequest && e1?.message.contains("does not match") == true)
        #expect(!FileManager.default.fileExists(atPath: out))
        let e2 = await caught { try await phone.downloadAsset(absent, zone: notes, to: out) }
        #expect(e2?.message.contains("lacks asset object") == true)
        #expect(!FileManager.default.fileExists(atPath: out))
        // A reference that understates its blob is refused from the object's header, before
        // anything is read or written.
        let big = try GitCLI.run(["hash-object", "-w", "--stdin"], in: fixture.path, input: String(repeating: "y", count: 100_000))
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let understated = try AssetReference(oid: big, size: 4, sha256: good.sha256)
        let e3 = await caught { try await phone.downloadAsset(understated, zone: notes, to: out) }
        #expect(e3?.message.contains("holds 100000 bytes where its reference says 4") == true, "\(String(describing: e3))")
        #expect(!FileManager.default.fileExists(atPath: out))
        // Nor a temporary file beside it: the content is written aside and linked into place.
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.directory.path).filter { $0.contains("partial") }.isEmpty)
        try await phone.downloadAsset(good, zone: notes, to: out)
        #expect(bytes(out) == Array("good".utf8))
        // A name as long as the system takes (255 bytes) is written too: the temporary file's
        // name does not grow with it.
        let long = fixture.directory.file(String(repeating: "n", count: 255))
        try await phone.downloadAsset(good, zone: notes, to: long)
        #expect(bytes(long) == Array("good".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.directory.path).filter { $0.contains("partial") }.isEmpty)
    }

    @Test func aPackedAssetReadsBackWhole() async throws {
        let fixture = try StoreFixture(.git)
        let alice = try fixture.store(as: "alice")
        try await alice.createZones([notes])
        let content = (0..<2_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ ($0 >> 9)) }
        let asset = try await alice.uploadAsset(fileAt: try file(fixture, "p", content), for: Build.id("p", in: notes), field: "f")
        _ = try await alice.save([Build.record("p", in: notes, ["f": .asset(asset)])])
        try GitCLI.run(["gc", "--quiet"], in: fixture.path)
        #expect(try GitCLI.run(["count-objects", "-v"], in: fixture.path).contains("count: 0"), "every object is packed now")
        let out = fixture.directory.file("out")
        try await (try fixture.store(as: "alice")).downloadAsset(asset, zone: notes, to: out)
        #expect(holds(out, content))
    }
}
