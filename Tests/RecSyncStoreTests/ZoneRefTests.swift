import Foundation
import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import Synchronization
import Testing

/// A store of the kind under test whose zones each have a ref of their own: in memory, or a
/// git store of format 2 (docs/zone-refs.md), on a path or served by `git daemon` (each
/// handle then a device with a mirror of its own).
final class ZoneRefStore: Sendable {
    enum Kind: String, CaseIterable, Sendable, CustomStringConvertible {
        case memory, git, network
        var description: String { rawValue }
    }

    let kind: Kind
    let storage = MemoryStorage(refPerZone: true)
    let directory: TempDirectory
    let daemon: GitDaemon?
    private let devices = Atomic<Int>(0)
    var path: String { directory.file("served/store.git") }

    init(_ kind: Kind, name: String = #function) throws {
        self.kind = kind
        directory = TempDirectory(name)
        if kind != .memory {
            try GitStore.create(
                at: directory.file("served/store.git"), actor: StoreActor(userRecordName: "admin", clock: { 1_767_225_600_000 }),
                format: StoreLayout.zoneRefsFormat)
        }
        daemon = kind == .network ? try GitDaemon(basePath: directory.file("served")) : nil
    }

    func store(as user: String = "alice") throws -> any RemoteStore {
        let actor = try StoreActor(userRecordName: user, clock: { 1_767_225_600_000 })
        switch kind {
        case .memory: return MemoryStore(storage: storage, actor: actor)
        case .git: return try GitStore(path: path, actor: actor, acceptingZoneRefs: true)
        case .network:
            guard let daemon else { throw RecSyncError.internalError("a network store without its daemon") }
            let n = devices.add(1, ordering: .relaxed).newValue
            let options = NetworkOptions(sshDirectory: directory.file("no-ssh-keys"), knownHostsFiles: [directory.file("no-known-hosts")])
            return try GitStore.open(
                remote: daemon.url("store.git"), mirror: directory.file("device-\(n)/mirror"), actor: actor, options: options,
                acceptingZoneRefs: true)
        }
    }

    /// The subjects of the commits on a zone's ref, newest first (none: no ref).
    func history(of zone: ZoneID) throws -> [String] {
        switch kind {
        case .memory: return storage.history(of: zone).map { String($0.prefix(while: { $0 != "\n" })) }
        case .git, .network:
            let ref = RefNames.refName(for: zone)
            guard try GitCLI.run(["for-each-ref", "--format=%(refname)", ref], in: path).contains(ref) else { return [] }
            return try GitCLI.run(["log", "--format=%s", ref], in: path).split(separator: "\n").map(String.init)
        }
    }

    /// The subjects of the commits on the shared ref.
    func sharedHistory() throws -> [String] {
        switch kind {
        case .memory: return storage.history()
        case .git, .network: return try GitCLI.run(["log", "--format=%s", "refs/heads/main"], in: path).split(separator: "\n").map(String.init)
        }
    }
}

/// A store whose zones each have a ref of their own (docs/zone-refs.md): a zone's records are
/// decided and committed against its own head, so writers of other zones never move it.
@Suite struct ZoneRefTests {
    let a = Build.zone("alpha")
    let b = Build.zone("beta")

    @Test(arguments: ZoneRefStore.Kind.allCases)
    func zonesCreatedInOneRequestGetACommitOnEachRef(kind: ZoneRefStore.Kind) async throws {
        let subject = try ZoneRefStore(kind)
        let alice = try subject.store()
        try await alice.createZones([a, b])
        #expect(try subject.history(of: a).count == 1)
        #expect(try subject.history(of: b).count == 1)
        #expect(try subject.history(of: a).first?.contains("created \(a)") == true)
        #expect(try subject.history(of: a).first?.contains("\(b)") == false)
        // The shared ref holds no zone: only the store's first commit.
        #expect(try subject.sharedHistory().count == 1)
    }

    @Test(arguments: ZoneRefStore.Kind.allCases)
    func writesToOneZoneDoNotMoveAnotherZonesToken(kind: ZoneRefStore.Kind) async throws {
        let subject = try ZoneRefStore(kind)
        let alice = try subject.store()
        try await alice.createZones([a, b])
        try await alice.save([Build.record("n1", in: a)])
        let before = try await alice.allZoneChanges(a, since: nil)
        for i in 0..<5 { try await alice.save([Build.record("m\(i)", in: b)]) }
        let page = try await alice.recordZoneChanges(zone: a, since: before.token, resultsLimit: 0, desiredKeys: nil)
        #expect(page.modifications.isEmpty && page.deletions.isEmpty)
        #expect(!page.moreComing)
        // Nothing happened to the zone, so its token is the one the client already has.
        #expect(page.changeToken == before.token)
        #expect(try subject.history(of: a).count == 2)
        #expect(try subject.history(of: b).count == 6)
    }

