import Foundation
import RecSyncGit
import RecSyncModel
import RecSyncTestSupport
import RecSyncTestTraits
import Synchronization
import Testing

@testable import RecSyncStore

/// `GitStore.compact`: history before a horizon folded into one root commit,
/// the rest replayed, tokens of kept commits followed through `compaction.json`, the head
/// moved by compare-and-swap (a guarded force push on a network store), against real git.
@Suite(.serialized, .dedicatedThreads) struct CompactionTests {
    let notes = Build.zone("notes")
    let todo = Build.zone("todo")
    let old = Build.zone("old")
    let gone = Build.zone("gone")

    func gitStore(_ fixture: StoreFixture, as user: String) throws -> GitStore {
        try #require(try fixture.store(as: user) as? GitStore)
    }

    func git(_ arguments: [String], in path: String) throws -> String {
        try GitCLI.run(arguments, in: path).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func compactingALocalStoreKeepsEveryLiveThingDropsOldCommitsAndPassesFsck() async throws {
        let fixture = try StoreFixture(.git)
        let alice = try gitStore(fixture, as: "alice")
        let bob = try fixture.store(as: "bob")
        try await alice.createZones([notes, todo, old, gone])
        _ = try await alice.share(notes, with: "bob", permission: .readWrite)
        var saved: [Record] = []
        for i in 1...8 { saved += try await alice.save([Build.record("n\(i)", in: notes, ["i": .int64(Int64(i))])]) }
        try await alice.zoneOp(.delete(old))
        try await alice.zoneOp(.purge(gone))
        let oldDB = try await alice.databaseChanges(scope: .private, since: nil).changeToken
        let oldZone = try await alice.allZoneChanges(notes, since: nil).token
        _ = try await alice.delete([saved[0]])
        var edited = saved[1]
        edited.fields["i"] = .string("edited")
        try await alice.save([edited])
        let keptDB = try await alice.databaseChanges(scope: .private, since: nil).changeToken
        let keptZone = try await alice.allZoneChanges(notes, since: nil).token
        try await alice.save([Build.record("t1", in: todo)])
        try await alice.save([Build.record("n9", in: notes)])
        let headZone = try await alice.allZoneChanges(notes, since: nil).token
        let sinceKept = try await alice.allZoneChanges(notes, since: keptZone)
        let sinceKeptDB = try await alice.databaseChanges(scope: .private, since: keptDB)

        let before = try await (everything(alice), everything(bob))
        let countBefore = try Int(git(["rev-list", "--count", "main"], in: fixture.path))
        let report = try await alice.compact(.keepLast(3))

        #expect(report.compacted && report.commitsBefore == countBefore && report.commitsReplayed == 3 && report.commitsAfter == 5)
        #expect(report.commitsFolded == countBefore! - 3 && report.attempts == 1 && report.tombstonesDropped.isEmpty)
        #expect(try git(["rev-parse", "main"], in: fixture.path) == report.newHead)
        #expect(try git(["rev-list", "--count", "main"], in: fixture.path) == "5")
        #expect(try git(["rev-list", "--max-parents=0", "main"], in: fixture.path) == report.newRoot)
        _ = try git(["fsck", "--strict", "--no-dangling"], in: fixture.path)
        // The replayed commits keep trees, authors, committers, messages and times.
        let oldLog = try git(["log", "--format=%T %an %ae %at %cn %ce %ct %B", "-3", report.oldHead], in: fixture.path)
        let newLog = try git(["log", "--format=%T %an %ae %at %cn %ce %ct %B", "-3", report.newHead + "~1"], in: fixture.path)
        #expect(oldLog == newLog)
        #expect(
            try git(["ls-tree", "--name-only", "main"], in: fixture.path).split(separator: "\n") == [
                "compaction.json", "recsync.json", "tombstones", "zones",
            ])

        // Every live record, zone, share and tombstone, for the owner and the participant.
        let after = try await (everything(alice), everything(bob))
        #expect(after.0 == before.0)
        #expect(after.1 == before.1)
        let reopened = try fixture.store(as: "alice")
        #expect(try await reopened.fetchZoneDeletions([old, gone]).map(\.reason) == [.purged, .deleted])
        #expect(await caught { try await reopened.zoneOp(.save(RecordZone(zoneID: old))) } != nil, "the tombstone still refuses a plain save")

        // Tokens from before the horizon expire; tokens of kept commits go on where they were.
        #expect(await caught { try await alice.databaseChanges(scope: .private, since: oldDB) }?.code == .changeTokenExpired)
        #expect(await caught { try await alice.recordZoneChanges(zone: notes, since: oldZone) }?.code == .changeTokenExpired)
        let again = try await alice.allZoneChanges(notes, since: keptZone)
        #expect(names(again.records) == names(sinceKept.records) && again.records.map(\.changeTag) == sinceKept.records.map(\.changeTag))
        let againDB = try await alice.databaseChanges(scope: .private, since: keptDB)
        #expect(againDB.modifications == sinceKeptDB.modifications)
        let fromHead = try await alice.recordZoneChanges(zone: notes, since: headZone)
        #expect(fromHead.modifications.isEmpty && fromHead.deletions.isEmpty && !fromHead.moreComing)
        #expect(await caught { try await alice.checkSubscriptions([], scope: .private, since: oldDB) }?.code == .changeTokenExpired)

        // Writes go on on the new history, and a second compaction keeps earlier tokens working.
        try await alice.save([Build.record("n10", in: notes)])
        let second = try await alice.compact(.keepLast(3))
        #expect(second.compacted && second.commitsAfter == 5)
        #expect(names(try await alice.allZoneChanges(notes, since: headZone).records) == ["n10"])
        #expect(await caught { try await alice.recordZoneChanges(zone: notes, since: keptZone) }?.code == .changeTokenExpired)
        _ = try git(["fsck", "--strict", "--no-dangling"], in: fixture.path)
        // The store clones with plain git, marker and all.
        let clone = fixture.directory.file("clone")
        _ = try git(["clone", "--quiet", fixture.path, clone], in: fixture.directory.path)
        #expect(FileManager.default.fileExists(atPath: clone + "/compaction.json"))
    }

