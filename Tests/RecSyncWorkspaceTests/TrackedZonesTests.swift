import Foundation
import RecSyncModel
import RecSyncTestSupport
import RecSyncWorkspace
import Testing

/// The set of zones a partial workspace holds, and what untracking a zone leaves behind.
@Suite struct TrackedZonesTests {
    let dir = TempDirectory("tracked-zones")
    let ws: Workspace
    let todo = Build.zone("todo")
    let work = Build.zone("work")
    let plans = Build.zone("plans", owner: "bob")

    init() throws {
        ws = try Workspace.create(at: dir.file("ws"), config: WorkspaceConfig(user: "alice", remote: "memory"))
    }

    @Test func aWorkspaceWithoutASetTracksEveryZone() throws {
        #expect(!ws.isPartial)
        #expect(ws.tracks(work) && ws.tracks(plans))
        #expect(try ws.trackedZoneIDs() == nil)
        #expect(try ws.trackedZonesNotHeld().isEmpty)
    }

    @Test func aPartialWorkspaceTracksItsSetAndTheZonesMadeHere() throws {
        let partial = try ws.trackingOnly(["todo", "bob/plans", "private/todo"])
        #expect(partial.isPartial)
        #expect(partial.config.trackedZones == ["private/todo", "shared/bob/plans"])
        #expect(try Workspace.open(at: ws.root).config.trackedZones == ["private/todo", "shared/bob/plans"], "kept in the config")
        #expect(partial.tracks(todo) && partial.tracks(plans) && !partial.tracks(work))
        #expect(try partial.trackedZonesNotHeld() == [todo, plans])

        // A zone directory made here is the user's choice: fetched too.
        let mine = Build.zone("mine")
        #expect(try partial.makeZoneDirectory(mine))
        #expect(partial.tracks(mine))
        #expect(try partial.trackedZoneIDs() == [mine, todo, plans].sorted())
        // A directory without a token is a first fetch that did not finish: still to fetch.
        #expect(try partial.makeZoneDirectory(todo))
        #expect(try partial.trackedZonesNotHeld() == [todo, plans])
        #expect(Set(partial.zonesHeld()) == ["private/mine", "private/todo"])
    }

    @Test func aNameThatIsNoZoneIsRefusedNamingIt() throws {
        #expect {
            _ = try ws.trackingOnly(["a/b/c"])
        } throws: { error in
            (error as? RecSyncError)?.kind == .invalidArguments && (error as? RecSyncError)?.message.contains("zone 'a/b/c'") == true
        }
        #expect(!(try Workspace.open(at: ws.root).isPartial))
    }

    @Test func droppingAZoneKeepsUnpushedWorkAndForgetsEveryNote() async throws {
        #expect(try ws.makeZoneDirectory(work))
        let file = "\(ws.zoneDirectory(work))/draft.json"
        try Data(#"{"title": "new here"}"#.utf8).write(to: URL(fileURLWithPath: file))
        try ws.noteApplying(["a"], in: work)
        var batch = try ws.recordBatch()
        try ws.notePushed(["b"], in: work, batch: &batch)
        try batch.commit()
        try ws.markAwaitsReupload(work)
        try ws.setReadOnly(true, zone: work)

        let scan = try await ws.scan(zone: work) { _, _ throws(RecSyncError) in nil }
        #expect(ws.unpushedWork(in: scan, of: work) == ["private/work/draft.json"])
        let kept = try #require(try ws.dropUntrackedZone(work, scan: scan, stamp: "stamp"))
        #expect(FileManager.default.fileExists(atPath: "\(kept)/draft.json"))
        #expect(!ws.hasZoneDirectory(work))
        #expect(try ws.pushedRecordNames(work) == nil)
        #expect(try ws.interruptedPageNames(work).isEmpty)
        #expect(try !ws.awaitsReupload(work))
        #expect(try !ws.isReadOnly(work))
        #expect(try !ws.zoneNeedsALook(work))
        #expect(ws.zonesWithTokens().isEmpty)
    }
}
