import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import Testing

/// The RemoteStore contract, run against both implementations.
@Suite struct ContractTests {
    let notes = Build.zone("notes")
    let todo = Build.zone("todo")

    @Test(arguments: StoreKind.allCases)
    func nilTokenFetchesEverything(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let alice = try fixture.store(as: "alice")
        try await alice.createZones([notes, todo])
        let saved = try await alice.save((1...5).map { Build.record("r\($0)", in: notes, ["n": .int64(Int64($0))]) })

        let db = try await alice.databaseChanges(scope: .private, since: nil)
        #expect(Set(db.modifications) == [notes, todo])
        #expect(db.deletions.isEmpty)
        #expect(!db.moreComing)

        let changes = try await alice.allZoneChanges(notes, since: nil)
        #expect(names(changes.records) == ["r1", "r2", "r3", "r4", "r5"])
        // Own changes come back, recognisable by change tag.
        for record in changes.records {
            let mine = saved.first { $0.recordID == record.recordID }
            #expect(mine?.changeTag == record.changeTag)
            #expect(mine?.fields == record.fields)
            #expect(record.created?.userRecordName == "alice")
        }
        // Nothing changed since: empty, and the same zone is not reported again.
        let again = try await alice.recordZoneChanges(zone: notes, since: changes.token)
        #expect(again.modifications.isEmpty && again.deletions.isEmpty && !again.moreComing)
        let db2 = try await alice.databaseChanges(scope: .private, since: db.changeToken)
        #expect(db2.modifications.isEmpty && db2.deletions.isEmpty)
    }

    @Test(arguments: StoreKind.allCases)
    func aFetchFromTheBeginningSaysHowManyRecordsToExpect(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let alice = try fixture.store(as: "alice")
        try await alice.createZones([notes])
        _ = try await alice.save((1...7).map { Build.record("r\($0)", in: notes) })
        let first = try await alice.recordZoneChanges(zone: notes, since: nil, resultsLimit: 3, desiredKeys: nil)
        #expect(first.recordCountEstimate == 7)
        #expect(first.modifications.count == 3 && first.moreComing)
        // Later pages do not count again.
        var page = try await alice.recordZoneChanges(zone: notes, since: first.changeToken, resultsLimit: 3, desiredKeys: nil)
        #expect(page.recordCountEstimate == nil)
        while page.moreComing { page = try await alice.recordZoneChanges(zone: notes, since: page.changeToken, resultsLimit: 3, desiredKeys: nil) }
        try await alice.createZones([todo])
        #expect(try await alice.recordZoneChanges(zone: todo, since: nil, resultsLimit: 3, desiredKeys: nil).recordCountEstimate == 0)
        // A fetch since a token counts the records changed since, deletions included, on its
        // first page: over several pages, and on one.
        let saved = try await alice.save((1...5).map { Build.record("n\($0)", in: notes) })
        _ = try await alice.delete(Array(saved.prefix(1)))
        let since = try await alice.recordZoneChanges(zone: notes, since: page.changeToken, resultsLimit: 2, desiredKeys: nil)
        #expect(since.recordCountEstimate == 4 && since.moreComing, "4 new records; the deleted one never existed at the token")
        let next = try await alice.recordZoneChanges(zone: notes, since: since.changeToken, resultsLimit: 2, desiredKeys: nil)
        #expect(next.recordCountEstimate == nil)
        _ = try await alice.delete(Array(saved.suffix(1)))
        var last = next
        while last.moreComing { last = try await alice.recordZoneChanges(zone: notes, since: last.changeToken, resultsLimit: 2, desiredKeys: nil) }
        _ = try await alice.save([Build.record("z", in: notes)])
        let small = try await alice.recordZoneChanges(zone: notes, since: last.changeToken, resultsLimit: 10, desiredKeys: nil)
        #expect(small.recordCountEstimate == small.modifications.count + small.deletions.count)
    }

    @Test(arguments: StoreKind.allCases)
    func incrementalFetchReturnsOnlyChanges(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let alice = try fixture.store(as: "alice")
        try await alice.createZones([notes, todo])
        var saved = try await alice.save((1...20).map { Build.record("r\($0)", in: notes, type: "Note", ["n": .int64(Int64($0))]) })
        let db = try await alice.databaseChanges(scope: .private, since: nil)
        let first = try await alice.allZoneChanges(notes, since: nil)

        saved[0].fields["n"] = .int64(100)
        let updated = try await alice.save([saved[0], Build.record("new", in: notes)])
        _ = try await alice.delete([saved[1]])

        let db2 = try await alice.databaseChanges(scope: .private, since: db.changeToken)
        #expect(db2.modifications == [notes], "only the zone with changes is reported")
        let next = try await alice.allZoneChanges(notes, since: first.token)
        #expect(names(next.records) == ["new", "r1"])
        #expect(next.records.first { $0.recordID.recordName == "r1" }?.changeTag == updated[0].changeTag)
        #expect(next.deletions == [RecordDeletionEvent(recordID: saved[1].recordID, recordType: "Note")])
    }

