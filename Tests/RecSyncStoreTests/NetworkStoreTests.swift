import Foundation
import RecSyncGit
import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

/// Network stores (DESIGN §8): a bare mirror per device, fetch before reading, non-force push
/// for writing, over git://, ssh:// and file://, against real servers on loopback.
///
/// Serialized: several tests block a thread in a network call until a server does something,
/// and the latency figures are only meaningful without other tests competing for two cores.
@Suite(.serialized, .dedicatedThreads) struct NetworkStoreTests {
    let notes = Build.zone("notes")

    // MARK: Addresses

    @Test func remoteAddressesAreRecognisedAndShownWithoutSecrets() throws {
        for remote in [
            "ssh://git@host/srv/store.git", "git+ssh://host:2222/x", "git@github.com:me/store.git", "host:store.git",
            "https://host/x.git", "http://host:8080/x", "git://127.0.0.1:9418/store.git", "file:///srv/store.git",
        ] {
            #expect(GitStore.isNetworkRemote(remote), "\(remote)")
        }
        for path in ["/srv/store.git", "store.git", "./a:b", "../x/y:z", "dir/with:colon", "", "ftp://host/x"] {
            #expect(!GitStore.isNetworkRemote(path), "\(path)")
        }
        let https = try #require(GitRemoteURL("https://me:s3cr3t-token@host:8443/team/store.git"))
        #expect(https.redacted == "https://host:8443/team/store.git")
        #expect(https.host == "host" && https.port == 8443 && https.user == "me")
        let tokenAsUser = try #require(GitRemoteURL("https://ghp_abcdef@github.com/me/store.git"))
        #expect(!tokenAsUser.redacted.contains("ghp_abcdef"))
        let ssh = try #require(GitRemoteURL("ssh://alice@[::1]:2222/srv/store.git"))
        #expect(ssh.host == "::1" && ssh.port == 2222 && ssh.path == "/srv/store.git" && ssh.redacted == "ssh://alice@[::1]:2222/srv/store.git")
        let scp = try #require(GitRemoteURL("git@example.com:team/store.git"))
        #expect(scp.transport == .ssh && scp.user == "git" && scp.host == "example.com" && scp.path == "team/store.git" && scp.effectivePort == 22)
        #expect(scp.redacted == "git@example.com:team/store.git")
    }

    @Test func aPasswordInAnAddressIsStrippedAndNeverWrittenIntoTheMirror() async throws {
        #expect(GitStore.withoutPassword("https://me:s3cr3t@host:8443/team/store.git") == "https://me@host:8443/team/store.git")
        #expect(GitStore.withoutPassword("http://me:p%40ss:w@host/x?y=@z") == "http://me@host/x?y=@z")
        for unchanged in ["https://me@host/x.git", "https://host/x.git", "git@host:x.git", "/srv/a:b@c", "ssh://me@host:22/x"] {
            #expect(GitStore.withoutPassword(unchanged) == unchanged)
        }
        // Unparseable (a bad port) loses its password all the same, in the error message too.
        let fixture = try StoreFixture(.memory)
        let actor = try StoreActor(userRecordName: "alice", clock: fixture.clock.read)
        let bad = await caught {
            try GitStore.open(remote: "https://me:s3cr3t-Pw@host:notaport/x", mirror: fixture.directory.file("m0"), actor: actor)
        }
        #expect(
            bad?.message.contains("s3cr3t-Pw") == false && bad?.message.contains("https://me@host:notaport/x") == true, "\(String(describing: bad))")

