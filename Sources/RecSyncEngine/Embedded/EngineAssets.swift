import RecSyncModel
import RecSyncStore

extension RecordSyncEngine {
    /// Stores the file at `path` as an asset for `field` of the record `recordID`, streaming:
    /// CloudKit's `CKAsset(fileURL:)`. Put the reference in that field of the record the
    /// delegate returns from `recordsToSave`; the store keeps the content with the save that
    /// first references it. A link in the path's last component is not followed; a file over
    /// the store's limit, or for a field its zone seals, is refused before anything is stored.
    /// A store that cannot be reached is tried again as ``Options/retries`` says.
    public nonisolated func uploadAsset(fileAt path: String, for recordID: RecordID, field: String) async throws(RecSyncError) -> AssetReference {
        try await options.retries.run { () async throws(RecSyncError) in
            try await store.uploadAsset(fileAt: path, for: recordID, field: field)
        }
    }

    /// Writes the asset of a fetched record (a field's `.asset`) into a new file at `path`,
    /// streaming: the content is checked against the reference (size and SHA-256) and made
    /// durable before the file appears under `path`, so a process killed part-way leaves no
    /// partial file there, and on any failure no file is left behind. `path` must not exist.
    /// A store that cannot be reached is tried again as ``Options/retries`` says.
    public nonisolated func downloadAsset(_ asset: AssetReference, of recordID: RecordID, to path: String) async throws(RecSyncError) {
        try await options.retries.run { () async throws(RecSyncError) in
            try await store.downloadAsset(asset, zone: recordID.zoneID, to: path)
        }
    }
}
