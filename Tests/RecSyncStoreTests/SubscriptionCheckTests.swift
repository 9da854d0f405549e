import Foundation
import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

/// `checkSubscriptions`: the store evaluates subscriptions as CloudKit's server does, on both stores.
@Suite(.ownThreads) struct SubscriptionCheckTests {
    let notes = Build.zone("notes")
    let todo = Build.zone("todo")

    func query(
        _ id: String, _ type: String, scope: DatabaseScope = .private, zone: ZoneID? = nil, _ conditions: [FieldCondition] = [],
        on: Set<RecordChangeReason> = Set(RecordChangeReason.allCases)
    ) -> Subscription {
        Subscription(id: id, kind: .query(QuerySubscription(scope: scope, recordType: type, zone: zone, conditions: conditions, firesOn: on)))
    }

    func match(_ check: SubscriptionCheck, _ id: String) -> SubscriptionMatch? { check.matches.first { $0.subscriptionID == id } }

    @Test(arguments: StoreKind.allCases)
    func oneCoalescedMatchPerSubscriptionWithReasons(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let laptop = try fixture.store(as: "alice", deviceID: "laptop")
        let phone = try fixture.store(as: "alice", deviceID: "phone")
        try await laptop.createZones([notes, todo])
        var saved = try await laptop.save([
            Build.record("a", in: notes, type: "Task", ["open": .boolean(true)]),
            Build.record("b", in: notes, type: "Task", ["open": .boolean(true), "due": .int64(1)]),
        ])
        let cursor = try await phone.currentDatabaseToken(scope: .private)
        // A burst from the laptop: a create, an update, a delete, in three commits and two zones.
        try await laptop.save([Build.record("c", in: notes, type: "Task", ["open": .boolean(false)]), Build.record("t", in: todo)])
        saved[0].fields["open"] = .boolean(true)
        saved[0].fields["title"] = .string("changed")
        try await laptop.save([saved[0]])
        _ = try await laptop.delete([saved[1]])

        let subscriptions = [
            Subscription(id: "db", kind: .database(.private)),
            Subscription(id: "notes", kind: .zone(notes)),
            query("created", "Task", on: [.created]),
            query("updated", "Task", on: [.updated]),
            query("deleted", "Task", on: [.deleted]),
            query("open", "Task", [FieldCondition(field: "open", test: .equals("true"))]),
            query("due", "Task", [FieldCondition(field: "due", test: .exists), FieldCondition(field: "open", test: .equals("true"))]),
            query("none", "Event"),
            Subscription(id: "shared", kind: .database(.shared)),
        ]
        let check = try await phone.checkSubscriptions(
            subscriptions.filter { $0.scope(forUser: "alice") == .private }, scope: .private, since: cursor)
        #expect(check.matches.map(\.subscriptionID) == ["db", "notes", "created", "updated", "deleted", "open", "due"])
        #expect(match(check, "db")?.count == 4 && match(check, "db")?.zones == [notes, todo])
        #expect(match(check, "notes")?.count == 3 && match(check, "notes")?.zones == [notes])
        #expect(match(check, "created")?.records == [RecordChangeNotice(recordID: Build.id("c", in: notes), reason: .created)])
        #expect(match(check, "updated")?.records == [RecordChangeNotice(recordID: Build.id("a", in: notes), reason: .updated)])
        #expect(match(check, "deleted")?.records == [RecordChangeNotice(recordID: Build.id("b", in: notes), reason: .deleted)])
        // `c` is created closed: the open subscription sees the update of `a` and the
        // deletion of `b`, which was open.
        #expect(match(check, "open")?.records.map(\.recordID.recordName) == ["a", "b"])
        // A deletion is matched as the record was: `b` had `due` and was open.
        #expect(match(check, "due")?.records == [RecordChangeNotice(recordID: Build.id("b", in: notes), reason: .deleted)])
        // The cursor moves to the head: nothing more from there.
        let again = try await phone.checkSubscriptions(
            subscriptions.filter { $0.scope(forUser: "alice") == .private }, scope: .private, since: check.cursor)
        #expect(again.matches.isEmpty)
    }

