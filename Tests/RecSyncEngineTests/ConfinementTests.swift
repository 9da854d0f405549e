import Foundation
import RecSyncEngine
import RecSyncEngineFixtures
import RecSyncModel
import RecSyncStore
import RecSyncSystem
import RecSyncTestSupport
import RecSyncTestTraits
import RecSyncWorkspace
import Testing

/// Nothing recsync writes lands outside the workspace, and only plain files are read as
/// records (DESIGN §11): links inside a workspace are refused, FIFOs are reported, never waited on.
@Suite(.ownThreads) struct ConfinementTests {
    /// A fixture with two workspaces of alice's, both holding record `notes/a`.
    static func laptopAndPhone(_ name: String = #function) async throws -> (EngineFixture, SyncEngine, SyncEngine) {
        let f = EngineFixture(name)
        let laptop = try f.device("laptop")
        let phone = try f.device("phone")
        try laptop.write("notes", "a", #"{"v": 1}"#)
        _ = try await laptop.push()
        _ = try await phone.pull()
        return (f, laptop, phone)
    }

    /// The error of an operation, or nil when it succeeded.
    static func failure(_ work: () async throws(RecSyncError) -> Void) async -> RecSyncError? {
        do throws(RecSyncError) {
            try await work()
            return nil
        } catch {
            return error
        }
    }

    /// A directory outside every workspace, holding one file whose content must not change.
    static func outside(_ f: EngineFixture, _ name: String) throws -> String {
        let dir = f.directory.file(name)
        try writeFile("\(dir)/precious.txt", "keep me")
        return dir
    }

    static func untouched(_ dir: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(FileIO.list(dir) == ["precious.txt"], "nothing written outside the workspace: \(FileIO.list(dir))", sourceLocation: sourceLocation)
        #expect(readFile("\(dir)/precious.txt") == "keep me", sourceLocation: sourceLocation)
    }

    /// Replaces a record's `.assets` directory by a link to `target` (the directory itself
    /// moved aside), as someone racing recsync could.
    static func swapForLink(_ dir: String, to target: String) {
        do {
            try FileManager.default.moveItem(atPath: dir, toPath: dir + "-moved")
            try FileManager.default.createSymbolicLink(atPath: dir, withDestinationPath: target)
        } catch {
            Issue.record("cannot swap \(dir) for a link: \(error)")
        }
    }

    /// A record's `.assets` directory swapped for a link to a directory outside the workspace
    /// after push read the asset files is refused, not read through: nothing behind the link
    /// reaches the store (the upload opens the file under the workspace root itself).
    @Test func pushDoesNotReadThroughAnAssetDirectorySwappedForALink() async throws {
        let fixture = try StoreFixture(.git)
        let store = FaultInjectingStore(try fixture.store(as: "alice"))
        let ws = try Workspace.create(at: fixture.directory.file("laptop"), config: WorkspaceConfig(user: "alice", remote: "memory"))
        let laptop = SyncEngine(workspace: ws, store: store)
        let dir = "\(ws.root)/private/notes"
        try writeFile("\(dir)/r.json", #"{"photo": {"$asset": "photo"}}"#)
        try writeFile("\(dir)/r.assets/photo", "the first photo")
        _ = try await laptop.push()
        try writeFile("\(dir)/r.assets/photo", "the second photo")
        let outside = fixture.directory.file("outside")
        let marker = "behind-the-link-5e0c"
        try writeFile("\(outside)/photo", marker)
        // After the scan hashed the files, before the upload opens them.
        await store.setHook { call in if call == "fetchRecordVersion" { Self.swapForLink("\(dir)/r.assets", to: outside) } }
        let error = await pushError(laptop)
        #expect(error != nil, "the push went through")
        let dump = try GitCLI.run(["cat-file", "--batch-all-objects", "--batch"], in: fixture.path)
        #expect(dump.contains("the first photo"), "the dump is the store's objects")
        #expect(!dump.contains(marker), "a file behind the link was read into the store")
    }

    /// A record's `.assets` directory swapped for a link to a directory outside the workspace
    /// while pull downloads an asset into it is not written through: the download goes into
    /// a file opened under the workspace root before the store is asked.
    @Test func pullDoesNotWriteThroughAnAssetDirectorySwappedForALink() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        try laptop.write("notes", "r", #"{"photo": {"$asset": "photo"}}"#)
        try writeFile("\(laptop.workspace.root)/private/notes/r.assets/photo", "the photo")
        _ = try await laptop.push()
        let ws = try Workspace.create(at: f.directory.file("phone"), config: WorkspaceConfig(user: "alice", remote: "memory"))
        let store = FaultInjectingStore(try f.store("alice", deviceID: try ws.deviceID()))
        let phone = SyncEngine(workspace: ws, store: store)
        let outside = try Self.outside(f, "outside")
        let dir = "\(ws.root)/private/notes/r.assets"
        await store.setHook { call in if call == "downloadAsset" { Self.swapForLink(dir, to: outside) } }
        _ = await pullError(phone)
        // The swap happened (the download went through the hook), and nothing went through it.
        #expect(
            (try? FileManager.default.destinationOfSymbolicLink(atPath: dir)) == outside,
            "the .assets directory was never swapped: the test tested nothing")
        Self.untouched(outside)
    }

    /// A workspace whose root is a link inside another workspace, both open in one process:
    /// the outer workspace's rule wins, so nothing is written through that link.
    @Test func aNestedWorkspaceBehindALinkIsNoWayOut() throws {
        let f = EngineFixture()
        let outer = try f.device("outer")
        let outside = try Self.outside(f, "outside")
        let inner = "\(outer.workspace.root)/private/inner"
        try FileManager.default.createDirectory(atPath: "\(outer.workspace.root)/private", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: inner, withDestinationPath: outside)
        #expect(throws: RecSyncError.self, "creating it writes through the outer workspace's link") {
            _ = try Workspace.create(at: inner, config: WorkspaceConfig(user: "alice", remote: "memory"))
        }
        withExtendedLifetime(outer) {}
        Self.untouched(outside)
    }

