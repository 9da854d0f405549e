import Foundation
import RecSyncModel
import RecSyncSystem
import RecSyncTestSupport
import Testing

@testable import RecSyncWorkspace

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
        try writeFile("\(dir)/a.json", "the user's own a")  // appeared after the decision
        try batch.commit()
        #expect(batch.skipped == ["a"])
        #expect(readFile("\(dir)/a.json") == "the user's own a")
        #expect(readFile("\(dir)/.system/a.json") == nil)
        #expect(readFile("\(dir)/b.json") == "new b")
        #expect(readFile("\(dir)/.system/b.json") == "side b")
        #expect(try batch.writtenStamps["\(dir)/b.json"] == FileIO.stamp("\(dir)/b.json"))
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
        let stamp = try #require(try FileIO.stamp("\(dir)/a.json"))
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

    @Test func aMachineOwnedFileIsOverwrittenInPlaceAfterItsRecordFileLanded() throws {
        let temp = TempDirectory("overwrite")
        let dir = temp.path
        try writeFile("\(dir)/a.json", "old a")
        try writeFile("\(dir)/.system/a.json", "an old sidecar, longer than the new one")
        try writeFile("\(dir)/.system/b.json", "b before")
        let inodeA = try #require(try FileIO.stamp("\(dir)/.system/a.json")).inode
        let inodeB = try #require(try FileIO.stamp("\(dir)/.system/b.json")).inode
        let stamp = try #require(try FileIO.stamp("\(dir)/a.json"))
        var batch = WriteBatch(registry: "\(dir)/writing")
        batch.write("\(dir)/a.json", Array("new a".utf8), expect: .unchanged(stamp), group: "a")
        batch.write("\(dir)/.system/a.json", Array("side a".utf8), late: true, group: "a", machineOwned: true)
        batch.write("\(dir)/.system/b.json", Array("side b, longer than what b held".utf8), machineOwned: true)
        batch.write("\(dir)/.system/c.json", Array("side c".utf8), machineOwned: true)  // new: created as usual
        try batch.commit()
        #expect(readFile("\(dir)/a.json") == "new a")
        #expect(readFile("\(dir)/.system/a.json") == "side a")
        #expect(readFile("\(dir)/.system/b.json") == "side b, longer than what b held")
        #expect(readFile("\(dir)/.system/c.json") == "side c")
        // The same files, written over: no new inode, no freed block.
        #expect(try FileIO.stamp("\(dir)/.system/a.json")?.inode == inodeA)
        #expect(try FileIO.stamp("\(dir)/.system/b.json")?.inode == inodeB)
        #expect(try batch.writtenStamps["\(dir)/.system/a.json"] == FileIO.stamp("\(dir)/.system/a.json"))
        #expect(try batch.writtenStamps["\(dir)/.system/b.json"] == FileIO.stamp("\(dir)/.system/b.json"))
        #expect(FileIO.list(dir) == [".system", "a.json"])  // no registry left
    }

    @Test func aMachineOwnedFileOfASkippedGroupKeepsWhatItHeld() throws {
        let temp = TempDirectory("overwrite-skip")
        let dir = temp.path
        try writeFile("\(dir)/a.json", "old a")
        try writeFile("\(dir)/.system/a.json", "sidecar of old a")
        let stamp = try #require(try FileIO.stamp("\(dir)/a.json"))
        var batch = WriteBatch(registry: "\(dir)/writing")
        batch.write("\(dir)/a.json", Array("new a".utf8), expect: .unchanged(stamp), group: "a")
        batch.write("\(dir)/.system/a.json", Array("side a".utf8), late: true, group: "a", machineOwned: true)
        batch.write("\(dir)/other", Array("other".utf8))
        try writeFile("\(dir)/a.json", "the user's edit, made during the sync")
        try batch.commit()
        #expect(batch.skipped == ["a"])
        #expect(readFile("\(dir)/a.json") == "the user's edit, made during the sync")
        #expect(readFile("\(dir)/.system/a.json") == "sidecar of old a")
        #expect(batch.writtenStamps["\(dir)/.system/a.json"] == nil)
    }

    @Test func aSidecarWithAnotherNameIsReplacedNotWrittenThrough() throws {
        let temp = TempDirectory("overwrite-link")
        let dir = temp.path
        try writeFile(temp.file("outside"), "a file outside the workspace")
        try FileManager.default.createDirectory(atPath: "\(dir)/ws/.system", withIntermediateDirectories: true)
        #expect(link(temp.file("outside"), "\(dir)/ws/.system/a.json") == 0)
        var batch = WriteBatch(registry: "\(dir)/ws/writing")
        batch.write("\(dir)/ws/.system/a.json", Array("side a".utf8), machineOwned: true)
        batch.write("\(dir)/ws/other", Array("other".utf8))
        try batch.commit()
        #expect(readFile("\(dir)/ws/.system/a.json") == "side a")
        #expect(readFile(temp.file("outside")) == "a file outside the workspace")
    }

    @Test func aBatchKilledWhileOverwritingASidecarIsPutBackByTheNextCommand() throws {
        let temp = TempDirectory("overwrite-crash")
        let ws = try Workspace.create(at: temp.file("ws"), config: WorkspaceConfig(user: "alice", remote: "memory"))
        let side = "\(ws.root)/private/notes/.system/a.json"
        let other = "\(ws.root)/private/notes/.system/b.json"
        let before = Array(#"{"recordName":"a","changeTag":"old"}"#.utf8)
        try writeFile(side, #"{"recordName":"a","chan"#)  // cut off half-way through the new bytes
        try writeFile(other, "b as the batch left it")
        let inode = try #require(try FileIO.stamp(side)).inode
        // What the batch had made durable before it began overwriting.
        let registry = CrashRegistry.Contents(
            directories: ["\(ws.root)/private/notes/.system"], creations: [],
            restores: [
                CrashRegistry.Restore(path: side, bytes: before),
                CrashRegistry.Restore(path: other, bytes: Array("b before".utf8)),
                CrashRegistry.Restore(path: "\(ws.root)/private/notes/.system/gone.json", bytes: [1]),  // removed since: stays gone
                CrashRegistry.Restore(path: temp.file("outside"), bytes: [1]),  // not under the root: ignored
            ])
        try FileIO.writeAtomically(ws.tempRegistry, CrashRegistry.encode(registry))
        #expect(ws.leftoverRegistries == [ws.tempRegistry])
        _ = try ws.removeStaleTemporaryFiles()
        #expect(try FileIO.read(side) == before)
        #expect(try FileIO.stamp(side)?.inode == inode)
        #expect(readFile(other) == "b before")
        #expect(try FileIO.info("\(ws.root)/private/notes/.system/gone.json") == nil)
        #expect(try FileIO.info(temp.file("outside")) == nil)
        #expect(ws.leftoverRegistries.isEmpty)
    }

    /// An entry named like a write list that is not a plain file (a directory here) is no list
    /// a batch wrote: the clean-up leaves it, goes on, and doctor names it as not fixable.
    @Test func aRegistryThatIsNoPlainFileIsLeftAndTheCleanUpGoesOn() throws {
        let temp = TempDirectory("batch-odd-registry")
        let ws = try Workspace.create(at: temp.file("ws"), config: WorkspaceConfig(user: "alice", remote: "/nowhere"))
        try FileIO.makeDirectories(ws.tempRegistry + "/x")
        #expect(ws.leftoverRegistries == [ws.tempRegistry])
        #expect(try ws.removeStaleTemporaryFiles().isEmpty)
        #expect(ws.leftoverRegistries == [ws.tempRegistry])
        let findings = try ws.check(fix: true)
        let named = try #require(findings.first { $0.path == ws.relative(ws.tempRegistry) }, "\(findings)")
        #expect(!named.fixable && !named.fixed && named.detail.contains("not a plain file"))
    }

    /// A client's state in a workspace has names of its own, never the workspace's files.
    @Test func aClientsStateCannotTakeTheWorkspacesOwnFiles() throws {
        let temp = TempDirectory("client-state-names")
        let ws = try Workspace.create(at: temp.file("ws"), config: WorkspaceConfig(user: "alice", remote: "/nowhere"))
        try ws.writeState("encrypted-zones", Array("alice/diary 1\n".utf8))
        #expect(try ws.readState("encrypted-zones") == Array("alice/diary 1\n".utf8))
        for name in ["config", "lock", "writing-1", ".tmp-1", "../x", "a/b", "Tokens", ""] {
            #expect(throws: RecSyncError.self, "\(name)") { try ws.writeState(name, [1]) }
        }
        #expect(try FileIO.read(ws.stateDir + "/config") != [1])
    }

    @Test func theCrashRegistryReadsBackWhatItPutsBack() throws {
        let contents = CrashRegistry.Contents(
            directories: ["/w/private/notes/.system"], creations: [],
            restores: [
                CrashRegistry.Restore(path: "/w/private/notes/.system/a\tb.json", bytes: Array("{\"x\":\"\\n\t\"}\n".utf8) + [0, 255]),
                CrashRegistry.Restore(path: "/w/private/notes/.system/empty.json", bytes: []),
            ])
        #expect(CrashRegistry.decode(CrashRegistry.encode(contents)) == contents)
    }
}
