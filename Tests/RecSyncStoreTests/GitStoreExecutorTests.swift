import Foundation
@testable import RecSyncStore
import RecSyncModel
import RecSyncTestSupport
import Testing

/// `GitStore` runs its (blocking) libgit2 work on a thread of its own, not on Swift's pool.
@Suite struct GitStoreExecutorTests {
    @Test func operationsRunOnTheStoresOwnThreadWhichEndsWithTheStore() async throws {
        let fixture = try StoreFixture(.git)
        let before = Self.threadCount()
        var own: [Bool] = []
        for _ in 0..<20 {
            let store = try GitStore(path: fixture.path, actor: StoreActor(userRecordName: "alice"))
            _ = try await store.fetchAllRecordZones(scope: .private)
            own.append(await store.isOnOwnThread())
        }
        #expect(own == Array(repeating: true, count: 20))
        // Twenty stores came and went: their threads end too (generously bounded for busy machines).
        let deadline = Date().addingTimeInterval(20)
        while Self.threadCount() > before + 2, Date() < deadline { try await Task.sleep(nanoseconds: 50_000_000) }
        #expect(Self.threadCount() <= before + 2, "threads before: \(before), now: \(Self.threadCount())")
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

    /// Threads of this process (Linux: one directory each under /proc/self/task).
    static func threadCount() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? 0
    }
}
