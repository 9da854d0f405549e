import Foundation
import RecSyncGit
import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import Testing

/// `StoreHistory`: a git store's log, and the commits that changed one record.
@Suite struct StoreHistoryTests {
    let notes = Build.zone("notes")

    /// On both store formats: a zone's commits are on main, or on its own ref.
    @Test(arguments: [StoreKind.git, .zoneRefs])
    func recordLogListsTheCommitsThatChangedTheRecordNewestFirst(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let alice = try #require(try fixture.store(as: "alice") as? GitStore)
        try await alice.createZones([notes])
        let v1 = try await alice.save([Build.record("r", in: notes, ["n": .int64(1)])])
        _ = try await alice.save([Build.record("other", in: notes, ["n": .int64(1)])])
        let v2 = try await alice.save([Build.record("r", in: notes, ["n": .int64(2)], tag: v1[0].changeTag)])
        _ = try await alice.delete(v2)

        let history: any StoreHistory = alice
        let log = try await history.recordLog(Build.id("r", in: notes), limit: 10)
        #expect(log.map(\.changeTag) == [nil, v2[0].changeTag, v1[0].changeTag])
        let all = try await history.log(limit: 100, zone: nil)
        #expect(log.map(\.commit) == [all[0], all[1], all[3]], "the commit saving 'other' is left out")
        #expect(try await history.recordLog(Build.id("r", in: notes), limit: 2).count == 2)
        #expect(try await history.recordLog(Build.id("never", in: notes), limit: 10).isEmpty)
    }

    /// On both store formats: a zone's commits are on main, or on its own ref.
    @Test(arguments: [StoreKind.git, .zoneRefs])
    func aCommitsRecordsAndWhatItChangedInAZone(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let alice = try #require(try fixture.store(as: "alice") as? GitStore)
        let work = Build.zone("work")
        try await alice.createZones([notes, work])
        let v1 = try await alice.save([Build.record("a", in: notes, ["n": .int64(1)]), Build.record("b", in: notes)])
        let v2 = try await alice.save([Build.record("a", in: notes, ["n": .int64(2)], tag: v1[0].changeTag), Build.record("c", in: notes)])
        _ = try await alice.delete([v1[1]])
        _ = try await alice.save([Build.record("w", in: work)])
        let history: any StoreHistory = alice
        let log = try await history.log(limit: 10, zone: nil)
        // Newest first: save w, delete b, save a+c, save a+b.
        #expect(try await history.records(in: notes, at: log[2].commit) == ["a": v2[0].changeTag!, "b": v1[1].changeTag!, "c": v2[1].changeTag!])
        if kind == .git {
            #expect(try await history.records(in: notes, at: log[0].commit).keys.sorted() == ["a", "c"])
        } else {
            // Each zone has a history of its own: another zone's commit names no state of this one.
            #expect(await caught { try await history.records(in: notes, at: log[0].commit) }?.code == .invalidArguments)
            #expect(try await history.records(in: notes, at: log[1].commit).keys.sorted() == ["a", "c"])
        }
        #expect(try await history.records(in: Build.zone("none"), at: log[0].commit).isEmpty)
        let changed = try await history.recordChanges(in: notes, commit: log[2].commit)
        #expect(
            changed == [
                RecordVersionChange(recordID: Build.id("a", in: notes), previousChangeTag: v1[0].changeTag, changeTag: v2[0].changeTag),
                RecordVersionChange(recordID: Build.id("c", in: notes), previousChangeTag: nil, changeTag: v2[1].changeTag),
            ])
        #expect(try await history.recordChanges(in: notes, commit: log[0].commit).isEmpty, "that commit changed another zone")
        #expect(try await history.recordChanges(in: notes, commit: log[1].commit).map(\.changeTag) == [nil])
        // A revision names one commit: by a prefix of its hash, or the head.
        #expect(try await history.commit(.commit(String(log[2].commit.prefix(10)))) == log[2])
        #expect(try await history.commit(.current) == log[0])
        await #expect(throws: RecSyncError.self) { _ = try await history.commit(.versionsBack(1)) }
        await #expect(throws: RecSyncError.self) { _ = try await history.commit(.commit("0000000")) }
    }

    @Test func aHeadNamingAMissingCommitIsAnError() async throws {
        let fixture = try StoreFixture(.git)
        let alice = try GitStore(path: fixture.path, actor: StoreActor(userRecordName: "alice"))
        try? FileManager.default.removeItem(atPath: "\(fixture.path)/packed-refs")
        try writeFile("\(fixture.path)/refs/heads/main", String(repeating: "ab", count: 20) + "\n")
        let history: any StoreHistory = alice
        await #expect(throws: RecSyncError.self) { _ = try await history.recordLog(Build.id("r", in: notes), limit: 10) }
    }

    @Test func onlyAGitStoreHasAnAddressAndAChangeSignal() async throws {
        let git = try StoreFixture(.git)
        let local = try GitStore(path: git.path, actor: StoreActor(userRecordName: "alice"))
        #expect(local.remote == nil)
        #expect(try local.changeSignal() != nil)
        let memory: any RemoteStore = try StoreFixture(.memory).store(as: "alice")
        #expect(memory.remote == nil)
        #expect(try memory.changeSignal() == nil)
    }
}

