import Foundation
import RecSyncGit
import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import Testing

/// `StoreHistory`: a git store's log, and the commits that changed one record.
@Suite struct StoreHistoryTests {
    let notes = Build.zone("notes")

    @Test func recordLogListsTheCommitsThatChangedTheRecordNewestFirst() async throws {
        let fixture = try StoreFixture(.git)
        let alice = try GitStore(path: fixture.path, actor: StoreActor(userRecordName: "alice"))
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
        #expect(GitPackWindows.mappedLimit == 128 << 20)
    }
}
