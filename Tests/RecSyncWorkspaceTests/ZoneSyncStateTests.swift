import Foundation
import Glibc
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
        #expect(try !ws.zoneNeedsALook(zone))
        var batch = try ws.recordBatch()
        try ws.notePushed(["a", "b"], in: zone, batch: &batch)
        try batch.commit()
        var second = try ws.recordBatch()
        try ws.notePushed(["c"], in: zone, batch: &second)
        #expect(try ws.pushedRecordNames(zone) == ["a", "b"], "nothing lands before the batch does")
        try second.commit()
        #expect(try ws.pushedRecordNames(zone) == ["a", "b", "c"])
        #expect(try ws.zoneNeedsALook(zone))

        // A killed pull's page: adopted into the pushed names on the next pull.
        try ws.noteApplying(["d", "e"], in: zone)
        try ws.adoptInterruptedPage(zone)
        #expect(try ws.pushedRecordNames(zone) == ["a", "b", "c", "d", "e"])
        try ws.adoptInterruptedPage(zone)  // nothing left to adopt
        try ws.clearPushed(zone)
        #expect(try ws.pushedRecordNames(zone) == nil)
        #expect(try !ws.zoneNeedsALook(zone))
    }

    @Test func anInterruptedPullIsRememberedPerScope() throws {
        #expect(try !ws.pullWasInterrupted(.private))
        try ws.notePullUnderWay(.private)
        #expect(try ws.pullWasInterrupted(.private))
        #expect(try !ws.pullWasInterrupted(.shared))
        try ws.clearPullUnderWay(.private)
        #expect(try !ws.pullWasInterrupted(.private))
    }

    @Test func theRetryListSurvivesAndToleratesALineCutShort() throws {
        var list = try RetryList.load(ws, zone: zone)
        #expect(list.entries.isEmpty)
        list["a/b"] = RetryList.Entry(why: "not JSON\non two lines")
        list["c"] = RetryList.Entry(why: "bad", unreadableTag: "c0ffee")
        try list.save()
        #expect(try ws.zoneNeedsALook(zone))
        let loaded = try RetryList.load(ws, zone: zone)
        #expect(loaded.entries == ["a/b": RetryList.Entry(why: "not JSON on two lines"), "c": RetryList.Entry(why: "bad", unreadableTag: "c0ffee")])
        #expect(loaded.namesToFetch(all: false) == ["a/b"])
        #expect(loaded.namesToFetch(all: true) == ["a/b", "c"])
        // A crash cut the last line short: what is readable stays; a line cut in its tag
        // is fetched by ID; a removal cut short removes nothing.
        let path = ws.retryPath(zone)
        for tail in ["%zz", "d\tc0f", "\tc"] {
            var bytes = try #require(FileManager.default.contents(atPath: path))
            bytes.append(contentsOf: Array("\n\(tail)".utf8))
            try bytes.write(to: URL(fileURLWithPath: path))
        }
        let cut = try RetryList.load(ws, zone: zone)
        #expect(cut.entries.count == 3 && cut["c"] != nil && cut["d"]?.unreadableTag == nil)
        list["a/b"] = nil
        list["c"] = nil
        try list.compact()
        #expect(!FileManager.default.fileExists(atPath: path), "an empty list is removed")
    }

    @Test func theRetryListAppendsChangesAndCompactsOnceMostLinesAreStale() throws {
        var list = try RetryList.load(ws, zone: zone)
        for i in 0..<100 { list["r\(i)"] = RetryList.Entry(why: "bad", unreadableTag: "t\(i)") }
        try list.save()
        let path = ws.retryPath(zone)
        let first = try #require(FileManager.default.contents(atPath: path))
        // The same again changes nothing; one change is one line, appended.
        list["r1"] = RetryList.Entry(why: "bad", unreadableTag: "t1")
        try list.save()
        #expect(FileManager.default.contents(atPath: path) == first)
        list["r2"] = nil
        list["r3"] = RetryList.Entry(why: "worse", unreadableTag: "u3")
        try list.compact()
        let appended = try #require(FileManager.default.contents(atPath: path))
        #expect(appended.starts(with: first) && appended.count > first.count, "appended, not rewritten")
        #expect(String(decoding: appended.dropFirst(first.count), as: UTF8.self) == "\tr2\t\nr3\tu3\tworse\n")
        #expect(try RetryList.load(ws, zone: zone).entries == list.entries)
        // Once stale lines outnumber the entries, compacting writes the entries alone.
        for i in 10..<100 { list["r\(i)"] = nil }
        try list.compact()
        let compacted = try #require(FileManager.default.contents(atPath: path))
        #expect(compacted.filter { $0 == 10 }.count == 9)
        #expect(try RetryList.load(ws, zone: zone).entries == list.entries)
    }

    @Test func aListOnWhichEveryRecordWaitsGivesTheZoneNoLook() throws {
        var list = try RetryList.load(ws, zone: zone)
        list["r"] = RetryList.Entry(why: "not a record", unreadableTag: "t")
        try list.save()
        #expect(try ws.zoneNeedsALook(zone), "not noted until compacted")
        try list.compact()
        #expect(try !ws.zoneNeedsALook(zone))
        // A record to fetch by ID, appended: the list's stamp no longer matches the note.
        list["s"] = RetryList.Entry(why: "an asset is missing")
        try list.save()
        #expect(try ws.zoneNeedsALook(zone))
        try list.compact()
        #expect(try ws.zoneNeedsALook(zone))
        list["s"] = nil
        try list.compact()
        #expect(try !ws.zoneNeedsALook(zone))
        // The list written over by a version that knows no note: looked at.
        let path = ws.retryPath(zone)
        try Data("r\tnot a record\n".utf8).write(to: URL(fileURLWithPath: path + ".new"))
        _ = rename(path + ".new", path)
        #expect(try ws.zoneNeedsALook(zone))
        try ws.forgetZoneState(zone)
        #expect(!FileManager.default.fileExists(atPath: ws.retryWaitsPath(zone)))
    }

    /// The rules the previous version read the list by: every line names a record (a name
    /// that does not unescape, or is empty, is skipped) and the last line about it wins.
    @Test func aListWrittenNowReadsInThePreviousVersionAsTheRecordsToFetch() throws {
        var list = try RetryList.load(ws, zone: zone)
        list["plain"] = RetryList.Entry(why: "assets missing")
        list["tagged/one"] = RetryList.Entry(why: "not a record", unreadableTag: "abc123")
        list["gone"] = RetryList.Entry(why: "bad", unreadableTag: "def")
        try list.save()
        list["gone"] = nil
        try list.save()
        var previous: Set<String> = []
        for line in try #require(FileManager.default.contents(atPath: ws.retryPath(zone))).split(separator: 10) {
            let parts = line.split(separator: 9, maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = NameEscaping.unescape(String(decoding: parts[0], as: UTF8.self)), !name.isEmpty else { continue }
            previous.insert(name)
        }
        // It fetches by ID all it lists (a record no longer listed only costs it a fetch).
        #expect(previous.isSuperset(of: list.entries.keys))
        #expect(previous.isSubset(of: ["plain", "tagged/one", "gone"]))
    }

    @Test func aRefetchLogKnowsAFreshZoneFromOneThatHeldRecords() throws {
        let log = ws.refetchLog(zone)
        #expect(try !log.isUnderWay)
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
        list["y"] = RetryList.Entry(why: "bad")
        try list.save()
        try ws.markAwaitsReupload(zone)
        #expect(try ws.awaitsReupload(zone))
        try ws.forgetZoneState(zone)
        #expect(try !ws.zoneNeedsALook(zone))
        #expect(try !ws.refetchLog(zone).isUnderWay)
        try ws.clearAwaitsReupload(zone)
        #expect(try !ws.awaitsReupload(zone))

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
        #expect(try ws.zoneFileNames(zone).files == ["r.json"])
        try ws.removeZoneDirectory(zone)
        #expect(try !ws.hasZoneDirectory(zone) && !ws.zoneDirectoryIsLink(zone))
    }
}