    @Test func nothingToCompactChangesNothing() async throws {
        let fixture = try StoreFixture(.git)
        let alice = try gitStore(fixture, as: "alice")
        try await alice.createZones([notes])
        let head = try git(["rev-parse", "main"], in: fixture.path)
        for horizon in [CompactionHorizon.keepLast(2), .keepLast(50), .before(Date(timeIntervalSince1970: 0))] {
            let report = try await alice.compact(horizon)
            #expect(!report.compacted && report.newHead == head && report.commitsBefore == 2 && report.commitsAfter == 2, "\(horizon)")
        }
        #expect(try git(["rev-parse", "main"], in: fixture.path) == head)
        #expect(await caught { try await alice.compact(.keepLast(0)) }?.code == .invalidArguments)
    }

    @Test func beforeADateKeepsTheCommitsMadeSinceAndTheHorizonTokenStillWorks() async throws {
        let fixture = try StoreFixture(.git)
        let alice = try gitStore(fixture, as: "alice")
        try await alice.createZones([notes])
        for i in 1...4 { try await alice.save([Build.record("r\(i)", in: notes)]) }
        let horizonToken = try await alice.allZoneChanges(notes, since: nil).token
        let horizon = try git(["rev-parse", "main"], in: fixture.path)
        let cut = try Int64(git(["log", "-1", "--format=%ct", "main"], in: fixture.path))! + 1
        for i in 5...6 { try await alice.save([Build.record("r\(i)", in: notes)]) }

        let report = try await alice.compact(.before(Date(timeIntervalSince1970: TimeInterval(cut))))
        #expect(report.horizon == horizon && report.commitsReplayed == 2 && report.commitsAfter == 4)
        #expect(names(try await alice.allZoneChanges(notes, since: horizonToken).records) == ["r5", "r6"])
    }