    /// A zone named like another plus a byte below '/' (git sorts a directory as if its name
    /// ended in '/'): creating it is news of that zone only, not of the other one's records.
    @Test(arguments: StoreKind.allCases)
    func aZoneNamedLikeAnotherWithASuffixIsNewsOfItselfOnly(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let laptop = try fixture.store(as: "alice", deviceID: "laptop")
        let phone = try fixture.store(as: "alice", deviceID: "phone")
        try await laptop.createZones([notes])
        try await laptop.save([Build.record("a", in: notes, type: "Task")])
        let cursor = try await phone.currentDatabaseToken(scope: .private)
        let (dashed, dotted) = (Build.zone("notes-old"), Build.zone("notes.v2"))
        try await laptop.createZones([dashed, dotted])
        let subscriptions = [
            Subscription(id: "db", kind: .database(.private)), Subscription(id: "notes", kind: .zone(notes)), query("tasks", "Task"),
        ]
        let check = try await phone.checkSubscriptions(subscriptions, scope: .private, since: cursor)
        #expect(check.matches.map(\.subscriptionID) == ["db"])
        #expect(match(check, "db")?.zones == [dashed, dotted])
    }

    @Test(arguments: StoreKind.allCases)
    func aClientIsNotToldOfItsOwnChanges(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let laptop = try fixture.store(as: "alice", deviceID: "laptop")
        let phone = try fixture.store(as: "alice", deviceID: "phone")
        try await laptop.createZones([notes])
        let subscriptions = [Subscription(id: "db", kind: .database(.private)), Subscription(id: "all", kind: .database(.private), includeOwn: true)]
        let start = try await phone.currentDatabaseToken(scope: .private)
        // Only the phone's own commits: nothing for it, unless it asks.
        try await phone.save([Build.record("p1", in: notes)])
        try await phone.save([Build.record("p2", in: notes)])
        let own = try await phone.checkSubscriptions(subscriptions, scope: .private, since: start)
        #expect(own.matches.map(\.subscriptionID) == ["all"])
        #expect(match(own, "all")?.count == 2)
        #expect(own.ownCommitsSkipped == 2)
        // The laptop is told of the phone's.
        let seen = try await laptop.checkSubscriptions(subscriptions, scope: .private, since: start)
        #expect(match(seen, "db")?.count == 2)
        // Interleaved: laptop, phone, laptop, phone. The phone hears of exactly the laptop's two.
        let middle = own.cursor
        try await laptop.save([Build.record("l1", in: notes)])
        try await phone.save([Build.record("p3", in: notes)])
        try await laptop.save([Build.record("l2", in: notes), Build.record("l3", in: notes)])
        try await phone.save([Build.record("p4", in: notes)])
        let mixed = try await phone.checkSubscriptions(subscriptions, scope: .private, since: middle)
        #expect(match(mixed, "db")?.count == 3, "l1, l2, l3 — not the phone's p3 and p4")
        #expect(match(mixed, "all")?.count == 5)
        #expect(mixed.ownCommitsSkipped == 2)
        // A client without a device ID is not told apart from others.
        let anonymous = try fixture.store(as: "alice")
        try await anonymous.save([Build.record("x", in: notes)])
        let after = try await anonymous.checkSubscriptions(subscriptions, scope: .private, since: mixed.cursor)
        #expect(match(after, "db")?.count == 1)
    }