    @Test(arguments: StoreKind.allCases)
    func pagingResumesFromMidBatchTokenEvenAfterTheHeadMoves(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let alice = try fixture.store(as: "alice")
        try await alice.createZones([notes])
        try await alice.save((0..<25).map { Build.record(String(format: "r%02d", $0), in: notes) })

        let page1 = try await alice.recordZoneChanges(zone: notes, since: nil, resultsLimit: 10, desiredKeys: nil)
        #expect(page1.modifications.count == 10)
        #expect(page1.moreComing)
        // The head moves between pages: the batch continues against its original target.
        try await alice.save((0..<3).map { Build.record("late\($0)", in: notes) })
        let page2 = try await alice.recordZoneChanges(zone: notes, since: page1.changeToken, resultsLimit: 10, desiredKeys: nil)
        let page3 = try await alice.recordZoneChanges(zone: notes, since: page2.changeToken, resultsLimit: 10, desiredKeys: nil)
        #expect(page2.modifications.count == 10 && page2.moreComing)
        // The batch is done, but the head moved on: more is coming (what landed meanwhile),
        // so a client never stops at the old target while its database token moves past it.
        #expect(page3.modifications.count == 5 && page3.moreComing)
        let all = (page1.modifications + page2.modifications + page3.modifications).map(\.recordID.recordName)
        #expect(Set(all).count == 25)
        #expect(!all.contains { $0.hasPrefix("late") })
        // Resuming the same mid-batch token again gives the same page (a killed client retries it).
        let page2Again = try await alice.recordZoneChanges(zone: notes, since: page1.changeToken, resultsLimit: 10, desiredKeys: nil)
        #expect(page2Again.modifications.map(\.recordID) == page2.modifications.map(\.recordID))
        // The next fetch picks up what landed meanwhile, and only that.
        let rest = try await alice.recordZoneChanges(zone: notes, since: page3.changeToken, resultsLimit: 10, desiredKeys: nil)
        #expect(names(rest.modifications.compactMap { try? $0.result.get() }) == ["late0", "late1", "late2"])
        #expect(!rest.moreComing, "caught up with the head")
    }

    @Test(arguments: StoreKind.allCases)
    func databaseChangesPage(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let alice = try fixture.store(as: "alice")
        let zones = (0..<5).map { Build.zone("z\($0)") }
        try await alice.createZones(zones)
        var seen: [ZoneID] = []
        var token: ServerChangeToken?
        var pages = 0
        repeat {
            let page = try await alice.databaseChanges(scope: .private, since: token, resultsLimit: 2)
            seen += page.modifications
            token = page.changeToken
            pages += 1
            if !page.moreComing { break }
        } while pages < 10
        #expect(pages == 3)
        #expect(Set(seen) == Set(zones) && seen.count == 5)
    }

    @Test(arguments: StoreKind.allCases)
    func desiredKeysSelectFields(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let alice = try fixture.store(as: "alice")
        try await alice.createZones([notes])
        try await alice.save([Build.record("r", in: notes, ["a": .string("A"), "b": .int64(2), "c": .boolean(true)])])
        let all = try await alice.recordZoneChanges(zone: notes, since: nil, resultsLimit: 0, desiredKeys: nil)
        let none = try await alice.recordZoneChanges(zone: notes, since: nil, resultsLimit: 0, desiredKeys: [])
        let some = try await alice.recordZoneChanges(zone: notes, since: nil, resultsLimit: 0, desiredKeys: ["a", "c", "zzz"])
        #expect(try all.modifications[0].result.get().fields.keys.sorted() == ["a", "b", "c"])
        let bare = try none.modifications[0].result.get()
        #expect(bare.fields.isEmpty)
        #expect(bare.changeTag != nil && bare.recordType == "Note", "system fields come even with no keys")
        #expect(try some.modifications[0].result.get().fields.keys.sorted() == ["a", "c"])
    }

