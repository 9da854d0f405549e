import Foundation
@testable import RecSyncEngine
import RecSyncModel
import RecSyncTestSupport
import RecSyncWorkspace
import Testing

/// Files created in place by a write batch, and what a killed batch leaves of them.
@Suite struct InPlaceWriteTests {
    @Test func aFileThatAppearedMeanwhileIsLeftAloneWithItsSidecar() throws {
        let dir = TempDirectory("inplace").path
        var batch = WriteBatch(registry: "\(dir)/writing")
        batch.write("\(dir)/a.json", Array("new a".utf8), expect: .absent, group: "a")
        batch.write("\(dir)/.system/a.json", Array("side a".utf8), late: true, group: "a")
        batch.write("\(dir)/b.json", Array("new b".utf8), expect: .absent, group: "b")
        batch.write("\(dir)/.system/b.json", Array("side b".utf8), late: true, group: "b")
        try writeFile("\(dir)/.system/b.json", "an old sidecar")  // replaced: a sidecar is machine-owned
        try writeFile("\(dir)/a.json", "the user's own a")         // appeared after the decision
        try batch.commit()
        #expect(batch.skipped == ["a"])
        #expect(readFile("\(dir)/a.json") == "the user's own a")
        #expect(readFile("\(dir)/.system/a.json") == nil)
        #expect(readFile("\(dir)/b.json") == "new b")
        #expect(readFile("\(dir)/.system/b.json") == "side b")
        #expect(batch.writtenStamps["\(dir)/b.json"] == FileIO.stamp("\(dir)/b.json"))
        #expect(batch.writtenStamps["\(dir)/a.json"] == nil)
        // Nothing is left behind: no temp files, no registry.
        #expect(FileIO.list(dir) == [".system", "a.json", "b.json"])
        #expect(FileIO.list("\(dir)/.system") == ["b.json"])
    }