    @Test(arguments: StoreKind.allCases)
    func aRecordCreatedAndDeletedBetweenTwoLooksCountsTwice(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let laptop = try fixture.store(as: "alice", deviceID: "laptop")
        let phone = try fixture.store(as: "alice", deviceID: "phone")
        let tablet = try fixture.store(as: "alice", deviceID: "tablet")
        try await laptop.createZones([notes])
        let start = try await phone.currentDatabaseToken(scope: .private)
        // The phone creates a record; the laptop deletes it; nothing is left of it.
        let created = try await phone.save([Build.record("brief", in: notes, type: "Task")])
        _ = try await laptop.delete(created)
        let subscriptions = [
            Subscription(id: "db", kind: .database(.private)),
            query("deleted", "Task", on: [.deleted]),
            Subscription(id: "all", kind: .query(QuerySubscription(scope: .private, recordType: "Task")), includeOwn: true),
        ]
        let check = try await phone.checkSubscriptions(subscriptions, scope: .private, since: start)
        #expect(match(check, "db")?.count == 1, "the laptop's deletion; the phone's own create is left out")
        #expect(match(check, "deleted")?.records == [RecordChangeNotice(recordID: Build.id("brief", in: notes), reason: .deleted)])
        #expect(match(check, "all")?.records.map(\.reason) == [.created, .deleted], "with its own changes, both, in order")
        let third = try await tablet.checkSubscriptions(subscriptions, scope: .private, since: start)
        #expect(match(third, "db")?.count == 2 && match(third, "deleted")?.count == 1)
    }

    @Test(arguments: StoreKind.allCases)
    func sharedZonesDeletionsAndSharingCount(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let alice = try fixture.store(as: "alice", deviceID: "a")
        let bob = try fixture.store(as: "bob", deviceID: "b")
        try await alice.createZones([notes, todo])
        try await alice.save([Build.record("n1", in: notes, type: "Task")])
        let start = try await bob.currentDatabaseToken(scope: .shared)
        let subscriptions = [
            Subscription(id: "shared", kind: .database(.shared)), query("tasks", "Task", scope: .shared),
            Subscription(id: "zone", kind: .zone(notes)),
        ]
        // Sharing the zone with bob: its records are new to him.
        try await alice.zoneOp(.save(RecordZone(zoneID: notes, participants: [ShareParticipant(userRecordName: "bob", permission: .readWrite)])))
        let shared = try await bob.checkSubscriptions(subscriptions, scope: .shared, since: start)
        #expect(match(shared, "tasks")?.records == [RecordChangeNotice(recordID: Build.id("n1", in: notes), reason: .created)])
        #expect(match(shared, "zone")?.count == 1)
        // A change by alice in the shared zone; a zone of alice's not shared with bob is invisible.
        try await alice.save([Build.record("n2", in: notes, type: "Task"), Build.record("t1", in: todo, type: "Task")])
        let changed = try await bob.checkSubscriptions(subscriptions, scope: .shared, since: shared.cursor)
        #expect(match(changed, "tasks")?.records.map(\.recordID) == [Build.id("n2", in: notes)])
        #expect(match(changed, "shared")?.zones == [notes])
        // Alice deletes the zone: one change for database and zone subscriptions, none for queries.
        try await alice.zoneOp(.delete(notes))
        let deleted = try await bob.checkSubscriptions(subscriptions, scope: .shared, since: changed.cursor)
        #expect(match(deleted, "shared")?.count == 1 && match(deleted, "zone")?.count == 1)
        #expect(match(deleted, "tasks") == nil)
    }

