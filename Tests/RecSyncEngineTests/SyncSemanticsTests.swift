import Foundation
import Glibc
import RecSyncEngine
import RecSyncEngineFixtures
import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import RecSyncWorkspace
import Synchronization
import Testing

/// CloudKit's rules where a sync meets an odd moment: zones gone while a workspace was away,
/// full listings, its own writes coming back, files half-written during a sync.
@Suite struct SyncSemanticsTests {
    /// A workspace that made zone `notes` by pushing a new directory (so it holds no zone
    /// token), then another device deleted, purged or reset it: the push learns why first.
    @Test(arguments: [ZoneDeletionReason.deleted, .purged, .encryptedDataReset])
    func pushLearnsWhyAZoneWentAwayBeforeCreatingIt(reason: ZoneDeletionReason) async throws {
        let f = EngineFixture("push-tombstone-\(reason)")
        let laptop = try f.device("laptop")
        try laptop.write("notes", "a", #"{"v": 1}"#)
        try laptop.write("keep", "k", #"{"v": 1}"#)
        _ = try await laptop.push()
        let alice = try f.store("alice")
        switch reason {
        case .deleted: try await alice.zoneOp(.delete(zone("notes")))
        case .purged: try await alice.zoneOp(.purge(zone("notes")))
        case .encryptedDataReset: try await alice.zoneOp(.markEncryptedDataReset(zone("notes")))
        }
        try laptop.write("notes", "b", #"{"v": "unpushed"}"#)
        try laptop.write("keep", "k2", #"{"v": 2}"#)
        let status = try await laptop.status()
        if reason == .encryptedDataReset {
            #expect(status.newZones == [zone("notes")], "a push creates it again")
        } else {
            #expect(status.newZones.isEmpty)
            #expect(
                status.problems.contains { $0.description.hasPrefix("private/notes/") && $0.description.contains(reason.rawValue) },
                "status says why it is gone")
        }

        let pushed = try await laptop.push()
        let onStore = try await alice.fetchAllRecordZones(scope: .private).map(\.zoneID)
        #expect(pushed.saved.map(\.recordName).contains("k2"), "other zones are pushed as usual")
        if reason == .encryptedDataReset {
            // The only case where uploading again is right.
            #expect(pushed.zonesCreated == [zone("notes")])
            #expect(onStore.contains(zone("notes")))
            #expect(names(try await alice.allZoneChanges(zone("notes"), since: nil).records) == ["a", "b"])
            return
        }
        #expect(pushed.zonesCreated.isEmpty)
        #expect(!onStore.contains(zone("notes")), "the zone stays gone")
        #expect(try await alice.fetchZoneDeletions([zone("notes")]) == [ZoneDeletion(zoneID: zone("notes"), reason: reason)], "its tombstone stays")
        #expect(pushed.zonesRemoved == [ZoneDeletion(zoneID: zone("notes"), reason: reason)])
        #expect(!FileManager.default.fileExists(atPath: "\(laptop.workspace.root)/private/notes"), "handled as pull does")
        #expect(pushed.lostAndFound.count == 1)
        if let saved = pushed.lostAndFound.first {
            #expect(readFile("\(laptop.workspace.root)/\(saved)/b.json")?.contains("unpushed") == true, "unpushed work is kept")
        }
        if reason == .purged {
            #expect(pushed.notSent.contains { $0.contains("purged") }, "refused with the userDeletedZone message")
            #expect(pushed.remedies.contains { if case .createZone = $0 { true } else { false } }, "\(pushed.remedies)")
        } else {
            #expect(pushed.notSent.isEmpty)
        }
        // Only an explicit create brings it back.
        try await alice.createZones([zone("notes")])
        #expect(try await alice.fetchZoneDeletions([zone("notes")]).isEmpty)
    }

    /// With a nil or expired database token the feed lists live zones only: held zones it
    /// lacks are gone for the reason their tombstones give, not all "deleted".
    @Test(arguments: [ZoneDeletionReason.encryptedDataReset, .purged])
    func aFullListingReportsTheRealReasonAZoneWentAway(reason: ZoneDeletionReason) async throws {
        let f = EngineFixture("full-listing-\(reason)")
        let laptop = try f.device("laptop")
        try laptop.write("notes", "a", #"{"v": 1}"#)
        try laptop.write("keep", "k", #"{"v": 1}"#)
        _ = try await laptop.push()
        _ = try await laptop.pull()
        let alice = try f.store("alice")
        try await alice.zoneOp(reason == .purged ? .purge(zone("notes")) : .markEncryptedDataReset(zone("notes")))
        f.storage.rewriteHistory()  // every token expires: the next listing starts from nil

        let pulled = try await laptop.pull()
        #expect(pulled.expiredTokens.contains("private database"))
        #expect(pulled.zonesRemoved == [ZoneDeletion(zoneID: zone("notes"), reason: reason)])
        if reason == .encryptedDataReset {
            #expect(try laptop.fields("notes", "a") == ["v": .int64(1)], "the only copy left is kept")
            #expect(pulled.lostAndFound.isEmpty)
            let waiting = try await laptop.status()
            #expect(waiting.zonesToUploadAgain == [zone("notes")] && waiting.newZones.isEmpty, "status shows the pending upload")
            let pushed = try await laptop.push()
            #expect(pushed.zonesCreated == [zone("notes")] && pushed.saved.count == 1)
            #expect(try await laptop.status().isClean)
        } else {
            #expect(try laptop.fields("notes", "a") == nil)
        }
    }

    /// A push killed after the store's commit and before its sidecars: the next push finds
    /// its own saves on the store and adopts them, with no conflict (and what the atomic zone
    /// refused along with them is sent again).
    @Test func aPushKilledAfterTheStoreCommitIsNotAConflictNextTime() async throws {
        let f = EngineFixture()
        var laptop = try f.device("laptop")
        try laptop.write("notes", "a", #"{"v": 1}"#)
        try laptop.write("notes", "b", #"{"v": 1}"#)
        _ = try await laptop.push()
        _ = try await laptop.pull()
        try laptop.write("notes", "a", #"{"v": 2}"#)
        try laptop.write("notes", "c", #"{"v": "new"}"#)
        #expect(await laptop.killed(at: .afterPushCommitBeforeSidecars, pushError) != nil)
        // An edit made since goes in the same atomic zone as the saves that already landed.
        try laptop.write("notes", "b", #"{"v": 2}"#)
        // Without the push's note (lost), the same-content rule alone recognises its saves.
        try FileManager.default.removeItem(atPath: laptop.workspace.pendingPushPath)

        let again = try await laptop.push()
        #expect(again.conflicts.isEmpty && again.notSent.isEmpty)
        #expect(Set(again.saved.map(\.recordName)) == ["a", "b", "c"])
        #expect(
            try await f.store("alice").fetchRecords([try RecordID(recordName: "b", zoneID: zone("notes"))])[0].result.get().fields == ["v": .int64(2)]
        )
        #expect(try laptop.workspace.allConflicts().isEmpty)
        let stored = try await f.store("alice").fetchRecords([RecordID(recordName: "a", zoneID: zone("notes"))])[0].result.get()
        let sidecar = try WorkspaceEncoding.decodeSystemFields(
            Array(try #require(FileManager.default.contents(atPath: "\(laptop.workspace.root)/private/notes/.system/a.json"))))
        #expect(sidecar.changeTag == stored.changeTag, "the store's change tag is adopted")
        let pulled = try await laptop.pull()
        #expect(pulled.conflicts.isEmpty)
        #expect(try await laptop.status().isClean)
    }

    /// A push killed after the store commit, then the workspace copied (or restored): the copy
    /// has a new device ID, and the store keeps the push's client token in the old one's slot.
    /// Its pending-push note names the device it was sent as, so the copy settles it by
    /// content: its own saves are not conflicts.
    @Test func aKilledPushSettlesInACopiedWorkspace() async throws {
        let f = EngineFixture()
        var laptop = try f.device("laptop")
        try laptop.write("notes", "a", #"{"v": 1}"#)
        _ = try await laptop.push()
        try laptop.write("notes", "a", #"{"v": 2}"#)
        try laptop.write("notes", "c", #"{"v": "new"}"#)
        #expect(await laptop.killed(at: .afterPushCommitBeforeSidecars, pushError) != nil)
        let copyRoot = f.directory.file("copy")
        try FileManager.default.copyItem(atPath: laptop.workspace.root, toPath: copyRoot)
        let copied = try Workspace.open(at: copyRoot)
        #expect(try copied.deviceID() != laptop.workspace.deviceID())
        let copy = SyncEngine(workspace: copied, store: try f.store("alice", deviceID: try copied.deviceID()))
        // Edited again, so the same-content rule cannot recognise the saves that landed.
        try copy.write("notes", "a", #"{"v": 3}"#)
        try copy.write("notes", "c", #"{"v": "newer"}"#)
        let pushed = try await copy.push()
        #expect(pushed.conflicts.isEmpty, "\(pushed.conflicts)")
        #expect(try copied.allConflicts().isEmpty)
        #expect(try await copy.pull().conflicts.isEmpty)
        #expect(try await copy.status().isClean)
    }

    /// A push killed after the store commit whose records are then edited again: the
    /// same-content rule cannot see its own save in them; the client change token can.
    @Test(arguments: [false, true])
    func aKilledPushsRecordsEditedAgainPushCleanlyByItsClientToken(pullFirst: Bool) async throws {
        let f = EngineFixture("killed-push-token-\(pullFirst)")
        var laptop = try f.device("laptop")
        let desktop = try f.device("desktop")
        try laptop.write("notes", "a", #"{"v": 1}"#)
        _ = try await laptop.push()
        try laptop.write("notes", "a", #"{"v": 2}"#)
        try laptop.write("notes", "n", #"{"v": "new"}"#)
        #expect(await laptop.killed(at: .afterPushCommitBeforeSidecars, pushError) != nil)
        #expect(FileManager.default.fileExists(atPath: laptop.workspace.pendingPushPath))
        // Another workspace of the same user writes the zone meanwhile: its token is its own.
        try desktop.write("notes", "d", #"{"v": 1}"#)
        _ = try await desktop.push()
        // Both saved records are edited again before the next sync.
        try laptop.write("notes", "a", #"{"v": 3}"#)
        try laptop.write("notes", "n", #"{"v": "newer"}"#)

        if pullFirst {
            let pulled = try await laptop.pull()
            #expect(pulled.conflicts.isEmpty)
        }
        let again = try await laptop.push()
        #expect(again.conflicts.isEmpty && again.notSent.isEmpty)
        #expect(Set(again.saved.map(\.recordName)) == ["a", "n"])
        #expect(try laptop.workspace.allConflicts().isEmpty)
        let alice = try f.store("alice")
        let stored = try await alice.fetchRecords([Build.id("a", in: zone("notes")), Build.id("n", in: zone("notes"))])
        #expect(try stored[0].result.get().fields == ["v": .int64(3)])
        #expect(try stored[1].result.get().fields == ["v": .string("newer")])
        #expect(!FileManager.default.fileExists(atPath: laptop.workspace.pendingPushPath), "the note is settled")
        #expect(try await laptop.pull().conflicts.isEmpty)
        #expect(try await laptop.status().isClean)
    }

    /// A record the store did not change in a pull is never a conflict, even while another
    /// program is writing its file (a half-written file is unreadable for a moment).
    @Test func aFileBeingWrittenDuringAPullIsNoConflictWhenTheStoreDidNotChangeIt() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        try laptop.write("notes", "a", #"{"v": 1}"#)
        _ = try await laptop.push()
        // First pull: a full fetch of the zone delivers `a` again, unchanged.
        try laptop.write("notes", "a", #"{"v": "half-writ"#)
        let first = try await laptop.pull()
        #expect(first.conflicts.isEmpty)
        #expect(try laptop.workspace.allConflicts().isEmpty)
        // After a push, the pull looks the pushed records up again: the same.
        try laptop.write("notes", "a", #"{"v": 2}"#)
        _ = try await laptop.push()
        try laptop.write("notes", "a", #"{"v": "half-writ"#)
        let second = try await laptop.pull()
        #expect(second.conflicts.isEmpty)
        #expect(readFile(laptop.path("notes", "a")) == #"{"v": "half-writ"#, "the file being written is left alone")
        // The writer finishes: an ordinary edit.
        try laptop.write("notes", "a", #"{"v": 3}"#)
        #expect(try await laptop.status().changes.map(\.recordID.recordName) == ["a"])
    }

    /// A record the store cannot decode does not vanish behind the zone token: it is kept on
    /// a retry list, shown by status, fetched again once it changes on the store, and dropped
    /// once it decodes.
    @Test func aRecordTheStoreCannotDecodeIsRetriedUntilItDecodes() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        try laptop.write("notes", "a", #"{"v": 1}"#)
        try laptop.write("notes", "b", #"{"v": 1}"#)
        _ = try await laptop.push()
        _ = try await laptop.pull()
        let alice = try f.store("alice")
        let b = try RecordID(recordName: "b", zoneID: zone("notes"))
        f.storage.commitRawRecord(b, bytes: Array("not a record".utf8))
        let a = try await alice.fetchRecords([try RecordID(recordName: "a", zoneID: zone("notes"))])[0].result.get()
        try await alice.save([
            {
                var x = a; x.fields["v"] = .int64(2); return x
            }()
        ])

        let first = try await laptop.pull()
        #expect(try laptop.fields("notes", "a") == ["v": .int64(2)], "the rest of the page is applied")
        #expect(first.warnings.contains { $0.contains("alice/notes/b") })
        #expect(try laptop.fields("notes", "b") == ["v": .int64(1)], "the local copy is left as it was")
        let status = try await laptop.status()
        #expect(status.problems.count == 1 && status.problems.first?.description.hasPrefix("private/notes/b.json") == true, "status shows it")
        // Nothing changed on the store: the next pull has nothing new to say (its stored copy
        // reads the same), and status still shows it.
        let second = try await laptop.pull()
        #expect(second.warnings.isEmpty, "\(second.warnings)")
        #expect(try await laptop.status().problems.count == 1)

        // Fixed on the store: it arrives and leaves the list.
        try await alice.save([Build.record("b", in: zone("notes"), ["v": .int64(3)])], policy: .allKeys)
        let third = try await laptop.pull()
        #expect(third.warnings.isEmpty)
        #expect(try laptop.fields("notes", "b") == ["v": .int64(3)])
        #expect(try await laptop.status().isClean)
        #expect(!FileManager.default.fileExists(atPath: laptop.workspace.retryPath(zone("notes"))))
    }

    /// A pull killed after saving a new zone's token but before the scope token, then the
    /// zone purged: the feed since the old scope token shows neither the zone's creation nor
    /// its removal, so the next pull must ask for the tombstones of the zones it holds.
    @Test func aZoneRemovedAfterAKilledPullIsRemovedByTheNextPull() async throws {
        let f = EngineFixture()
        var phone = try f.device("phone")
        _ = try await phone.pull()  // a scope token from before the zone
        let alice = try f.store("alice")
        try await alice.createZones([zone("notes")])
        _ = try await alice.save([Build.record("r", in: zone("notes"), ["v": .int64(1)])])
        #expect(await phone.killed(at: .beforeScopeToken(.private), pullError) != nil)
        #expect(try phone.fields("notes", "r") == ["v": .int64(1)], "the zone arrived before the kill")
        try await alice.zoneOp(.purge(zone("notes")))

        let next = try await phone.pull()
        #expect(next.zonesRemoved == [ZoneDeletion(zoneID: zone("notes"), reason: .purged)])
        #expect(!FileManager.default.fileExists(atPath: "\(phone.workspace.root)/private/notes"))
        #expect(!FileManager.default.fileExists(atPath: phone.workspace.interruptedPullPath(.private)), "the note goes once the scope token is saved")
        #expect(try await phone.status().isClean)
    }

    /// A push killed after the store commit, settled by the next push (client token), then
    /// the record deleted elsewhere: the next pull must still look it up by name, as after a
    /// push that finished, since it is in neither end of the pull's diff.
    @Test func aRecordSettledAfterAKilledPushAndDeletedElsewhereGoes() async throws {
        let f = EngineFixture()
        var laptop = try f.device("laptop")
        _ = try await laptop.pull()
        try await f.store("alice").createZones([zone("notes")])
        _ = try await laptop.pull()  // a zone token from before the record
        try laptop.write("notes", "r", #"{"v": 1}"#)
        #expect(await laptop.killed(at: .afterPushCommitBeforeSidecars, pushError) != nil)
        let settled = try await laptop.push()
        #expect(settled.conflicts.isEmpty && settled.saved.isEmpty, "\(settled)")
        let alice = try f.store("alice")
        let stored = try await alice.fetchRecords([try RecordID(recordName: "r", zoneID: zone("notes"))])[0].result.get()
        _ = try await alice.delete([stored])

        _ = try await laptop.pull()
        #expect(try laptop.fields("notes", "r") == nil, "the deletion reached this workspace")
        #expect(try await laptop.status().isClean)
    }

    /// A pull killed before its shared scope token, after bringing in a zone shared with this
    /// user; the owner then stops sharing it: the next pull removes it here.
    @Test func aSharedZoneUnsharedAfterAKilledPullIsRemoved() async throws {
        let f = EngineFixture()
        let alice = try f.store("alice")
        let notes = zone("notes", owner: "alice")
        var bob = try f.device("bob", user: "bob")
        _ = try await bob.pull()
        try await alice.createZones([notes])
        _ = try await alice.save([Build.record("r", in: notes, ["v": .int64(1)])])
        try await alice.zoneOp(.save(RecordZone(zoneID: notes, participants: [ShareParticipant(userRecordName: "bob", permission: .readOnly)])))
        #expect(await bob.killed(at: .beforeScopeToken(.shared), pullError) != nil)
        let path = "\(bob.workspace.root)/shared/alice/notes/r.json"
        #expect(FileManager.default.fileExists(atPath: path))
        try await alice.zoneOp(.delete(notes))

        _ = try await bob.pull()
        #expect(!FileManager.default.fileExists(atPath: path), "the zone gone for bob is removed")
    }

    /// After an encrypted-data reset, a workspace whose zone another device re-created first
    /// settles a differing record once and then pushes it, instead of sending it tag-less
    /// (as new) on every push for ever.
    @Test func aReuploadIntoAZoneReCreatedElsewhereSettlesOnce() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop"), phone = try f.device("phone")
        try laptop.write("notes", "r", #"{"v": 1}"#)
        _ = try await laptop.push()
        _ = try await phone.pull()
        try phone.write("notes", "r", #"{"v": 2}"#)  // not pushed
        try await f.store("alice").zoneOp(.markEncryptedDataReset(zone("notes")))
        _ = try await phone.pull()
        _ = try await laptop.pull()
        let reuploaded = try await laptop.push()  // the laptop re-creates the zone first
        #expect(reuploaded.saved.map(\.recordName) == ["r"])

        let pulled = try await phone.pull()
        #expect(pulled.conflicts.map(\.recordName) == ["r"])
        _ = try phone.resolve(strategy: .ours)
        let pushed = try await phone.push()
        #expect(pushed.conflicts.isEmpty && pushed.notSent.isEmpty, "\(pushed)")
        #expect(pushed.saved.map(\.recordName) == ["r"])
        #expect(!FileManager.default.fileExists(atPath: phone.workspace.reuploadMarker(zone("notes"))), "the re-upload is over")
        #expect(
            try await f.store("alice").fetchRecords([try RecordID(recordName: "r", zoneID: zone("notes"))])[0].result.get().fields == ["v": .int64(2)]
        )
    }

    /// A conflict whose server copy the store deletes while this workspace's tokens expire:
    /// the refetch tells the conflict, so settling it with the store's side removes the
    /// record rather than bringing the deleted version back.
    @Test func aRefetchTellsAPendingConflictThatTheStoreDeletedItsRecord() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop"), phone = try f.device("phone")
        _ = try await phone.pull()
        try laptop.write("notes", "r", #"{"a": 1}"#)
        _ = try await laptop.push()
        try phone.write("notes", "r", #"{"b": 2}"#)  // new here, never synced
        let first = try await phone.pull()
        #expect(first.conflicts.map(\.recordName) == ["r"])
        try FileManager.default.removeItem(atPath: laptop.path("notes", "r"))
        f.storage.rewriteHistory()
        _ = try await laptop.push()

        let refetched = try await phone.pull()
        #expect(refetched.expiredTokens.count >= 1)
        #expect(try phone.workspace.allConflicts().first?.server == nil, "the conflict learnt the deletion")
        _ = try phone.resolve(strategy: .theirs)
        #expect(try phone.fields("notes", "r") == nil, "the store's side is: no such record")
        #expect(try await phone.status().isClean)
    }

    /// An edit pushed over a store copy that cannot be read is refused as a problem, not
    /// reported as a conflict with the store's copy "deleted" (settling that with the store's
    /// side would drop the edit while the store still holds the record); --force replaces it.
    @Test func anEditOverAnUnreadableStoreCopyIsRefusedNotAConflict() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        try laptop.write("notes", "b", #"{"v": 1}"#)
        _ = try await laptop.push()
        _ = try await laptop.pull()
        let b = try RecordID(recordName: "b", zoneID: zone("notes"))
        f.storage.commitRawRecord(b, bytes: Array("{broken".utf8))
        _ = try await laptop.pull()
        try laptop.write("notes", "b", #"{"v": 99}"#)

        let refused = try await laptop.push()
        #expect(refused.conflicts.isEmpty, "not a conflict: \(refused.conflicts)")
        #expect(refused.notSent.contains { $0.contains("cannot be read") && $0.contains("replace it") }, "\(refused.notSent)")
        #expect(refused.remedies == [.forceSave])
        #expect(try laptop.fields("notes", "b") == ["v": .int64(99)], "the edit stays")

        let forced = try await laptop.push(force: true)
        #expect(forced.saved == [b])
        let alice = try f.store("alice")
        #expect(try await alice.fetchRecords([b])[0].result.get().fields == ["v": .int64(99)])
    }

    /// A forced push lists the store versions it replaced without having pulled them, with
    /// the tag the store held and the one the workspace knew; records it had pulled are not.
    @Test func aForcedPushListsWhatItOverwrote() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        let phone = try f.device("phone")
        try laptop.write("notes", "a", #"{"v": 1}"#)
        try laptop.write("notes", "b", #"{"v": 1}"#)
        _ = try await laptop.push()
        _ = try await phone.pull()
        try phone.write("notes", "a", #"{"v": 2}"#)
        try phone.write("notes", "c", #"{"v": 2}"#)
        let phonePush = try await phone.push()
        #expect(phonePush.saved.count == 2)
        try laptop.write("notes", "a", #"{"v": 3}"#)
        try laptop.write("notes", "b", #"{"v": 3}"#)
        try laptop.write("notes", "c", #"{"v": 3}"#)
        let known = try #require(laptop.workspace.systemFields(RecordID(recordName: "a", zoneID: zone("notes")))?.changeTag)

        let forced = try await laptop.push(force: true)
        let alice = try f.store("alice")
        let stored = try await alice.fetchRecords([
            RecordID(recordName: "a", zoneID: zone("notes")), RecordID(recordName: "c", zoneID: zone("notes")),
        ])
        #expect(forced.overwritten.map(\.recordID.recordName) == ["a", "c"], "\(forced.overwritten)")
        #expect(forced.overwritten.first?.knownTag == known)
        #expect(forced.overwritten.last?.knownTag == nil, "c was never pulled here")
        #expect(forced.overwritten.allSatisfy { $0.changeTag != known })
        #expect(try stored.map { try $0.result.get().fields["v"] } == [.int64(3), .int64(3)])
        let plain = try await laptop.push()
        #expect(plain.overwritten.isEmpty)
    }

    /// A record file that cannot be decoded on the re-upload path (clean by its stat: only
    /// the re-upload reads it) is a listed problem, and nothing is sent.
    @Test func anUnreadableFileOnTheReuploadPathIsAProblemNotAnEmptyRecord() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        try laptop.write("notes", "a", #"{"v": 1}"#)
        try laptop.write("notes", "b", #"{"v": 2}"#)
        _ = try await laptop.push()
        let alice = try f.store("alice")
        try await alice.zoneOp(.markEncryptedDataReset(zone("notes")))
        // Damage `a` in place, keeping its size, inode and modification time.
        try overwriteKeepingStamp(laptop.path("notes", "a"), with: #"{"v": ?}"#)

        let before = f.storage.history()
        let error = await pushError(laptop)
        guard case .invalidFiles(let problems) = error?.reason else {
            Issue.record("expected the push to list a problem, got \(String(describing: error))")
            return
        }
        #expect(problems.count == 1 && problems[0].description.hasPrefix("private/notes/a.json"))
        #expect(f.storage.history() == before, "nothing was sent")
    }
}

/// Overwrites a file's bytes in place (same length) and sets its modification time back.
func overwriteKeepingStamp(_ path: String, with text: String) throws {
    var st = stat()
    #expect(stat(path, &st) == 0)
    let bytes = Array(text.utf8)
    #expect(Int(st.st_size) == bytes.count, "the replacement must keep the size")
    let fd = open(path, O_WRONLY)
    #expect(fd >= 0)
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    var times = [st.st_atim, st.st_mtim]
    #expect(futimens(fd, &times) == 0)
    close(fd)
}

/// Step by step: a pull killed after writing the last page of a zone but before saving its
/// token resumes from the page before, whose batch is fixed to an older target. The resumed
/// batch must not end there while the database token moves to the head, or a change
/// committed in between is never fetched.
@Suite struct KilledMidBatchTests {
    @Test func aChangeAfterAPullKilledMidBatchStillArrives() async throws {
        let f = EngineFixture()
        var ws2 = try f.device("ws2")
        let ws1 = try f.device("ws1"), ws0 = try f.device("ws0")
        ws2.pageSize = 2
        ws2.fullFetchPageSize = 3
        ws2.zoneWorkers = 1
        try ws2.write("z0", "r2", #"{"b": "w2v2"}"#)
        try ws1.write("z0", "r0", #"{"a": "w1v3"}"#)
        try ws0.write("z0", "r0", #"{"a": "w0v5"}"#)
        try ws2.write("z0", "r1", #"{"b": "w2v6"}"#)
        _ = try await ws2.push()
        try ws0.write("z0", "r3", #"{"b": "w0v8"}"#)
        _ = try await ws0.push()
        let calls = Mutex(0)
        ws2.checkpoint = { (point: SyncEngine.Checkpoint) throws(RecSyncError) in
            if calls.withLock({
                $0 += 1; return $0
            }) == 4 {
                throw .internalError("killed at \(point)")
            }
        }
        let killed = await pullError(ws2)
        ws2.checkpoint = nil
        #expect(killed != nil)
        _ = try await ws1.pull()
        _ = try ws1.resolve(strategy: .ours)
        let pushed = try await ws1.push()
        #expect(pushed.saved.map(\.recordName) == ["r0"])
        let p1 = try await ws2.pull()
        let p2 = try await ws2.pull()
        #expect(try ws2.fields("z0", "r0") == ["a": .string("w1v3")], "killed: \(String(describing: killed)) then \(p1) then \(p2)")
    }
}

/// A page written ahead of its zone token, the pull killed before the token, then a record
/// of that page deleted on the store: the next pull's diff from the old token shows the
/// record neither created nor deleted, so the pull must look it up by name.
@Suite struct KilledBeforeZoneTokenTests {
    @Test func aRecordWrittenByAKilledPageAndDeletedSinceGoes() async throws {
        let f = EngineFixture()
        var phone = try f.device("phone")
        let alice = try f.store("alice")
        try await alice.createZones([zone("notes")])
        _ = try await phone.pull()  // a zone token from before the record
        let saved = try await alice.save([Build.record("r", in: zone("notes"), ["v": .int64(1)])])
        #expect(await phone.killed(at: .afterBatchBeforeZoneToken(zone("notes")), pullError) != nil)
        #expect(try phone.fields("notes", "r") == ["v": .int64(1)], "the page was written")
        _ = try await alice.delete(saved)

        _ = try await phone.pull()
        #expect(try phone.fields("notes", "r") == nil, "the deletion reached this workspace")
        #expect(try await phone.status().isClean)
        #expect(!FileManager.default.fileExists(atPath: phone.workspace.applyingPath(zone("notes"))))
    }
}