    @Test func aDamagedMarkerOnlyMakesTokensExpire() async throws {
        let fixture = try StoreFixture(.git)
        let alice = try gitStore(fixture, as: "alice")
        try await alice.createZones([notes])
        for i in 1...3 { try await alice.save([Build.record("r\(i)", in: notes)]) }
        let kept = try await alice.allZoneChanges(notes, since: nil).token
        _ = try await alice.compact(.keepLast(1))
        #expect(try await alice.databaseChanges(scope: .private, since: nil).warnings.isEmpty, "compaction.json is no unknown entry")
        #expect(try await alice.recordZoneChanges(zone: notes, since: kept).modifications.isEmpty)

        try GitCLI.commitFiles([(path: "compaction.json", bytes: Array("{not json".utf8))], toStore: fixture.path)
        let reopened = try gitStore(fixture, as: "alice")
        #expect(await caught { try await reopened.recordZoneChanges(zone: notes, since: kept) }?.code == .changeTokenExpired)
        #expect(names(try await reopened.allZoneChanges(notes, since: nil).records) == ["r1", "r2", "r3"])
    }

    @Test func deletedZoneTombstonesAreDroppedOnlyWhenAskedAndPurgedOnesStay() async throws {
        let fixture = try StoreFixture(.git)
        let alice = try gitStore(fixture, as: "alice")
        try await alice.createZones([notes, old, gone])
        try await alice.zoneOp(.delete(old))
        try await alice.zoneOp(.purge(gone))
        try await alice.save([Build.record("a", in: notes)])
        let kept = try await alice.compact(.keepLast(1))
        #expect(kept.tombstonesDropped.isEmpty)
        #expect(
            try git(["ls-tree", "-r", "--name-only", "main", "tombstones"], in: fixture.path)
                == "tombstones/alice/gone.json\ntombstones/alice/old.json")

