import Foundation
import RecSyncModel
import RecSyncTestSupport
import Testing

@testable import RecSyncStore

/// `GitStore` runs its (blocking) libgit2 work on a thread of its own, not on Swift's pool.
@Suite struct GitStoreExecutorTests {
    @Test func operationsRunOnTheStoresOwnThreadWhichEndsWithTheStore() async throws {
        let fixture = try StoreFixture(.git)
        var own: [Bool] = []
        var executors: [BlockingExecutor] = []
        for _ in 0..<20 {
            let store = try GitStore(path: fixture.path, actor: StoreActor(userRecordName: "alice"))
            _ = try await store.fetchAllRecordZones(scope: .private)
            own.append(await store.isOnOwnThread())
            executors.append(store.executor)
        }
        #expect(own == Array(repeating: true, count: 20))
        // Twenty stores came and went: their threads end too. (These threads, not the process's
        // thread count, which the tests running beside this one move.)
        let deadline = Date().addingTimeInterval(10)
        while executors.contains(where: { !$0.hasEnded }), Date() < deadline { try await Task.sleep(nanoseconds: 20_000_000) }
        #expect(executors.filter { !$0.hasEnded }.isEmpty, "\(executors.filter { !$0.hasEnded }.count) of 20 threads still run")
    }

    @Test func manyStoresWorkSideBySide() async throws {
        let fixture = try StoreFixture(.git)
        let zone = try ZoneID(zoneName: "z", ownerName: "alice")
        let admin = try GitStore(path: fixture.path, actor: StoreActor(userRecordName: "alice"))
        _ = try await admin.modifyRecordZones([.save(RecordZone(zoneID: zone))])
        let saved = try await withThrowingTaskGroup(of: Int.self) { group in
            for n in 0..<8 {
                group.addTask {
                    let store = try GitStore(path: fixture.path, actor: StoreActor(userRecordName: "alice"))
                    let record = try Record(recordID: RecordID(recordName: "r\(n)", zoneID: zone), recordType: "T")
                    return try await store.modifyRecords(saving: [record]).errors.isEmpty ? 1 : 0
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(saved == 8)
        #expect(try await admin.recordZoneChanges(zone: zone, since: nil).modifications.count == 8)
    }
}
