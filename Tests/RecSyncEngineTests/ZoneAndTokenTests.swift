import Foundation
import RecSyncEngine
import RecSyncEngineFixtures
import RecSyncModel
import RecSyncStore
import RecSyncSystem
import RecSyncTestSupport
import RecSyncWorkspace
import Synchronization
import Testing

/// Zones going away, tokens expiring, and syncs that stop half-way.
@Suite struct ZoneAndTokenTests {
    /// A zone whose name is as long as a workspace can hold still has its unpushed
    /// work set aside when it goes away (owner and zone were once joined in one file name).
    @Test func removedZoneWithTheLongestNameKeepsUnpushedEdits() async throws {
        let f = EngineFixture("removed-long")
        let long = "." + String(repeating: "z", count: NameRules.maxEscapedZoneNameLength - 3)
        let laptop = try f.device("laptop")
        let phone = try f.device("phone")
        try laptop.write(NameEscaping.escape(long), "a", #"{"v": 1}"#)
        _ = try await laptop.push()
        _ = try await phone.pull()
        try phone.write(NameEscaping.escape(long), "a", #"{"v": "unpushed edit"}"#)
        try await f.store("alice").zoneOp(.delete(zone(long)))
        let pulled = try await phone.pull()
        #expect(pulled.zonesRemoved.map(\.zoneID) == [zone(long)])
        #expect(pulled.lostAndFound.count == 1)
        #expect(readFile("\(phone.workspace.root)/\(pulled.lostAndFound.first ?? "-")/a.json")?.contains("unpushed edit") == true)
    }

    @Test(arguments: [ZoneDeletionReason.deleted, .purged])
    func removedZoneGoesAwayButUnpushedEditsAreKept(reason: ZoneDeletionReason) async throws {
        let f = EngineFixture("removed-\(reason)")
        let laptop = try f.device("laptop")
        let phone = try f.device("phone")
        try laptop.write("notes", "a", #"{"v": 1}"#)
        try laptop.write("notes", "b", #"{"v": 1}"#)
        try laptop.write("keep", "k", #"{"v": 1}"#)
        _ = try await laptop.push()
        _ = try await phone.pull()
        try phone.write("notes", "a", #"{"v": "unpushed edit"}"#)
        try phone.write("notes", "fresh", #"{"v": "new, unpushed"}"#)
        try writeFile("\(phone.workspace.root)/private/notes/README.txt", "not a record, but mine")
        try writeFile("\(phone.workspace.root)/private/notes/half.json", "{ broken")

        let alice = try f.store("alice")
        try await alice.zoneOp(reason == .purged ? .purge(zone("notes")) : .delete(zone("notes")))

        let pulled = try await phone.pull()
        #expect(pulled.zonesRemoved == [ZoneDeletion(zoneID: zone("notes"), reason: reason)])
        #expect(!FileManager.default.fileExists(atPath: "\(phone.workspace.root)/private/notes"))
        #expect(pulled.lostAndFound.count == 1)
        let saved = "\(phone.workspace.root)/\(pulled.lostAndFound[0])"
        #expect(
            FileIO.list(saved).filter { !$0.hasPrefix(".") } == ["README.txt", "a.json", "fresh.json", "half.json"],
            "everything that was not simply the synced version is kept")
        #expect(FileIO.list("\(saved)/.system") == ["a.json"], "with the sidecars of kept records")
        #expect(readFile("\(saved)/a.json")?.contains("unpushed edit") == true)
        #expect(try phone.fields("keep", "k") == ["v": .int64(1)], "other zones are untouched")
        // Nothing comes back on the next push: the zone stays gone.
        let pushed = try await phone.push()
        #expect(pushed.zonesCreated.isEmpty && pushed.saved.isEmpty)
        #expect(try await alice.fetchAllRecordZones(scope: .private).map(\.zoneID) == [zone("keep")])
    }

    @Test func encryptedDataResetKeepsDataAndUploadsItAgain() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        try laptop.write("notes", "a", #"{"v": 1}"#)
        try laptop.write("notes", "b", #"{"v": 2}"#)
        _ = try await laptop.push()
        _ = try await laptop.pull()
        let alice = try f.store("alice")
        try await alice.zoneOp(.markEncryptedDataReset(zone("notes")))

        let pulled = try await laptop.pull()
        #expect(pulled.zonesRemoved.map(\.reason) == [.encryptedDataReset])
        #expect(try laptop.fields("notes", "a") == ["v": .int64(1)], "the data stays")
        let pushed = try await laptop.push()
        #expect(pushed.zonesCreated == [zone("notes")])
        #expect(pushed.saved.count == 2)
        let back = try await alice.allZoneChanges(zone("notes"), since: nil)
        #expect(names(back.records) == ["a", "b"])
        _ = try await laptop.pull()
        #expect(try await laptop.status().isClean)
    }

    @Test func syncedRecordsInAZoneTheStoreLostAreUploadedAgain() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        try laptop.write("notes", "a", #"{"v": 1}"#)
        _ = try await laptop.push()
        // The zone disappears before this workspace ever pulled (so it holds no zone token).
        let alice = try f.store("alice")
        try await alice.zoneOp(.markEncryptedDataReset(zone("notes")))
        let pushed = try await laptop.push()
        #expect(pushed.zonesCreated == [zone("notes")] && pushed.saved.count == 1)
        _ = try await laptop.pull()
        #expect(try laptop.fields("notes", "a") == ["v": .int64(1)])
        #expect(try await laptop.status().isClean)
    }

    @Test func expiredTokensRefetchWithoutLosingLocalEdits() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        let phone = try f.device("phone")
        for n in 0..<5 { try laptop.write("notes", "r\(n)", #"{"v": \#(n)}"#) }
        _ = try await laptop.push()
        _ = try await phone.pull()

        try phone.write("notes", "r1", #"{"v": "local edit"}"#)
        try FileManager.default.removeItem(atPath: laptop.path("notes", "r2"))
        try laptop.write("notes", "r3", #"{"v": "remote edit"}"#)
        _ = try await laptop.push()
        f.storage.rewriteHistory()

        let pulled = try await phone.pull()
        #expect(pulled.expiredTokens.count >= 1)
        #expect(try phone.fields("notes", "r1") == ["v": .string("local edit")], "local edits survive a refetch")
        #expect(try phone.fields("notes", "r3") == ["v": .string("remote edit")])
        #expect(try phone.fields("notes", "r2") == nil, "a record deleted while the token expired is removed")
        let status = try await phone.status()
        #expect(status.changes.map(\.recordID.recordName) == ["r1"])
        _ = try await phone.push()
        _ = try await laptop.pull()
        #expect(try converged(laptop, phone))
    }

    @Test(arguments: ["afterBatch", "beforeScopeToken"])
    func aPullThatDiesHalfWayIsFinishedByTheNext(point: String) async throws {
        let f = EngineFixture("dies-\(point)")
        let alice = try f.store("alice")
        try await alice.createZones([zone("a"), zone("b")])
        try await alice.save((0..<30).map { RecordGenerator.realisticRecord(index: $0, zoneID: $0 % 2 == 0 ? zone("a") : zone("b")) })
        let reference = try f.device("reference")
        _ = try await reference.pull()

        var phone = try f.device("phone")
        phone.pageSize = 4
        phone.fullFetchPageSize = 4
        let calls = Counter()
        phone.checkpoint = { (checkpoint: SyncEngine.Checkpoint) throws(RecSyncError) in
            switch checkpoint {
            case .afterBatchBeforeZoneToken where point == "afterBatch" && calls.next() == 3:
                throw .internalError("simulated crash after a batch, before its token")
            case .beforeScopeToken(.private) where point == "beforeScopeToken":
                throw .internalError("simulated crash before the scope token")
            default: break
            }
        }
        #expect(await pullError(phone) != nil)
        // The pages it wrote wait in their journals (a pull makes them durable as it ends).
        #expect(!phone.workspace.pageJournalsToRecover.isEmpty)
        phone.checkpoint = nil
        let resumed = try await phone.pull()
        #expect(phone.workspace.pageJournalsToRecover.isEmpty)
        #expect(resumed.conflicts.isEmpty)
        #expect(try converged(phone, reference))
        #expect(try await phone.status().isClean)
        // And one more pull has nothing left to do.
        let idle = try await phone.pull()
        #expect(idle.recordsWritten == 0 && idle.recordsDeleted == 0 && idle.conflicts.isEmpty)
    }

    /// What a power cut can leave of files written but not yet synced: a record file empty,
    /// another cut short, a sidecar gone. The journal finishes them before anything reads them.
    @Test func filesACrashCutShortAreFinishedFromTheirJournal() async throws {
        let f = EngineFixture("journal")
        let alice = try f.store("alice")
        try await alice.createZones([zone("a")])
        try await alice.save((0..<12).map { RecordGenerator.realisticRecord(index: $0, zoneID: zone("a")) })
        let reference = try f.device("reference")
        _ = try await reference.pull()
        var phone = try f.device("phone")
        phone.pageSize = 4
        phone.fullFetchPageSize = 4
        phone.checkpoint = { (checkpoint: SyncEngine.Checkpoint) throws(RecSyncError) in
            if case .beforeScopeToken = checkpoint { throw .internalError("simulated crash before the scope token") }
        }
        #expect(await pullError(phone) != nil)
        phone.checkpoint = nil
        let dir = phone.workspace.zoneDirectory(zone("a"))
        let files = FileIO.list(dir).filter { $0.hasSuffix(".json") && $0 != "zone.json" }
        try #require(files.count == 12)
        try FileIO.writeAtomically("\(dir)/\(files[0])", [])
        let second = try #require(try FileIO.read("\(dir)/\(files[1])"))
        try FileIO.writeAtomically("\(dir)/\(files[1])", Array(second.prefix(second.count / 2)))
        try FileIO.remove("\(dir)/.system/\(files[2])")
        #expect(try await phone.status().isClean)
        #expect(phone.workspace.pageJournalsToRecover.isEmpty)
        #expect(try converged(phone, reference))
        let idle = try await phone.pull()
        #expect(idle.recordsWritten == 0 && idle.conflicts.isEmpty)
    }

    @Test func aSecondSyncWaitsForTheLock() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        let lock = try laptop.workspace.lock(purpose: "test holds it")
        let error = await pullError(laptop)
        guard case .workspaceLocked(let holder) = error?.reason else {
            Issue.record("expected workspaceLocked, got \(String(describing: error))")
            return
        }
        #expect(holder.contains("test holds it"))
        withExtendedLifetime(lock) {}
    }
}

/// A thread-safe counter for checkpoint hooks.
final class Counter: Sendable {
    private let value = Mutex(0)
    func next() -> Int {
        value.withLock {
            $0 += 1; return $0
        }
    }
}

func names(_ records: [Record]) -> [String] { records.map(\.recordID.recordName).sorted() }

/// Zones other users share with the workspace's user.
@Suite struct SharedZoneTests {
    @Test func sharedZonesArriveAndReadOnlyPushesAreRefusedBeforeSending() async throws {
        let f = EngineFixture()
        let alice = try f.store("alice")
        let notes = zone("notes", owner: "alice")
        try await alice.createZones([notes])
        try await alice.save([Build.record("r", in: notes, ["v": .int64(1)])])
        try await alice.zoneOp(.save(RecordZone(zoneID: notes, participants: [ShareParticipant(userRecordName: "bob", permission: .readOnly)])))

        let bob = try f.device("bob", user: "bob")
        _ = try await bob.pull()
        let path = "\(bob.workspace.root)/shared/alice/notes/r.json"
        #expect(readFile(path) != nil)
        try writeFile(path, #"{"v": 2}"#)
        let before = f.storage.history()
        let error = await pushError(bob)
        guard case .invalidFiles(let problems) = error?.reason else {
            Issue.record("expected a refusal, got \(String(describing: error))")
            return
        }
        #expect(problems.first?.description.contains("read-only") == true)
        #expect(f.storage.history() == before)

        // With write access the same edit goes through.
        try await alice.zoneOp(.save(RecordZone(zoneID: notes, participants: [ShareParticipant(userRecordName: "bob", permission: .readWrite)])))
        let pushed = try await bob.push()
        #expect(pushed.saved.count == 1)

        // Unshared: the directory goes on bob's next pull; unpushed edits are kept aside.
        try writeFile(path, #"{"v": 3}"#)
        try await alice.zoneOp(.save(RecordZone(zoneID: notes)))
        let pulled = try await bob.pull()
        #expect(pulled.zonesRemoved.map(\.zoneID) == [notes])
        #expect(readFile(path) == nil)
        #expect(pulled.lostAndFound.count == 1)
    }

    /// An editor warns before an edit that could not be pushed: a zone shared read-only is
    /// written without write permission, and gets it back when the owner grants it.
    @Test func filesOfAZoneSharedReadOnlyAreWrittenWithoutWritePermission() async throws {
        let f = EngineFixture()
        let alice = try f.store("alice")
        let notes = zone("notes", owner: "alice")
        try await alice.createZones([notes])
        try await alice.save([Build.record("r", in: notes, ["v": .int64(1)])])
        func share(_ permission: SharePermission) async throws {
            try await alice.zoneOp(.save(RecordZone(zoneID: notes, participants: [ShareParticipant(userRecordName: "bob", permission: permission)])))
        }
        try await share(.readOnly)
        let bob = try f.device("bob", user: "bob")
        try bob.write("mine", "m", #"{"v": 1}"#)
        _ = try await bob.push()
        _ = try await bob.pull()
        let dir = "\(bob.workspace.root)/shared/alice/notes"
        func writable(_ path: String) -> Bool? {
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
                let mode = attributes[.posixPermissions] as? Int
            else { return nil }
            return mode & 0o222 != 0
        }
        #expect(writable("\(dir)/r.json") == false)
        #expect(writable("\(bob.workspace.root)/private/mine/m.json") == true, "the user's own zones stay writable")
        #expect(writable("\(dir)/.system/r.json") == true, "sidecars are recsync's, and it rewrites them in place")

        try await alice.save([Build.record("s", in: notes, ["v": .int64(1)])])
        _ = try await bob.pull()
        #expect(writable("\(dir)/s.json") == false, "a record arriving later is read-only too")

        try await share(.readWrite)
        _ = try await bob.pull()
        #expect(writable("\(dir)/r.json") == true && writable("\(dir)/s.json") == true, "write access given: the files are writable again")
        try writeFile("\(dir)/r.json", #"{"v": 2}"#)
        #expect(try await bob.push().saved.count == 1)

        try await share(.readOnly)
        _ = try await bob.pull()
        #expect(writable("\(dir)/r.json") == false && writable("\(dir)/s.json") == false, "taken away: read-only again")
    }
}

/// What a killed sync leaves behind is cleaned up by the next one.
@Suite struct LeftoverTests {
    @Test func tempFilesOfAKilledBatchAreRemoved() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        try laptop.write("notes", "r", #"{"v": 1}"#)
        _ = try await laptop.push()
        let dir = "\(laptop.workspace.root)/private/notes"
        // As a batch killed half-way leaves them: temp files, and the list of their directories.
        try writeFile("\(dir)/.tmp-99999-1", "partial")
        try writeFile("\(dir)/.system/.tmp-99999-2", "partial")
        try writeFile(laptop.workspace.tempRegistry, "\(dir)\n\(dir)/.system\n")
        try writeFile("\(laptop.workspace.stateDir)/tokens/.tmp-99999-3", "partial")
        _ = try await laptop.pull()
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/.tmp-99999-1"))
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/.system/.tmp-99999-2"))
        #expect(!FileManager.default.fileExists(atPath: "\(laptop.workspace.stateDir)/tokens/.tmp-99999-3"))
        #expect(!FileManager.default.fileExists(atPath: laptop.workspace.tempRegistry))
    }

    /// A zone that goes away between the database changes and its own pages is skipped with
    /// a warning, its files and token left as they were; the next pull removes it.
    @Test func aZoneGoneDuringThePullIsSkippedAndRemovedNextTime() async throws {
        let f = EngineFixture("zone-gone-mid-pull")
        let laptop = try f.device("laptop")
        try laptop.write("notes", "a", #"{"v": 1}"#)
        try laptop.write("drafts", "b", #"{"v": 1}"#)
        _ = try await laptop.push()
        let phoneWorkspace = try f.device("phone").workspace
        let store = FaultInjectingStore(try f.store("alice", deviceID: try phoneWorkspace.deviceID()))
        let phone = SyncEngine(workspace: phoneWorkspace, store: store)
        _ = try await phone.pull()

        try laptop.write("notes", "a", #"{"v": 2}"#)
        try laptop.write("drafts", "b", #"{"v": 2}"#)
        _ = try await laptop.push()
        await store.failZone(zone("notes"), with: .zoneNotFound(zone("notes")))
        let report = try await phone.pull()
        #expect(report.zonesSkipped == [zone("notes")])
        #expect(report.warnings.contains { $0.contains("went away during the pull; pull again") }, "\(report.warnings)")
        #expect(try phone.fields("notes", "a") == ["v": .int64(1)], "left as it was")
        #expect(try phone.fields("drafts", "b") == ["v": .int64(2)], "the other zone was pulled")

        // Gone for real: deleted after the pull read the database changes.
        _ = try await f.store("alice").modifyRecordZones([.delete(zone("notes"))])
        await store.failZone(zone("notes"), with: nil)
        let again = try await phone.pull()
        #expect(again.zonesRemoved == [ZoneDeletion(zoneID: zone("notes"), reason: .deleted)])
        #expect(again.zonesSkipped.isEmpty && again.warnings.isEmpty, "\(again.warnings)")
        #expect(try phone.fields("notes", "a") == nil)
        #expect(try phone.fields("drafts", "b") == ["v": .int64(2)])
    }

    /// A push whose new zone the store refuses to create sends the other zones, says what to
    /// do of the refused one, and leaves its records new here; once the store takes the zone,
    /// the next push sends them.
    @Test func aPushWhoseZoneTheStoreRefusesSendsTheRestAndKeepsIt() async throws {
        let f = EngineFixture("zone-creation-refused")
        let workspace = try f.device("laptop").workspace
        let store = FaultInjectingStore(try f.store("alice", deviceID: try workspace.deviceID()))
        let laptop = SyncEngine(workspace: workspace, store: store)
        try laptop.write("notes", "a", #"{"v": 1}"#)
        _ = try await laptop.push()
        try laptop.write("notes", "b", #"{"v": 1}"#)
        try laptop.write("album", "c", #"{"v": 1}"#)
        await store.refuseZoneSaves(zone("album"), with: .permissionFailure("alice may not create zones here"))
        let report = try await laptop.push()
        #expect(report.saved == [Build.id("b", in: zone("notes"))])
        #expect(report.zonesCreated.isEmpty)
        #expect(report.notSent.count == 1)
        #expect(
            report.notSent.first?.hasPrefix(
                "private/album/: alice may not create zones here; nothing of it was sent. Pull to learn what happened to it") == true,
            "\(report.notSent)")
        #expect(try await f.store("alice").fetchAllRecordZones(scope: .private).map(\.zoneID) == [zone("notes")])
        #expect(try await laptop.status().changes.map(\.recordID) == [Build.id("c", in: zone("album"))], "still new here")

        await store.refuseZoneSaves(zone("album"), with: nil)
        let again = try await laptop.push()
        #expect(again.zonesCreated == [zone("album")])
        #expect(again.saved == [Build.id("c", in: zone("album"))])
    }
}
