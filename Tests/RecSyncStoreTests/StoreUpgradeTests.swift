import Foundation
import RecSyncGit
import RecSyncModel
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

@testable import RecSyncStore

/// `GitStore.upgradeToZoneRefs`: a format-1 store's zones moved onto refs of their own with
/// their whole history, main switched by compare-and-swap, tokens from before still answered,
/// against real git.
@Suite(.serialized, .dedicatedThreads) struct StoreUpgradeTests {
    let notes = Build.zone("notes")
    let todo = Build.zone("todo")
    let gone = Build.zone("gone")

    func git(_ arguments: [String], in path: String) throws -> String {
        try GitCLI.run(arguments, in: path).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A handle on the store after the upgrade: one that reads format 2.
    func upgraded(_ fixture: StoreFixture, as user: String) throws -> GitStore {
        let actor = try StoreActor(userRecordName: user, clock: fixture.clock.read)
        guard let daemon = fixture.daemon else { return try GitStore(path: fixture.path, actor: actor, acceptingZoneRefs: true) }
        return try GitStore.open(
            remote: daemon.url("store.git"), mirror: fixture.directory.file("upgraded-\(user)/mirror"), actor: actor,
            options: fixture.isolatedNetworkOptions, acceptingZoneRefs: true)
    }

    /// Zones, shares, edits, deletions and a deleted zone, written as format 1; tokens taken on the way.
    func populate(_ alice: any RemoteStore) async throws -> (early: ServerChangeToken, late: ServerChangeToken, database: ServerChangeToken) {
        try await alice.createZones([notes, todo, gone])
        _ = try await alice.share(notes, with: "bob", permission: .readWrite)
        var saved: [Record] = []
        for i in 1...4 { saved += try await alice.save([Build.record("n\(i)", in: notes, ["i": .int64(Int64(i))])]) }
        try await alice.save([Build.record("t1", in: todo), Build.record("g1", in: gone)])
        let early = try await alice.allZoneChanges(notes, since: nil).token
        _ = try await alice.delete([saved[0]])
        var edited = saved[1]
        edited.fields["i"] = .string("edited")
        try await alice.save([edited])
        try await alice.zoneOp(.delete(gone))
        let late = try await alice.allZoneChanges(notes, since: nil).token
        let database = try await alice.databaseChanges(scope: .private, since: nil).changeToken
        return (early, late, database)
    }

    @Test(arguments: [StoreKind.git, .network])
    func anUpgradedStoreReadsAsBeforeAndKeepsEachZonesHistory(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let alice = try fixture.store(as: "alice"), bob = try fixture.store(as: "bob")
        let tokens = try await populate(alice)
        let before = try await (everything(alice), everything(bob))
        let mainBefore = try git(["rev-parse", "main"], in: fixture.path)

        let upgrader = try #require(try fixture.store(as: "carol") as? GitStore)
        let report = try await upgrader.upgradeToZoneRefs()
        #expect(report.upgraded && report.formatBefore == 1 && report.formatAfter == 2)
        #expect(report.oldHead == mainBefore && report.zones == 3 && report.skipped.isEmpty)
        #expect(try git(["rev-parse", "main^"], in: fixture.path) == mainBefore)
        #expect(try git(["rev-parse", "main"], in: fixture.path) == report.newHead)

        let alice2 = try upgraded(fixture, as: "alice"), bob2 = try upgraded(fixture, as: "bob")
        let after = try await (everything(alice2), everything(bob2))
        #expect(after.0 == before.0)
        #expect(after.1 == before.1)
        #expect(try await alice2.fetchZoneDeletions([gone]).map(\.reason) == [.deleted])

        // Each zone's ref holds every commit of main that changed it, with its message, and
        // its tree is the zone's directory as main had it.
        var zoneCommits = 0
        for zone in [notes, todo, gone] {
            let ref = RefNames.refName(for: zone)
            let dir = StoreLayout.zoneDir(zone)
            let touching = try git(["log", "--format=%s", mainBefore, "--", dir, StoreLayout.tombstonePath(zone)], in: fixture.path)
            #expect(try git(["log", "--format=%s", ref], in: fixture.path) == touching, "\(zone)")
            zoneCommits += touching.split(separator: "\n").count
            if zone != gone {
                #expect(try git(["rev-parse", "\(ref):zone"], in: fixture.path) == git(["rev-parse", "\(mainBefore):\(dir)"], in: fixture.path))
            }
        }
        #expect(report.zoneCommits == zoneCommits)
        #expect(try git(["cat-file", "-t", "\(RefNames.refName(for: gone)):tombstone.json"], in: fixture.path) == "blob")

        // Zone tokens from before go on from where they were.
        let sinceLate = try await alice2.recordZoneChanges(zone: notes, since: tokens.late, resultsLimit: 0, desiredKeys: nil)
        #expect(sinceLate.modifications.isEmpty && sinceLate.deletions.isEmpty && !sinceLate.moreComing)
        let sinceEarly = try await alice2.allZoneChanges(notes, since: tokens.early)
        #expect(names(sinceEarly.records) == ["n2"])
        #expect(sinceEarly.deletions.map(\.recordID.recordName) == ["n1"])
        try await alice2.save([Build.record("n5", in: notes)])
        #expect(names(try await alice2.allZoneChanges(notes, since: tokens.late).records) == ["n5"])
        // A database token from before expires once: the zone list is read again.
        #expect(
            await caught { try await alice2.databaseChanges(scope: .private, since: tokens.database, resultsLimit: 0) }?.code == .changeTokenExpired)

        // A client of format 1 refuses the store from now on, and one opened before refuses too.
        #expect(await caught { try fixture.store(as: "dave") }?.code == .incompatibleVersion)
        #expect(await caught { try await alice.fetchAllRecordZones(scope: .private) }?.code == .incompatibleVersion)
        #expect(await caught { try await alice.save([Build.record("late", in: todo)]) }?.code == .incompatibleVersion)
        // A second upgrade has nothing to do.
        let again = try await alice2.upgradeToZoneRefs()
        #expect(!again.upgraded && again.newHead == report.newHead)
    }

