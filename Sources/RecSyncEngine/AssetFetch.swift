import RecSyncModel
import RecSyncStore
import RecSyncWorkspace

/// One asset `SyncEngine.fetchAssets` looked at.
public struct FetchedAsset: Sendable, Hashable {
    /// The record the asset is a field of.
    public let recordID: RecordID
    /// The asset field.
    public let field: String
    /// Where the file is (absolute).
    public let path: String
    /// The asset's reference: what the file holds.
    public let asset: AssetReference
    /// Whether it was downloaded now (false: the file was there already).
    public let downloaded: Bool
}

extension SyncEngine {
    /// Whether a pull downloads the assets of `zone`: not with `fetchesAssets` off, nor for
    /// a zone the workspace pulls without assets (`WorkspaceConfig.noAssetZones`).
    func fetchesAssets(of zone: ZoneID) -> Bool {
        fetchesAssets && !workspace.pullsWithoutAssets(zone)
    }

    /// `recsync get --asset`: downloads an asset field of records that a pull left on the
    /// store (`pull --no-assets`) into its place in the workspace, as a pull would have: a
    /// hidden temporary file, checked against the reference (size, SHA-256) and made durable,
    /// then renamed into place. A file already there is left alone (it is the field).
    ///
    /// - Parameters:
    ///   - ids: The records, each with a record file here naming `field` as an asset.
    ///   - field: The asset field.
    public func fetchAssets(_ ids: [RecordID], field: String) async throws(RecSyncError) -> [FetchedAsset] {
        try await workspace.withLock(purpose: "get --asset") { () async throws(RecSyncError) -> [FetchedAsset] in
            _ = try workspace.removeStaleTemporaryFiles()
            let ws = try checkStore()
            var wanted: [(RecordID, AssetReference)] = []
            for id in ids {
                guard let fields = try ws.recordFields(id) else {
                    throw .notFound("no record file at \(ws.relative(ws.recordPath(id))); pull first")
                }
                guard case .asset(let asset)? = fields[field] else {
                    let has = fields.filter { if case .asset = $0.value { true } else { false } }.keys.sorted()
                    let hint = has.isEmpty ? "it has no asset fields" : "its asset fields are \(has.joined(separator: ", "))"
                    throw .notFound("\(ws.relative(ws.recordPath(id))) has no asset field '\(field)'; \(hint)")
                }
                wanted.append((id, asset))
            }
            return try await inOneOperation { () async throws(RecSyncError) -> [FetchedAsset] in
                var fetched: [FetchedAsset] = []
                for (id, asset) in wanted {
                    fetched.append(try await fetchAsset(id, field: field, asset: asset, workspace: ws))
                }
                return fetched
            }
        }
    }

    /// Downloads the assets of `zone` that an earlier pull did not fetch (holding the lock):
    /// what a pull that fetches assets does last, so the files arrive even for records that
    /// did not change. A note whose record file no longer names that asset is dropped.
    func fetchUnfetchedAssets(of zone: ZoneID, workspace ws: Workspace) async throws(RecSyncError) {
        for (id, fields) in try ws.unfetchedAssets(in: zone).sorted(by: { $0.key.recordName < $1.key.recordName }) {
            let current: [String: FieldValue]?
            do { current = try ws.recordFields(id) } catch {
                // The user is mid-edit: the note stays for the next pull.
                if case .fileSystem = error.reason { throw error }
                continue
            }
            for (field, asset) in fields.sorted(by: { $0.key < $1.key }) {
                if current?[field] == .asset(asset), try ws.assetFileStamp(id, field: field) == nil {
                    _ = try await fetchAsset(id, field: field, asset: asset, workspace: ws)
                } else {
                    try ws.setUnfetchedAssets([id: try ws.unfetchedAssets(in: zone)[id, default: [:]].filter { $0.key != field }], in: zone)
                }
            }
        }
    }

    /// Downloads an asset of record `id` into a new temporary file in its asset directory
    /// (`Workspace.newAssetTemporary`: never through a link, nothing left behind when it
    /// fails); the file's path, to place with a batch.
    func downloadAsset(_ asset: AssetReference, of id: RecordID, workspace ws: Workspace) async throws(RecSyncError) -> String {
        try await ws.newAssetTemporary(id) { fd, temp throws(RecSyncError) in
            try await store.downloadAsset(asset, zone: id.zoneID, fd: fd, path: temp)
        }
    }

    /// Downloads one asset into its place unless a file is there, then drops its note.
    func fetchAsset(_ id: RecordID, field: String, asset: AssetReference, workspace ws: Workspace) async throws(RecSyncError) -> FetchedAsset {
        let path = ws.assetPath(id, field: field)
        var downloaded = false
        if try ws.assetFileStamp(id, field: field) == nil {
            let temp = try await downloadAsset(asset, of: id, workspace: ws)
            try checkpoint?(.assetDownloaded(id))
            var batch = try ws.recordBatch(zone: id.zoneID)
            batch.place(temp, at: path, group: Workspace.fileName(for: id.recordName), expect: .absent)
            try batch.commit()
            if let stamp = batch.writtenStamps[path] {
                let cache = ws.assetDigestCache(id.zoneID)
                ws.rememberAsset(id, field: field, stamp: stamp, asset: asset, in: cache)
                cache.save()
                downloaded = true
            }  // else a file was put there meanwhile: it is the field now, and stays
        }
        var notes = try ws.unfetchedAssets(in: id.zoneID)[id] ?? [:]
        notes[field] = nil
        try ws.setUnfetchedAssets([id: notes], in: id.zoneID)
        return FetchedAsset(recordID: id, field: field, path: path, asset: asset, downloaded: downloaded)
    }
}
