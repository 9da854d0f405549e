import RecSyncModel
import RecSyncStore
import RecSyncWorkspace

/// What `SyncEngine.changeSetting` did.
public struct SettingChange: Sendable {
    /// The workspace with its new config.
    public let workspace: Workspace
    /// The value as kept (a remote without its password).
    public let value: JSONValue
    /// The sync state was forgotten: the workspace now follows another store.
    public let syncStateReset: Bool
    /// The remote's address held a password, handed to git's credential helpers rather than kept.
    public let passwordHandedOff: Bool
}

extension SyncEngine {
    /// `recsync config set`: changes one setting of `workspace`, validated as `init` does.
    ///
    /// - `user` must be a valid user name, and cannot change once the workspace holds sync
    ///   state: its zones in `private/` are the user's own, and would become another user's.
    /// - `remote` is opened first (a wrong path changes nothing); when the workspace synced
    ///   with a store before, the new one must be the same store (the same store ID: it moved),
    ///   unless `force`, which forgets the sync state so the next pull fetches everything
    ///   from the new store. A password in the address goes to git's credential helpers,
    ///   never to `.recsync/config`.
    /// - `commitSnapshots` takes true/false (also yes/no, on/off, 1/0).
    ///
    /// Runs under the workspace lock, so no sync is under way meanwhile.
    public static func changeSetting(
        _ setting: WorkspaceSetting, to text: String, in workspace: Workspace, relativeTo directory: String, force: Bool = false
    ) async throws(RecSyncError) -> SettingChange {
        try await workspace.withLock(purpose: "config set \(setting.rawValue)") { () async throws(RecSyncError) -> SettingChange in
            // Read again under the lock: another `config set` may just have written it.
            let ws = try Workspace.open(at: workspace.root)
            var config = ws.config
            var reset = false, password = false
            switch setting {
            case .user:
                try NameRules.validateOwnerName(text)
                if text != ws.user, try ws.hasSyncState {
                    throw .invalidArguments(
                        """
                        this workspace holds records synced as \(ws.user), and its private/ zones are \(ws.user)'s; to\
                         work as \(text), clone the store into a new directory as \(text)
                        """
                    ).suggesting(.cloneAs(user: text))
                }
                config.user = text
            case .commitSnapshots:
                config.commitSnapshots = try WorkspaceSetting.parseBool(text)
            case .noAssetZones:
                let zones = try ws.parseZoneList(text, from: directory)
                config.noAssetZones = zones.isEmpty ? nil : zones
            case .trackedZones:
                throw .invalidArguments("trackedZones is changed by tracking and untracking zones, which fetch and remove their files")
                    .suggesting(.trackZones)
            case .remote:
                let remote = try StoreLocation.normalized(text, relativeTo: directory)
                let newID = try await StoreLocation.withStore(at: remote, relativeTo: directory, actor: StoreActor(userRecordName: ws.user)) {
                    store throws(RecSyncError) in
                    store.storeID
                }
                if let oldID = try ws.syncedStoreID(), oldID != newID {
                    guard force else {
                        throw .storeMismatch(location: StoreLocation.shown(remote), expected: oldID, found: newID)
                    }
                    try ws.resetSyncState()
                    config.storeID = nil
                    reset = true
                }
                config.remote = remote
                password = StoreLocation.withoutPassword(remote) != remote
                if password { _ = StoreLocation.rememberCredentials(of: remote) }
            }
            try ws.saveConfig(config)
            let updated = ws.withConfig(config)
            return SettingChange(workspace: updated, value: config.value(of: setting), syncStateReset: reset, passwordHandedOff: password)
        }
    }
}
