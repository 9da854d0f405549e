import Foundation
import RecSyncModel
import RecSyncTestSupport
import RecSyncWorkspace
import Testing

/// The sync state a pull and a push keep per zone and scope, through the typed API only.
@Suite struct ZoneSyncStateTests {
    let dir = TempDirectory("zone-sync-state")
    let ws: Workspace
    let zone = Build.zone("notes")

    init() throws {
        ws = try Workspace.create(at: dir.file("ws"), config: WorkspaceConfig(user: "alice", remote: "memory"))
    }

    @Test func pushedNamesAccumulateThroughBatchesAndAnInterruptedPageJoinsThem() throws {
        #expect(try ws.pushedRecordNames(zone) == nil)
        #expect(!ws.zoneNeedsALook(zone))
        var batch = ws.recordBatch()
        try ws.notePushed(["a", "b"], in: zone, batch: &batch)
        try batch.commit()
        var second = ws.recordBatch()
        try ws.notePushed(["c"], in: zone, batch: &second)
        #expect(try ws.pushedRecordNames(zone) == ["a", "b"], "nothing lands before the batch does")
        try second.commit()
        #expect(try ws.pushedRecordNames(zone) == ["a", "b", "c"])
        #expect(ws.zoneNeedsALook(zone))

        // A killed pull's page: adopted into the pushed names on the next pull.
        try ws.noteApplying(["d", "e"], in: zone)
        try ws.adoptInterruptedPage(zone)
        #expect(try ws.pushedRecordNames(zone) == ["a", "b", "c", "d", "e"])
        try ws.adoptInterruptedPage(zone)  // nothing left to adopt
        try ws.clearPushed(zone)
        #expect(try ws.pushedRecordNames(zone) == nil)
        #expect(!ws.zoneNeedsALook(zone))
    }

    @Test func anInterruptedPullIsRememberedPerScope() throws {
        #expect(!ws.pullWasInterrupted(.private))
        try ws.notePullUnderWay(.private)
        #expect(ws.pullWasInterrupted(.private))
        #expect(!ws.pullWasInterrupted(.shared))
        try ws.clearPullUnderWay(.private)
        #expect(!ws.pullWasInterrupted(.private))
    }

    @Test func theRetryListSurvivesAndToleratesALineCutShort() throws {
        var list = try RetryList.load(ws, zone: zone)
        #expect(list.entries.isEmpty)
        list.entries = ["a/b": "not JSON\non two lines", "c": "bad"]
        try list.save()
        #expect(ws.zoneNeedsALook(zone))
        let loaded = try RetryList.load(ws, zone: zone)
        #expect(loaded.entries == ["a/b": "not JSON on two lines", "c": "bad"])
        // A crash cut the last line short: what is readable stays.
        let path = ws.retryPath(zone)
        var bytes = try #require(FileManager.default.contents(atPath: path))
        bytes.append(contentsOf: Array("%zz".utf8))
        try bytes.write(to: URL(fileURLWithPath: path))
        #expect(try RetryList.load(ws, zone: zone).entries.count == 2)
        list.entries = [:]
        try list.save()
        #expect(!FileManager.default.fileExists(atPath: path), "an empty list is removed")
    }

    @Test func aRefetchLogKnowsAFreshZoneFromOneThatHeldRecords() throws {
        let log = ws.refetchLog(zone)
        #expect(!log.isUnderWay)
        try log.start(fresh: true)
        try log.add(["a"])
        #expect(try log.finishing().names == nil && log.finishing().done)
        try log.start(fresh: false)
        try log.add(["a", "b"])
        try log.add(["c"])
        #expect(try log.finishing().names == ["a", "b", "c"])
        try log.end()
        #expect(try !log.finishing().done)
    }

    @Test func forgettingAZoneLeavesNoStateBehindAndTheNoteRoundTrips() throws {
        try ws.noteApplying(["x"], in: zone)
        try ws.refetchLog(zone).start(fresh: false)
        var list = try RetryList.load(ws, zone: zone)
        list.entries = ["y": "bad"]
        try list.save()
        try ws.markAwaitsReupload(zone)
        #expect(ws.awaitsReupload(zone))
        try ws.forgetZoneState(zone)
        #expect(!ws.zoneNeedsALook(zone))
        #expect(!ws.refetchLog(zone).isUnderWay)
        try ws.clearAwaitsReupload(zone)
        #expect(!ws.awaitsReupload(zone))

        #expect(try ws.pendingPushNote() == nil)
        try ws.writePendingPushNote(Array("{}".utf8))
        #expect(try ws.pendingPushNote() == Array("{}".utf8))
        try ws.clearPendingPushNote()
        #expect(try ws.pendingPushNote() == nil)
    }

    @Test func theZoneDirectoryIsMadeOnceAndRemovedOnlyWhenEmpty() throws {
        #expect(!ws.hasZoneDirectory(zone))
        #expect(try ws.makeZoneDirectory(zone))
        #expect(try !ws.makeZoneDirectory(zone))
        try writeFile(ws.recordPath(Build.id("r", in: zone)), "{}")
        try ws.removeZoneDirectoryIfEmpty(zone)
        #expect(ws.hasZoneDirectory(zone))
        #expect(ws.zoneFileNames(zone).files == ["r.json"])
        try ws.removeZoneDirectory(zone)
        #expect(!ws.hasZoneDirectory(zone) && !ws.zoneDirectoryIsLink(zone))
    }
}