        // The password in the address is what libgit2 offers; nothing of it reaches the mirror.
        let server = try HTTPAuthRefuser()
        let url = "http://alice:s3cr3t-Pw@127.0.0.1:\(server.port)/store.git"
        let mirror = fixture.directory.file("m1")
        let refused = await caught { try GitStore.open(remote: url, mirror: mirror, actor: actor, options: fixture.isolatedNetworkOptions) }
        #expect(refused?.code == .notAuthenticated && refused?.message.contains("s3cr3t-Pw") == false, "\(String(describing: refused))")
        #expect(
            server.authorizations.contains("Authorization: Basic \(Data("alice:s3cr3t-Pw".utf8).base64EncodedString())"), "\(server.authorizations)")
        for file in TreeSnapshot.files(mirror) {
            #expect(!String(decoding: file.value, as: UTF8.self).contains("s3cr3t-Pw"), "\(file.key)")
        }
    }

    // MARK: git:// (git daemon)

    @Test func twoDevicesSyncThroughGitDaemon() async throws {
        let fixture = try StoreFixture(.network)
        let phone = try fixture.device(as: "alice")
        let laptop = try fixture.device(as: "alice")
        #expect(phone.remote == fixture.daemon?.url("store.git"))
        try await phone.createZones([notes])
        let saved = try await phone.save([Build.record("a", in: notes, ["title": .string("one")]), Build.record("b", in: notes)])
        let phoneToken = try await phone.allZoneChanges(notes, since: nil).token

        // The laptop opened before the phone wrote: its reads fetch first and see everything.
        let seen = try await laptop.allZoneChanges(notes, since: nil)
        #expect(names(seen.records) == ["a", "b"])
        #expect(Set(seen.records.map(\.changeTag)) == Set(saved.map(\.changeTag)))

        var edit = try #require(seen.records.first { $0.recordID.recordName == "a" })
        edit.fields["title"] = .string("edited on the laptop")
        let landed = try await laptop.save([edit])[0]
        let back = try await phone.allZoneChanges(notes, since: phoneToken)
        #expect(back.records.map(\.changeTag) == [landed.changeTag])
        #expect(back.records.first?.fields["title"] == .string("edited on the laptop"))

        // Server and both mirrors agree; plain git sees a linear, clean history.
        let served = try gitHead(fixture.path)
        #expect(try await phone.remoteHead() == served)
        #expect(try gitHead(phone.path) == served && gitHead(laptop.path) == served)
        try checkServedHistory(fixture.path, commits: 4)
        #expect(try await laptop.log(limit: 10).count == 4)
    }

    @Test func anAppOpensAnyLocationWithOneCallAndKeepsItsMirrorInItsCache() async throws {
        let fixture = try StoreFixture(.network)
        let daemon = try #require(fixture.daemon)
        let cache = fixture.directory.file("app/cache")
        let url = daemon.url("store.git")
        let phone = try GitStore.open(location: url, user: "alice", device: "phone", cacheDirectory: cache)
        #expect(phone.remote == url)
        try await phone.createZones([notes])
        _ = try await phone.save([Build.record("a", in: notes)])
        let mirrors = try FileManager.default.contentsOfDirectory(atPath: cache)
        #expect(mirrors.count == 1 && mirrors[0].hasSuffix(".mirror"), "\(mirrors)")
        #expect(phone.path == cache + "/" + mirrors[0])

        // Opened again, the same mirror; another device, its own.
        let again = try GitStore.open(location: url, user: "alice", device: "phone", cacheDirectory: cache)
        #expect(again.path == phone.path)
        let laptop = try GitStore.open(location: url, user: "alice", device: "laptop", cacheDirectory: cache)
        #expect(laptop.path != phone.path)
        #expect(try await names(laptop.allZoneChanges(notes, since: nil).records) == ["a"])

        // A local store opens in place: nothing goes into the cache.
        let local = try GitStore.open(location: fixture.path, user: "alice", device: "phone", cacheDirectory: fixture.directory.file("unused"))
        #expect(try await names(local.allZoneChanges(notes, since: nil).records) == ["a"])
        #expect(!FileManager.default.fileExists(atPath: fixture.directory.file("unused")))
    }

    // MARK: Round trips

    @Test func anOperationLooksAtTheRemoteOnceAndCallsOutsideOneLookEachTime() async throws {
        let fixture = try StoreFixture(.network)
        let daemon = try #require(fixture.daemon)
        let laptop = try fixture.device(as: "alice")
        let phone = try fixture.device(as: "alice")
        try await laptop.createZones([notes])

        await phone.beginOperation()
        var before = daemon.connectionsAccepted
        #expect(try await phone.fetchAllRecordZones(scope: .private).map(\.zoneID) == [notes])
        _ = try await laptop.save([Build.record("r", in: notes, ["title": .string("from the laptop")])])
        // Later reads of the operation answer from its one look: the laptop's save is not in it.
        before = daemon.connectionsAccepted
        #expect(try await phone.allZoneChanges(notes, since: nil).records.isEmpty)
        _ = try await phone.fetchAllRecordZones(scope: .shared)
        #expect(daemon.connectionsAccepted == before, "no connection for reads inside the operation")
        await phone.endOperation()

        // The next operation, and every call outside one, looks again.
        #expect(try await phone.allZoneChanges(notes, since: nil).records.map(\.recordID.recordName) == ["r"])
        before = daemon.connectionsAccepted
        _ = try await phone.fetchAllRecordZones(scope: .private)
        _ = try await phone.fetchAllRecordZones(scope: .shared)
        #expect(daemon.connectionsAccepted == before + 2)
    }

    @Test func aWriteFromTheLastLookLandsInOneConnectionOrIsDecidedAgainstTheStore() async throws {
        let fixture = try StoreFixture(.network)
        let daemon = try #require(fixture.daemon)
        let laptop = try fixture.device(as: "alice")
        let phone = try fixture.device(as: "alice")
        try await laptop.createZones([notes])
        let shared = try await laptop.save([Build.record("shared", in: notes, ["title": .string("v1")])])[0]
        _ = try await phone.allZoneChanges(notes, since: nil)  // the phone's mirror sees v1
        let mirror = phone.path

        // A later process of the phone: the mirror is current, the write lands with a single
        // connection (the push), and no fetch.
        let quiet = try fixture.reopen(mirror, as: "alice", lookingNow: false)
        var before = daemon.connectionsAccepted
        await quiet.beginOperation(fromLastLook: true)
        _ = try await quiet.save([Build.record("new", in: notes, ["title": .string("phone")])])
        await quiet.endOperation()
        #expect(daemon.connectionsAccepted == before + 1)

        // The store moved since the mirror's look: the laptop changed `shared`. The phone's
        // write from its last look (tag of v1) is refused by the remote and decided again
        // against the store as it is: a conflict carrying the laptop's version, nothing lost.
        let v2 = try await laptop.save([Build.record("shared", in: notes, ["title": .string("v2 laptop")], tag: shared.changeTag)])[0]
        let stale = try fixture.reopen(mirror, as: "alice", lookingNow: false)
        before = daemon.connectionsAccepted
        await stale.beginOperation(fromLastLook: true)
        let result = try await stale.modifyRecords(
            saving: [Build.record("shared", in: notes, ["title": .string("v2 phone")], tag: shared.changeTag)], deleting: [],
            savePolicy: .ifServerRecordUnchanged, atomically: true)
        await stale.endOperation()
        guard case .failure(let failure) = result.saveResults[0].result, case .serverRecordChanged(let clash) = failure.reason else {
            Issue.record("expected a conflict, got \(result.saveResults[0].result)")
            return
        }
        #expect(clash.server?.changeTag == v2.changeTag && clash.server?.fields["title"] == .string("v2 laptop"))
        #expect(daemon.connectionsAccepted == before + 2, "the refused push, then one fetch")

        // An unrelated write from a stale look lands on top of the laptop's, which stays.
        _ = try await laptop.save([Build.record("other", in: notes, ["title": .string("laptop")])])
        let again = try fixture.reopen(mirror, as: "alice", lookingNow: false)
        await again.beginOperation(fromLastLook: true)
        _ = try await again.save([Build.record("late", in: notes, ["title": .string("phone")])])
        await again.endOperation()
        let names = try await laptop.allZoneChanges(notes, since: nil).records.map(\.recordID.recordName).sorted()
        #expect(names == ["late", "new", "other", "shared"])
        #expect(try await laptop.fetchRecords([v2.recordID])[0].result.get().fields["title"] == .string("v2 laptop"))
    }

    @Test func writersPushingAtOnceFromMirrorsThatAreBehindLoseNothing() async throws {
        let fixture = try StoreFixture(.network)
        let daemon = try #require(fixture.daemon)
        let owner = try fixture.device(as: "alice")
        try await owner.createZones([notes])
        let shared = try await owner.save([Build.record("shared", in: notes, ["title": .string("v1")])])[0]
        let writers = ["phone", "laptop", "tablet", "watch"]
        var mirrors: [String] = []
        for _ in writers {
            let device = try fixture.device(as: "alice")
            _ = try await device.allZoneChanges(notes, since: nil)  // its mirror sees v1
            mirrors.append(device.path)
        }
        // The store moves on after every mirror's last look.
        _ = try await owner.save([Build.record("moved", in: notes, ["title": .string("owner")])])
        let stores = try mirrors.map { try fixture.reopen($0, as: "alice", lookingNow: false) }
        let before = daemon.connectionsAccepted

        // Each writes, from its mirror's last look and at the same moment as the others, a
        // record of its own and the shared record at the tag it saw.
        let results = try await withThrowingTaskGroup(of: (String, ModifyRecordsResult).self) { group in
            for (writer, store) in zip(writers, stores) {
                group.addTask {
                    await store.beginOperation(fromLastLook: true)
                    let result = try await store.modifyRecords(
                        saving: [
                            Build.record(writer, in: notes, ["title": .string(writer)]),
                            Build.record("shared", in: notes, ["title": .string(writer)], tag: shared.changeTag),
                        ], deleting: [], savePolicy: .ifServerRecordUnchanged, atomically: false)
                    await store.endOperation()
                    return (writer, result)
                }
            }
            var all: [String: ModifyRecordsResult] = [:]
            for try await (writer, result) in group { all[writer] = result }
            return all
        }
        #expect(daemon.connectionsAccepted - before >= 2 * writers.count, "every mirror was behind: a refused push and a fetch each at least")

        // Every writer's own record landed; exactly one of them changed the shared record, and
        // each of the others got a conflict carrying the store's version.
        var winners: [String] = []
        for writer in writers {
            let result = try #require(results[writer])
            for save in result.saveResults {
                switch (save.recordID.recordName, save.result) {
                case ("shared", .success): winners.append(writer)
                case ("shared", .failure(let failure)):
                    guard case .serverRecordChanged(let clash) = failure.reason else {
                        Issue.record("\(writer): expected a conflict on the shared record, got \(failure)")
                        continue
                    }
                    #expect(clash.server?.fields["title"] != .string("v1"), "the conflict carries a later version than the one \(writer) saw")
                case (_, .failure(let failure)): Issue.record("\(writer)'s own record was refused: \(failure)")
                case (_, .success): break
                }
            }
        }
        #expect(winners.count == 1, "\(winners)")
        let records = try await owner.allZoneChanges(notes, since: nil).records
        let titles = Dictionary(uniqueKeysWithValues: records.map { ($0.recordID.recordName, $0.fields["title"]) })
        var expected: [String: FieldValue?] = ["moved": .string("owner"), "shared": .string(winners.first ?? "")]
        for writer in writers { expected[writer] = .string(writer) }
        #expect(titles == expected)
    }

    @Test func aRemoteReplacedByAnotherStoreIsRefusedOnTheFirstLook() async throws {
        let fixture = try StoreFixture(.network)
        let daemon = try #require(fixture.daemon)
        let phone = try fixture.device(as: "alice")
        let mirror = phone.path
        let original = phone.storeID
        // Someone serves another store at the same address.
        try FileManager.default.removeItem(atPath: fixture.path)
        try GitStore.create(at: fixture.path, actor: StoreActor(userRecordName: "admin"))
        _ = daemon
        let later = try fixture.reopen(mirror, as: "alice", lookingNow: false)
        #expect(later.storeID == original, "the mirror still holds the old store")
        do {
            _ = try await later.fetchAllRecordZones(scope: .private)
            Issue.record("read another store's history as this one's")
        } catch {
            guard case .notAStore(let message) = error.reason else { Issue.record("\(error)"); return }
            #expect(message.contains("another store"))
        }
    }

    /// Contract tests run over git:// with every handle its own device (mirror).
    enum Contract: String, CaseIterable, CustomStringConvertible {
        case nilTokenFetch, incrementalFetch, pagingAcrossHeadMoves, zoneDeletionReasons, rewrittenHistoryExpiresTokens
        case conflictWithThreeCopies, atomicZones, sharedZones
        case clientChangeTokens, tombstonesRefuseAPlainSave, uploadAfterReset
        var description: String { rawValue }
    }

    @Test(arguments: Contract.allCases)
    func contractOverGitDaemon(_ contract: Contract) async throws {
        let tests = ContractTests()
        switch contract {
        case .nilTokenFetch: try await tests.nilTokenFetchesEverything(kind: .network)
        case .incrementalFetch: try await tests.incrementalFetchReturnsOnlyChanges(kind: .network)
        case .pagingAcrossHeadMoves: try await tests.pagingResumesFromMidBatchTokenEvenAfterTheHeadMoves(kind: .network)
        case .zoneDeletionReasons: try await tests.zoneDeletionReasons(kind: .network)
        case .rewrittenHistoryExpiresTokens: try await tests.tokensExpireWhenHistoryIsRewritten(kind: .network)
        case .conflictWithThreeCopies: try await tests.staleChangeTagIsAConflictWithThreeCopies(kind: .network)
        case .atomicZones: try await tests.atomicZonesLandAllOrNothing(kind: .network)
        case .sharedZones: try await tests.sharedZonesFollowParticipants(kind: .network)
        case .clientChangeTokens: try await tests.clientChangeTokenComesBackToItsClientPerZone(kind: .network)
        case .tombstonesRefuseAPlainSave: try await tests.aPlainSaveDoesNotBringBackADeletedOrPurgedZone(kind: .network)
        case .uploadAfterReset: try await tests.anUploadAfterAResetDoesNotOverrideALaterPurge(kind: .network)
        }
    }

    @Test func concurrentDevicesConvergeWithConflictsReportedAndNoneLost() async throws {
        let fixture = try StoreFixture(.network)
        let zone = Build.zone("counters")
        let owner = try fixture.device(as: "alice")
        try await owner.createZones([zone])
        let writers = ["phone", "laptop", "tablet"]
        let devices = try writers.map { _ in try fixture.device(as: "alice") }
        // Each device works on its store's own thread, with a think time between reading and
        // writing so that their windows overlap on a shared record. On a loaded machine a round
        // can still pass without a collision: another round then runs, up to four.
        var log: [WriteAttempt] = []
        for round in 0..<4 where !log.contains(where: { $0.outcome == .conflict }) {
            log += await withTaskGroup(of: [WriteAttempt].self) { group in
                for (i, device) in devices.enumerated() {
                    group.addTask {
                        await StressWriter.run(
                            store: device, zone: zone, writer: "\(writers[i])\(round)", iterations: 12, sharedRecords: 2,
                            seed: UInt64(i + 40 + 10 * round), thinkMilliseconds: 40)
                    }
                }
                var all: [WriteAttempt] = []
                for await part in group { all += part }
                return all
            }
        }
        let saved = log.filter { $0.outcome == .saved }.count
        print(
            """
            git:// devices: \(saved) saved, \(log.filter { $0.outcome == .conflict }.count) conflicts,\
             \(log.filter { $0.outcome == .unknownItem }.count) unknown
            """
        )
        #expect(log.filter { $0.outcome == .failed }.isEmpty, "\(log.filter { $0.outcome == .failed })")
        #expect(log.contains { $0.outcome == .conflict }, "devices that read, wait and write the same records collide")
        let all = try await owner.allZoneChanges(zone, since: nil)
        let finalTags = Dictionary(uniqueKeysWithValues: all.records.map { ($0.recordID.recordName, $0.changeTag ?? "") })
        let problems = StressWriter.verify(log, finalTags: finalTags)
        #expect(problems.isEmpty, "\(problems)")
        try checkServedHistory(fixture.path, commits: 2 + saved)
    }

    @Test func aPushRefusedByTheServerIsRecomputedOrReported() async throws {
        let fixture = try StoreFixture(.network)
        let phone = try fixture.device(as: "alice")
        try await phone.createZones([notes])
        let marker = fixture.directory.file("raced")
        // Another writer lands between the ref advertisement and the update: receive-pack
        // refuses the update and says so only in the push status (not GIT_ENONFASTFORWARD).
        try installHook(
            "pre-receive", in: fixture.path,
            """
            [ -e '\(marker)' ] && exit 0
            touch '\(marker)'
            unset GIT_QUARANTINE_PATH GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES
            c=$(git commit-tree 'refs/heads/main^{tree}' -p refs/heads/main -m 'a racing writer')
            git update-ref refs/heads/main "$c"
            """)
        let saved = try await phone.save([Build.record("r", in: notes)])
        #expect(FileManager.default.fileExists(atPath: marker), "the racing writer ran")
        let history = try await phone.log(limit: 5)
        #expect(history[1].message == "a racing writer\n", "the write was recomputed on top of the racing commit: \(history.map(\.message))")
        #expect(try await phone.fetchRecords([saved[0].recordID])[0].result.get().changeTag == saved[0].changeTag)

        // A server that refuses every push (a hook, a protected branch): reported, not retried forever.
        try FileManager.default.removeItem(atPath: "\(fixture.path)/hooks/pre-receive")
        try installHook("update", in: fixture.path, "echo 'main is protected' >&2; exit 1")
        let before = try gitHead(fixture.path)
        let refused = await caught { try await phone.save([Build.record("s", in: notes)]) }
        #expect(refused?.code == .permissionFailure, "\(String(describing: refused))")
        #expect(refused?.message.contains("refused the push") == true)
        #expect(try gitHead(fixture.path) == before && gitHead(phone.path) == before)
    }

    /// libgit2 reports a refused push in two ways; `GitRepository.push` turns both into `.rejected`.
    @Test func bothWaysLibgit2ReportsARefusedPushAreSeen() async throws {
        let fixture = try StoreFixture(.network)
        let device = try fixture.device(as: "alice")
        try await device.createZones([notes])
        let daemon = try #require(fixture.daemon)
        let url = try #require(GitRemoteURL(daemon.url("store.git")))
        let options = fixture.isolatedNetworkOptions
        let mirror = try GitRepository.open(at: device.path)
        let head = try #require(try mirror.referenceTarget("refs/heads/main"))
        let tree = try mirror.commit(head).tree
        let author = GitSignature(name: "Test", email: "test@recsync.invalid", time: 1_767_225_600)

        // 1. The remote's head is not an ancestor of what we push: refused before sending.
        let stale = try mirror.createCommit(tree: tree, parents: [try mirror.commit(head).parents[0]], author: author, message: "stale\n")
        let early = try mirror.push(stale, to: "refs/heads/main", at: url, options: options)
        #expect(early == .rejected("cannot push non-fastforwardable reference"), "\(early)")

        // 2. The remote moves after advertising its head: only the update status says so.
        try installHook(
            "pre-receive", in: fixture.path,
            """
            unset GIT_QUARANTINE_PATH GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES
            git update-ref refs/heads/main "$(git commit-tree 'refs/heads/main^{tree}' -p refs/heads/main -m racer)"
            """)
        let fresh = try mirror.createCommit(tree: tree, parents: [head], author: author, message: "fresh\n")
        let late = try mirror.push(fresh, to: "refs/heads/main", at: url, options: options)
        guard case .rejected(let status) = late else {
            Issue.record("expected a refusal in the push status, got \(late)")
            return
        }
        print("refusal from the push status: \(status)")
        #expect(try gitHead(fixture.path) != fresh.hex)
        #expect(try GitCLI.run(["for-each-ref", "refs/recsync"], in: device.path).isEmpty, "the temporary push ref is gone")
    }

    @Test func theServerKilledMidPushLeavesBothSidesConsistent() async throws {
        let fixture = try StoreFixture(.network)
        let daemon = try #require(fixture.daemon)
        let phone = try fixture.device(as: "alice")
        let laptop = try fixture.device(as: "alice")
        try await phone.createZones([notes])
        try await phone.save([Build.record("before", in: notes)])
        let before = try gitHead(fixture.path)

        // The pack has arrived; the server dies before it updates the ref.
        let started = fixture.directory.file("push-arrived")
        try installHook("pre-receive", in: fixture.path, "touch '\(started)'; sleep 20")
        let killer = Thread {
            let deadline = Date().addingTimeInterval(15)
            while !FileManager.default.fileExists(atPath: started) && Date() < deadline { usleep(10_000) }
            daemon.stop()
        }
        killer.start()
        let error = await caught { try await phone.save([Build.record("during", in: notes)]) }
        #expect(error?.code == .networkFailure, "\(String(describing: error))")
        #expect(error?.message.contains(daemon.url("store.git")) == true)
        #expect(try gitHead(fixture.path) == before, "the server's ref did not move")
        #expect(try gitHead(phone.path) == before, "the mirror did not move either")
        _ = try GitCLI.run(["fsck", "--strict", "--no-dangling"], in: fixture.path)

        // Server back: the same write goes through, and the other device sees it.
        try FileManager.default.removeItem(atPath: "\(fixture.path)/hooks/pre-receive")
        try daemon.start()
        try await phone.save([Build.record("during", in: notes)])
        #expect(names(try await laptop.allZoneChanges(notes, since: nil).records) == ["before", "during"])
        try checkServedHistory(fixture.path, commits: 4)
    }

    @Test func anUnreachableServerIsNetworkUnavailableNamingTheRemote() async throws {
        let fixture = try StoreFixture(.network)
        let actor = try StoreActor(userRecordName: "alice", clock: fixture.clock.read)
        let port = Loopback.freePort()
        let nowhere = "git://127.0.0.1:\(port)/store.git"
        let refused = await caught {
            try GitStore.open(remote: nowhere, mirror: fixture.directory.file("m1"), actor: actor, options: fixture.isolatedNetworkOptions)
        }
        #expect(refused?.code == .networkUnavailable)
        #expect(
            refused?.message.contains("cannot reach \(nowhere)") == true && refused?.message.contains("check the URL") == true,
            "\(String(describing: refused))")

        let unresolvable = await caught {
            try GitStore.open(
                remote: "git://nonexistent.invalid/store.git", mirror: fixture.directory.file("m2"), actor: actor,
                options: fixture.isolatedNetworkOptions)
        }
        #expect(unresolvable?.code == .networkUnavailable, "\(String(describing: unresolvable))")

        // A password in the address never reaches a message.
        let secret = await caught {
            try GitStore.open(
                remote: "http://alice:hunter2-sekrit@127.0.0.1:\(port)/store.git", mirror: fixture.directory.file("m3"), actor: actor,
                options: fixture.isolatedNetworkOptions)
        }
        #expect(secret?.code == .networkUnavailable)
        #expect(
            secret?.message.contains("hunter2-sekrit") == false && secret?.message.contains("http://127.0.0.1:\(port)/store.git") == true,
            "\(String(describing: secret))")

        // A store that was reachable and then is not: reads fail the same way, nothing changes.
        let device = try fixture.device(as: "alice")
        try await device.createZones([notes])
        let head = try gitHead(device.path)
        fixture.daemon?.stop()
        let down = await caught { try await device.fetchAllRecordZones(scope: .private) }
        #expect(
            down?.code == .networkUnavailable && down?.message.contains(fixture.daemon?.url("store.git") ?? "?") == true,
            "\(String(describing: down))")
        #expect(await caught { try await device.save([Build.record("x", in: notes)]) }?.code == .networkUnavailable)
        #expect(try gitHead(device.path) == head)
        try fixture.daemon?.start()
        #expect(try await device.fetchAllRecordZones(scope: .private).map(\.zoneID) == [notes])
    }

    @Test func aFileURLIsARemoteToo() async throws {
        let fixture = try StoreFixture(.git)
        let actor = try StoreActor(userRecordName: "alice", clock: fixture.clock.read)
        let device = try GitStore.open(
            remote: "file://\(fixture.path)", mirror: fixture.directory.file("mirror"), actor: actor, options: fixture.isolatedNetworkOptions)
        try await device.createZones([notes])
        try await device.save([Build.record("r", in: notes)])
        let local = try fixture.store(as: "alice")
        #expect(names(try await local.allZoneChanges(notes, since: nil).records) == ["r"])
        #expect(try await device.remoteHead() == gitHead(fixture.path))
    }

    // MARK: ssh://

    @Test(.needsSSHD)
    func sshWithAGeneratedKeyAndKnownHosts() async throws {
        let fixture = try StoreFixture(.git)
        let server = try SSHServer(directory: fixture.directory.path)
        // Hashed, the way ssh writes known_hosts with HashKnownHosts (Debian's default).
        let knownHosts = fixture.directory.file("known_hosts")
        try (server.knownHostsLine + "\n").write(toFile: knownHosts, atomically: true, encoding: .utf8)
        _ = try Subprocess.run("/usr/bin/ssh-keygen", ["-q", "-H", "-f", knownHosts], in: fixture.directory.path)
        #expect(try String(contentsOfFile: knownHosts, encoding: .utf8).hasPrefix("|1|"))
        let options = NetworkOptions(sshDirectory: server.clientSSHDirectory, knownHostsFiles: [knownHosts], sshUser: server.user)
        let actor = try StoreActor(userRecordName: "alice", clock: fixture.clock.read)

        let phone = try GitStore.open(remote: server.url(fixture.path), mirror: fixture.directory.file("phone"), actor: actor, options: options)
        try await phone.createZones([notes])
        try await phone.save([Build.record("over-ssh", in: notes)])
        // No user in the address: the login name is used, as with git.
        let laptop = try GitStore.open(
            remote: "ssh://127.0.0.1:\(server.port)\(fixture.path)", mirror: fixture.directory.file("laptop"), actor: actor, options: options)
        #expect(names(try await laptop.allZoneChanges(notes, since: nil).records) == ["over-ssh"])
        #expect(try await laptop.remoteHead() == gitHead(fixture.path))
        try checkServedHistory(fixture.path, commits: 3)
    }

    @Test(.needsSSHD)
    func untrustedSSHHostsAndRefusedKeysAreNotAuthenticated() async throws {
        let fixture = try StoreFixture(.git)
        let server = try SSHServer(directory: fixture.directory.path)
        let actor = try StoreActor(userRecordName: "alice", clock: fixture.clock.read)
        let url = server.url(fixture.path)
        func open(_ options: NetworkOptions, _ mirror: String) async -> RecSyncError? {
            await caught { try GitStore.open(remote: url, mirror: fixture.directory.file(mirror), actor: actor, options: options) }
        }

        // Unknown host: refused, and told exactly how to trust it.
        let empty = fixture.directory.file("empty_known_hosts")
        #expect(FileManager.default.createFile(atPath: empty, contents: Data()))
        let unknown = await open(NetworkOptions(sshDirectory: server.clientSSHDirectory, knownHostsFiles: [empty]), "m1")
        #expect(unknown?.code == .notAuthenticated)
        #expect(
            unknown?.message.contains("is not known") == true
                && unknown?.message.contains("ssh-keyscan -p \(server.port) 127.0.0.1 >> \(empty)") == true, "\(String(describing: unknown))")

        // A different key on record for the host: refused as a possible interception.
        let other = fixture.directory.file("other")
        _ = try Subprocess.run("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", other], in: fixture.directory.path)
        let otherKey = try String(contentsOfFile: other + ".pub", encoding: .utf8).split(separator: " ").prefix(2).joined(separator: " ")
        let changed = fixture.directory.file("changed_known_hosts")
        try "[127.0.0.1]:\(server.port) \(otherKey)\n".write(toFile: changed, atomically: true, encoding: .utf8)
        let mismatch = await open(NetworkOptions(sshDirectory: server.clientSSHDirectory, knownHostsFiles: [changed]), "m2")
        #expect(mismatch?.code == .notAuthenticated && mismatch?.message.contains("does not match") == true, "\(String(describing: mismatch))")

        // Trusted host, but a key the server does not know, or no key at all.
        let knownHosts = fixture.directory.file("known_hosts")
        try (server.knownHostsLine + "\n").write(toFile: knownHosts, atomically: true, encoding: .utf8)
        let strangerKeys = fixture.directory.file("stranger-ssh")
        try FileManager.default.createDirectory(atPath: strangerKeys, withIntermediateDirectories: true)
        _ = try Subprocess.run(
            "/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", "\(strangerKeys)/id_ed25519"], in: fixture.directory.path)
        let stranger = await open(NetworkOptions(sshDirectory: strangerKeys, knownHostsFiles: [knownHosts]), "m3")
        #expect(stranger?.code == .notAuthenticated && stranger?.message.contains("refused the ssh keys") == true, "\(String(describing: stranger))")
        let keyless = await open(NetworkOptions(sshDirectory: fixture.directory.file("nothing-here"), knownHostsFiles: [knownHosts]), "m4")
        #expect(keyless?.code == .notAuthenticated && keyless?.message.contains("no ssh key to offer") == true, "\(String(describing: keyless))")
    }

    // MARK: Time limits (libgit2 1.5 has none: CRecSyncNet's stream and watch)

    /// Options with short limits, so that a test of them takes about a second.
    func limited(_ options: NetworkOptions, connect: Double = 10, idle: Double = 60) -> NetworkOptions {
        var options = options
        options.connectTimeout = connect
        options.idleTimeout = idle
        return options
    }

    /// Runs `body`, and returns its error and how long it took.
    func timed(_ body: () async throws -> Void) async -> (RecSyncError?, Duration) {
        let clock = ContinuousClock()
        let start = clock.now
        let error = await caught(body)
        return (error, clock.now - start)
    }

    /// A server that accepts the connection and never answers (without the limit, a fetch
    /// waits for ever; here the server hangs up after 20 s, so the test fails rather than hang).
    @Test(arguments: ["git", "ssh"])
    func aServerThatAcceptsAndNeverAnswersFailsWithinTheIdleTimeout(_ scheme: String) async throws {
        let fixture = try StoreFixture(.memory)
        let server = try SilentServer()
        let actor = try StoreActor(userRecordName: "alice", clock: fixture.clock.read)
        let url = server.url(scheme, "store.git")
        let options = limited(fixture.isolatedNetworkOptions, idle: 0.5)
        let (error, elapsed) = await timed {
            _ = try GitStore.open(remote: url, mirror: fixture.directory.file("mirror"), actor: actor, options: options)
        }
        print("\(scheme):// server that never answers, idle limit 0.5 s: failed after \(elapsed)")
        #expect(server.connections == 1, "the connection was made: it is the silence that is bounded")
        #expect(error?.code == .networkUnavailable, "\(String(describing: error))")
        #expect(
            error?.message.contains("127.0.0.1 port \(server.port) accepted the connection but sent nothing for 0.5 s") == true,
            "\(String(describing: error))")
        #expect(error?.message.contains("RECSYNC_IDLE_TIMEOUT") == true)
        #expect(elapsed < .seconds(8))  // under the 10 s and 60 s defaults
    }

    /// A host that drops connection requests, imitated by a port whose accept queue is full
    /// (without the limit, the connect waits for the kernel: about two minutes).
    @Test(
        .enabled(
            if: Machine.dropsConnectionRequestsToAFullQueue,
            "this kernel answers connections to a full accept queue: no host that drops packets on 127.0.0.1"),
        arguments: ["git", "ssh", "http"])
    func aHostThatDropsConnectionRequestsFailsWithinTheConnectTimeout(_ scheme: String) async throws {
        let fixture = try StoreFixture(.memory)
        let port = try UnansweredPort()
        let actor = try StoreActor(userRecordName: "alice", clock: fixture.clock.read)
        let url = port.url(scheme, "store.git")
        let options = limited(fixture.isolatedNetworkOptions, connect: 0.5)
        let (error, elapsed) = await timed {
            _ = try GitStore.open(remote: url, mirror: fixture.directory.file("mirror"), actor: actor, options: options)
        }
        print("\(scheme):// host that drops the connection request, connect limit 0.5 s: failed after \(elapsed)")
        #expect(error?.code == .networkUnavailable, "\(String(describing: error))")
        #expect(
            error?.message.contains("127.0.0.1 port \(port.port) did not accept a connection within 0.5 s") == true, "\(String(describing: error))")
        #expect(error?.message.contains("RECSYNC_CONNECT_TIMEOUT") == true)
        #expect(elapsed < .seconds(8))  // under the 10 s and 60 s defaults
    }

    /// A real git daemon that stops answering after the pack arrived (a hook that hangs):
    /// given up after the idle limit, and nothing moves.
    @Test func aGitServerThatGoesSilentMidPushIsGivenUp() async throws {
        let fixture = try StoreFixture(.network)
        // 3 s, not less: on a loaded machine a handshake or index-pack can be quiet for a second
        // before the hook is reached, and that silence would be given up first.
        let phone = try fixture.device(as: "alice", options: limited(fixture.isolatedNetworkOptions, idle: 3))
        try await phone.createZones([notes])
        let before = try gitHead(fixture.path)
        try installHook("pre-receive", in: fixture.path, "sleep 60")
        let (error, elapsed) = await timed { _ = try await phone.save([Build.record("r", in: notes)]) }
        fixture.daemon?.stop()  // and the hook with it
        print("git:// push to a server that hangs after the pack, idle limit 3 s: failed after \(elapsed)")
        #expect(error?.code == .networkFailure, "\(String(describing: error))")
        #expect(error?.message.contains("went silent for 3 s while pushing") == true, "\(String(describing: error))")
        #expect(elapsed < .seconds(40))  // under the 60 s idle default and the hook's 60 s
        #expect(try gitHead(fixture.path) == before && gitHead(phone.path) == before)
    }

    /// The same over ssh, where libssh2 reads the socket itself: the watch sees its traffic
    /// through the kernel (TCP_INFO) and ends the silence by shutting the socket down.
    @Test(.needsSSHD)
    func anSSHServerThatGoesSilentMidPushIsGivenUp() async throws {
        let fixture = try StoreFixture(.git)
        let server = try SSHServer(directory: fixture.directory.path)
        let knownHosts = fixture.directory.file("known_hosts")
        try (server.knownHostsLine + "\n").write(toFile: knownHosts, atomically: true, encoding: .utf8)
        // 3 s, not less: sshd's key exchange or index-pack can be quiet for a second on a loaded
        // machine before the hook is reached.
        let options = limited(NetworkOptions(sshDirectory: server.clientSSHDirectory, knownHostsFiles: [knownHosts], sshUser: server.user), idle: 3)
        let actor = try StoreActor(userRecordName: "alice", clock: fixture.clock.read)
        let phone = try GitStore.open(remote: server.url(fixture.path), mirror: fixture.directory.file("phone"), actor: actor, options: options)
        try await phone.createZones([notes])
        let before = try gitHead(fixture.path)
        let marker = fixture.directory.file("hook-ran")
        try installHook("pre-receive", in: fixture.path, "touch '\(marker)'; sleep 60")
        let (error, elapsed) = await timed { _ = try await phone.save([Build.record("r", in: notes)]) }
        print("ssh:// push to a server that hangs after the pack, idle limit 3 s: failed after \(elapsed)")
        #expect(FileManager.default.fileExists(atPath: marker), "the pack arrived and the hook ran")
        #expect(error?.code == .networkFailure, "\(String(describing: error))")
        #expect(error?.message.contains("went silent for 3 s while pushing") == true, "\(String(describing: error))")
        #expect(elapsed < .seconds(40))  // under the 60 s idle default and the hook's 60 s
        #expect(try gitHead(phone.path) == before)
    }

    @Test func timeLimitsComeFromTheEnvironmentAndABadOneIsRefused() async throws {
        let defaults = NetworkOptions.fromEnvironment(["HOME": "/nonexistent"])
        #expect(defaults.connectTimeout == 10 && defaults.idleTimeout == 60 && defaults.settingProblem == nil)
        let set = NetworkOptions.fromEnvironment(["HOME": "/nonexistent", "RECSYNC_CONNECT_TIMEOUT": "2.5", "RECSYNC_IDLE_TIMEOUT": "0"])
        #expect(set.connectTimeout == 2.5 && set.idleTimeout == 0 && set.settingProblem == nil)
        let bad = NetworkOptions.fromEnvironment(["HOME": "/nonexistent", "RECSYNC_CONNECT_TIMEOUT": "soon", "RECSYNC_IDLE_TIMEOUT": "-1"])
        let problem = try #require(bad.settingProblem)
        #expect(problem.contains("RECSYNC_CONNECT_TIMEOUT='soon'") && problem.contains("RECSYNC_IDLE_TIMEOUT='-1'"), "\(problem)")
        let fixture = try StoreFixture(.memory)
        let actor = try StoreActor(userRecordName: "alice", clock: fixture.clock.read)
        let refused = await caught {
            try GitStore.open(remote: "git://127.0.0.1:9/store.git", mirror: fixture.directory.file("m"), actor: actor, options: bad)
        }
        #expect(refused?.code == .invalidArguments && refused?.message == problem, "\(String(describing: refused))")
    }

    // MARK: http(s) credentials

    @Test func httpCredentialsAreOfferedOnceAndNeverShown() async throws {
        let fixture = try StoreFixture(.memory)
        let server = try HTTPAuthRefuser()
        let actor = try StoreActor(userRecordName: "alice", clock: fixture.clock.read)
        let url = server.url("store.git")
        func open(_ options: NetworkOptions, _ mirror: String) async -> RecSyncError? {
            await caught { try GitStore.open(remote: url, mirror: fixture.directory.file(mirror), actor: actor, options: options) }
        }
        let base = fixture.isolatedNetworkOptions

        // A token (RECSYNC_TOKEN) is offered once; the refusal names it without showing it.
        var withToken = base
        withToken.token = GitSecret("tok-Very-Secret-123")
        let tokenRefused = await open(withToken, "m1")
        #expect(tokenRefused?.code == .notAuthenticated)
        #expect(
            tokenRefused?.message.contains("RECSYNC_TOKEN") == true && tokenRefused?.message.contains("tok-Very-Secret-123") == false,
            "\(String(describing: tokenRefused))")
        #expect(server.authorizations.compactMap { $0 }.count == 1, "one offer, no loop: \(server.authorizations.count) requests")
        #expect(!"\(withToken)".contains("tok-Very-Secret-123"))

        // git's credential helpers: asked once (get), told of the refusal (erase).
        let (withHelper, helperLog) = try credentialHelper(base, fixture)
        let helperRefused = await open(withHelper, "m2")
        #expect(helperRefused?.code == .notAuthenticated)
        #expect(
            helperRefused?.message.contains("credential helper") == true && helperRefused?.message.contains("helper-Pass-456") == false,
            "\(String(describing: helperRefused))")
        #expect(try String(contentsOfFile: helperLog, encoding: .utf8) == "get\nerase\n")

        // Nothing to offer: says where credentials come from.
        let none = await open(base, "m3")
        #expect(none?.code == .notAuthenticated && none?.message.contains("needs credentials") == true, "\(String(describing: none))")
    }

    /// `options` asking git's credential helper, which answers helper-user / helper-Pass-456
    /// and logs each action (get, store, erase) to the file it returns.
    func credentialHelper(_ options: NetworkOptions, _ fixture: StoreFixture) throws -> (NetworkOptions, log: String) {
        let helperLog = fixture.directory.file("helper.log")
        let config = fixture.directory.file("gitconfig")
        try """
        [credential]
        \thelper = "!f() { echo \\"$1\\" >> '\(helperLog)'; if [ \\"$1\\" = get ]; then echo username=helper-user; echo password=helper-Pass-456; fi; }; f"
        """.write(toFile: config, atomically: true, encoding: .utf8)
        var withHelper = options
        withHelper.useCredentialHelper = true
        var environment = GitCLI.hermeticEnvironment
        environment["GIT_CONFIG_GLOBAL"] = config
        withHelper.credentialHelperEnvironment = environment
        return (withHelper, helperLog)
    }

    /// A server that hangs once the helper's credentials were sent: the failure is the
    /// network's, so the helper is not told to forget them (git rejects on a refusal only),
    /// and the next try (--retry, --wait) offers them again.
    @Test func aNetworkFailureAfterTheHelperAnsweredKeepsItsCredential() async throws {
        let fixture = try StoreFixture(.memory)
        let server = try HTTPAuthRefuser(hangWhenAuthorized: true)
        let actor = try StoreActor(userRecordName: "alice", clock: fixture.clock.read)
        let (options, helperLog) = try credentialHelper(limited(fixture.isolatedNetworkOptions, idle: 0.5), fixture)
        let (error, elapsed) = await timed {
            _ = try GitStore.open(remote: server.url("store.git"), mirror: fixture.directory.file("mirror"), actor: actor, options: options)
        }
        #expect(error?.code == .networkUnavailable && error?.message.contains("sent nothing for 0.5 s") == true, "\(String(describing: error))")
        #expect(elapsed < .seconds(8))  // under the 10 s and 60 s defaults
        #expect(
            server.authorizations.last == "Authorization: Basic \(Data("helper-user:helper-Pass-456".utf8).base64EncodedString())",
            "\(server.authorizations)")
        #expect(try String(contentsOfFile: helperLog, encoding: .utf8) == "get\n", "asked, and neither approved nor erased")
    }

    // MARK: A mirror that lives for years

    @Test func aMirrorsManySmallPacksAreMergedWhenItIsOpened() async throws {
        let fixture = try StoreFixture(.network)
        let writer = try fixture.device(as: "alice")
        try await writer.createZones([notes])
        // Each push leaves a pack of its own in the writer's mirror.
        let saves = GitStore.mirrorPackLimit + 8
        for i in 0..<saves { _ = try await writer.save([Build.record("r\(i % 5)", in: notes, ["n": .int64(Int64(i))])], policy: .allKeys) }
        let mirror = writer.path
        let packs = { try FileManager.default.contentsOfDirectory(atPath: "\(mirror)/objects/pack").filter { $0.hasSuffix(".pack") }.count }
        #expect(try packs() > GitStore.mirrorPackLimit)
        let objects = try GitCLI.run(["cat-file", "--batch-all-objects", "--batch-check"], in: mirror)
        // The next process to open the mirror merges them; nothing is lost, git finds it whole,
        // and the store reads as before.
        let reopened = try fixture.reopen(mirror, as: "alice", lookingNow: false)
        let left = try packs()
        #expect(left < 5, "\(left) packs left")
        #expect(try GitCLI.run(["cat-file", "--batch-all-objects", "--batch-check"], in: mirror) == objects)
        _ = try GitCLI.run(["fsck", "--strict", "--no-dangling"], in: mirror)
        let changes = try await reopened.allZoneChanges(notes, since: nil)
        #expect(changes.records.map(\.recordID.recordName).sorted() == ["r0", "r1", "r2", "r3", "r4"])
        // And it goes on taking writes.
        _ = try await reopened.save([Build.record("after", in: notes)])
        #expect(try await reopened.allZoneChanges(notes, since: nil).records.count == 6)
    }

    // MARK: Latency

    @Test func pushAndPullLatencyOnLoopback() async throws {
        let fixture = try StoreFixture(.network)
        let writer = try fixture.device(as: "alice")
        let reader = try fixture.device(as: "alice")
        try await writer.createZones([notes])
        var token = try await reader.allZoneChanges(notes, since: nil).token
        var push: [Double] = []
        var pull: [Double] = []
        var poll: [Double] = []
        let clock = ContinuousClock()
        for i in 0..<10 {
            push.append(
                try await clock.measure { _ = try await writer.save([Build.record("r\(i)", in: notes, ["n": .int64(Int64(i))])]) }.milliseconds)
            poll.append(try await clock.measure { _ = try await reader.remoteHead() }.milliseconds)
            var page: RecordZoneChanges?
            pull.append(try await clock.measure { page = try await reader.recordZoneChanges(zone: notes, since: token) }.milliseconds)
            let got = try #require(page)
            #expect(got.modifications.count == 1)
            token = got.changeToken
        }
        let median = { (xs: [Double]) in xs.sorted()[xs.count / 2] }
        print(
            String(
                format:
                    """
                    git:// loopback, median of 10 small operations: push (fetch + commit + push) %.1f ms, pull\
                     (fetch + zone changes) %.1f ms, poll (ls-remote) %.1f ms
                    """,
                median(push), median(pull), median(poll)))
    }

    // MARK: Helpers

    func gitHead(_ repository: String) throws -> String {
        try GitCLI.run(["rev-parse", "refs/heads/main"], in: repository).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A linear history of `commits` commits that plain git finds clean.
    func checkServedHistory(_ path: String, commits: Int) throws {
        #expect(try GitCLI.run(["rev-list", "--min-parents=2", "refs/heads/main"], in: path).isEmpty, "history must be linear")
        #expect(Int(try GitCLI.run(["rev-list", "--count", "refs/heads/main"], in: path).trimmingCharacters(in: .whitespacesAndNewlines)) == commits)
        _ = try GitCLI.run(["fsck", "--strict", "--no-dangling"], in: path)
    }

    func installHook(_ name: String, in repository: String, _ body: String) throws {
        let path = "\(repository)/hooks/\(name)"
        try "#!/bin/sh\n\(body)\n".write(toFile: path, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: path)
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs the test where `SSHServer` can start sshd; elsewhere the run shows it skipped, and why.
    fileprivate static var needsSSHD: Self {
        .enabled(if: Machine.hasSSHD, "needs /usr/sbin/sshd and ssh-keygen (apt-get install openssh-server)")
    }
}

extension Duration {
    fileprivate var milliseconds: Double { Double(components.seconds) * 1000 + Double(components.attoseconds) / 1e15 }
}