    @Test(arguments: ZoneRefStore.Kind.allCases)
    func oneRequestOverTwoZonesLandsOnEachZonesRef(kind: ZoneRefStore.Kind) async throws {
        let subject = try ZoneRefStore(kind)
        let alice = try subject.store()
        try await alice.createZones([a, b])
        let saved = try await alice.save([Build.record("x", in: a), Build.record("y", in: b), Build.record("z", in: a)])
        #expect(saved.allSatisfy { $0.changeTag != nil })
        #expect(try subject.history(of: a).count == 2)
        #expect(try subject.history(of: b).count == 2)
        #expect(names(try await alice.allZoneChanges(a, since: nil).records) == ["x", "z"])
        #expect(names(try await alice.allZoneChanges(b, since: nil).records) == ["y"])
    }

    @Test(arguments: ZoneRefStore.Kind.allCases)
    func aStaleSaveIsStillAConflictInItsZone(kind: ZoneRefStore.Kind) async throws {
        let subject = try ZoneRefStore(kind)
        let alice = try subject.store(), other = try subject.store()
        try await alice.createZones([a, b])
        let first = try await alice.save([Build.record("n", in: a, ["v": .string("1")])])[0]
        var mine = first
        mine.fields["v"] = .string("2")
        _ = try await other.save([mine])
        var stale = first
        stale.fields["v"] = .string("3")
        // An atomic request over both zones: the conflicted zone lands nothing, the other lands.
        let result = try await alice.modifyRecords(
            saving: [stale, Build.record("fine", in: b)], deleting: [], savePolicy: .ifServerRecordUnchanged, atomically: true)
        #expect(result.saveResults[0].result.failureCode == .serverRecordChanged)
        #expect(result.saveResults[1].result.failureCode == nil)
        #expect(names(try await alice.allZoneChanges(b, since: nil).records) == ["fine"])
        #expect(try await alice.allZoneChanges(a, since: nil).records.first?.fields["v"] == .string("2"))
    }

    @Test(arguments: ZoneRefStore.Kind.allCases)
    func aZoneNeverCreatedHasNoRefAndIsNotFound(kind: ZoneRefStore.Kind) async throws {
        let subject = try ZoneRefStore(kind)
        let alice = try subject.store()
        let never = Build.zone("never")
        #expect(await caught { try await alice.recordZoneChanges(zone: never, since: nil, resultsLimit: 0, desiredKeys: nil) }?.code == .zoneNotFound)
        let result = try await alice.modifyRecords(
            saving: [Build.record("r", in: never)], deleting: [], savePolicy: .ifServerRecordUnchanged, atomically: false)
        #expect(result.saveResults[0].result.failureCode == .zoneNotFound)
        #expect(result.commit == nil)
        #expect(try subject.history(of: never).isEmpty)
        #expect(try await alice.fetchRecords([Build.id("r", in: never)], desiredKeys: nil)[0].result.failureCode == .zoneNotFound)
    }

    @Test(arguments: ZoneRefStore.Kind.allCases)
    func aDeletedZoneIsATombstoneCommitOnItsRef(kind: ZoneRefStore.Kind) async throws {
        let subject = try ZoneRefStore(kind)
        let alice = try subject.store()
        try await alice.createZones([a, b])
        try await alice.save([Build.record("n", in: a)])
        try await alice.zoneOp(.delete(a))
        #expect(try subject.history(of: a).count == 3)
        #expect(try subject.history(of: b).count == 1)
        #expect(await caught { try await alice.recordZoneChanges(zone: a, since: nil, resultsLimit: 0, desiredKeys: nil) }?.code == .zoneNotFound)
        // A plain save does not bring it back; an explicit create does, empty.
        #expect(try await alice.modifyRecordZones([.save(RecordZone(zoneID: a))])[0].result.failureCode == .zoneNotFound)
        #expect(try await alice.fetchZoneDeletions([a]).map(\.reason) == [.deleted])
        try await alice.createZones([a])
        #expect(try await alice.allZoneChanges(a, since: nil).records.isEmpty)
    }

