import Foundation
import RecSyncEngine
import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import RecSyncWorkspace
import Testing

// Fixtures for tests of the engine's clients (the workspace, subscriptions): one in-memory
// store and workspaces ("devices") synced with it. Links the Testing library (`converged`
// records what differs), so only test targets use it.

/// One in-memory store and workspaces ("devices") synced with it.
public final class EngineFixture: Sendable {
    public let storage = MemoryStorage()
    public let clock = FixedClock()
    public let directory: TempDirectory

    public init(_ name: String = #function) {
        directory = TempDirectory(name)
    }

    public func store(_ user: String, deviceID: String? = nil) throws -> MemoryStore {
        MemoryStore(storage: storage, actor: try StoreActor(userRecordName: user, deviceID: deviceID, clock: clock.read))
    }

    /// A new workspace for `user` named `device`.
    public func device(_ device: String, user: String = "alice") throws -> SyncEngine {
        let ws = try Workspace.create(at: directory.file(device), config: WorkspaceConfig(user: user, remote: "memory"))
        return SyncEngine(workspace: ws, store: try store(user, deviceID: try ws.deviceID()))
    }

    /// The same workspace opened again (as a new process would).
    public func reopen(_ engine: SyncEngine) throws -> SyncEngine {
        SyncEngine(workspace: try Workspace.open(at: engine.workspace.root), store: engine.store)
    }
}

extension SyncEngine {
    public func path(_ zone: String, _ record: String) -> String {
        "\(workspace.root)/private/\(zone)/\(record).json"
    }

    public func write(_ zone: String, _ record: String, _ json: String) throws {
        try writeFile(path(zone, record), json)
    }

    public func fields(_ zone: String, _ record: String) throws -> [String: FieldValue]? {
        guard let data = FileManager.default.contents(atPath: path(zone, record)) else { return nil }
        return try WorkspaceEncoding.decodeFields(Array(data))
    }

    public var recordFiles: [String: [UInt8]] { TreeSnapshot.records(workspace.root) }
}

public func zone(_ name: String, owner: String = "alice") -> ZoneID { Build.zone(name, owner: owner) }

/// The error a push fails with, or nil.
public func pushError(_ engine: SyncEngine) async -> RecSyncError? {
    do {
        _ = try await engine.push()
        return nil
    } catch {
        return error
    }
}

/// The error a pull fails with, or nil.
public func pullError(_ engine: SyncEngine) async -> RecSyncError? {
    do {
        _ = try await engine.pull()
        return nil
    } catch {
        return error
    }
}

/// Two workspaces hold the same records: equal sidecars byte for byte, equal field values
/// (a file the user wrote by hand need not be canonical).
public func converged(_ a: SyncEngine, _ b: SyncEngine) throws -> Bool {
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
