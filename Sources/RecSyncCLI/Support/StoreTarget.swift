import RecSyncModel
import RecSyncStore

/// The store a `recsync store` command acts on: STORE as given, as `--user` (or the login
/// name); without it, the current workspace's store, as the workspace's user and device,
/// through the workspace's mirror.
struct StoreTarget {
    let location: String
    /// What a relative `location` is relative to.
    let base: String
    let actor: StoreActor
    let mirror: String?

    /// The store as messages show it (no password).
    var shown: String { StoreLocation.shown(location) }

    static func resolve(_ store: String?, user: String?, context: CommandContext) throws(RecSyncError) -> StoreTarget {
        if let store {
            return StoreTarget(location: store, base: context.directory, actor: try StoreActor(userRecordName: context.user(user)), mirror: nil)
        }
        let ws = try context.workspace()
        guard !ws.config.remote.isEmpty else { throw .noRemote() }
        return StoreTarget(
            location: ws.config.remote, base: ws.root, actor: try StoreActor(userRecordName: ws.user, deviceID: ws.deviceID()), mirror: ws.mirrorPath)
    }
}
