import Foundation
import RecSyncEncryption
import RecSyncModel
import RecSyncStore

extension NotesService {
    /// Opens the store the notes sync with: a local store path, or a network remote (ssh,
    /// https, git://) kept as a mirror in a cache directory beside the database.
    public static func openStore(_ location: String, user: String, databasePath: String, device: String) throws(RecSyncError) -> any RemoteStore {
        try GitStore.open(location: location, user: user, device: device, cacheDirectory: databasePath + ".cache")
    }

    /// Opens the store as `openStore` does, wrapped in an `EncryptingStore` with the user's
    /// key from `keyDirectory` (made and published on the store if the user has none yet): a
    /// zone that seals fields keeps them as ciphertext on the store.
    public static func openEncryptedStore(_ location: String, user: String, databasePath: String, device: String, keyDirectory: String) async throws
        -> any RemoteStore
    {
        let keys = UserKeyStore(directory: keyDirectory)
        // What this database has seen of each zone's keys: a store rolled back to older
        // keys is refused.
        let pins = databasePath + ".key-pins"
        try FileManager.default.createDirectory(atPath: pins, withIntermediateDirectories: true)
        let store = EncryptingStore(
            try openStore(location, user: user, databasePath: databasePath, device: device), keyStore: keys, pinDirectory: pins)
        _ = try await EncryptionKeys.initialize(user: user, keyStore: keys, store: store)
        return store
    }

    /// Creates an empty store at a local path.
    public static func createStore(at path: String, user: String) throws(RecSyncError) {
        try GitStore.create(at: path, actor: StoreActor(userRecordName: user))
    }
}
