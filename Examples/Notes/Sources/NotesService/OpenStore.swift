import RecSyncModel
import RecSyncStore

extension NotesService {
    /// Opens the store the notes sync with: a local store path, or a network remote (ssh,
    /// https, git://) kept as a mirror beside the database.
    public static func openStore(_ location: String, user: String, databasePath: String, device: String) throws(RecSyncError) -> any RemoteStore {
        let actor = try StoreActor(userRecordName: user, deviceID: device)
        if StoreLocation.isNetwork(location) {
            return try GitStore.open(remote: location, mirror: databasePath + ".mirror", actor: actor)
        }
        return try GitStore(path: location, actor: actor)
    }

    /// Creates an empty store at a local path.
    public static func createStore(at path: String, user: String) throws(RecSyncError) {
        try GitStore.create(at: path, actor: StoreActor(userRecordName: user))
    }
}
