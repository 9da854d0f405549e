import Foundation
import RecSyncModel
import RecSyncSystem
import RecSyncTestSupport
import RecSyncWorkspace
import Testing

func zone(_ name: String, owner: String = "alice") -> ZoneID { Build.zone(name, owner: owner) }

/// The zone index: what a status or push compares files against, and how it survives.
@Suite struct ZoneIndexTests {
    func entry(_ i: Int) -> IndexEntry {
        IndexEntry(
            name: "r\(i)", tag: "t\(i)", hash: "h\(i)",
            file: FileStamp(size: Int64(i), mtimeNanos: 1_700_000_000_000_000_000 + Int64(i), inode: UInt64(i)),
            side: i % 3 == 0 ? nil : FileStamp(size: 1, mtimeNanos: 2, inode: 3))
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
        try writeFile(
            path, "recsync-index 1\nb.json\tr2\tt2\th2\t2 1700000000000000002 2\t1 2 3\na.json\tr1\tt1\th1\t1 1700000000000000001 1\t1 2 3\n")
        var index = ZoneIndex.load(ws, zone: notes)
        #expect(index["a.json"] == entry(1))
        #expect(index["b.json"] == entry(2))
        try index.save()
        #expect(readFile(path)?.hasPrefix("recsync-index 2 2\na.json\t") == true)
        #expect(ZoneIndex.load(ws, zone: notes)["b.json"] == entry(2))
    }
}

/// The worker pool that pulls and scans zones side by side.