    @Test func pullRefusesAZoneDirectoryThatIsALink() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        let phone = try f.device("phone")
        try laptop.write("notes", "a", #"{"v": 1}"#)
        _ = try await laptop.push()
        let outside = try Self.outside(f, "outside")
        try FileManager.default.createDirectory(atPath: "\(phone.workspace.root)/private", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: "\(phone.workspace.root)/private/notes", withDestinationPath: outside)

        let error = await pullError(phone)
        #expect(error?.message.contains("private/notes: is a symbolic link") == true, "\(String(describing: error))")
        Self.untouched(outside)
        let status = try await phone.status()
        #expect(status.problems.contains { $0.description.hasPrefix("private/notes: is a symbolic link") }, "\(status.problems)")
        #expect(await pushError(phone) != nil, "a push does not read through the link either")
        Self.untouched(outside)
    }

    @Test func pullRefusesASidecarDirectoryThatIsALink() async throws {
        let (f, laptop, phone) = try await Self.laptopAndPhone()
        let outside = try Self.outside(f, "outside")
        let system = "\(phone.workspace.root)/private/notes/.system"
        try FileManager.default.removeItem(atPath: system)
        try FileManager.default.createSymbolicLink(atPath: system, withDestinationPath: outside)
        try laptop.write("notes", "b", #"{"v": 2}"#)
        _ = try await laptop.push()

        let error = await pullError(phone)
        #expect(error?.message.contains("symbolic link") == true, "\(String(describing: error))")
        Self.untouched(outside)
        #expect(!FileManager.default.fileExists(atPath: phone.path("notes", "b")), "a refused batch leaves no record file behind")
    }

    @Test func removingAZoneWhoseDirectoryIsALinkRemovesOnlyTheLink() async throws {
        let (f, _, phone) = try await Self.laptopAndPhone()
        let outside = f.directory.file("moved-notes")
        let dir = "\(phone.workspace.root)/private/notes"
        try FileManager.default.moveItem(atPath: dir, toPath: outside)
        try FileManager.default.createSymbolicLink(atPath: dir, withDestinationPath: outside)
        try await f.store("alice").zoneOp(.delete(zone("notes")))

        let pulled = try await phone.pull()
        #expect(pulled.zonesRemoved.map(\.zoneID) == [zone("notes")])
        #expect(try !FileIO.isSymlink(dir) && !FileManager.default.fileExists(atPath: dir), "the link is gone")
        #expect(readFile("\(outside)/a.json") != nil, "what it pointed to is not recsync's to remove")
        #expect(FileIO.list("\(outside)/.system") == ["a.json"])
    }

    /// A state file or directory under `.recsync/` that is a link to somewhere outside.
    @Test(arguments: ["lock", "index", "index/private/alice/notes.idx.log", "tokens", "tokens/private.token", "tokens/private/alice/notes.token"])
    func stateFilesThatAreLinksAreNotWrittenThrough(_ state: String) async throws {
        let f = EngineFixture("state-link-\(state)")
        let laptop = try f.device("laptop")
        let phone = try f.device("phone")
        try laptop.write("notes", "a", #"{"v": 1}"#)
        _ = try await laptop.push()
        _ = try await phone.pull()
        try laptop.write("notes", "b", #"{"v": 2}"#)
        _ = try await laptop.push()
        let outside = try Self.outside(f, "outside")
        let path = "\(phone.workspace.stateDir)/\(state)"
        let isDirectory = !state.contains(".") && state != "lock"
        try? FileManager.default.removeItem(atPath: path)
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: isDirectory ? outside : "\(outside)/precious.txt")

        let error = await pullError(phone)
        if let error { #expect(error.message.contains("symbolic link"), "\(error)") }
        try phone.write("notes", "c", #"{"v": 3}"#)
        if let error = await pushError(phone) { #expect(error.message.contains("symbolic link"), "\(error)") }
        Self.untouched(outside)
    }

    @Test func aFIFONamedLikeARecordIsAProblemNotAHang() async throws {
        let (f, laptop, phone) = try await Self.laptopAndPhone()
        defer { withExtendedLifetime(f) {} }  // the fixture owns the temp directory
        let fifo = "\(phone.workspace.root)/private/notes/x.json"
        try makeFIFO(fifo)

        try await expectStatusPushAndPullNotToHang(
            on: fifo, named: "private/notes/x.json", in: phone,
            whenTheStoreChanges: {
                // The store now holds a record 'x' too: pulling it meets the FIFO where its file goes.
                try laptop.write("notes", "x", #"{"v": 2}"#)
                _ = try await laptop.push()
            })
    }

    @Test func aFIFOInPlaceOfASidecarIsAProblemNotAHang() async throws {
        let (f, laptop, phone) = try await Self.laptopAndPhone()
        defer { withExtendedLifetime(f) {} }  // the fixture owns the temp directory
        let sidecar = "\(phone.workspace.root)/private/notes/.system/a.json"
        try FileManager.default.removeItem(atPath: sidecar)
        try makeFIFO(sidecar)
        try phone.write("notes", "a", #"{"v": "edited"}"#)

        try await expectStatusPushAndPullNotToHang(
            on: sidecar, named: "private/notes/.system/a.json", in: phone,
            whenTheStoreChanges: {
                try laptop.write("notes", "a", #"{"v": 2}"#)
                _ = try await laptop.push()
            })
    }

    /// Status and push list the FIFO as a problem; then, once the store changes the record it
    /// stands in for, pull meets it too. None of them may wait on it.
    func expectStatusPushAndPullNotToHang(
        on fifo: String, named path: String, in phone: SyncEngine, whenTheStoreChanges change: () async throws -> Void
    ) async throws {
        let (status, hung) = await runUnblockingFIFOs([fifo]) { () async -> Result<StatusReport, RecSyncError> in
            do throws(RecSyncError) { return .success(try await phone.status()) } catch { return .failure(error) }
        }
        #expect(!hung, "status waited on the FIFO")
        let problems = try status.get().problems
        #expect(problems.contains { $0.description.hasPrefix("\(path): ") && $0.description.contains("FIFO") }, "\(problems)")

        let (pushed, pushHung) = await runUnblockingFIFOs([fifo]) { await pushError(phone) }
        #expect(!pushHung, "push waited on the FIFO")
        #expect(pushed?.message.contains(path) == true, "\(String(describing: pushed))")

        try await change()
        let (_, pullHung) = await runUnblockingFIFOs([fifo]) { await pullError(phone) }
        #expect(!pullHung, "pull waited on the FIFO")
    }

    @Test func readingAFileThroughALinkedDirectoryIsRefused() throws {
        let f = EngineFixture()
        let phone = try f.device("phone")
        let outside = try Self.outside(f, "outside")
        try FileManager.default.createSymbolicLink(atPath: "\(phone.workspace.root)/linked", withDestinationPath: outside)
        #expect(throws: RecSyncError.self) { try FileIO.read("\(phone.workspace.root)/linked/precious.txt") }
        #expect(FileIO.list("\(phone.workspace.root)/linked").isEmpty)
        #expect(throws: RecSyncError.self) { try FileIO.writeAtomically("\(phone.workspace.root)/linked/new.txt", [1]) }
        try FileIO.remove("\(phone.workspace.root)/linked")
        Self.untouched(outside)
        // Outside any workspace, paths are opened as before.
        #expect(try FileIO.read("\(outside)/precious.txt") == Array("keep me".utf8))
    }
}

/// Files too large to be what recsync expects are refused unread, naming them, rather than
/// allocated whole (a sparse 30 GB file crashed status, push and every command reading state).
@Suite(.ownThreads) struct OversizeFileTests {
    @Test func aHugeRecordFileOrStateFileIsAProblemNotACrash() async throws {
        let f = EngineFixture()
        let phone = try f.device("phone")
        try phone.write("notes", "a", #"{"v": 1}"#)
        _ = try await phone.push()
        let big = "\(phone.workspace.root)/private/notes/big.json"
        #expect(FileManager.default.createFile(atPath: big, contents: nil))
        #expect(truncate(big, 30 << 30) == 0, "a sparse 30 GB file")
        let status = try await phone.status()
        #expect(
            status.problems.contains { $0.description.hasPrefix("private/notes/big.json") && $0.description.contains("more than recsync reads") },
            "\(status.problems)")
        let pushError = await pushError(phone)
        #expect(pushError?.message.contains("big.json") == true, "\(String(describing: pushError))")
        try FileManager.default.removeItem(atPath: big)

        let pushed = "\(phone.workspace.root)/.recsync/tokens/private/alice/notes.pushed"
        #expect(FileManager.default.createFile(atPath: pushed, contents: nil))
        #expect(truncate(pushed, 30 << 30) == 0)
        let pullError = await pullError(phone)
        #expect(
            pullError?.message.contains("notes.pushed") == true && pullError?.message.contains("more than recsync reads") == true,
            "\(String(describing: pullError))")
    }
}
