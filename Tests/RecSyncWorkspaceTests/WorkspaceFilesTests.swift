import Foundation
import RecSyncModel
import RecSyncSystem
import RecSyncTestSupport
import Testing

@testable import RecSyncWorkspace

/// A workspace's own files: its config and settings, the state clients keep in it, its
/// pending conflicts, and the file names of records.
@Suite struct WorkspaceFilesTests {
    let dir = TempDirectory("workspace-files")
    let ws: Workspace
    let notes = Build.zone("notes")

    init() throws {
        ws = try Workspace.create(at: dir.file("ws"), config: WorkspaceConfig(user: "alice", remote: "https://alice:pw@host/s.git"))
    }

    @Test func aWorkspaceIsMadeOnceAndReopenedWithItsConfigButNoPassword() throws {
        let reopened = try Workspace.open(at: ws.root)
        #expect(reopened.user == "alice" && reopened.config.version == WorkspaceConfig.currentVersion)
        #expect(reopened.config.remote == "https://alice@host/s.git")
        #expect(!(readFile("\(ws.stateDir)/config") ?? "").contains("pw"))
        #expect(readFile("\(ws.stateDir)/.gitignore")?.contains("index/\n") == true)
        // The note of a pull's asset temp directories is this machine's, as the index is.
        #expect(readFile("\(ws.stateDir)/.gitignore")?.contains("\nasset-temps\n") == true)
        // So are a pull's journals, named with this machine's boot.
        #expect(readFile("\(ws.stateDir)/.gitignore")?.contains("\njournal/\n") == true)
        #expect(throws: RecSyncError.self) { _ = try Workspace.create(at: ws.root, config: WorkspaceConfig(user: "alice", remote: "memory")) }
        #expect(throws: RecSyncError.self) { _ = try Workspace.create(at: dir.file("bad"), config: WorkspaceConfig(user: "", remote: "memory")) }
        #expect(throws: RecSyncError.self) { _ = try Workspace.open(at: dir.file("nowhere")) }
    }

