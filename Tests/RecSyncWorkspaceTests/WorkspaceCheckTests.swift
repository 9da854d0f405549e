import Foundation
import RecSyncModel
import RecSyncTestSupport
import RecSyncWorkspace
import Testing

/// `Workspace.check`, the workspace half of `recsync doctor`.
@Suite struct WorkspaceCheckTests {
    @Test func reportsLeftoversAndDamagedSidecarsAndRepairsOnlyLeftovers() throws {
        let dir = TempDirectory("check")
        let ws = try Workspace.create(at: dir.path, config: WorkspaceConfig(user: "alice", remote: ""))
        let zone = try ZoneID(zoneName: "notes", ownerName: "alice")
        _ = try ws.put(try RecordID(recordName: "a", zoneID: zone), fields: ["n": .int64(1)])
        #expect(try ws.check(fix: false).isEmpty)

        try writeFile(ws.zoneDirectory(zone) + "/.a.json.tmp-9-1", "half")
        try FileManager.default.createDirectory(atPath: ws.zoneDirectory(zone) + "/.system", withIntermediateDirectories: true)
        try writeFile(ws.zoneDirectory(zone) + "/.system/b.json", "not json")
        try writeFile(ws.stateDir + "/tokens/private.token", "rsct1.garbage")

        let found = try ws.check(fix: false)
        #expect(found.map(\.kind).sorted { $0.rawValue < $1.rawValue } == [.batchLeftover, .damagedSidecar, .unreadableToken], "\(found)")
        #expect(found.first { $0.kind == .batchLeftover }?.fixable == true)
        #expect(found.first { $0.kind == .damagedSidecar }?.fixable == false)

        let fixed = try ws.check(fix: true)
        #expect(fixed.filter(\.fixed).map(\.kind) == [.batchLeftover], "\(fixed)")
        #expect(!FileManager.default.fileExists(atPath: ws.zoneDirectory(zone) + "/.a.json.tmp-9-1"))
        #expect(readFile(ws.zoneDirectory(zone) + "/.system/b.json") == "not json", "data is never repaired away")
        #expect(try ws.check(fix: false).map(\.kind).sorted { $0.rawValue < $1.rawValue } == [.damagedSidecar, .unreadableToken])
    }
}