/// The pack-window bound is the git store's to set, before a pull reads in bulk.
@Suite struct PackWindowTests {
    @Test func aGitStoreBoundsThePackWindowsBeforeABulkRead() throws {
        let fixture = try StoreFixture(.git)
        let store: any RemoteStore = try GitStore(path: fixture.path, actor: StoreActor(userRecordName: "alice"))
        store.prepareForBulkRead()
        #expect(GitPackWindows.isBoundForReading)
    }
}

/// Pack windows bounded for reading, then packs written: a long-running process (watch
/// --pull, an app embedding the engine) fetches and pushes after it bounded them. libgit2
/// 1.5's indexer fails on a large pack under bounded windows (the 1M-record benchmark
/// store's), so every pack write runs with libgit2's default windows
/// (`GitPackWindows.whileWritingPacks`), and the bound comes back after it.
///
/// The server holds a fetch and a push at a gate (a hook) while the client waits inside them:
/// the windows in effect then are read, and must be the defaults. With tight windows set
/// after the stores were opened (opening one sets the reading bound again), large packs
/// (about 10 MB, deltas included) are fetched, pushed and written by a local store.
@Suite(.serialized) struct PackWritesAfterBoundingTests {
    /// Files a hook and the test meet at: `hold-<what>` asks the hook to wait, which it says
    /// with `<what>-held` and does until `release` appears (30 s at most).
    struct Gate {
        let directory: String

        /// A shell command that waits at the gate when the test asked it to hold `what`.
        func script(_ what: String) -> String {
            """
            if [ -e '\(directory)/hold-\(what)' ]; then
                touch '\(directory)/\(what)-held'
                n=0
                while [ ! -e '\(directory)/release' ] && [ $n -lt 300 ]; do sleep 0.1; n=$((n+1)); done
            fi
            """
        }

        /// Runs `operation` with the server holding it at the gate, and returns what
        /// `observe` saw meanwhile (nil: the hook did not hold it within 30 s) and the
        /// operation's result.
        func holding<T: Sendable, Seen>(_ what: String, _ operation: @escaping @Sendable () async throws -> T, observe: () -> Seen) async throws -> (
            Seen?, T
        ) {
            let fm = FileManager.default
            try? fm.removeItem(atPath: "\(directory)/release")
            #expect(fm.createFile(atPath: "\(directory)/hold-\(what)", contents: nil))
            let running = Task { try await operation() }
            let deadline = ContinuousClock.now + .seconds(30)
            while !fm.fileExists(atPath: "\(directory)/\(what)-held") && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            let seen = fm.fileExists(atPath: "\(directory)/\(what)-held") ? observe() : nil
            try fm.removeItem(atPath: "\(directory)/hold-\(what)")
            #expect(fm.createFile(atPath: "\(directory)/release", contents: nil))
            return (seen, try await running.value)
        }
    }