        try await alice.save([Build.record("b", in: notes)])
        let dropped = try await alice.compact(.keepLast(1), dropDeletedTombstones: true)
        #expect(dropped.tombstonesDropped == [old])
        #expect(try git(["ls-tree", "-r", "--name-only", "main", "tombstones"], in: fixture.path) == "tombstones/alice/gone.json")
        #expect(try await alice.fetchZoneDeletions([old, gone]).map(\.zoneID) == [gone])
        _ = try git(["fsck", "--strict", "--no-dangling"], in: fixture.path)
    }

    // MARK: Network stores

    @Test func aForcePushOverAMovedHeadIsRefusedByTheGuard() async throws {
        let fixture = try StoreFixture(.network)
        let writer = try fixture.device(as: "alice")
        try await writer.createZones([notes])
        let mirror = fixture.directory.file("raw-mirror")
        let repository = try GitRepository.initBare(at: mirror)
        let daemon = try #require(fixture.daemon)
        let url = try #require(GitRemoteURL(daemon.url("store.git")))
        try repository.fetch(["+refs/heads/main:refs/heads/main"], from: url, options: fixture.isolatedNetworkOptions)
        let seen = try #require(try repository.referenceTarget("refs/heads/main"))
        try await writer.save([Build.record("moved", in: notes)])
        let moved = try git(["rev-parse", "main"], in: fixture.path)

        // A rewrite of what we saw (its tree as a new root), pushed as if the head were still there.
        let rewritten = try repository.copyCommit(seen, tree: repository.commit(seen).tree, parents: [])
        let refused = try repository.forcePush(rewritten, to: "refs/heads/main", expecting: seen, at: url, options: fixture.isolatedNetworkOptions)
        guard case .rejected(let reason) = refused else { Issue.record("expected a refusal, got \(refused)"); return }
        #expect(reason.contains(moved) && reason.contains(seen.hex), "\(reason)")
        #expect(try git(["rev-parse", "main"], in: fixture.path) == moved)

        // With the right expectation it lands: a force push, not a fast-forward.
        let current = try #require(GitOID(hex: moved))
        try repository.fetch(["+refs/heads/main:refs/heads/main"], from: url, options: fixture.isolatedNetworkOptions)
        #expect(
            try repository.forcePush(rewritten, to: "refs/heads/main", expecting: current, at: url, options: fixture.isolatedNetworkOptions)
                == .accepted)
        #expect(try git(["rev-parse", "main"], in: fixture.path) == rewritten.hex)
    }

    @Test func aServerThatForbidsRewritingHistoryIsAPermissionFailureAndNothingChanges() async throws {
        let fixture = try StoreFixture(.network)
        let admin = try fixture.device(as: "alice")
        try await admin.createZones([notes])
        for i in 1...3 { try await admin.save([Build.record("r\(i)", in: notes)]) }
        _ = try git(["config", "receive.denyNonFastForwards", "true"], in: fixture.path)
        let head = try git(["rev-parse", "main"], in: fixture.path)
        let refused = await caught { try await admin.compact(.keepLast(1)) }
        #expect(refused?.code == .permissionFailure && refused?.message.contains("denyNonFastForwards") == true, "\(String(describing: refused))")
        #expect(try git(["rev-parse", "main"], in: fixture.path) == head)
        // Writes go on as before.
        try await admin.save([Build.record("r4", in: notes)])
    }

    @Test func aNetworkCompactionWhoseHeadMovedIsCarriedOnAndLosesNothing() async throws {
        let fixture = try StoreFixture(.network)
        let admin = try fixture.device(as: "alice")
        let other = try fixture.device(as: "alice")
        try await admin.createZones([notes])
        for i in 1...5 { try await admin.save([Build.record("r\(i)", in: notes)]) }
        let otherToken = try await other.allZoneChanges(notes, since: nil).token

        let report = try await admin.compact(.keepLast(2), dropDeletedTombstones: false) { (attempt: Int) throws(RecSyncError) in
            guard attempt == 1 else { return }
            // The compaction's lease is on the server. A recsync writer would wait for it to go;
            // this one must not (it stands for plain git or an older recsync): take it away.
            do {
                let leases = try git(["for-each-ref", "--format=%(refname)", "refs/recsync/compacting/"], in: fixture.path)
                    .split(separator: "\n").map(String.init)
                #expect(leases.count == 1, "\(leases)")
                for lease in leases { _ = try git(["update-ref", "-d", lease], in: fixture.path) }
            } catch {
                Issue.record("\(error)")
            }
            // Another device writes between the compaction's look and its push.
            let late = GitStoreCall { () async throws(RecSyncError) in
                _ = try await other.modifyRecords(
                    saving: [Build.record("late", in: notes)], deleting: [], savePolicy: .ifServerRecordUnchanged, atomically: true)
            }
            try late.wait()
        }
        #expect(report.compacted && report.attempts == 2 && report.writersHeldOff)
        #expect(try git(["rev-parse", "main"], in: fixture.path) == report.newHead)
        // The late write was replayed on the horizon the first attempt chose: the root, r4,
        // r5, late and the marker (the two newest asked for, and what landed meanwhile).
        #expect(try git(["rev-list", "--count", "main"], in: fixture.path) == "5")
        #expect(report.commitsReplayed == 3)
        // The lease is gone once the compaction is done.
        #expect(try git(["for-each-ref", "refs/recsync/"], in: fixture.path) == "")
        #expect(names(try await admin.allZoneChanges(notes, since: nil).records) == ["late", "r1", "r2", "r3", "r4", "r5"])
        // The other device's token named its write's parent, a replayed commit: it goes on from there.
        #expect(names(try await other.allZoneChanges(notes, since: otherToken).records) == ["late"])
        _ = try git(["fsck", "--strict", "--no-dangling"], in: fixture.path)
    }

    @Test func aLocalCompactionWhoseHeadMovedReplaysWhatLandedOnTheSameHorizon() async throws {
        let fixture = try StoreFixture(.git)
        let admin = try gitStore(fixture, as: "alice")
        let other = try gitStore(fixture, as: "alice")
        try await admin.createZones([notes, gone])
        try await admin.zoneOp(.delete(gone))
        for i in 1...4 { try await admin.save([Build.record("r\(i)", in: notes)]) }
        let report = try await admin.compact(.keepLast(1), dropDeletedTombstones: true) { (attempt: Int) throws(RecSyncError) in
            guard attempt == 1 else { return }
            let late = GitStoreCall { () async throws(RecSyncError) in
                _ = try await other.modifyRecords(
                    saving: [Build.record("late", in: notes)], deleting: [], savePolicy: .ifServerRecordUnchanged, atomically: true)
            }
            try late.wait()
        }
        #expect(report.compacted && report.attempts == 2 && !report.writersHeldOff)
        #expect(report.commitsReplayed == 2 && report.commitsAfter == 4, "\(report)")
        #expect(try git(["rev-list", "--count", "main"], in: fixture.path) == "4")
        #expect(try git(["rev-parse", "main"], in: fixture.path) == report.newHead)
        // The replayed late commit lost the dropped tombstone too.
        #expect(try git(["ls-tree", "-r", "--name-only", "main"], in: fixture.path).contains("tombstones/") == false)
        #expect(names(try await admin.allZoneChanges(notes, since: nil).records) == ["late", "r1", "r2", "r3", "r4"])
        _ = try git(["fsck", "--strict", "--no-dangling"], in: fixture.path)
    }

    @Test func aCompactionThatFindsTheHistoryRewrittenMeanwhileComputesFromTheStart() async throws {
        let fixture = try StoreFixture(.git)
        let admin = try gitStore(fixture, as: "alice")
        let other = try gitStore(fixture, as: "alice")
        try await admin.createZones([notes])
        for i in 1...5 { try await admin.save([Build.record("r\(i)", in: notes)]) }
        let report = try await admin.compact(.keepLast(1), dropDeletedTombstones: false) { (attempt: Int) throws(RecSyncError) in
            guard attempt == 1 else { return }
            // Someone else compacts first: the head this compaction read is no longer in the history.
            let rival = GitStoreCall { () async throws(RecSyncError) in _ = try await other.compact(.keepLast(1)) }
            try rival.wait()
        }
        // Computed again on the rival's history (root, r5, marker): its horizon is r5, its
        // replayed commit the marker; nothing of the first computation is carried over.
        #expect(report.compacted && report.attempts == 2 && report.commitsBefore == 3 && report.commitsReplayed == 1, "\(report)")
        #expect(try git(["rev-list", "--count", "main"], in: fixture.path) == "3")
        #expect(names(try await admin.allZoneChanges(notes, since: nil).records) == ["r1", "r2", "r3", "r4", "r5"])
        _ = try git(["fsck", "--strict", "--no-dangling"], in: fixture.path)
    }

    @Test func writersHoldTheirPushWhileACompactionLeaseIsAdvertised() async throws {
        let fixture = try StoreFixture(.network)
        let writer = try fixture.device(as: "alice")
        try await writer.createZones([notes])
        let head = try git(["rev-parse", "main"], in: fixture.path)
        let lease = "refs/recsync/compacting/\(CompactionLease.now() + 30_000)-test"
        _ = try git(["update-ref", lease, "main"], in: fixture.path)
        let save = Task(executorPreference: TestThreads.current) { try await writer.save([Build.record("held", in: notes)]) }
        // The push waits while the lease is there...
        try await Task.sleep(for: .milliseconds(600))
        #expect(try git(["rev-parse", "main"], in: fixture.path) == head)
        // ...and lands once it is gone, without a retry the caller sees.
        _ = try git(["update-ref", "-d", lease], in: fixture.path)
        _ = try await save.value
        #expect(try git(["rev-parse", "main"], in: fixture.path) != head)

        // Leases that ended, or whose deadline is past belief, hold nobody: the save finishes
        // long before the 30 s a writer would hold at most.
        for deadline in [CompactionLease.now() - 5_000, CompactionLease.now() + 3_600_000] {
            let name = "refs/recsync/compacting/\(deadline)-test"
            _ = try git(["update-ref", name, "main"], in: fixture.path)
            let started = ContinuousClock.now
            try await writer.save([Build.record("free\(deadline)", in: notes)])
            #expect(ContinuousClock.now - started < .seconds(10))
            _ = try git(["update-ref", "-d", name], in: fixture.path)
        }
    }

    /// A lease renewed for ever (or a server that keeps advertising new ones) stalls a push
    /// only so long in all, and the push says what it waits for.
    @Test func aPushWaitsForLeasesBoundedInAllAndSaysSo() async throws {
        let fixture = try StoreFixture(.network)
        let writer = try fixture.device(as: "alice")
        try await writer.createZones([notes])
        await writer.holdForLeasesAtMost(.seconds(2))
        let said = Mutex<[String]>([])
        writer.notices.onNotice { message in said.withLock { $0.append(message) } }
        let head = try git(["rev-parse", "main"], in: fixture.path)
        let first = "refs/recsync/compacting/\(CompactionLease.now() + 59_000)-first"
        _ = try git(["update-ref", first, "main"], in: fixture.path)
        let save = Task(executorPreference: TestThreads.current) { try await writer.save([Build.record("held", in: notes)]) }
        // Renewed under a new name while the push waits: a new lease, but no new allowance.
        try await Task.sleep(for: .milliseconds(700))
        let second = "refs/recsync/compacting/\(CompactionLease.now() + 59_000)-second"
        _ = try git(["update-ref", second, "main"], in: fixture.path)
        _ = try await save.value
        #expect(try git(["rev-parse", "main"], in: fixture.path) != head, "the push landed with both leases still there")
        let messages = said.withLock { $0 }
        #expect(messages.first?.contains("waiting for a compaction") == true && messages.first?.contains(first) == true, "\(messages)")
        #expect(messages.allSatisfy { $0.contains("waits at most 2 s in all") }, "\(messages)")
    }

    @Test func aCompactionRemovesItsLeaseAndLeasesLongExpired() async throws {
        let fixture = try StoreFixture(.network)
        let admin = try fixture.device(as: "alice")
        try await admin.createZones([notes])
        for i in 1...3 { try await admin.save([Build.record("r\(i)", in: notes)]) }
        // Left by a compaction that was killed two minutes ago, one whose deadline nobody
        // believes, and one still running elsewhere.
        let dead = "refs/recsync/compacting/\(CompactionLease.now() - 120_000)-dead"
        let far = "refs/recsync/compacting/\(CompactionLease.now() + 3_600_000)-far"
        let live = "refs/recsync/compacting/\(CompactionLease.now() + 10_000)-live"
        for lease in [dead, far, live] { _ = try git(["update-ref", lease, "main"], in: fixture.path) }
        let report = try await admin.compact(.keepLast(1))
        #expect(report.compacted && report.writersHeldOff && report.leasesLeft.isEmpty)
        #expect(try git(["for-each-ref", "--format=%(refname)", "refs/recsync/"], in: fixture.path) == live)
        _ = try git(["fsck", "--strict", "--no-dangling"], in: fixture.path)
    }

    @Test func aLeaseTheServerWillNotDeleteIsReportedAndKeepsNoHistoryAlive() async throws {
        let fixture = try StoreFixture(.network)
        let admin = try fixture.device(as: "alice")
        try await admin.createZones([notes])
        for i in 1...3 { try await admin.save([Build.record("r\(i)", in: notes)]) }
        let oldHead = try git(["rev-parse", "main"], in: fixture.path)
        // A server that refuses deleting any reference under refs/recsync/ (git's own
        // receive.denyDeletes covers branches only).
        let hook = fixture.path + "/hooks/update"
        try """
        #!/bin/sh\ncase \"$1:$3\" in refs/recsync/*:0000000000000000000000000000000000000000) echo\
         'deleting $1 is not allowed' >&2; exit 1;; esac\nexit 0\n
        """
        .write(toFile: hook, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: hook)
        let report = try await admin.compact(.keepLast(1))
        #expect(report.compacted && report.writersHeldOff)
        let left = try git(["for-each-ref", "--format=%(refname)", "refs/recsync/compacting/"], in: fixture.path)
        #expect(report.leasesLeft == [left] && !left.isEmpty, "\(report.leasesLeft) vs \(left)")
        // The lease names a parentless commit with an empty tree: the old history is not
        // reachable from it, and goes with the next gc.
        #expect(try git(["rev-list", "--count", left], in: fixture.path) == "1")
        #expect(try git(["rev-parse", "\(left)^{tree}"], in: fixture.path) == "4b825dc642cb6eb9a060e54bf8d69288fbee4904")
        #expect(try git(["rev-list", left], in: fixture.path).contains(oldHead) == false)
    }

    @Test func leaseNamesAreReadStrictly() {
        let now: Int64 = 1_800_000_000_000
        let lease = CompactionLease(now: now)
        #expect(CompactionLease.deadline(of: lease.name) == now + CompactionLease.duration)
        #expect(CompactionLease.holding(["refs/heads/main", lease.name], now: now) == lease.name)
        #expect(CompactionLease.holding([lease.name], now: lease.deadline) == nil)
        #expect(
            CompactionLease.holding(
                ["refs/heads/main", "refs/recsync/compacting/", "refs/recsync/compacting/x1", "refs/recsync/compacting/99999999999999999999"],
                now: now) == nil)
        #expect(CompactionLease.holding(["refs/recsync/compacting/\(now + 61_000)-far"], now: now) == nil)
        let old = "refs/recsync/compacting/\(now - 61_000)-old", far = "refs/recsync/compacting/\(now + 61_000)-far"
        #expect(
            CompactionLease.stale([lease.name, old, "refs/heads/main", far, "refs/recsync/compacting/\(now - 59_000)-recent"], now: now) == [
                old, far,
            ])
    }

    @Test func compactionRacingTwoPushingDevicesLosesNoAcknowledgedWrite() async throws {
        let fixture = try StoreFixture(.network)
        let admin = try fixture.device(as: "alice")
        try await admin.createZones([notes])
        for i in 1...10 { try await admin.save([Build.record("seed\(i)", in: notes)]) }
        let devices = [try fixture.device(as: "alice"), try fixture.device(as: "alice")]
        var tokens: [ServerChangeToken] = []
        for device in devices { tokens.append(try await device.allZoneChanges(notes, since: nil).token) }
        let stop = StopFlag()

        let writers = devices.enumerated().map { (n, device) in
            Task(executorPreference: TestThreads.current) { () -> [String: String] in
                var acknowledged: [String: String] = [:]
                var i = 0
                while !stop.value.load(ordering: .relaxed) || i < 3 {
                    i += 1
                    let name = "d\(n)-\(i)"
                    let saved = try await device.save([Build.record(name, in: notes)])
                    acknowledged[name] = saved[0].changeTag
                    // As people and apps write: a pause between writes, not a saturating loop.
                    try await Task.sleep(for: .milliseconds(Int.random(in: 20...120)))
                }
                return acknowledged
            }
        }
        var compactions: [CompactionReport] = []
        for keep in [6, 3, 2] {
            try await Task.sleep(for: .milliseconds(300))
            compactions.append(try await admin.compact(.keepLast(keep)))
        }
        stop.value.store(true, ordering: .relaxed)
        var acknowledged: [String: String] = [:]
        for writer in writers { acknowledged.merge(try await writer.value) { a, _ in a } }

        print("compaction racing two writers: attempts \(compactions.map(\.attempts)), \(acknowledged.count) writes acknowledged")
        #expect(compactions.allSatisfy { $0.compacted && $0.writersHeldOff }, "\(compactions)")
        let stored = Dictionary(
            uniqueKeysWithValues: try await admin.allZoneChanges(notes, since: nil).records.map { ($0.recordID.recordName, $0.changeTag ?? "") })
        for (name, tag) in acknowledged { #expect(stored[name] == tag, "acknowledged write \(name) lost") }
        #expect(stored.count == acknowledged.count + 10)
        _ = try git(["fsck", "--strict", "--no-dangling"], in: fixture.path)

        // Both devices catch up from the tokens they held (refetching from nil where one
        // expired) and end with the store's content.
        for (n, device) in devices.enumerated() {
            var held: [String: String] = [:]
            let since: ServerChangeToken?
            if await caught({ try await device.recordZoneChanges(zone: notes, since: tokens[n]) })?.code == .changeTokenExpired {
                since = nil
            } else {
                since = tokens[n]
            }
            let seed = since == nil ? [:] : Dictionary(uniqueKeysWithValues: (1...10).map { ("seed\($0)", stored["seed\($0)"] ?? "") })
            held.merge(seed) { a, _ in a }
            let changes = try await device.allZoneChanges(notes, since: since)
            for record in changes.records { held[record.recordID.recordName] = record.changeTag ?? "" }
            for deletion in changes.deletions { held[deletion.recordID.recordName] = nil }
            #expect(held == stored, "device \(n)")
        }
    }
}

final class StopFlag: Sendable {
    let value = Atomic<Bool>(false)
}

/// Runs an async store call to completion from synchronous code on another thread (the
/// compaction's hook runs on the compacting store's own thread, which must not be awaited on).
final class GitStoreCall: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var failure: RecSyncError?

    init(_ body: @escaping @Sendable () async throws(RecSyncError) -> Void) {
        Task.detached(executorPreference: TestThreads.current) { [self] in
            do throws(RecSyncError) { try await body() } catch { failure = error }
            done.signal()
        }
    }

    func wait() throws(RecSyncError) {
        done.wait()
        if let failure { throw failure }
    }
}
