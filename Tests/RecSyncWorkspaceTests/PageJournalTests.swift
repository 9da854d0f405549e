import Foundation
import RecSyncModel
import RecSyncSystem
import RecSyncTestSupport
import Testing

@testable import RecSyncWorkspace

/// A journaled batch (`PageJournal`): its files land unsynced, the journal redoes what a crash
/// took from them, and never what someone wrote since.
@Suite struct PageJournalTests {
    /// A zone directory with a synced record `b` (file and sidecar), `c` and `gone`, and a
    /// journaled batch that creates `a`, rewrites `b` and `c`, and removes `gone`.
    struct Page {
        let temp = TempDirectory("journal")
        var dir: String { temp.path }
        var journalPath: String { "\(dir)/journal" }
        var batch = WriteBatch(registry: nil)

        init() throws {
            try writeFile("\(dir)/b.json", "old b")
            try writeFile("\(dir)/.system/b.json", "old side b")
            try writeFile("\(dir)/c.json", "old c")
            try writeFile("\(dir)/.system/c.json", "old side c")
            try writeFile("\(dir)/gone.json", "gone")
            try writeFile("\(dir)/.system/gone.json", "side gone")
            batch.journal = journalPath
            batch.write("\(dir)/a.json", Array("new a".utf8), expect: .absent, group: "a")
            batch.write("\(dir)/.system/a.json", Array("side a".utf8), late: true, group: "a", machineOwned: true)
            for name in ["b", "c"] {
                let stamp = try #require(try FileIO.stamp("\(dir)/\(name).json"))
                batch.write("\(dir)/\(name).json", Array("new \(name), a longer text".utf8), expect: .unchanged(stamp), group: name)
                batch.write("\(dir)/.system/\(name).json", Array("new side \(name)".utf8), late: true, group: name, machineOwned: true)
            }
            let stamp = try #require(try FileIO.stamp("\(dir)/gone.json"))
            batch.remove("\(dir)/gone.json", expect: .unchanged(stamp), group: "gone")
            batch.remove("\(dir)/.system/gone.json", group: "gone")
        }

        func journal() throws -> PageJournal {
            let name = try #require(FileIO.list(dir).first { $0.hasPrefix("journal-") })
            let bytes = try #require(try FileIO.read("\(dir)/\(name)"))
            return try #require(PageJournal.decode(bytes))
        }
    }