    /// On memory and a local git store: over the network, 80 fetch-and-push cycles would hold
    /// libgit2's pack windows at their writing size for seconds, which the pack-window tests
    /// running beside them in this process must see come back (the writers benchmark covers
    /// concurrent network writers of format 2).
    @Test(arguments: [ZoneRefStore.Kind.memory, .git])
    func concurrentWritersOfTwoZonesLoseNothing(kind: ZoneRefStore.Kind) async throws {
        let subject = try ZoneRefStore(kind)
        let owner = try subject.store()
        try await owner.createZones([a, b])
        let handles = try (0..<4).map { _ in try subject.store() }
        let log = await withTaskGroup(of: (ZoneID, [WriteAttempt]).self) { group in
            for (i, handle) in handles.enumerated() {
                let zone = i % 2 == 0 ? a : b
                group.addTask {
                    (zone, await StressWriter.run(store: handle, zone: zone, writer: "w\(i)", iterations: 20, sharedRecords: 3, seed: UInt64(i + 1)))
                }
            }
            var all: [ZoneID: [WriteAttempt]] = [:]
            for await (zone, part) in group { all[zone, default: []] += part }
            return all
        }
        for zone in [a, b] {
            let attempts = log[zone] ?? []
            #expect(attempts.count == 40)
            #expect(attempts.filter { $0.outcome == .failed }.isEmpty, "\(attempts.filter { $0.outcome == .failed })")
            let all = try await owner.allZoneChanges(zone, since: nil)
            let tags = Dictionary(uniqueKeysWithValues: all.records.map { ($0.recordID.recordName, $0.changeTag ?? "") })
            let problems = StressWriter.verify(attempts, finalTags: tags)
            #expect(problems.isEmpty, "\(problems)")
            // Every saved write is one commit on its zone's ref, after the zone's creation.
            #expect(try subject.history(of: zone).count == 1 + attempts.filter { $0.outcome == .saved }.count)
        }
    }

    /// The git store's layout, as plain git sees it: one ref per zone holding `zone/`, and a
    /// shared ref holding the manifest and files where format 1 keeps its zone directories.
    @Test func aGitStoreOfFormatTwoKeepsEachZoneOnItsOwnRef() async throws {
        let subject = try ZoneRefStore(.git)
        let alice = try subject.store()
        try await alice.createZones([a, b])
        try await alice.save([Build.record("n1", in: a)])
        let refs = try GitCLI.run(["for-each-ref", "--format=%(refname)", "refs/recsync/zones/"], in: subject.path)
        #expect(refs.split(separator: "\n") == ["refs/recsync/zones/alice/alpha", "refs/recsync/zones/alice/beta"])
        let files = try GitCLI.run(["ls-tree", "-r", "--name-only", "refs/recsync/zones/alice/alpha"], in: subject.path)
        #expect(files.split(separator: "\n") == ["zone/records/\(StoreLayout.fanout("n1"))/n1", "zone/zone.json"])
        let shared = try GitCLI.run(["ls-tree", "--format=%(objecttype) %(path)", "refs/heads/main"], in: subject.path)
        #expect(shared.split(separator: "\n") == ["blob recsync.json", "blob tombstones", "blob zones"])
        try await alice.zoneOp(.delete(b))
        let gone = try GitCLI.run(["ls-tree", "-r", "--name-only", "refs/recsync/zones/alice/beta"], in: subject.path)
        #expect(gone.split(separator: "\n") == ["tombstone.json"])
    }

    /// A client that does not read format 2 yet (every one opened the usual way) refuses the
    /// store as too new, without writing anything.
    @Test func aStoreOfFormatTwoIsRefusedByAClientThatDoesNotReadIt() async throws {
        let subject = try ZoneRefStore(.git)
        let before = try GitCLI.run(["for-each-ref"], in: subject.path)
        let error = await caught { try GitStore(path: subject.path, actor: StoreActor(userRecordName: "alice")) }
        #expect(error?.code == .incompatibleVersion)
        #expect(try GitCLI.run(["for-each-ref"], in: subject.path) == before)
    }

    /// Every page of database changes from a token, following moreComing.
    func allDatabaseChanges(_ store: any RemoteStore, _ scope: DatabaseScope, since token: ServerChangeToken?, limit: Int = 0) async throws -> (
        changed: [ZoneID], deleted: [ZoneDeletion], token: ServerChangeToken, pages: Int
    ) {
        var token = token
        var changed: [ZoneID] = []
        var deleted: [ZoneDeletion] = []
        var pages = 0
        while true {
            let page = try await store.databaseChanges(scope: scope, since: token, resultsLimit: limit)
            pages += 1
            changed += page.modifications
            deleted += page.deletions
            token = page.changeToken
            if !page.moreComing { return (changed, deleted, page.changeToken, pages) }
        }
    }

