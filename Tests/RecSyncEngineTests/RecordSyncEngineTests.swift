import Foundation
import RecSyncEngine
import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import Synchronization
import Testing

@Suite struct RecordSyncEngineTests {
    let storage = MemoryStorage()
    let zone: ZoneID

    init() throws {
        zone = try ZoneID(zoneName: "notes", ownerName: "alice")
    }

    func store(_ user: String = "alice", device: String) throws -> MemoryStore {
        MemoryStore(storage: storage, actor: try StoreActor(userRecordName: user, deviceID: device))
    }

    func engine(
        _ app: KillableApp, device: String, user: String = "alice", state: RecordSyncEngine.State? = nil, options: RecordSyncEngine.Options = .manual
    ) throws -> RecordSyncEngine {
        try RecordSyncEngine(store: store(user, device: device), state: state ?? app.savedState, delegate: app, options: options)
    }

    func id(_ name: String) throws -> RecordID { try RecordID(recordName: name, zoneID: zone) }

    /// An app whose zone is on the store and whose record "n" (v = 1) is pending.
    func appWithPendingSave() async throws -> (KillableApp, RecordSyncEngine) {
        let a = KillableApp()
        let ea = try engine(a, device: "a")
        try await ea.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: zone))])
        try await ea.sendChanges()
        try a.edit(id("n"), ["v": .int64(1)])
        try await ea.add(pendingRecordZoneChanges: [.saveRecord(id("n"))])
        return (a, ea)
    }

    @Test func twoAppsSyncSavesDeletesAndZones() async throws {
        let (a, b) = (KillableApp(), KillableApp())
        let ea = try engine(a, device: "a"), eb = try engine(b, device: "b")
        try a.edit(id("n1"), ["title": .string("one")])
        try a.edit(id("n2"), ["title": .string("two")])
        try await ea.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: zone))])
        try await ea.add(pendingRecordZoneChanges: [.saveRecord(id("n1")), .saveRecord(id("n2"))])
        try await ea.sendChanges()
        #expect(a.savedState.pendingRecordZoneChanges.isEmpty)
        #expect(a.savedState.pendingDatabaseChanges.isEmpty)
        #expect(try a.records[id("n1")]?.changeTag != nil, "the saved record came back with its change tag")

        try await eb.fetchChanges()
        #expect(try b.records[id("n1")]?.fields["title"] == .string("one"))
        #expect(b.records.count == 2)

        // b deletes one, a sees it go.
        try await eb.add(pendingRecordZoneChanges: [.deleteRecord(id("n2"))])
        let n2 = try id("n2")
        b.data.withLock { $0.records[n2] = nil }
        try await eb.sendChanges()
        try await ea.fetchChanges()
        #expect(try a.records[id("n2")] == nil)
        #expect(try a.records[id("n1")] != nil)

        // a deletes the zone; b is told why and drops it.
        try await ea.add(pendingDatabaseChanges: [.deleteZone(zone)])
        try await ea.sendChanges()
        try await eb.fetchChanges()
        #expect(b.records.isEmpty)
        #expect(b.data.withLock { $0.zonesGone } == [ZoneDeletion(zoneID: zone, reason: .deleted)])
        #expect(b.savedState.knownZones.isEmpty)
    }

    /// Refusals reach the app twice, as from CKSyncEngine: in `.sentRecordZoneChanges`, and
    /// as the send's `partialFailure` once `.didSendChanges` went. What went is saved, and a
    /// change refused for good is no longer pending.
    @Test func refusedChangesAreThrownAsAPartialFailureAfterTheEvents() async throws {
        let (a, b) = (KillableApp(), KillableApp())
        let ea = try engine(a, device: "a"), eb = try engine(b, device: "b")
        let (n, m) = (try id("n"), try id("m"))
        try a.edit(n, ["v": .int64(1)])
        try await ea.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: zone))])
        try await ea.add(pendingRecordZoneChanges: [.saveRecord(n)])
        try await ea.sendChanges()
        try await eb.fetchChanges()
        // b changes n first; a's edit of n then conflicts, while its new record m goes.
        try b.edit(n, ["v": .int64(2)])
        try await eb.add(pendingRecordZoneChanges: [.saveRecord(n)])
        try await eb.sendChanges()
        try a.edit(n, ["v": .int64(3)])
        try a.edit(m, ["v": .int64(4)])
        try await ea.add(pendingRecordZoneChanges: [.saveRecord(n), .saveRecord(m)])
        a.clearEvents()
        var thrown: RecSyncError?
        do { try await ea.sendChanges() } catch { thrown = error }
        guard case .partialFailure(let failure) = thrown?.reason else {
            Issue.record("a send with a refused record did not throw a partial failure: \(String(describing: thrown))")
            return
        }
        #expect(Array(failure.records.keys) == [n])
        #expect(failure.zones.isEmpty)
        guard case .serverRecordChanged(let conflict) = failure.records[n]?.reason else {
            Issue.record("not a conflict: \(failure)")
            return
        }
        #expect(conflict.server?.fields["v"] == .int64(2))
        #expect(a.events.last == "didSendChanges", "thrown before every event of the send went: \(a.events)")
        #expect(Array(a.data.withLock { $0.failedSaves.keys }) == [n], "the event carried the refusal too")
        #expect(a.records[m]?.changeTag != nil, "the rest of the send went")
        #expect(a.savedState.pendingRecordZoneChanges.isEmpty)
        guard case .object(let json) = RecSyncError.partialFailure(failure).json else { Issue.record("not an object"); return }
        #expect(json["kind"] == .string("partialFailure"))
        #expect(json["code"] == .int(2))
        #expect(json["zones"] == .array([]))
        #expect(
            json["records"]
                == .array([
                    .object([
                        "zone": .string(zone.description), "recordName": .string("n"), "error": RecSyncError.serverRecordChanged(conflict).json,
                    ])
                ]))
        #expect(RecSyncError.partialFailure(failure).message.contains("record 'n' in zone '\(zone)': serverRecordChanged"))

        // A send with nothing refused does not throw.
        var merged = try #require(conflict.server)
        merged.fields = ["v": .int64(5)]
        a.data.withLock { $0.records[n] = merged }
        try await ea.add(pendingRecordZoneChanges: [.saveRecord(n)])
        try await ea.sendChanges()
        try await eb.fetchChanges()
        #expect(b.records[n]?.fields["v"] == .int64(5))
    }

    /// An app sends a record with a file and another receives it: the engine uploads the file
    /// as an asset for the field, and writes a fetched asset into a new file, checked; a path
    /// that exists is not written through, and a file for a zone not on the store is refused.
    @Test func anAppSendsAFileAndAnotherReceivesIt() async throws {
        let (a, b) = (KillableApp(), KillableApp())
        let ea = try engine(a, device: "a"), eb = try engine(b, device: "b")
        let dir = TempDirectory("engine-assets")
        let bytes = (0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        #expect(FileManager.default.createFile(atPath: dir.file("scan"), contents: Data(bytes)))
        let n = try id("n")
        let written = Data(bytes)
        await #expect(throws: RecSyncError.zoneNotFound(zone)) { _ = try await ea.uploadAsset(fileAt: dir.file("scan"), for: n, field: "scan") }
        try await ea.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: zone))])
        try await ea.sendChanges()
        let asset = try await ea.uploadAsset(fileAt: dir.file("scan"), for: n, field: "scan")
        #expect(asset.size == Int64(written.count))
        try a.edit(n, ["scan": .asset(asset)])
        try await ea.add(pendingRecordZoneChanges: [.saveRecord(n)])
        try await ea.sendChanges()

        try await eb.fetchChanges()
        guard case .asset(let fetched)? = b.records[n]?.fields["scan"] else {
            Issue.record("no asset fetched: \(String(describing: b.records[n]))"); return
        }
        try await eb.downloadAsset(fetched, of: n, to: dir.file("received"))
        #expect(FileManager.default.contents(atPath: dir.file("received")) == written)
        try writeFile(dir.file("taken"), "mine")
        await #expect(throws: RecSyncError.self) { try await eb.downloadAsset(fetched, of: n, to: dir.file("taken")) }
        #expect(FileManager.default.contents(atPath: dir.file("taken")) == Data("mine".utf8), "a file that exists is left alone")
    }

    @Test func eventsComeInOrderWithDataBeforeTheTokenThatCoversIt() async throws {
        let (a, b) = (KillableApp(), KillableApp())
        let ea = try engine(a, device: "a"), eb = try engine(b, device: "b")
        try a.edit(id("n1"), ["v": .int64(1)])
        try await ea.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: zone))])
        try await ea.add(pendingRecordZoneChanges: [.saveRecord(id("n1"))])
        a.clearEvents()
        try await ea.sendChanges()
        #expect(a.events == ["willSendChanges", "sentDatabaseChanges", "stateUpdate", "sentRecordZoneChanges", "stateUpdate", "didSendChanges"])

        try await eb.fetchChanges()
        #expect(
            b.events == [
                "accountChange", "stateUpdate",
                "willFetchChanges",
                // The zone is noted as about to be fetched (its token ahead of the scope's) first.
                "stateUpdate", "fetchedDatabaseChanges",
                "willFetchRecordZoneChanges(alice/notes)", "stateUpdate", "fetchingWholeZone(alice/notes)", "fetchedRecordZoneChanges(alice/notes)",
                "stateUpdate", "didFetchRecordZoneChanges(alice/notes)",
                "stateUpdate",
                "fetchedDatabaseChanges", "stateUpdate", "didFetchChanges",
            ])
        // Nothing new: no zone is fetched.
        b.clearEvents()
        try await eb.fetchChanges()
        #expect(!b.events.contains { $0.hasPrefix("willFetchRecordZoneChanges") }, "\(b.events)")
    }

    @Test func aConflictCarriesServerClientAndAncestorAndTheMergeGoesThrough() async throws {
        let (a, b) = (KillableApp(), KillableApp())
        let ea = try engine(a, device: "a"), eb = try engine(b, device: "b")
        try a.edit(id("n"), ["title": .string("base"), "body": .string("x")])
        try await ea.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: zone))])
        try await ea.add(pendingRecordZoneChanges: [.saveRecord(id("n"))])
        try await ea.sendChanges()
        try await eb.fetchChanges()

        try a.edit(id("n"), ["title": .string("from a"), "body": .string("x")])
        try b.edit(id("n"), ["title": .string("base"), "body": .string("from b")])
        try await ea.add(pendingRecordZoneChanges: [.saveRecord(id("n"))])
        try await ea.sendChanges()
        try await eb.add(pendingRecordZoneChanges: [.saveRecord(id("n"))])
        #expect(await refusedBySend(eb)?.records.mapValues(\.code) == [try id("n"): .serverRecordChanged])

        let conflict = try #require(b.data.withLock { $0.conflicts.first })
        #expect(conflict.server?.fields["title"] == .string("from a"))
        #expect(conflict.client?.fields["body"] == .string("from b"))
        #expect(conflict.ancestor?.fields["title"] == .string("base"))
        #expect(b.savedState.pendingRecordZoneChanges.isEmpty, "a refused save leaves the pending list: the app decides")

        // The app merges onto the server's version (its change tag) and saves again.
        var merged = try #require(conflict.server)
        merged.fields["body"] = .string("from b")
        b.data.withLock { $0.records[merged.recordID] = merged }
        try await eb.add(pendingRecordZoneChanges: [.saveRecord(id("n"))])
        try await eb.sendChanges()
        try await ea.fetchChanges()
        #expect(try a.records[id("n")]?.fields == ["title": .string("from a"), "body": .string("from b")])
    }

    @Test func aCrashWhileSavingFetchedRecordsRedeliversThemAndLosesNothing() async throws {
        let (a, b) = (KillableApp(), KillableApp())
        let ea = try engine(a, device: "a")
        try await ea.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: zone))])
        for i in 0..<5 {
            try a.edit(id("n\(i)"), ["v": .int64(Int64(i))])
            try await ea.add(pendingRecordZoneChanges: [.saveRecord(id("n\(i)"))])
        }
        try await ea.sendChanges()

        // b's app dies while it stores the second page: the first page's token was saved.
        b.data.withLock { $0.failOn = "fetchedRecordZoneChanges" }
        var small = RecordSyncEngine.Options.manual
        small.fetchPageSize = 2
        let first = try engine(b, device: "b", options: small)
        await #expect(throws: RecSyncError.self) { try await first.fetchChanges() }
        #expect(b.records.isEmpty)
        #expect(b.savedState.token(for: .private) == nil, "the scope token does not move past zones not done")

        // A new engine from what the app saved brings everything.
        let again = try engine(b, device: "b", options: small)
        try await again.fetchChanges()
        #expect(b.records.count == 5)
        #expect(b.savedState.token(for: zone) != nil)
    }

    @Test func aCrashAfterASendLandedIsRecognisedAsTheSameSave() async throws {
        let (a, ea) = try await appWithPendingSave()
        try await ea.sendChanges()
        try a.edit(id("n"), ["v": .int64(2)])
        try await ea.add(pendingRecordZoneChanges: [.saveRecord(id("n"))])

        // The store takes the save; the app dies before it records the new change tag.
        a.data.withLock { $0.failOn = "sentRecordZoneChanges" }
        await #expect(throws: RecSyncError.self) { try await ea.sendChanges() }
        #expect(a.savedState.pendingRecordZoneChanges == [.saveRecord(try id("n"))], "still pending")

        let restarted = try engine(a, device: "a")
        try await restarted.sendChanges()
        #expect(a.data.withLock { $0.conflicts }.isEmpty, "its own landed save is not a conflict")
        #expect(a.savedState.pendingRecordZoneChanges.isEmpty)
        let stored = try await store(device: "x").fetchRecords([id("n")])
        #expect(try stored.first?.result.get().changeTag == a.records[id("n")]?.changeTag)
    }

    @Test func aChangeAddedWhileItsRecordIsSentStaysPending() async throws {
        let (a, ea) = try await appWithPendingSave()
        // The user edits again while the first version is on its way.
        let n = try id("n")
        a.data.withLock { d in
            d.onEvent = { event, _ in
                guard case .sentRecordZoneChanges = event else { return }
                try? a.edit(n, ["v": .int64(2)])
                try? await ea.add(pendingRecordZoneChanges: [.saveRecord(n)])
            }
        }
        try await ea.sendChanges()
        a.data.withLock { $0.onEvent = nil }
        #expect(a.savedState.pendingRecordZoneChanges == [.saveRecord(n)], "the second edit is still to send")
    }

    @Test func anUnreadableRecordDoesNotHoldUpItsZoneAndArrivesOnceReadable() async throws {
        let (a, b) = (KillableApp(), KillableApp())
        let ea = try engine(a, device: "a")
        try await ea.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: zone))])
        try a.edit(id("good"), ["v": .int64(1)])
        try await ea.add(pendingRecordZoneChanges: [.saveRecord(id("good"))])
        try await ea.sendChanges()
        storage.commitRawRecord(try id("bad"), bytes: Array("not a record".utf8))

        let eb = try engine(b, device: "b")
        try await eb.fetchChanges()
        #expect(try b.records[id("good")] != nil)
        #expect(try b.data.withLock { $0.undeliverable } == [id("bad")])
        #expect(try b.savedState.retryRecords == [id("bad")])

        // A second fetch asks again (and reports it again), without holding up the zone.
        b.data.withLock { $0.undeliverable = [] }
        try await eb.fetchChanges()
        #expect(try b.data.withLock { $0.undeliverable } == [id("bad")])

        // Someone repairs it with plain git; the next fetch delivers it and the retry ends.
        let repaired = try Record(recordID: id("bad"), recordType: "Note", fields: ["v": .int64(2)])
        storage.commitRawRecord(try id("bad"), bytes: StoreEncoding.encode(repaired))
        try await eb.fetchChanges()
        #expect(b.savedState.retryRecords.isEmpty)
        #expect(try b.records[id("bad")]?.fields["v"] == .int64(2))
    }

    @Test func aPurgedZoneIsReportedWithItsReasonToTheSender() async throws {
        let (a, b) = (KillableApp(), KillableApp())
        let ea = try engine(a, device: "a"), eb = try engine(b, device: "b")
        try await ea.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: zone))])
        try a.edit(id("n"), ["v": .int64(1)])
        try await ea.add(pendingRecordZoneChanges: [.saveRecord(id("n"))])
        try await ea.sendChanges()
        try await eb.fetchChanges()

        _ = try await store(device: "admin").modifyRecordZones([.purge(zone)])
        try b.edit(id("n"), ["v": .int64(2)])
        try await eb.add(pendingRecordZoneChanges: [.saveRecord(id("n"))])
        #expect(await refusedBySend(eb)?.records.mapValues(\.code) == [try id("n"): .userDeletedZone])
        #expect(b.data.withLock { $0.zonesGone } == [ZoneDeletion(zoneID: zone, reason: .purged)])
        #expect(b.savedState.pendingRecordZoneChanges.isEmpty)
        // A save of the zone does not bring a purged zone back; an explicit recreate does,
        // without the old records, and the app's next save lands in it.
        try await eb.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: zone))])
        #expect(await refusedBySend(eb)?.zones.mapValues(\.code) == [zone: .userDeletedZone])
        #expect(try await store(device: "x").fetchAllRecordZones(scope: .private).isEmpty)
        try await eb.add(pendingDatabaseChanges: [.recreateZone(RecordZone(zoneID: zone))])
        try await eb.add(pendingRecordZoneChanges: [.saveRecord(id("n"))])
        b.data.withLock { d in
            d.records = d.records.mapValues { r in
                var r = r; r.changeTag = nil; return r
            }
        }
        try await eb.sendChanges()
        #expect(try await store(device: "x").fetchAllRecordZones(scope: .private).map(\.zoneID) == [zone])
        #expect(try await store(device: "x").recordZoneChanges(zone: zone, since: nil).modifications.count == 1)
    }

    @Test func aStateFromAnotherStoreOrUserIsSwitchedAndALaterFormatRefused() async throws {
        let a = KillableApp()
        let ea = try engine(a, device: "a")
        let signIns = Mutex<[RecordSyncEngine.AccountChange]>([])
        a.data.withLock { d in
            d.onEvent = { event, _ in if case .accountChange(let change) = event { signIns.withLock { $0.append(change) } } }
        }
        try await ea.add(pendingDatabaseChanges: [.saveZone(RecordZone(zoneID: zone))])
        try await ea.sendChanges()
        try await ea.fetchChanges()
        let saved = a.savedState
        let aliceHere = RecordSyncEngine.Account(userRecordName: "alice", storeID: (try store(device: "a")).storeID)
        #expect(saved.storeID == aliceHere.storeID)
        #expect(signIns.withLock { $0 } == [.signIn(current: aliceHere)], "once, on the first call")

        // Saved for this store, opened on another: the state starts over, with the app told.
        let other = MemoryStore(storage: MemoryStorage(), actor: try StoreActor(userRecordName: "alice"))
        try a.edit(id("n1"), ["v": .int64(1)])
        try await ea.add(pendingRecordZoneChanges: [.saveRecord(id("n1"))])
        let pendingThere = a.savedState
        let moved = try RecordSyncEngine(store: other, state: pendingThere, delegate: a, options: .manual)
        try await moved.fetchChanges()
        let elsewhere = RecordSyncEngine.Account(userRecordName: "alice", storeID: other.storeID)
        #expect(signIns.withLock { $0.last } == .switchAccounts(previous: aliceHere, current: elsewhere))
        #expect(a.savedState.storeID == other.storeID)
        #expect(a.savedState.pendingRecordZoneChanges.isEmpty, "the old store's pending changes are not sent to this one")
        #expect(a.savedState.knownZones.isEmpty && a.savedState.token(for: .private) != nil, "fetched from the start")

        // Another user on the same store: a switch too, delivered before the first add's update.
        let bob = KillableApp()
        let asBob = try engine(bob, device: "a", user: "bob", state: saved)
        try await asBob.add(pendingDatabaseChanges: [])
        #expect(bob.events.prefix(2) == ["accountChange", "stateUpdate"])
        #expect(bob.savedState.userRecordName == "bob")

        var json = String(decoding: try saved.serialized(), as: UTF8.self)
        json = json.replacingOccurrences(of: "\"version\":1", with: "\"version\":99")
        #expect(throws: RecSyncError.self) { _ = try RecordSyncEngine.State(serialized: Data(json.utf8)) }
        #expect(throws: RecSyncError.self) { _ = try RecordSyncEngine.State(serialized: Data("{".utf8)) }
        #expect(try RecordSyncEngine.State(serialized: saved.serialized()) == saved)
    }

    @Test func anAccountChangeTheAppDidNotTakeInIsDeliveredAgain() async throws {
        let a = KillableApp()
        a.data.withLock { $0.failOn = "accountChange" }
        let ea = try engine(a, device: "a")
        await #expect(throws: RecSyncError.self) { try await ea.fetchChanges() }
        #expect(a.savedState.storeID == nil, "nothing saved")
        try await ea.fetchChanges()
        #expect(a.events.prefix(3) == ["accountChange", "stateUpdate", "willFetchChanges"])
        #expect(a.savedState.storeID != nil)
    }
}