    @Test func aJournaledBatchLandsWithItsJournalAndNoRegistry() throws {
        var page = try Page()
        try page.batch.commit()
        let dir = page.dir
        #expect(readFile("\(dir)/a.json") == "new a")
        #expect(readFile("\(dir)/.system/b.json") == "new side b")
        #expect(readFile("\(dir)/gone.json") == nil)
        #expect(readFile("\(dir)/.system/gone.json") == nil)
        let journal = try page.journal()
        #expect(
            journal.entries.map { FileIO.split($0.path).name } == [
                "a.json", "b.json", "c.json", "b.json", "c.json", "a.json", "gone.json", "gone.json",
            ])
        // Done, the journal redoes nothing.
        try journal.replay(under: dir)
        #expect(readFile("\(dir)/c.json") == "new c, a longer text")
        #expect(FileIO.list(dir).sorted() == [".system", "a.json", "b.json", "c.json", "journal-8"])
    }

    @Test func aReplayRedoesWhatACrashTookAndLeavesWhatSomeoneWroteSince() throws {
        var page = try Page()
        try page.batch.commit()
        let dir = page.dir
        // As a crash can leave them: a created file lost, a rewrite cut short, a sidecar cut
        // off; a removal undone for the sidecar only. And c edited by the user since.
        try FileIO.remove("\(dir)/a.json")
        try FileIO.remove("\(dir)/.system/a.json")
        try writeFile("\(dir)/b.json", "new b, a lo")
        try writeFile("\(dir)/.system/b.json", "")
        try writeFile("\(dir)/.system/gone.json", "side gone")
        try writeFile("\(dir)/c.json", "the user's c")
        try writeFile("\(dir)/.system/c.json", "old side c")
        try page.journal().replay(under: dir)
        #expect(readFile("\(dir)/a.json") == "new a")
        #expect(readFile("\(dir)/.system/a.json") == "side a")
        #expect(readFile("\(dir)/b.json") == "new b, a longer text")
        #expect(readFile("\(dir)/.system/b.json") == "new side b")
        #expect(readFile("\(dir)/.system/gone.json") == nil)
        // The user's edit stands, and so does the sidecar it was made on.
        #expect(readFile("\(dir)/c.json") == "the user's c")
        #expect(readFile("\(dir)/.system/c.json") == "old side c")
    }

    @Test func aFileMadeWhereTheBatchRemovedOneStays() throws {
        var page = try Page()
        try page.batch.commit()
        let dir = page.dir
        try writeFile("\(dir)/gone.json", "made again by the user")
        try writeFile("\(dir)/.system/gone.json", "its sidecar")
        try page.journal().replay(under: dir)
        #expect(readFile("\(dir)/gone.json") == "made again by the user")
        #expect(readFile("\(dir)/.system/gone.json") == "its sidecar")
    }

    @Test func aDamagedJournalIsNotReadAndAPathOutsideTheRootIsNotTouched() throws {
        var page = try Page()
        try page.batch.commit()
        let name = try #require(FileIO.list(page.dir).first { $0.hasPrefix("journal-") })
        var bytes = try #require(try FileIO.read("\(page.dir)/\(name)"))
        bytes[bytes.count / 2] ^= 1
        #expect(PageJournal.decode(bytes) == nil)
        #expect(PageJournal.decode(Array(bytes.prefix(20))) == nil)
        try FileIO.remove("\(page.dir)/a.json")
        try page.journal().replay(under: "\(page.dir)/elsewhere")
        #expect(readFile("\(page.dir)/a.json") == nil)
        // Nor one that climbs out of the root.
        var climbing = try page.journal()
        climbing.entries = climbing.entries.map { e in
            var e = e
            e.path = e.path.replacingOccurrences(of: page.dir + "/", with: page.dir + "/sub/../")
            return e
        }
        try climbing.replay(under: page.dir)
        #expect(readFile("\(page.dir)/a.json") == nil)
        #expect(climbing.paths(under: page.dir).isEmpty)
    }

    @Test func aWorkspaceFinishesLeftJournalsAndSetsADamagedOneAside() throws {
        let dir = TempDirectory("journals")
        let ws = try Workspace.create(at: dir.file("ws"), config: WorkspaceConfig(user: "alice", remote: "memory"))
        let zone = try ZoneID(zoneName: "z", ownerName: "alice")
        let zoneDir = ws.zoneDirectory(zone)
        var batch = WriteBatch(registry: nil)
        batch.journal = ws.newPageJournalPath(zone)
        batch.write("\(zoneDir)/r.json", Array("{}".utf8), expect: .absent, group: "r")
        batch.write("\(zoneDir)/s.json", Array("{\"a\": 1}".utf8), expect: .absent, group: "s")
        try batch.commit()
        try FileIO.remove("\(zoneDir)/r.json")
        try FileIO.writeAtomically(ws.newPageJournalPath(zone) + "-1", Array("damaged".utf8))
        #expect(ws.pageJournalCount == 2)
        #expect(try ws.recoverPageJournals())
        #expect(readFile("\(zoneDir)/r.json") == "{}")
        #expect(ws.pageJournalCount == 0)
        #expect(FileIO.list("\(ws.stateDir)/lost+found").count == 1)
        #expect(try !ws.recoverPageJournals())
        // Something else under a journal's name does not stop the workspace either.
        try FileIO.makeDirectories(ws.newPageJournalPath(zone) + "-3")
        #expect(try ws.recoverPageJournals())
        #expect(FileIO.list("\(ws.stateDir)/lost+found").count == 2)
        #expect(ws.pageJournalCount == 0)
    }

    /// A zone directory swapped for a link after the crash: the journal's files are not written
    /// through it (the workspace's confinement refuses the link, naming it).
    @Test func aJournalDoesNotWriteThroughAZoneDirectorySwappedForALink() throws {
        let dir = TempDirectory("journal-link")
        let ws = try Workspace.create(at: dir.file("ws"), config: WorkspaceConfig(user: "alice", remote: "memory"))
        let zone = try ZoneID(zoneName: "z", ownerName: "alice")
        let zoneDir = ws.zoneDirectory(zone)
        var batch = WriteBatch(registry: nil)
        batch.journal = ws.newPageJournalPath(zone)
        batch.write("\(zoneDir)/r.json", Array("{}".utf8), expect: .absent, group: "r")
        try batch.commit()
        let outside = dir.file("outside")
        try FileManager.default.moveItem(atPath: zoneDir, toPath: outside)
        try FileIO.remove("\(outside)/r.json")
        try FileManager.default.createSymbolicLink(atPath: zoneDir, withDestinationPath: outside)
        do {
            _ = try ws.recoverPageJournals()
        } catch {
            #expect(error.message.contains(ws.relative(zoneDir)) || error.message.contains(zoneDir), "\(error.message)")
        }
        #expect(readFile("\(outside)/r.json") == nil, "written through the link")
    }

    /// A finished pull's journals stay while the machine runs (its files are in the kernel's
    /// hands); those of an earlier boot are redone, since a power cut may have taken the files.
    @Test func aFinishedPullsJournalIsRedoneOnlyAfterTheMachineRestarted() throws {
        try #require(Workspace.bootID != nil, "this machine tells its boot")
        let dir = TempDirectory("closed")
        let ws = try Workspace.create(at: dir.file("ws"), config: WorkspaceConfig(user: "alice", remote: "memory"))
        let zone = try ZoneID(zoneName: "z", ownerName: "alice")
        let zoneDir = ws.zoneDirectory(zone)
        for name in ["now", "before"] {
            var batch = WriteBatch(registry: nil)
            batch.journal = ws.newPageJournalPath(zone)
            if name == "before", let boot = Workspace.bootID {
                batch.journal = batch.journal?.replacingOccurrences(of: "-\(boot)-", with: "-0123456789abcdef-")
            }
            batch.write("\(zoneDir)/\(name).json", Array("{}".utf8), expect: .absent, group: name)
            batch.write("\(zoneDir)/\(name)-2.json", Array("{}".utf8), expect: .absent, group: "\(name)-2")
            try batch.commit()
        }
        #expect(ws.pageJournalsToRecover.count == 2)
        try ws.closePageJournals()
        #expect(ws.pageJournalCount == 2)
        #expect(ws.pageJournalsToRecover.count == 1)
        try FileIO.remove("\(zoneDir)/now.json")
        try FileIO.remove("\(zoneDir)/before.json")
        #expect(try ws.recoverPageJournals())
        #expect(readFile("\(zoneDir)/before.json") == "{}")
        #expect(readFile("\(zoneDir)/now.json") == nil, "this boot's files are trusted to the kernel")
        #expect(ws.pageJournalCount == 0)
    }
}