    @Test func aConfigOfAnotherVersionOrNoJSONIsRefused() throws {
        try writeFile("\(ws.stateDir)/config", #"{"version": 2, "user": "alice", "remote": "memory"}"#)
        let newer = #expect(throws: RecSyncError.self) { _ = try Workspace.open(at: ws.root) }
        #expect(newer?.message.contains("has version 2") == true, "\(String(describing: newer))")
        try writeFile("\(ws.stateDir)/config", "{")
        let broken = #expect(throws: RecSyncError.self) { _ = try Workspace.open(at: ws.root) }
        #expect(broken?.message.contains("is not a valid recsync config") == true, "\(String(describing: broken))")
    }

    @Test func aWorkspaceIsFoundFromASubdirectory() throws {
        try FileIO.makeDirectories("\(ws.root)/private/notes/deep")
        let found = try Workspace.find(from: "\(ws.root)/private/notes/deep")
        #expect(found.root == ws.root && found.directory == "\(ws.root)/private/notes/deep")
        #expect(throws: RecSyncError.self) { _ = try Workspace.find(from: dir.path) }
    }

    @Test func clientStateRoundTripsUnderTheStateDirectory() throws {
        #expect(try ws.readState("pins") == nil)
        try ws.writeState("pins", [1, 2, 3])
        #expect(try ws.readState("pins") == [1, 2, 3])
        try ws.writeState("pins", [])
        #expect(try ws.readState("pins") == [])
        #expect(FileManager.default.fileExists(atPath: "\(ws.stateDir)/pins"))
    }

    @Test(arguments: ["", ".", "..", "a/b", "../config", "nul\u{0}byte"])
    func aStateNameThatIsNotOneFileNameIsRefused(name: String) throws {
        #expect(throws: RecSyncError.self) { try ws.writeState(name, [1]) }
        #expect(throws: RecSyncError.self) { _ = try ws.readState(name) }
    }

    @Test func settingsAreNamedByKeyAndBooleansReadAsWritten() throws {
        #expect(try WorkspaceSetting(key: "commitSnapshots") == .commitSnapshots)
        let unknown = #expect(throws: RecSyncError.self) { _ = try WorkspaceSetting(key: "colour") }
        #expect(unknown?.message.contains("remote, user, commitSnapshots, noAssetZones") == true, "\(String(describing: unknown))")
        for text in ["true", "YES", "on", "1"] { #expect(try WorkspaceSetting.parseBool(text), "\(text)") }
        for text in ["false", "No", "OFF", "0"] { #expect(try !WorkspaceSetting.parseBool(text), "\(text)") }
        #expect(throws: RecSyncError.self) { _ = try WorkspaceSetting.parseBool("maybe") }
        #expect(throws: RecSyncError.self) { _ = try WorkspaceSetting.parseBool("") }
        // What `recsync config` shows: never the password the object was given.
        #expect(ws.config.value(of: .remote) == .string("https://alice@host/s.git"))
        #expect(ws.config.value(of: .commitSnapshots) == .bool(false))
        #expect(ws.config.value(of: .noAssetZones) == .array([]))
    }

    @Test func aZoneListIsKeptAsSortedDirectoriesAndDecidesWhichZonesSkipAssets() throws {
        let zones = try ws.parseZoneList(" photos, notes ,,alice/notes, bob/shared ", from: ws.root)
        #expect(zones == ["private/notes", "private/photos", "shared/bob/shared"])
        #expect(try ws.parseZoneList("", from: ws.root).isEmpty)
        var config = ws.config
        config.noAssetZones = zones
        let configured = ws.withConfig(config)
        #expect(configured.pullsWithoutAssets(Build.zone("photos")))
        #expect(configured.pullsWithoutAssets(Build.zone("shared", owner: "bob")))
        #expect(!configured.pullsWithoutAssets(Build.zone("shared")), "alice's own 'shared' zone is another zone")
        #expect(!ws.pullsWithoutAssets(Build.zone("photos")))
    }

    @Test func conflictsAreSavedListedAndRemovedPerZone() throws {
        let id = Build.id("r/1", in: notes)
        let other = Build.id("x", in: Build.zone("inbox", owner: "bob"))
        let system = SystemFields(recordID: id, recordType: "Note", changeTag: "t2", created: nil, modified: nil)
        let conflict = Conflict(
            recordID: id, fileName: Workspace.fileName(for: id.recordName), client: ["a": .int64(1), "b": .string("mine")],
            server: ["a": .int64(1), "b": .string("theirs"), "c": .double(0.5)], serverSystem: system, ancestor: nil)
        let deletedHere = Conflict(
            recordID: other, fileName: "x.json", client: nil, server: ["v": .int64(1)], serverSystem: nil, ancestor: ["v": .int64(0)])
        #expect(conflict.conflictingKeys == ["b", "c"])
        #expect(deletedHere.conflictingKeys == ["v"])
        try ws.saveConflict(conflict)
        try ws.saveConflict(deletedHere)
        #expect(try ws.conflicts(in: notes) == [conflict])
        #expect(try ws.conflicts(in: other.zoneID) == [deletedHere])
        #expect(Set(try ws.allConflicts()) == [conflict, deletedHere])
        try ws.removeConflict(notes, fileName: conflict.fileName)
        #expect(try ws.conflicts(in: notes).isEmpty)
        #expect(try ws.allConflicts() == [deletedHere])
    }

    @Test func aDamagedConflictFileIsAnErrorNamingIt() throws {
        let path = ws.conflictPath(notes, fileName: "r.json")
        try writeFile(path, #"{"recordName": "r"}"#)
        let error = #expect(throws: RecSyncError.self) { _ = try ws.conflicts(in: notes) }
        #expect(error?.message.contains("damaged conflict file") == true, "\(String(describing: error))")
    }

    @Test(arguments: ["plain", "with/slash", "100%", "has space", ".dotted", "tab\there", "ü-nicode", String(repeating: "n", count: 245)])
    func aRecordNameRoundTripsThroughItsFileName(name: String) {
        let file = Workspace.fileName(for: name)
        #expect(file.hasSuffix(".json") && !file.contains("/") && !file.hasPrefix("."))
        #expect(file.utf8.count <= 250)
        #expect(Workspace.recordName(forFile: file) == name)
    }

    @Test func aNameTooLongToEscapeIsHashedAndReadBackOnlyFromItsSidecar() {
        let longest = String(repeating: "n", count: 245)
        #expect(Workspace.fileName(for: longest) == longest + ".json", "245 + 5 bytes is the longest plain name")
        let one = String(repeating: "n", count: 246)
        let hashed = Workspace.fileName(for: one)
        #expect(hashed.hasPrefix("_") && hashed.hasSuffix(".json") && hashed.utf8.count < 100)
        #expect(Workspace.recordName(forFile: hashed) == nil)
        // Escaping counts: 82 slashes take 246 bytes.
        let slashes = String(repeating: "/", count: 82)
        #expect(Workspace.fileName(for: slashes).hasPrefix("_"))
        #expect(Workspace.fileName(for: String(repeating: "/", count: 81)) == String(repeating: "%2F", count: 81) + ".json")
        #expect(Workspace.fileName(for: one) != Workspace.fileName(for: one + "x"))
    }

    @Test(arguments: ["notes.txt", "a.json~", ".system.json", "_abc.json", "bad%zz.json", "bad%2.json", "a%2f.json"])
    func aFileNameThatNoRecordIsWrittenAsHasNoRecordName(file: String) {
        #expect(Workspace.recordName(forFile: file) == nil)
    }
}