    @Test(arguments: StoreKind.allCases)
    func zoneDeletionReasons(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let alice = try fixture.store(as: "alice")
        let (gone, purged, reset) = (Build.zone("gone"), Build.zone("purged"), Build.zone("reset"))
        try await alice.createZones([gone, purged, reset, notes])
        try await alice.save([Build.record("x", in: purged), Build.record("y", in: reset)])
        let before = try await alice.databaseChanges(scope: .private, since: nil)

        try await alice.zoneOp(.delete(gone))
        try await alice.zoneOp(.purge(purged))
        try await alice.zoneOp(.markEncryptedDataReset(reset))

        let after = try await alice.databaseChanges(scope: .private, since: before.changeToken)
        #expect(after.modifications.isEmpty)
        let reasons = Dictionary(uniqueKeysWithValues: after.deletions.map { ($0.zoneID, $0.reason) })
        #expect(reasons == [gone: .deleted, purged: .purged, reset: .encryptedDataReset])

        #expect(await caught { try await alice.recordZoneChanges(zone: purged, since: nil) } == .userDeletedZone(purged))
        #expect(await caught { try await alice.recordZoneChanges(zone: gone, since: nil) } == .zoneNotFound(gone))
        #expect(await caught { try await alice.recordZoneChanges(zone: reset, since: nil) } == .zoneNotFound(reset))
        let zones = try await alice.fetchAllRecordZones(scope: .private)
        #expect(zones.map(\.zoneID) == [notes])
        // Writing into a deleted zone fails per item.
        let write = try await alice.modifyRecords(
            saving: [Build.record("z", in: gone)], deleting: [], savePolicy: .ifServerRecordUnchanged, atomically: true)
        #expect(write.errors == [.zoneNotFound(gone)])
        // Deleting a zone that is not there.
        let again = try await alice.modifyRecordZones([.delete(gone)])
        #expect(throws: RecSyncError.zoneNotFound(gone)) { try again[0].result.get() }
    }

    @Test(arguments: StoreKind.allCases)
    func zoneCreatedAgainAfterDeletion(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let alice = try fixture.store(as: "alice")
        try await alice.createZones([notes])
        try await alice.save([Build.record("old", in: notes)])
        let db0 = try await alice.databaseChanges(scope: .private, since: nil)
        let z0 = try await alice.allZoneChanges(notes, since: nil)

        try await alice.zoneOp(.delete(notes))
        let db1 = try await alice.databaseChanges(scope: .private, since: db0.changeToken)
        #expect(db1.deletions.map(\.zoneID) == [notes])

        try await alice.createZones([notes])
        try await alice.save([Build.record("new", in: notes)])
        // Seen from before the deletion, the zone simply changed; from after it, it is new.
        let fromBefore = try await alice.databaseChanges(scope: .private, since: db0.changeToken)
        #expect(fromBefore.modifications == [notes] && fromBefore.deletions.isEmpty)
        let fromBetween = try await alice.databaseChanges(scope: .private, since: db1.changeToken)
        #expect(fromBetween.modifications == [notes])
        // A zone token of the old incarnation is expired; a fresh fetch sees only the new record.
        let stale = await caught { try await alice.recordZoneChanges(zone: notes, since: z0.token) }
        #expect(stale?.code == .changeTokenExpired)
        let fresh = try await alice.allZoneChanges(notes, since: nil)
        #expect(names(fresh.records) == ["new"])
    }