    @Test(arguments: [StoreKind.memory, .git])
    func sinceTheBeginningAndAfterHistoryIsRewritten(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let alice = try fixture.store(as: "alice", deviceID: "a")
        let other = try fixture.store(as: "alice", deviceID: "b")
        try await alice.createZones([notes])
        try await alice.save((1...150).map { Build.record("r\($0)", in: notes, type: "Task") })
        let all = try await other.checkSubscriptions([query("tasks", "Task", on: [.created])], scope: .private, since: nil)
        #expect(match(all, "tasks")?.count == 150)
        #expect(match(all, "tasks")?.records.count == SubscriptionCheck.recordListLimit, "the list is capped; the count is not")
        try fixture.rewriteHistory()
        await #expect(throws: RecSyncError.self) {
            _ = try await other.checkSubscriptions([query("tasks", "Task")], scope: .private, since: all.cursor)
        }
        do {
            _ = try await other.checkSubscriptions([query("tasks", "Task")], scope: .private, since: all.cursor)
        } catch {
            if case .changeTokenExpired = error.reason {} else { Issue.record("expected changeTokenExpired, got \(error)") }
        }
    }

    @Test func aMergeCommitMadeWithPlainGitIsCheckedWhole() async throws {
        let fixture = try StoreFixture(.git)
        let phone = try fixture.store(as: "alice", deviceID: "phone")
        try await phone.createZones([notes])
        let start = try await phone.currentDatabaseToken(scope: .private)
        let base = try GitCLI.run(["rev-parse", "refs/heads/main"], in: fixture.path).trimmingCharacters(in: .whitespacesAndNewlines)
        // The phone commits; someone merges a side branch into the store with plain git, so
        // the first-parent path from the head no longer passes through the cursor's commit.
        try await phone.save([Build.record("mine", in: notes)])
        let mine = try GitCLI.run(["rev-parse", "refs/heads/main"], in: fixture.path).trimmingCharacters(in: .whitespacesAndNewlines)
        let tree = try GitCLI.run(["rev-parse", "\(mine)^{tree}"], in: fixture.path).trimmingCharacters(in: .whitespacesAndNewlines)
        let side = try GitCLI.run(["commit-tree", tree, "-p", base, "-m", "side"], in: fixture.path).trimmingCharacters(in: .whitespacesAndNewlines)
        let merge = try GitCLI.run(["commit-tree", tree, "-p", side, "-p", mine, "-m", "merge"], in: fixture.path).trimmingCharacters(
            in: .whitespacesAndNewlines)
        _ = try GitCLI.run(["update-ref", "refs/heads/main", merge], in: fixture.path)
        let check = try await phone.checkSubscriptions([Subscription(id: "db", kind: .database(.private))], scope: .private, since: start)
        // Told apart no more: the whole stretch counts, rather than anything being missed.
        #expect(match(check, "db")?.count == 1)
        #expect(check.ownCommitsSkipped == 0)
    }

    @Test(arguments: [StoreKind.memory, .git])
    func everyCommitNamesItsClient(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let phone = try fixture.store(as: "alice", deviceID: "phone")
        try await phone.createZones([notes])
        try await phone.save([Build.record("a", in: notes), Build.record("b", in: notes)])
        let messages: [String]
        switch kind {
        case .memory: messages = fixture.storage.history()
        default: messages = try GitCLI.run(["log", "--format=%B%x00"], in: fixture.path).components(separatedBy: "\0")
        }
        let signed = messages.filter { $0.contains("\n\nRecsync-Client: alice/phone\n") }
        #expect(signed.count == 2, "\(messages)")
    }

    /// Walking history, each commit must cost what it changed, not the store. The
    /// walk listed every zone at every commit (200 commits × 2,000 zones took 5 s, 20 zones
    /// 0.1 s), which also reported a bad entry nobody touched once per commit.
    @Test func aCommitCostsWhatItChangedNotEveryZone() async throws {
        let fixture = try StoreFixture(.git)
        let alice = try fixture.store(as: "alice", deviceID: "laptop")
        try await alice.createZones([notes])
        try GitCLI.commitFiles([(path: "zones/alice/%zz/zone.json", bytes: Array("{}".utf8))], toStore: fixture.path)
        let phone = try fixture.store(as: "alice", deviceID: "phone")
        let cursor = try await phone.currentDatabaseToken(scope: .private)
        for i in 0..<5 { try await alice.save([Build.record("r\(i)", in: notes)]) }
        let check = try await phone.checkSubscriptions([Subscription(id: "db", kind: .database(.private))], scope: .private, since: cursor)
        #expect(match(check, "db")?.count == 5)
        #expect(check.warnings.filter { $0.path.contains("%zz") }.isEmpty, "an entry no commit in the range touched was looked at: \(check.warnings)")
    }
}