    /// Database changes compare zone heads: only the zones whose ref moved are reported, and
    /// a zone that did not move is not read at all.
    @Test(arguments: ZoneRefStore.Kind.allCases)
    func databaseChangesReportTheZonesWhoseRefMoved(kind: ZoneRefStore.Kind) async throws {
        let subject = try ZoneRefStore(kind)
        let alice = try subject.store()
        let c = Build.zone("gamma")
        try await alice.createZones([a, b, c])
        let first = try await allDatabaseChanges(alice, .private, since: nil)
        #expect(first.changed == [a, b, c] && first.deleted.isEmpty)
        #expect(try await alice.fetchAllRecordZones(scope: .private).map(\.zoneID) == [a, b, c])

        let quiet = try await alice.databaseChanges(scope: .private, since: first.token, resultsLimit: 0)
        #expect(quiet.modifications.isEmpty && quiet.deletions.isEmpty && !quiet.moreComing)
        #expect(quiet.changeToken == first.token)

        try await alice.save([Build.record("n", in: b)])
        let second = try await allDatabaseChanges(alice, .private, since: first.token)
        #expect(second.changed == [b] && second.deleted.isEmpty)

        try await alice.zoneOp(.delete(a))
        try await alice.zoneOp(.purge(c))
        let third = try await allDatabaseChanges(alice, .private, since: second.token)
        #expect(third.changed.isEmpty)
        #expect(third.deleted == [ZoneDeletion(zoneID: a, reason: .deleted), ZoneDeletion(zoneID: c, reason: .purged)])
        #expect(try await alice.fetchAllRecordZones(scope: .private).map(\.zoneID) == [b])
        // Deleted zones are reported once.
        #expect(try await allDatabaseChanges(alice, .private, since: third.token).deleted.isEmpty)
    }

    /// A page's token keeps the old head of what it did not deliver yet, so paging delivers
    /// each zone once, and a zone that moves while the client pages is delivered again.
    @Test(arguments: ZoneRefStore.Kind.allCases)
    func pagesOfDatabaseChangesDeliverEachZoneAndWhatMovesMeanwhile(kind: ZoneRefStore.Kind) async throws {
        let subject = try ZoneRefStore(kind)
        let alice = try subject.store()
        let zones = (0..<5).map { Build.zone("z\($0)") }
        try await alice.createZones(zones)
        let page1 = try await alice.databaseChanges(scope: .private, since: nil, resultsLimit: 2)
        #expect(page1.modifications == [zones[0], zones[1]] && page1.moreComing)
        // z0 (delivered) and z4 (not yet) move while the client pages.
        try await alice.save([Build.record("x", in: zones[0]), Build.record("y", in: zones[4])])
        let rest = try await allDatabaseChanges(alice, .private, since: page1.changeToken, limit: 2)
        #expect(rest.changed == [zones[0], zones[2], zones[3], zones[4]])
        #expect(rest.pages == 2)
    }

    /// The shared database shows another owner's zone while it is shared with the user, and
    /// its unsharing as a deletion.
    @Test(arguments: ZoneRefStore.Kind.allCases)
    func theSharedDatabaseFollowsSharesFromZoneHeads(kind: ZoneRefStore.Kind) async throws {
        let subject = try ZoneRefStore(kind)
        let alice = try subject.store(), bob = try subject.store(as: "bob")
        try await alice.createZones([a, b])
        let start = try await allDatabaseChanges(bob, .shared, since: nil)
        #expect(start.changed.isEmpty && start.deleted.isEmpty)
        try await alice.share(a, with: "bob", permission: .readWrite)
        let shared = try await allDatabaseChanges(bob, .shared, since: start.token)
        #expect(shared.changed == [a])
        #expect(try await bob.fetchAllRecordZones(scope: .shared).map(\.zoneID) == [a])
        try await alice.save([Build.record("n", in: b)])  // not shared: not bob's change
        #expect(try await allDatabaseChanges(bob, .shared, since: shared.token).changed.isEmpty)
        try await alice.unshare(a, with: "bob")
        let unshared = try await allDatabaseChanges(bob, .shared, since: shared.token)
        #expect(unshared.changed.isEmpty && unshared.deleted == [ZoneDeletion(zoneID: a, reason: .deleted)])
        #expect(try await bob.fetchAllRecordZones(scope: .shared).isEmpty)
    }