    @Test func fetchesAndPushesWritePacksWithTheDefaultWindowsAfterTheBound() async throws {
        let fixture = try StoreFixture(.git)
        let gate = Gate(directory: fixture.directory.file("gate"))
        try FileManager.default.createDirectory(atPath: gate.directory, withIntermediateDirectories: true)
        // upload-pack's pack-objects goes through a hook that may wait at the gate (a hook only
        // a user's configuration may name), and so does receive-pack, before its update.
        let packObjects = fixture.directory.file("pack-objects-hook")
        try "#!/bin/sh\n\(gate.script("fetch"))\nexec \"$@\"\n".write(toFile: packObjects, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: packObjects)
        let preReceive = "\(fixture.path)/hooks/pre-receive"
        try "#!/bin/sh\n\(gate.script("push"))\n".write(toFile: preReceive, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: preReceive)
        let config = fixture.directory.file("daemon-gitconfig")
        try "[uploadpack]\n\tpackObjectsHook = \(packObjects)\n".write(toFile: config, atomically: true, encoding: .utf8)
        var environment = GitCLI.hermeticEnvironment
        environment["GIT_CONFIG_GLOBAL"] = config
        let daemon = try GitDaemon(basePath: fixture.directory.path, environment: environment)

        let zone = try ZoneID(zoneName: "big", ownerName: "alice")
        let writer = try GitStore(path: fixture.path, actor: StoreActor(userRecordName: "alice"))
        _ = try await writer.modifyRecordZones([.save(RecordZone(zoneID: zone))])
        let device = try GitStore.open(
            remote: daemon.url("store.git"), mirror: fixture.directory.file("device"), actor: StoreActor(userRecordName: "alice"),
            options: fixture.isolatedNetworkOptions)
        // Records alike but for a few bytes, in several versions: a pack of deltas, which the
        // indexer resolves by reading back the pack it is writing.
        var generator = SystemRandomNumberGenerator()
        let base = Data((0..<450_000).map { _ in UInt8.random(in: 0...255, using: &generator) }).base64EncodedString()
        func noise(_ n: Int, _ version: Int) -> FieldValue { .string("\(n)-\(version)" + base.dropFirst(n * 7 + version)) }
        var records: [Record] = []
        for version in 0..<4 {
            records = try (0..<16).map { n in
                try Record(recordID: RecordID(recordName: "r\(n)", zoneID: zone), recordType: "Blob", fields: ["noise": noise(n, version)])
            }
            #expect(try await writer.modifyRecords(saving: records, deleting: [], savePolicy: .allKeys, atomically: true).errors.isEmpty)
        }

        // Tight windows, set once every store here is open (opening one sets the reading
        // bound). What was in place before, the reading bound those openings set, comes back
        // after: the windows are the process's, and other tests of it run meanwhile.
        GitPackWindows.boundForReading(windowSize: 1 << 20, mappedLimit: 4 << 20)
        defer { GitPackWindows.boundForReading() }
        // libgit2's default (8 GiB on a 64-bit system) is above any bound recsync sets.
        func isDefault(_ limit: Int?) -> Bool { limit.map { $0 > GitPackWindows.readingMappedLimit } ?? false }
        /// Whether the bound is back once no pack is written: other tests of this process write
        /// packs meanwhile (under the whole suite, one after another for over 10 s on a 2-core
        /// machine), so the wait is long; a bound never put back still fails it.
        func boundAgain() async throws -> Bool {
            let deadline = ContinuousClock.now + .seconds(120)
            while GitPackWindows.mappedLimit > GitPackWindows.readingMappedLimit && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            return GitPackWindows.mappedLimit <= GitPackWindows.readingMappedLimit
        }

        // The device fetches the whole zone (a pack of about 10 MB) ...
        let (duringFetch, fetched) = try await gate.holding(
            "fetch", { try await device.recordZoneChanges(zone: zone, since: nil) }, observe: { GitPackWindows.mappedLimit })
        #expect(duringFetch != nil, "the server held the fetch")
        #expect(isDefault(duringFetch), "pack windows while a fetch was under way: mapped limit \(duringFetch.map(String.init) ?? "not read")")
        #expect(try await boundAgain(), "the bound is back after the fetch: mapped limit \(GitPackWindows.mappedLimit)")
        #expect(fetched.modifications.count == 16)

        // ... and pushes a large change back.
        let more = try Record(recordID: RecordID(recordName: "more", zoneID: zone), recordType: "Blob", fields: records[0].fields)
        var changed = try fetched.modifications.map { try $0.result.get() }
        for i in changed.indices { changed[i].fields["noise"] = records[(i + 1) % 16].fields["noise"] }
        let saving = changed + [more]
        let (duringPush, pushed) = try await gate.holding(
            "push", { try await device.modifyRecords(saving: saving, deleting: [], savePolicy: .allKeys, atomically: true) },
            observe: { GitPackWindows.mappedLimit })
        #expect(duringPush != nil, "the server held the push")
        #expect(isDefault(duringPush), "pack windows while a push was under way: mapped limit \(duringPush.map(String.init) ?? "not read")")
        #expect(try await boundAgain(), "the bound is back after the push: mapped limit \(GitPackWindows.mappedLimit)")
        #expect(pushed.errors.isEmpty)
        #expect(try await writer.recordZoneChanges(zone: zone, since: nil).modifications.count == 17)

        // A local store writes each commit's objects as a pack too.
        var again = try await writer.recordZoneChanges(zone: zone, since: nil).modifications.map { try $0.result.get() }
        for i in again.indices { again[i].fields["noise"] = records[(i + 3) % 16].fields["noise"] }
        #expect(try await writer.modifyRecords(saving: again, deleting: [], savePolicy: .allKeys, atomically: true).errors.isEmpty)
        #expect(try await boundAgain(), "the bound is back after a local commit: mapped limit \(GitPackWindows.mappedLimit)")
    }
}