    @Test(arguments: StoreKind.allCases)
    func tokensOfTheWrongKindZoneOrStoreAreRefused(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let other = try StoreFixture(kind, name: "other-store")
        let alice = try fixture.store(as: "alice")
        let aliceElsewhere = try other.store(as: "alice")
        try await alice.createZones([notes, todo])
        try await aliceElsewhere.createZones([notes])
        let db = try await alice.databaseChanges(scope: .private, since: nil)
        let zoneToken = try await alice.recordZoneChanges(zone: notes, since: nil).changeToken
        let foreign = try await aliceElsewhere.recordZoneChanges(zone: notes, since: nil).changeToken

        #expect(
            await caught { try await alice.databaseChanges(scope: .private, since: zoneToken) }
                == .badToken(.wrongKind(expected: "database", found: "zone")))
        #expect(
            await caught { try await alice.recordZoneChanges(zone: notes, since: db.changeToken) }
                == .badToken(.wrongKind(expected: "zone", found: "database")))
        #expect(
            await caught { try await alice.recordZoneChanges(zone: todo, since: zoneToken) } == .badToken(.wrongZone(expected: todo, found: notes)))
        #expect(
            await caught { try await alice.recordZoneChanges(zone: notes, since: foreign) }
                == .badToken(.wrongStore(expected: alice.storeID, found: aliceElsewhere.storeID)))
        #expect(
            await caught { try await alice.databaseChanges(scope: .private, since: ServerChangeToken(rawValue: "rsct1.!!!")) } == .badToken(.garbled))
        #expect(await caught { try await alice.databaseChanges(scope: .private, since: ServerChangeToken(rawValue: "hello")) } == .badToken(.garbled))
        let wrongScope = await caught { try await alice.databaseChanges(scope: .shared, since: db.changeToken) }
        guard case .badToken(.wrongScope) = wrongScope?.reason else {
            Issue.record("expected wrongScope, got \(String(describing: wrongScope))")
            return
        }
    }

    /// Version 2 tokens (of a store with one ref per zone) decode, but name no commit of
    /// main: a store of today refuses them as a version it does not read.
    @Test(arguments: [StoreKind.memory, .git])
    func version2TokensAreRefused(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let alice = try fixture.store(as: "alice")
        try await alice.createZones([notes])
        let head = ZoneRefHead(refSuffix: RefNames.suffix(for: notes), head: "0123456789abcdef0123456789abcdef01234567", visible: true)
        let db = ChangeTokenContent(storeID: alice.storeID, scope: .private, user: "alice", heads: [head]).token
        let v1 = try ChangeTokenContent.decode(try await alice.recordZoneChanges(zone: notes, since: nil).changeToken)
        guard case .zone(_, let incarnation) = v1.kind else {
            Issue.record("a zone token of kind \(v1.kind)")
            return
        }
        let zone = ChangeTokenContent(storeID: alice.storeID, zone: notes, incarnation: incarnation, refCommit: head.head).token
        #expect(await caught { try await alice.databaseChanges(scope: .private, since: db) } == .badToken(.unsupportedVersion(2)))
        #expect(await caught { try await alice.recordZoneChanges(zone: notes, since: zone) } == .badToken(.unsupportedVersion(2)))
        #expect(await caught { try await alice.checkSubscriptions([], scope: .private, since: db) } == .badToken(.unsupportedVersion(2)))
    }

    @Test(arguments: StoreKind.allCases)
    func tokensExpireWhenHistoryIsRewritten(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let alice = try fixture.store(as: "alice")
        try await alice.createZones([notes])
        try await alice.save([Build.record("a", in: notes)])
        let db = try await alice.databaseChanges(scope: .private, since: nil)
        let zone = try await alice.recordZoneChanges(zone: notes, since: nil)
        try await alice.save([Build.record("b", in: notes)])

        try fixture.rewriteHistory()

        if kind == .zoneRefs {
            // A database token there is each zone's head: a rewritten zone is a changed zone,
            // whose own token then expires.
            #expect(try await alice.databaseChanges(scope: .private, since: db.changeToken).modifications == [notes])
        } else {
            #expect(await caught { try await alice.databaseChanges(scope: .private, since: db.changeToken) }?.code == .changeTokenExpired)
        }
        #expect(await caught { try await alice.recordZoneChanges(zone: notes, since: zone.changeToken) }?.code == .changeTokenExpired)
        // Refetching from nil works and sees everything.
        let fresh = try await alice.allZoneChanges(notes, since: nil)
        #expect(names(fresh.records) == ["a", "b"])
    }

    @Test(arguments: StoreKind.allCases)
    func staleChangeTagIsAConflictWithThreeCopies(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let alice = try fixture.store(as: "alice")
        try await alice.createZones([notes])
        let original = try await alice.save([Build.record("r", in: notes, ["title": .string("v1"), "body": .string("b")])])[0]

        var mine = original
        mine.fields["title"] = .string("phone")
        var theirs = original
        theirs.fields["body"] = .string("laptop")
        let landed = try await alice.save([theirs])[0]
        #expect(landed.changeTag != original.changeTag)

        let result = try await alice.modifyRecords(saving: [mine], deleting: [], savePolicy: .ifServerRecordUnchanged, atomically: true)
        guard case .failure(let failure) = result.saveResults[0].result, case .serverRecordChanged(let conflict) = failure.reason else {
            Issue.record("expected a conflict, got \(result.saveResults[0].result)")
            return
        }
        #expect(conflict.server?.fields == landed.fields)
        #expect(conflict.server?.changeTag == landed.changeTag)
        #expect(conflict.client?.fields == mine.fields)
        #expect(conflict.ancestor?.fields == original.fields)
        #expect(conflict.ancestor?.changeTag == original.changeTag)
        #expect(result.commit == nil)

        // A stale deletion is a conflict too, with no client copy.
        let deletion = try await alice.modifyRecords(
            saving: [], deleting: [RecordDeletion(recordID: original.recordID, changeTag: original.changeTag)], savePolicy: .ifServerRecordUnchanged,
            atomically: true)
        guard case .failure(let failure) = deletion.deleteResults[0].result, case .serverRecordChanged(let c2) = failure.reason else {
            Issue.record("expected a delete conflict")
            return
        }
        #expect(c2.client == nil && c2.server?.changeTag == landed.changeTag)

        // Creating a record that exists: conflict without an ancestor.
        let create = try await alice.modifyRecords(
            saving: [Build.record("r", in: notes)], deleting: [], savePolicy: .ifServerRecordUnchanged, atomically: true)
        guard case .failure(let failure) = create.saveResults[0].result, case .serverRecordChanged(let c3) = failure.reason else {
            Issue.record("expected a create conflict")
            return
        }
        #expect(c3.ancestor == nil && c3.server != nil)

        // Merging into the server copy and saving again succeeds (CloudKit's rule).
        var merged = try #require(conflict.server)
        merged.fields["title"] = .string("phone")
        let final = try await alice.save([merged])[0]
        #expect(final.fields == ["title": .string("phone"), "body": .string("laptop")])
    }

    @Test(arguments: StoreKind.allCases)
    func zoneDeletionsGiveTheReasonOfEachZoneGone(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let alice = try fixture.store(as: "alice")
        let bob = try fixture.store(as: "bob")
        let (deleted, purged, reset, live, never) = (Build.zone("d"), Build.zone("p"), Build.zone("r"), Build.zone("l"), Build.zone("n"))
        let bobs = Build.zone("d", owner: "bob")
        try await alice.createZones([deleted, purged, reset, live])
        try await bob.createZones([bobs])
        try await alice.zoneOp(.delete(deleted))
        try await alice.zoneOp(.purge(purged))
        try await alice.zoneOp(.markEncryptedDataReset(reset))
        try await bob.zoneOp(.purge(bobs))

        let found = try await alice.fetchZoneDeletions([live, never, reset, purged, deleted, bobs])
        #expect(
            found == [
                ZoneDeletion(zoneID: deleted, reason: .deleted),
                ZoneDeletion(zoneID: purged, reason: .purged),
                ZoneDeletion(zoneID: reset, reason: .encryptedDataReset),
            ], "one per tombstone of the user's own zones, in zone order; another owner's is not told")
        // An explicit create brings a zone back, and its tombstone goes.
        try await alice.createZones([purged])
        #expect(try await alice.fetchZoneDeletions([purged]).isEmpty)
    }

    @Test(arguments: StoreKind.allCases)
    func savingOverADeletedRecordIsUnknownItem(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let alice = try fixture.store(as: "alice")
        try await alice.createZones([notes])
        let r = try await alice.save([Build.record("r", in: notes)])[0]
        _ = try await alice.delete([r])
        let result = try await alice.modifyRecords(saving: [r], deleting: [], savePolicy: .ifServerRecordUnchanged, atomically: true)
        #expect(result.errors == [.unknownItem(r.recordID)])
        let del = try await alice.modifyRecords(
            saving: [], deleting: [RecordDeletion(recordID: r.recordID, changeTag: r.changeTag)], savePolicy: .ifServerRecordUnchanged,
            atomically: true)
        #expect(del.errors == [.unknownItem(r.recordID)])
    }

    @Test(arguments: StoreKind.allCases)
    func savePoliciesChangedKeysAndAllKeys(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let alice = try fixture.store(as: "alice")
        try await alice.createZones([notes])
        let r = try await alice.save([Build.record("r", in: notes, ["a": .int64(1), "b": .int64(2)])])[0]
        _ = try await alice.save([
            {
                var x = r; x.fields["a"] = .int64(10); return x
            }()
        ])

        // Stale tag, but changedKeys overwrites only what the client sends.
        let partial = Build.record("r", in: notes, ["b": .int64(20)], tag: r.changeTag)
        let p = try await alice.save([partial], policy: .changedKeys)[0]
        #expect(p.fields == ["a": .int64(10), "b": .int64(20)])
        #expect(p.created == r.created, "created is kept from the store")

        let whole = Build.record("r", in: notes, ["c": .int64(3)], tag: "stale")
        let w = try await alice.save([whole], policy: .allKeys)[0]
        #expect(w.fields == ["c": .int64(3)])
    }

    @Test(arguments: StoreKind.allCases)
    func atomicZonesLandAllOrNothing(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let alice = try fixture.store(as: "alice")
        try await alice.createZones([notes, todo])
        try await alice.save([Build.record("taken", in: notes)])
        let batch = [
            Build.record("taken", in: notes),  // conflict: exists already
            Build.record("fine", in: notes),
            Build.record("other", in: todo),
        ]
        let atomic = try await alice.modifyRecords(saving: batch, deleting: [], savePolicy: .ifServerRecordUnchanged, atomically: true)
        guard case .failure(let failure) = atomic.saveResults[0].result, case .serverRecordChanged = failure.reason else {
            Issue.record("expected a conflict for a record that exists")
            return
        }
        #expect(atomic.saveResults[1].result == .failure(.batchRequestFailed(batch[1].recordID)))
        #expect(try atomic.saveResults[2].result.get().recordID == batch[2].recordID, "another zone lands")
        let fetched = try await alice.fetchRecords([batch[1].recordID, batch[2].recordID])
        #expect(fetched[0].result == .failure(.unknownItem(batch[1].recordID)))
        #expect((try? fetched[1].result.get()) != nil)

        let nonAtomic = try await alice.modifyRecords(
            saving: [Build.record("taken", in: notes), Build.record("fine", in: notes)], deleting: [], savePolicy: .ifServerRecordUnchanged,
            atomically: false)
        guard case .failure(let failure) = nonAtomic.saveResults[0].result, case .serverRecordChanged = failure.reason else {
            Issue.record("expected conflict")
            return
        }
        #expect((try? nonAtomic.saveResults[1].result.get()) != nil, "without atomicity the good item lands")
    }

    @Test(arguments: StoreKind.allCases)
    func deleteSelfReferencesCascade(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let alice = try fixture.store(as: "alice")
        try await alice.createZones([notes])
        let saved = try await alice.save([
            Build.record("parent", in: notes),
            Build.record("child", in: notes, ["p": Build.ref("parent", .deleteSelf)]),
            Build.record("grandchild", in: notes, ["p": .list([Build.ref("child", .deleteSelf)])]),
            Build.record("bystander", in: notes, ["p": Build.ref("parent", .none)]),
        ])
        let token = try await alice.allZoneChanges(notes, since: nil).token
        let result = try await alice.delete([saved[0]])
        #expect(result.cascadedDeletions.map(\.recordName).sorted() == ["child", "grandchild"])
        let later = try await alice.allZoneChanges(notes, since: token)
        #expect(later.deletions.map(\.recordID.recordName).sorted() == ["child", "grandchild", "parent"])
        #expect(later.records.isEmpty)
        let left = try await alice.allZoneChanges(notes, since: nil)
        #expect(names(left.records) == ["bystander"])
    }

    @Test(arguments: StoreKind.allCases)
    func publicScopeIsRefused(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let alice = try fixture.store(as: "alice")
        #expect(await caught { try await alice.databaseChanges(scope: .public, since: nil) }?.code == .badDatabase)
        #expect(await caught { try await alice.fetchAllRecordZones(scope: .public) }?.code == .badDatabase)
    }

    @Test(arguments: StoreKind.allCases)
    func sharedZonesFollowParticipants(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let alice = try fixture.store(as: "alice")
        let bob = try fixture.store(as: "bob")
        let carol = try fixture.store(as: "carol")
        try await alice.createZones([notes, todo])
        try await alice.save([Build.record("r", in: notes)])
        let bob0 = try await bob.databaseChanges(scope: .shared, since: nil)
        #expect(bob0.modifications.isEmpty)

        try await alice.zoneOp(.save(RecordZone(zoneID: notes, participants: [ShareParticipant(userRecordName: "bob", permission: .readOnly)])))
        let bob1 = try await bob.databaseChanges(scope: .shared, since: bob0.changeToken)
        #expect(bob1.modifications == [notes])
        #expect(try await carol.databaseChanges(scope: .shared, since: nil).modifications.isEmpty)
        #expect(try await bob.fetchAllRecordZones(scope: .shared).map(\.zoneID) == [notes])
        #expect(try await bob.allZoneChanges(notes, since: nil).records.count == 1)
        #expect(await caught { try await bob.recordZoneChanges(zone: todo, since: nil) } == .zoneNotFound(todo))

        // Read-only: writes are refused per item; zone changes by non-owners are refused.
        let refused = try await bob.modifyRecords(
            saving: [Build.record("b", in: notes)], deleting: [], savePolicy: .ifServerRecordUnchanged, atomically: true)
        #expect(refused.errors.first?.code == .permissionFailure)
        let zoneRefused = try await bob.modifyRecordZones([.delete(notes)])
        #expect((try? zoneRefused[0].result.get()) == nil)

        try await alice.zoneOp(.save(RecordZone(zoneID: notes, participants: [ShareParticipant(userRecordName: "bob", permission: .readWrite)])))
        try await bob.save([Build.record("b", in: notes)])
        let history = try await alice.allZoneChanges(notes, since: nil)
        #expect(history.records.first { $0.recordID.recordName == "b" }?.modified?.userRecordName == "bob")

        // Unsharing is a deletion in bob's shared database.
        try await alice.zoneOp(.save(RecordZone(zoneID: notes)))
        let bob2 = try await bob.databaseChanges(scope: .shared, since: bob1.changeToken)
        #expect(bob2.deletions == [ZoneDeletion(zoneID: notes, reason: .deleted)])
        #expect(await caught { try await bob.recordZoneChanges(zone: notes, since: nil) } == .zoneNotFound(notes))
        // Only owners create zones.
        let foreign = try await bob.modifyRecordZones([.save(RecordZone(zoneID: Build.zone("mine", owner: "alice")))])
        #expect((try? foreign[0].result.get()) == nil)
    }

    @Test(arguments: StoreKind.allCases)
    func badInputFailsPerItemWithoutWriting(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let alice = try fixture.store(as: "alice")
        try await alice.createZones([notes])
        var bad = Build.record("big", in: notes)
        bad.fields["blob"] = .bytes(Array(repeating: 7, count: 1_100_000))
        let dup = Build.record("dup", in: notes)
        let result = try await alice.modifyRecords(saving: [bad, dup, dup], deleting: [], savePolicy: .ifServerRecordUnchanged, atomically: false)
        #expect(result.errors.map(\.code) == [.limitExceeded, .invalidArguments])
        #expect((try? result.saveResults[1].result.get()) != nil)
    }

    @Test(arguments: StoreKind.allCases)
    func fetchRecordsByID(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let alice = try fixture.store(as: "alice")
        try await alice.createZones([notes])
        let r = try await alice.save([Build.record("r", in: notes, ["a": .string("x")])])[0]
        let missing = Build.id("missing", in: notes)
        let elsewhere = Build.id("r", in: todo)
        let results = try await alice.fetchRecords([r.recordID, missing, elsewhere])
        #expect(try results[0].result.get() == r)
        #expect(results[1].result == .failure(.unknownItem(missing)))
        #expect(results[2].result == .failure(.zoneNotFound(todo)))
    }

    @Test(arguments: StoreKind.allCases)
    func clientChangeTokenComesBackToItsClientPerZone(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let laptop = try fixture.store(as: "alice", deviceID: "laptop")
        let desktop = try fixture.store(as: "alice", deviceID: "desktop")
        try await laptop.createZones([notes, todo])
        #expect(try await laptop.recordZoneChanges(zone: notes, since: nil).clientChangeTokenData == nil, "no modify supplied one yet")

        let r = Build.record("r", in: notes)
        let first = try await laptop.modifyRecords(
            saving: [r, Build.record("t", in: todo)], deleting: [], savePolicy: .ifServerRecordUnchanged, atomically: true,
            clientChangeTokenData: "laptop-1")
        #expect(first.errors.isEmpty)
        #expect(try await laptop.recordZoneChanges(zone: notes, since: nil).clientChangeTokenData == "laptop-1")
        #expect(try await laptop.recordZoneChanges(zone: todo, since: nil).clientChangeTokenData == "laptop-1")
        #expect(try await desktop.recordZoneChanges(zone: notes, since: nil).clientChangeTokenData == nil, "each client has its own")

        // Another client's modify leaves this client's token as it was.
        _ = try await desktop.modifyRecords(
            saving: [Build.record("d", in: notes)], deleting: [], savePolicy: .ifServerRecordUnchanged, atomically: true,
            clientChangeTokenData: "desktop-1")
        #expect(try await laptop.recordZoneChanges(zone: notes, since: nil).clientChangeTokenData == "laptop-1")
        #expect(try await desktop.recordZoneChanges(zone: notes, since: nil).clientChangeTokenData == "desktop-1")

        // A zone where nothing lands (a conflict in an atomic zone) does not take the token.
        let stale = Build.record("r", in: notes, ["x": .int64(1)])
        let refused = try await laptop.modifyRecords(
            saving: [stale, Build.record("t2", in: todo)], deleting: [], savePolicy: .ifServerRecordUnchanged, atomically: true,
            clientChangeTokenData: "laptop-2")
        #expect(refused.saveResults[0].result.failureCode == .serverRecordChanged)
        #expect(try await laptop.recordZoneChanges(zone: notes, since: nil).clientChangeTokenData == "laptop-1")
        #expect(try await laptop.recordZoneChanges(zone: todo, since: nil).clientChangeTokenData == "laptop-2")

        // A paged fetch reports the token as of its target, not the moving head.
        try await laptop.save((0..<5).map { Build.record("p\($0)", in: todo) })
        let page1 = try await laptop.recordZoneChanges(zone: todo, since: nil, resultsLimit: 2, desiredKeys: nil)
        _ = try await laptop.modifyRecords(
            saving: [Build.record("late", in: todo)], deleting: [], savePolicy: .ifServerRecordUnchanged, atomically: true,
            clientChangeTokenData: "laptop-3")
        let page2 = try await laptop.recordZoneChanges(zone: todo, since: page1.changeToken, resultsLimit: 100, desiredKeys: nil)
        #expect(page1.clientChangeTokenData == "laptop-2" && page2.clientChangeTokenData == "laptop-2")
        let next = try await laptop.recordZoneChanges(zone: todo, since: page2.changeToken)
        #expect(next.clientChangeTokenData == "laptop-3")

        // Plain git log names it, in a trailer.
        if let git = laptop as? GitStore {
            let message = try await git.log(limit: 1)[0].message
            #expect(message.contains("\n\nRecsync-Client-Token: laptop-3 alice/laptop \(todo)\n"), "\(message)")
        }
        let bad = await caught {
            try await laptop.modifyRecords(
                saving: [Build.record("z", in: notes)], deleting: [], savePolicy: .allKeys, atomically: true, clientChangeTokenData: "has space\n")
        }
        #expect(bad?.code == .invalidArguments)
    }

    @Test(arguments: StoreKind.allCases)
    func aPlainSaveDoesNotBringBackADeletedOrPurgedZone(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let alice = try fixture.store(as: "alice")
        try await alice.createZones([notes, todo])
        try await alice.zoneOp(.delete(notes))
        try await alice.zoneOp(.purge(todo))

        let results = try await alice.modifyRecordZones([.save(RecordZone(zoneID: notes)), .save(RecordZone(zoneID: todo))])
        #expect(results[0].result.failureCode == .zoneNotFound)
        #expect(results[1].result.failureCode == .userDeletedZone)
        #expect(try await alice.fetchZoneDeletions([notes, todo]).map(\.reason) == [.deleted, .purged], "the tombstones stay")

        // An explicit re-create brings them back; then a save updates as before.
        let again = try await alice.modifyRecordZones([.recreate(RecordZone(zoneID: notes)), .recreate(RecordZone(zoneID: todo))])
        #expect(again.allSatisfy { (try? $0.result.get()) != nil })
        #expect(try await alice.fetchZoneDeletions([notes, todo]).isEmpty)
        try await alice.zoneOp(.save(RecordZone(zoneID: notes, defaultRecordType: "Note")))
        #expect(try await alice.fetchAllRecordZones(scope: .private).first { $0.zoneID == notes }?.defaultRecordType == "Note")
    }

    /// The upload after an encrypted-data reset brings back a reset zone, but never one that
    /// was deleted or purged after the reset: decided in the store's own commit.
    @Test(arguments: StoreKind.allCases)
    func anUploadAfterAResetDoesNotOverrideALaterPurge(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let alice = try fixture.store(as: "alice")
        try await alice.createZones([notes, todo])
        try await alice.zoneOp(.markEncryptedDataReset(notes))
        try await alice.zoneOp(.markEncryptedDataReset(todo))
        // Another device re-creates todo after the reset, then purges it.
        try await alice.zoneOp(.recreate(RecordZone(zoneID: todo)))
        try await alice.zoneOp(.purge(todo))

        let results = try await alice.modifyRecordZones([.uploadAfterReset(RecordZone(zoneID: notes)), .uploadAfterReset(RecordZone(zoneID: todo))])
        #expect((try? results[0].result.get()) != nil, "a reset zone comes back for its upload")
        #expect(results[1].result.failureCode == .userDeletedZone, "a purge since the reset wins")
        #expect(try await alice.fetchZoneDeletions([notes, todo]).map(\.reason) == [.purged])
    }

    @Test func lostRacesAreRetriedThenReportedAsBusy() async throws {
        let fixture = try StoreFixture(.memory)
        let alice = try fixture.store(as: "alice")
        try await alice.createZones([notes])
        fixture.storage.simulateLostRaces(3)
        let saved = try await alice.save([Build.record("r", in: notes)])
        #expect(saved[0].changeTag != nil, "three lost races are retried transparently")
        fixture.storage.simulateLostRaces(1000)
        let busy = await caught { try await alice.save([Build.record("s", in: notes)]) }
        #expect(busy?.code == .zoneBusy)
        fixture.storage.simulateLostRaces(0)
        let results = try await alice.fetchRecords([Build.id("s", in: notes)])
        #expect(results[0].result == .failure(.unknownItem(Build.id("s", in: notes))), "a write that never landed is not there")
    }
}