    /// A database token of the store before it had a ref per zone has expired there: the
    /// client fetches from the beginning.
    @Test func aVersionOneDatabaseTokenHasExpiredOnAStoreWithARefPerZone() async throws {
        let subject = try ZoneRefStore(.memory)
        let alice = try subject.store()
        let old = ChangeTokenContent(storeID: alice.storeID, kind: .database(scope: .private, user: "alice"), commit: "m0").token
        #expect(await caught { try await alice.databaseChanges(scope: .private, since: old, resultsLimit: 0) }?.code == .changeTokenExpired)
    }

    /// A request over several zones of a network store is one push, whatever the number of
    /// zones (each zone's ref still moves by compare-and-swap on its own); a zone whose ref
    /// moved meanwhile is decided again and pushed alone, the others are not sent again.
    @Test func aRequestOverSeveralZonesIsOnePushAndAMovedZoneIsDecidedAgain() async throws {
        let subject = try ZoneRefStore(.network)
        let daemon = try #require(subject.daemon)
        let zones = (1...4).map { Build.zone("z\($0)") }
        let laptop = try #require(try subject.store() as? GitStore), phone = try subject.store()
        var before = daemon.connectionsAccepted
        try await laptop.createZones(zones)
        // One look at the remote (the call's fetch) and one push for the four new refs.
        #expect(daemon.connectionsAccepted - before == 2)
        before = daemon.connectionsAccepted
        let saved = try await laptop.save(zones.map { Build.record("r", in: $0) })
        #expect(saved.allSatisfy { $0.changeTag != nil })
        #expect(daemon.connectionsAccepted - before == 2)
        for zone in zones { #expect(try subject.history(of: zone).count == 2) }

        // Inside an operation the laptop does not look again: its mirror is behind on z1.
        await laptop.beginOperation(fromLastLook: true)
        _ = try await phone.save([Build.record("p", in: zones[0])])
        before = daemon.connectionsAccepted
        let second = try await laptop.save([Build.record("s", in: zones[0]), Build.record("s", in: zones[1])])
        await laptop.endOperation()
        #expect(second.allSatisfy { $0.changeTag != nil })
        // The push (z1 refused, z2 landed), a fetch, and z1's push again.
        #expect(daemon.connectionsAccepted - before == 3)
        #expect(try subject.history(of: zones[0]).count == 4)
        #expect(try subject.history(of: zones[1]).count == 3)
        #expect(names(try await phone.allZoneChanges(zones[0], since: nil).records) == ["p", "r", "s"])
    }

    /// `recsync watch` looks at main's head and every zone ref's: a write to any zone moves
    /// it, a new owner's first zone included, and a local store's signal sees it.
    @Test(arguments: [ZoneRefStore.Kind.git, .network])
    func aWriteToAnyZoneMovesWhatWatchLooksAt(kind: ZoneRefStore.Kind) async throws {
        let subject = try ZoneRefStore(kind)
        let alice = try #require(try subject.store() as? GitStore), writer = try subject.store(), bob = try subject.store(as: "bob")
        try await alice.createZones([a])
        let signal = try #require(try alice.changeSignal())
        let local = kind == .git
        let first = try await alice.remoteHead()
        try await writer.save([Build.record("x", in: a)])
        let second = try await alice.remoteHead()
        #expect(second != first)
        if local {
            #expect(await signal.wait(timeout: 10, shouldStop: { false }))
            #expect(await !signal.wait(timeout: 0.3, shouldStop: { false }), "nothing else moved")
        }
        let bobs = Build.zone("bobs", owner: "bob")
        try await bob.createZones([bobs])
        let third = try await alice.remoteHead()
        #expect(third != second)
        if local {
            // The owner directory bob's first zone made is watched from the next wait on.
            #expect(await signal.wait(timeout: 10, shouldStop: { false }))
            #expect(await !signal.wait(timeout: 0.3, shouldStop: { false }))
        }
        try await bob.save([Build.record("y", in: bobs)])
        #expect(try await alice.remoteHead() != third)
        if local { #expect(await signal.wait(timeout: 10, shouldStop: { false })) }
    }

    /// A zone whose name is too long for a ref has a hashed ref; once it is deleted, its
    /// tombstone names it, so its deletion is reported like any other.
    @Test(arguments: [ZoneRefStore.Kind.git, .network])
    func aDeletedZoneWithAHashedRefNameIsReportedDeleted(kind: ZoneRefStore.Kind) async throws {
        let subject = try ZoneRefStore(kind)
        let alice = try subject.store()
        let long = Build.zone(String(repeating: "n", count: 244))
        #expect(RefNames.refName(for: long).contains("%%"))
        try await alice.createZones([long, a])
        try await alice.save([Build.record("r", in: long)])
        let token = try await alice.databaseChanges(scope: .private, since: nil, resultsLimit: 0).changeToken
        try await alice.zoneOp(.delete(long))
        let page = try await alice.databaseChanges(scope: .private, since: token, resultsLimit: 0)
        #expect(page.deletions == [ZoneDeletion(zoneID: long, reason: .deleted)], "\(page)")
        #expect(page.warnings.isEmpty, "\(page.warnings)")
        #expect(try await alice.fetchZoneDeletions([long]).map(\.reason) == [.deleted])
    }

    /// A zone ref plain git pointed at something that is not a commit breaks only that zone:
    /// another user's database changes and zone list go on, with a warning naming the ref,
    /// and the next call looks at it again.
    @Test(arguments: [ZoneRefStore.Kind.git, .network])
    func aZoneRefPointingAtABlobBreaksOnlyThatZone(kind: ZoneRefStore.Kind) async throws {
        let subject = try ZoneRefStore(kind)
        let alice = try subject.store(), bob = try subject.store(as: "bob")
        try await alice.createZones([a])
        try await alice.share(a, with: "bob", permission: .readOnly)
        let blob = try GitCLI.run(["hash-object", "-w", "--stdin"], in: subject.path, input: "not a commit\n")
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let bad = "refs/recsync/zones/mallory/bad"
        _ = try GitCLI.run(["update-ref", bad, blob], in: subject.path)
        let page = try await bob.databaseChanges(scope: .shared, since: nil, resultsLimit: 0)
        #expect(page.modifications == [a])
        #expect(page.warnings.contains { $0.path == bad && $0.message.contains("not a commit") }, "\(page.warnings)")
        #expect(try await bob.fetchAllRecordZones(scope: .shared).map(\.zoneID) == [a])
        let again = try await bob.databaseChanges(scope: .shared, since: page.changeToken, resultsLimit: 0)
        #expect(again.modifications.isEmpty && again.deletions.isEmpty)
        #expect(again.warnings.contains { $0.path == bad })
    }

    /// What plain git broke on a zone's own ref is named as `git show` takes it,
    /// `<ref>:<path>`, and the repair the message gives works on that ref: main does not hold
    /// the zone, and a clone does not fetch its ref unless asked.
    @Test(arguments: [ZoneRefStore.Kind.git, .network])
    func whatPlainGitBrokeOnAZoneRefIsNamedByRefAndPath(kind: ZoneRefStore.Kind) async throws {
        let subject = try ZoneRefStore(kind)
        let alice = try subject.store()
        try await alice.createZones([a])
        try await alice.save([Build.record("n1", in: a)])
        let ref = RefNames.refName(for: a)
        let records = "\(StoreLayout.zoneRefDir)/\(StoreLayout.recordsDir)"
        let record = "\(records)/\(StoreLayout.recordKey("n1"))"
        try GitCLI.commitFiles([(record, Array("not a record".utf8)), ("\(records)/zz", Array("stray".utf8))], toStore: subject.path, ref: ref)

        let page = try await alice.recordZoneChanges(zone: a, since: nil, resultsLimit: 0, desiredKeys: nil)
        #expect(page.warnings.contains { $0.path == "\(ref):\(records)/zz" }, "\(page.warnings)")
        let failure = page.modifications.compactMap { if case .failure(let e) = $0.result { e } else { nil } }.first
        #expect(failure?.message.contains("\(ref):\(record)") == true, "\(String(describing: failure))")

        // The records directory made a file breaks the zone: the message names the ref and how
        // to repair it there.
        try GitCLI.commitFiles([(records, Array("flat".utf8))], toStore: subject.path, ref: ref)
        var message = ""
        do { _ = try await alice.recordZoneChanges(zone: a, since: nil, resultsLimit: 0, desiredKeys: nil) } catch { message = error.message }
        #expect(message.contains("\(ref):\(records) is a file"), "\(message)")
        #expect(message.contains("'git fetch origin \(ref):\(ref)'") && message.contains("'git push origin HEAD:\(ref)'"), "\(message)")
    }
}
