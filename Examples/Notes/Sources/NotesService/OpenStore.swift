import RecSyncModel
import RecSyncStore

extension NotesService {
    /// Opens the store the notes sync with: a local store path, or a network remote (ssh,
    /// https, git://) kept as a mirror in a cache directory beside the database.
    public static func openStore(_ location: String, user: String, databasePath: String, device: String) throws(RecSyncError) -> any RemoteStore {
        try GitStore.open(location: location, user: user, device: device, cacheDirectory: databasePath + ".cache")
    }

    /// Creates an empty store at a local path.
    public static func createStore(at path: String, user: String) throws(RecSyncError) {
        try GitStore.create(at: path, actor: StoreActor(userRecordName: user))
    }
}
