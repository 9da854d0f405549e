import RecSyncModel
import RecSyncStore
import RecSyncWorkspace

/// What `SyncEngine.initialize` did.
public enum WorkspaceInit: Sendable {
    /// An existing workspace now commits a snapshot after every pull.
    case snapshotsEnabled(Workspace)
    /// A workspace made without a store got one; `remote` is as kept (no password).
    case remoteSet(Workspace, remote: String)
    /// A new workspace; `remote` is as kept (no password), empty when none was given.
    case created(Workspace, remote: String)

    public var workspace: Workspace {
        switch self {
        case .snapshotsEnabled(let ws), .remoteSet(let ws, _), .created(let ws, _): ws
        }
    }
}

extension SyncEngine {
    /// `recsync init`: makes `directory` a workspace of `user` (with `remote`, a normalized
    /// store location, or none); or, where it already is one, turns on snapshots
    /// (`commitSnapshots` and no `remote`) or sets the store of a workspace made without one.
    /// A local store is opened before anything is written, so a wrong path changes nothing;
    /// a password in a network address goes to git's credential helpers, never to disk.
    public static func initialize(
        at directory: String, remote: String?, user: () throws(RecSyncError) -> String, commitSnapshots: Bool
    ) throws(RecSyncError) -> WorkspaceInit {
        let existing: Workspace?
        do throws(RecSyncError) { existing = try Workspace.find(from: directory) } catch {
            guard case .notAWorkspace = error.reason else { throw error }
            existing = nil
        }
        if let existing, existing.root == directory, commitSnapshots, remote == nil {
            var config = existing.config
            config.commitSnapshots = true
            try existing.saveConfig(config)
            return .snapshotsEnabled(existing.withConfig(config))
        }
        if let existing {
            guard existing.root == directory, existing.config.remote.isEmpty, let remote else {
                throw .alreadyExists(
                    existing.root == directory
                        ? "'\(directory)' is already a recsync workspace"
                        : "'\(directory)' is inside the workspace at '\(existing.root)'; workspaces do not nest")
            }
            _ = try StoreLocation.open(remote, relativeTo: directory, actor: StoreActor(userRecordName: existing.user), mirror: existing.mirrorPath)
            var config = existing.config
            config.remote = remote
            try existing.saveConfig(config)
            return .remoteSet(existing.withConfig(config), remote: StoreLocation.shown(remote))
        }
        let who = try user()
        if let remote, !StoreLocation.isNetwork(remote) {
            _ = try StoreLocation.open(remote, relativeTo: directory, actor: StoreActor(userRecordName: who))  // fail before creating anything
        }
        var config = WorkspaceConfig(user: who, remote: remote ?? "")
        if commitSnapshots { config.commitSnapshots = true }
        let ws = try Workspace.create(at: directory, config: config)
        // The store was not opened, so no successful fetch handed the password over: do it now.
        if let remote { _ = StoreLocation.rememberCredentials(of: remote) }
        return .created(ws, remote: StoreLocation.shown(remote ?? ""))
    }

    /// `recsync zone create/delete/purge`: one zone operation of the workspace's user on the
    /// store, then a pull so the workspace follows it (`applied` is called in between).
    /// Another owner's zone is refused.
    public func changeZone(
        _ operation: ZoneOperation, verb: String, applied: () -> Void = {}, events: @escaping @Sendable (SyncEvent) -> Void = { _ in }
    ) async throws(RecSyncError) -> PullReport {
        let zone = operation.zoneID
        guard zone.ownerName == workspace.user else {
            throw .permissionFailure("zone '\(zone)' belongs to \(zone.ownerName); only its owner can \(verb) it")
        }
        for r in try await store.modifyRecordZones([operation]) {
            if case .failure(let e) = r.result { throw e }
        }
        applied()
        var engine = self
        // A zone made from a partial workspace is one it wants: tracked, so the pull brings its directory.
        if case .recreate = operation, workspace.isPartial, !workspace.tracks(zone) {
            let entry = workspace.rootRelative(workspace.zoneDirectory(zone))
            engine.workspace = try Self.trackZones([entry], all: false, in: workspace, from: workspace.root).workspace
        }
        return try await engine.pull(events: events)
    }
}