    @Test func whatAKilledBatchCreatedIsTakenBackAndTheNextPullWritesIt() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        for name in ["done", "cut", "empty", "edited"] { try laptop.write("notes", name, #"{"v": "\#(name)"}"#) }
        _ = try await laptop.push()
        let phone = try f.device("phone")
        let dir = "\(phone.workspace.root)/private/notes"
        // As a batch killed half-way through creating files leaves them: what it meant to write
        // (by hash in the registry) and what reached the disk.
        let meant = Array(#"{"v": "whatever it was"}"#.utf8)
        let side = Array(#"{"recordName": "done"}"#.utf8)
        try writeFile("\(dir)/done.json", String(decoding: meant, as: UTF8.self))
        try writeFile("\(dir)/cut.json", String(decoding: meant.prefix(7), as: UTF8.self))
        try writeFile("\(dir)/empty.json", "")
        try writeFile("\(dir)/.system/done.json", String(decoding: side.prefix(5), as: UTF8.self))
        try writeFile("\(dir)/.system/cut.json", #"{"recordType": "Note"}"#)  // a type note from before
        let h = ContentHash.of(meant)
        try writeFile(phone.workspace.tempRegistry, """
            \(dir)
            c\t\(h)\t\(dir)/done.json
            c\t\(h)\t\(dir)/cut.json
            c\t\(h)\t\(dir)/empty.json
            c\t\(h)\t\(dir)/never-made.json
            s\t\(ContentHash.of(side))\t\(dir)/.system/done.json
            s\t\(h)\t\(dir)/.system/cut.json

            """)
        let pulled = try await phone.pull()
        // The cut-short file may be someone's: kept aside, and the store's version written.
        #expect(pulled.lostAndFound.count == 1)
        #expect(pulled.lostAndFound.first?.hasSuffix("private/notes/cut.json") == true)
        for name in ["done", "cut", "empty", "edited"] {
            #expect(try phone.fields("notes", name) == laptop.fields("notes", name))
            #expect(FileManager.default.fileExists(atPath: "\(dir)/.system/\(name).json"))
        }
        #expect(try await phone.status().isClean)
        #expect(!FileManager.default.fileExists(atPath: phone.workspace.tempRegistry))
    }

    @Test func statusClearsUpAfterAKilledPullInsteadOfReportingNewRecords() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        try laptop.write("notes", "r", #"{"v": 1}"#)
        _ = try await laptop.push()
        let phone = try f.device("phone")
        _ = try await phone.pull()
        let dir = "\(phone.workspace.root)/private/notes"
        let meant = Array(#"{"v": 2}"#.utf8)
        try writeFile("\(dir)/s.json", String(decoding: meant, as: UTF8.self))
        try writeFile(phone.workspace.tempRegistry, "c\t\(ContentHash.of(meant))\t\(dir)/s.json\n")
        let status = try await phone.status()
        #expect(status.isClean)
        #expect(readFile("\(dir)/s.json") == nil)
    }
}

/// The zone index: a sorted base found by binary search, plus a journal of changes.
@Suite struct ZoneIndexTests {
    func entry(_ i: Int) -> IndexEntry {
        IndexEntry(name: "r\(i)", tag: "t\(i)", hash: "h\(i)", file: FileStamp(size: Int64(i), mtimeNanos: 1_700_000_000_000_000_000 + Int64(i), inode: UInt64(i)), side: i % 3 == 0 ? nil : FileStamp(size: 1, mtimeNanos: 2, inode: 3))
    }

    func workspace(_ name: String = #function) throws -> Workspace {
        try Workspace.create(at: TempDirectory(name).file("ws"), config: WorkspaceConfig(user: "alice", remote: "memory"))
    }

    @Test func changesGoToTheJournalThenFoldIntoASortedBase() throws {
        let ws = try workspace()
        let notes = zone("notes")
        let path = ws.indexPath(notes)
        var index = ZoneIndex.load(ws, zone: notes)
        for i in 0..<10 { index[String(format: "r%05d.json", i)] = entry(i) }
        try index.save()
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(FileManager.default.fileExists(atPath: path + ".log"))
        index = ZoneIndex.load(ws, zone: notes)
        #expect(index["r00003.json"] == entry(3))
        index["r00003.json"] = nil
        try index.save()
        #expect(ZoneIndex.load(ws, zone: notes)["r00003.json"] == nil)
        // Past a few thousand journal lines, one sorted base replaces base and journal.
        index = ZoneIndex.load(ws, zone: notes)
        for i in stride(from: 5000, through: 10, by: -1) { index[String(format: "r%05d.json", i)] = entry(i) }
        index["r00004.json"] = nil
        try index.save()
        #expect(FileManager.default.fileExists(atPath: path))
        #expect(!FileManager.default.fileExists(atPath: path + ".log"))
        let lines = readFile(path)!.split(separator: "\n").dropFirst().map { String($0.prefix { $0 != "\t" }) }
        #expect(lines == lines.sorted())
        #expect(lines.count == 4999)
        // Every entry is found by binary search (no full decode), and missing ones are not.
        index = ZoneIndex.load(ws, zone: notes)
        for i in 0...5000 {
            let expected: IndexEntry? = (i == 3 || i == 4) ? nil : entry(i)
            #expect(index[String(format: "r%05d.json", i)] == expected)
        }
        for missing in ["", "a", "r", "r00000", "r00000.jsonx", "r5001.json", "zzz"] { #expect(index[missing] == nil) }
        // A later change in the journal wins over the base.
        index["r00100.json"] = entry(7)
        try index.save()
        index = ZoneIndex.load(ws, zone: notes)
        #expect(index["r00100.json"] == entry(7))
        index.loadAll()
        #expect(index["r00100.json"] == entry(7))
        #expect(index["r00101.json"] == entry(101))
        #expect(index.stamps("r00101.json")?.file == entry(101).file)
        #expect(index.stamps("r00102.json")?.side == nil)  // 102 is a multiple of 3: no sidecar stamp
        #expect(index.stamps("r00100.json")?.file == entry(7).file)
        #expect(index.stamps("r00004.json") == nil)
        // A change saved after a full read is found at once, and after loading again.
        index["r00101.json"] = entry(5)
        try index.save()
        #expect(index["r00101.json"] == entry(5))
        #expect(ZoneIndex.load(ws, zone: notes)["r00101.json"] == entry(5))
    }

    @Test func aJournalLineCutShortIsDroppedAndTheNextAppendStartsAfreshLine() throws {
        let ws = try workspace()
        let notes = zone("notes")
        var index = ZoneIndex.load(ws, zone: notes)
        index["a.json"] = entry(1)
        try index.save()
        let log = ws.indexPath(notes) + ".log"
        // A crash in the middle of appending the next line.
        let handle = FileHandle(forWritingAtPath: log)!
        handle.seekToEndOfFile()
        handle.write(Data("b.json\tr2\tt2\th".utf8))
        handle.closeFile()
        index = ZoneIndex.load(ws, zone: notes)
        #expect(index["a.json"] == entry(1))
        #expect(index["b.json"] == nil)
        index["c.json"] = entry(3)
        try index.save()
        index = ZoneIndex.load(ws, zone: notes)
        #expect(index["c.json"] == entry(3))
        #expect(index["b.json"] == nil)
    }

    @Test func anIndexOfTheFirstFormatIsReadAndRewritten() throws {
        let ws = try workspace()
        let notes = zone("notes")
        let path = ws.indexPath(notes)
        try writeFile(path, "recsync-index 1\nb.json\tr2\tt2\th2\t2 1700000000000000002 2\t1 2 3\na.json\tr1\tt1\th1\t1 1700000000000000001 1\t1 2 3\n")
        var index = ZoneIndex.load(ws, zone: notes)
        #expect(index["a.json"] == entry(1))
        #expect(index["b.json"] == entry(2))
        try index.save()
        #expect(readFile(path)?.hasPrefix("recsync-index 2 2\na.json\t") == true)
        #expect(ZoneIndex.load(ws, zone: notes)["b.json"] == entry(2))
    }
}

/// The worker pool that pulls and scans zones side by side.
@Suite struct SideBySideTests {
    @Test func aFailureStopsWhatHasNotStartedAndResultsKeepTheirPlaces() async throws {
        let results = await SyncEngine.sideBySide(Array(0..<10), workers: 2) { (i: Int) async throws(RecSyncError) -> Int in
            if i == 1 { throw .internalError("item 1 fails") }
            try? await Task.sleep(nanoseconds: 50_000_000)
            return i * 10
        }
        #expect(results.count == 10)
        guard case .failure(let error)? = results[1] else {
            Issue.record("item 1 should have failed, got \(String(describing: results[1]))")
            return
        }
        #expect(error.message.contains("item 1 fails"))
        // Item 0 was under way and finished; nothing was started after the failure.
        #expect(try results[0]?.get() == 0)
        #expect(results[2...].allSatisfy { $0 == nil })
    }

    @Test func everyItemRunsOnceInItsPlace() async throws {
        let results = await SyncEngine.sideBySide(Array(0..<25), workers: 3) { (i: Int) async throws(RecSyncError) -> Int in i * i }
        #expect(try results.map { try $0?.get() } == (0..<25).map { $0 * $0 })
    }
}