    @Test func aRunStoppedBeforeTheSwitchLeavesFormatOneAndARerunFinishesIt() async throws {
        let fixture = try StoreFixture(.git)
        let alice = try fixture.store(as: "alice")
        _ = try await populate(alice)
        let upgrader = try #require(try fixture.store(as: "carol") as? GitStore)
        let stopped = await caught {
            try await upgrader.upgradeToZoneRefs(beforeSwitching: { _ throws(RecSyncError) in throw .networkFailure("stopped") })
        }
        #expect(stopped?.code == .networkFailure)
        let firstTip = try git(["rev-parse", RefNames.refName(for: notes)], in: fixture.path)
        // Still format 1: its clients go on, and what they write is replayed by the rerun.
        try await alice.save([Build.record("n9", in: notes)])
        #expect(await caught { try await alice.fetchAllRecordZones(scope: .private) } == nil)
        let report = try await upgrader.upgradeToZoneRefs()
        #expect(report.upgraded)
        let tip = try git(["rev-parse", RefNames.refName(for: notes)], in: fixture.path)
        #expect(try git(["merge-base", "--is-ancestor", firstTip, tip], in: fixture.path).isEmpty)
        let alice2 = try upgraded(fixture, as: "alice")
        #expect(names(try await alice2.allZoneChanges(notes, since: nil).records) == ["n2", "n3", "n4", "n9"])
    }

