import Foundation
import RecSyncModel
import RecSyncTestSupport
@testable import RecSyncWorkspace
import Testing

/// The write batch on its own: files created in place, expectations, what it leaves behind.
@Suite struct WriteBatchTests {
    @Test func aFileThatAppearedMeanwhileIsLeftAloneWithItsSidecar() throws {
        let temp = TempDirectory("inplace")
        let dir = temp.path
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

    @Test func aChangedFileSkipsItsGroupsWritesAndRemovalsAndLeavesNoTempFile() throws {
        let temp = TempDirectory("expect")
        let dir = temp.path
        try writeFile("\(dir)/a.json", "old a")
        try writeFile("\(dir)/gone.json", "to remove")
        let stamp = try #require(FileIO.stamp("\(dir)/a.json"))
        var batch = WriteBatch(registry: "\(dir)/writing")
        batch.write("\(dir)/a.json", Array("new a".utf8), expect: .unchanged(stamp), group: "a")
        batch.write("\(dir)/.system/a.json", Array("side a".utf8), late: true, group: "a")
        batch.remove("\(dir)/gone.json", group: "a")
        batch.write("\(dir)/c.json", Array("new c".utf8))
        try writeFile("\(dir)/a.json", "the user's edit, longer than before")
        try batch.commit()
        #expect(batch.skipped == ["a"])
        #expect(readFile("\(dir)/a.json") == "the user's edit, longer than before")
        #expect(readFile("\(dir)/gone.json") == "to remove")
        #expect(readFile("\(dir)/c.json") == "new c")
        #expect(batch.writtenStamps.keys.sorted() == ["\(dir)/c.json"])
        #expect(FileIO.list(dir) == [".system", "a.json", "c.json", "gone.json"])
        #expect(FileIO.list("\(dir)/.system").isEmpty)
    }

    @Test func aCommittedBatchIsEmptyAndASecondCommitWritesNothing() throws {
        let temp = TempDirectory("twice")
        var batch = WriteBatch()
        batch.write(temp.file("x"), [1, 2, 3])
        #expect(!batch.isEmpty)
        try batch.commit()
        #expect(batch.isEmpty)
        try writeFile(temp.file("x"), "changed since")
        try batch.commit()
        #expect(readFile(temp.file("x")) == "changed since")
    }

    @Test func onlyFilesThatMustNotExistAndTheirSidecarsAreCreatedInPlace() {
        func write(_ path: String, late: Bool = false, expect: WriteBatch.Expectation? = nil, group: String? = nil) -> WriteBatch.Write {
            WriteBatch.Write(path: path, bytes: [], late: late, expect: expect, group: group)
        }
        let stamp = FileStamp(size: 1, mtimeNanos: 2, inode: 3)
        let writes = [
            write("new.json", expect: .absent, group: "new"),
            write(".system/new.json", late: true, group: "new"),
            write("edited.json", expect: .unchanged(stamp), group: "edited"),
            write(".system/edited.json", late: true, group: "edited"),
            write("state"),
        ]
        #expect(WriteBatch.createdInPlace(writes) == [true, true, false, false, false])
        #expect(WriteBatch.createdInPlace([writes[0]]) == [false])  // one file: not worth the registry's sync
    }

    @Test func theCrashRegistryReadsBackWhatItWrote() throws {
        let contents = CrashRegistry.Contents(
            directories: ["/w/private/notes", "/w/private/notes/.system", "/w/odd\tname\there"],
            creations: [
                CrashRegistry.Creation(path: "/w/private/notes/a.json", hash: "h1", machineOwned: false),
                CrashRegistry.Creation(path: "/w/private/notes/.system/a\tb.json", hash: "h2", machineOwned: true),
            ])
        let bytes = CrashRegistry.encode(contents)
        #expect(String(decoding: bytes, as: UTF8.self).hasPrefix("/w/private/notes\n"))
        #expect(CrashRegistry.decode(bytes) == contents)
    }
}
