import Foundation
import RecSyncEngine
import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import RecSyncWorkspace
import Testing

/// One in-memory store and workspaces ("devices") synced with it.
final class EngineFixture: Sendable {
    let storage = MemoryStorage()
    let clock = FixedClock()
    let directory: TempDirectory

    init(_ name: String = #function) {
        directory = TempDirectory(name)
    }

    func store(_ user: String, deviceID: String? = nil) throws -> MemoryStore {
        MemoryStore(storage: storage, actor: try StoreActor(userRecordName: user, deviceID: deviceID, clock: clock.read))
    }

    /// A new workspace for `user` named `device`.
    func device(_ device: String, user: String = "alice") throws -> SyncEngine {
        let ws = try Workspace.create(at: directory.file(device), config: WorkspaceConfig(user: user, remote: "memory"))
        return SyncEngine(workspace: ws, store: try store(user, deviceID: try ws.deviceID()))
    }

    /// The same workspace opened again (as a new process would).
    func reopen(_ engine: SyncEngine) throws -> SyncEngine {
        SyncEngine(workspace: try Workspace.open(at: engine.workspace.root), store: engine.store)
    }
}

extension SyncEngine {
    func path(_ zone: String, _ record: String) -> String {
        "\(workspace.root)/private/\(zone)/\(record).json"
    }

    func write(_ zone: String, _ record: String, _ json: String) throws {
        try writeFile(path(zone, record), json)
    }

    func fields(_ zone: String, _ record: String) throws -> [String: FieldValue]? {
        guard let data = FileManager.default.contents(atPath: path(zone, record)) else { return nil }
        return try WorkspaceEncoding.decodeFields(Array(data))
    }

    var recordFiles: [String: [UInt8]] { TreeSnapshot.records(workspace.root) }
}

func zone(_ name: String, owner: String = "alice") -> ZoneID { Build.zone(name, owner: owner) }

/// The error a push fails with, or nil.
func pushError(_ engine: SyncEngine) async -> RecSyncError? {
    do {
        _ = try await engine.push()
        return nil
    } catch {
        return error
    }
}

/// The error a pull fails with, or nil.
func pullError(_ engine: SyncEngine) async -> RecSyncError? {
    do {
        _ = try await engine.pull()
        return nil
    } catch {
        return error
    }
}

/// Two workspaces hold the same records: equal sidecars byte for byte, equal field values
/// (a file the user wrote by hand need not be canonical).
func converged(_ a: SyncEngine, _ b: SyncEngine) throws -> Bool {
    let (x, y) = (a.recordFiles, b.recordFiles)
    guard x.keys.sorted() == y.keys.sorted() else {
        Issue.record("different files: \(x.keys.sorted()) vs \(y.keys.sorted())")
        return false
    }
    for (path, bytes) in x {
        if path.contains("/.system/") {
            if bytes != y[path] { Issue.record("sidecar \(path) differs"); return false }
        } else if try WorkspaceEncoding.decodeFields(bytes) != WorkspaceEncoding.decodeFields(y[path] ?? []) {
            Issue.record("fields of \(path) differ")
            return false
        }
    }
    return true
}

extension SyncEngine {
    /// Runs `operation` (a push or pull) killed at `point`, as a crash there would end it, and
    /// returns its error (nil when it never reached the point); the seam is cleared after.
    mutating func killed(at point: Checkpoint, _ operation: (SyncEngine) async -> RecSyncError?) async -> RecSyncError? {
        checkpoint = { (reached: Checkpoint) throws(RecSyncError) in
            if reached == point { throw .internalError("simulated kill at \(reached)") }
        }
        defer { checkpoint = nil }
        return await operation(self)
    }
}

extension EngineFixture {
    /// A laptop and a phone with a conflict on notes/r, found by the phone's pull: from
    /// title "t", body "b", the laptop pushed title "laptop" and the phone edited body "phone".
    func twoDevicesWithAConflict() async throws -> (laptop: SyncEngine, phone: SyncEngine) {
        let laptop = try device("laptop")
        let phone = try device("phone")
        try laptop.write("notes", "r", #"{"title": "t", "body": "b"}"#)
        _ = try await laptop.push()
        _ = try await phone.pull()
        try laptop.write("notes", "r", #"{"title": "laptop", "body": "b"}"#)
        _ = try await laptop.push()
        try phone.write("notes", "r", #"{"title": "t", "body": "phone"}"#)
        _ = try await phone.pull()
        return (laptop, phone)
    }
}