    /// An upgrade killed while it wrote a zone ref leaves that ref's lock: the rerun removes
    /// it (no process holds it) and finishes, instead of taking it for another writer.
    @Test func aRerunRemovesTheLockAKilledUpgradeLeftOnAZoneRef() async throws {
        let fixture = try StoreFixture(.git)
        let alice = try fixture.store(as: "alice")
        _ = try await populate(alice)
        let lock = "\(fixture.path)/\(RefNames.refName(for: todo)).lock"
        try FileManager.default.createDirectory(atPath: (lock as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try writeFile(lock, String(repeating: "0", count: 40) + "\n")
        usleep(UInt32(GitLockFile.abandonedAfter * 1.5 * 1e6))
        let upgrader = try #require(try fixture.store(as: "carol") as? GitStore)
        let report = try await upgrader.upgradeToZoneRefs()
        #expect(report.upgraded && report.zones == 3)
        #expect(!FileManager.default.fileExists(atPath: lock))
    }

    @Test func aFormatOneWriteThatLandsBeforeTheSwitchIsReplayedToo() async throws {
        let fixture = try StoreFixture(.git)
        let alice = try fixture.store(as: "alice")
        _ = try await populate(alice)
        let upgrader = try #require(try fixture.store(as: "carol") as? GitStore)
        let path = fixture.path
        let token = StoreLayout.clientTokenPath(todo, client: "erin/phone")
        let report = try await upgrader.upgradeToZoneRefs(beforeSwitching: { attempt throws(RecSyncError) in
            guard attempt == 1 else { return }
            do { try GitCLI.commitFiles([(token, Array("written meanwhile".utf8))], toStore: path) } catch {
                throw .internalError("\(error)")
            }
        })
        #expect(report.upgraded && report.attempts == 2)
        let ref = RefNames.refName(for: todo)
        #expect(try git(["log", "-1", "--format=%s", ref], in: path) == "written with plain git")
        #expect(try git(["rev-parse", "\(ref):zone"], in: path) == git(["rev-parse", "main^:\(StoreLayout.zoneDir(todo))"], in: path))
    }

    /// A zone whose name is too long for a ref gets a hashed one; its tombstone from a recsync
    /// that did not name the zone in it is given the names, so its deletion is still reported.
    @Test func aDeletedZoneWithAHashedRefNameKeepsItsDeletion() async throws {
        let fixture = try StoreFixture(.git)
        let alice = try fixture.store(as: "alice")
        let long = Build.zone(String(repeating: "n", count: 244))
        try await alice.createZones([long, todo])
        try await alice.zoneOp(.delete(long))
        // The tombstone as recsync wrote it before tombstones named their zone.
        let old = ZoneDocuments.encodeTombstone(reason: .deleted, stamp: ChangeStamp(timestamp: 1, userRecordName: "alice"))
        try GitCLI.commitFiles([(StoreLayout.tombstonePath(long), old)], toStore: fixture.path)
        let upgrader = try #require(try fixture.store(as: "alice") as? GitStore)
        #expect(try await upgrader.upgradeToZoneRefs().upgraded)
        let alice2 = try upgraded(fixture, as: "alice")
        #expect(try await alice2.fetchZoneDeletions([long]).map(\.reason) == [.deleted])
        let listing = try await alice2.databaseChanges(scope: .private, since: nil, resultsLimit: 0)
        #expect(listing.warnings.isEmpty, "\(listing.warnings)")
        let stone = try git(["cat-file", "-p", "\(RefNames.refName(for: long)):tombstone.json"], in: fixture.path)
        #expect(stone.contains(long.zoneName))
    }

    /// A file plain git put where a zone's directory belongs is no zone: it gets no ref, and
    /// the report names it.
    @Test func aFileWhereAZoneBelongsGetsNoRef() async throws {
        let fixture = try StoreFixture(.git)
        let alice = try fixture.store(as: "alice")
        try await alice.createZones([todo])
        let junk = Build.zone("junk")
        try GitCLI.commitFiles([(StoreLayout.zoneDir(junk), Array("not a zone\n".utf8))], toStore: fixture.path)
        let upgrader = try #require(try fixture.store(as: "alice") as? GitStore)
        let report = try await upgrader.upgradeToZoneRefs()
        #expect(report.upgraded && report.zones == 1)
        #expect(report.skipped == [StoreLayout.zoneDir(junk)])
        let refs = try git(["for-each-ref", "--format=%(refname)", RefNames.zonesPrefix], in: fixture.path)
        #expect(refs == RefNames.refName(for: todo))
    }

    @Test func aZoneRefNotWrittenByAnUpgradeStopsItAndChangesNothing() async throws {
        let fixture = try StoreFixture(.git)
        let alice = try fixture.store(as: "alice")
        _ = try await populate(alice)
        let main = try git(["rev-parse", "main"], in: fixture.path)
        let stray = try git(["commit-tree", "-m", "by hand", try git(["rev-parse", "main^{tree}"], in: fixture.path)], in: fixture.path)
        let ref = RefNames.refName(for: todo)
        _ = try git(["update-ref", ref, stray], in: fixture.path)
        let upgrader = try #require(try fixture.store(as: "carol") as? GitStore)
        let error = await caught { try await upgrader.upgradeToZoneRefs() }
        #expect(error?.kind == .storeCorrupt)
        #expect(error?.message.contains(ref) == true)
        #expect(try git(["rev-parse", "main"], in: fixture.path) == main)
        #expect(try git(["rev-parse", ref], in: fixture.path) == stray)
        #expect(await caught { try await alice.fetchAllRecordZones(scope: .private) } == nil)
    }

    /// Compaction per zone ref is not built: refused, rather than compacting main alone and
    /// reporting a compaction while every zone's history stays.
    @Test func aStoreOfFormatTwoIsNotCompactedYet() async throws {
        let fixture = try StoreFixture(.zoneRefs)
        let alice = try #require(try fixture.store(as: "alice") as? GitStore)
        try await alice.createZones([notes])
        for i in 1...3 { try await alice.save([Build.record("n\(i)", in: notes)]) }
        let heads = try git(["for-each-ref", "--format=%(objectname)"], in: fixture.path)
        #expect(await caught { try await alice.compact(.keepLast(1)) }?.kind == .unsupported)
        #expect(try git(["for-each-ref", "--format=%(objectname)"], in: fixture.path) == heads)
    }

    @Test func aStoreOfFormatTwoHasNothingToUpgrade() async throws {
        let directory = TempDirectory(#function)
        let path = directory.file("store.git")
        try GitStore.create(at: path, actor: StoreActor(userRecordName: "admin", clock: { 1_767_225_600_000 }), format: StoreLayout.zoneRefsFormat)
        let store = try GitStore(path: path, actor: StoreActor(userRecordName: "alice", clock: { 1_767_225_600_000 }), acceptingZoneRefs: true)
        let head = try git(["rev-parse", "main"], in: path)
        let report = try await store.upgradeToZoneRefs()
        #expect(!report.upgraded && report.formatBefore == 2 && report.oldHead == head && report.newHead == head)
    }
}
