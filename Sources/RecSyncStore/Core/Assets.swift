import Glibc
import RecSyncModel

extension StoreCore {
    /// Stores the file open at `fd` as an asset, streaming (CloudKit uploads an asset before
    /// the record that references it): the reference to put in a record's field. `path`
    /// names the file in errors. A file over the store's limit (`maxAssetBytes` in
    /// `recsync.json`) is refused before anything is written, and so is one for a field that
    /// `recordID`'s zone seals (its content would sit in clear).
    func uploadAsset(fd: Int32, path: String, for recordID: RecordID, field: String) throws(RecSyncError) -> AssetReference {
        let zone = try visibleZone(recordID.zoneID, at: try backend.zoneHead(recordID.zoneID))
        if let encryption = zone.encryption, encryption.seals(field) {
            throw ZoneEncryption.fileInSealedField(recordID, field: field)
        }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
            throw .invalidArguments("\(path) is not a plain file; an asset is a regular file")
        }
        let size = Int64(st.st_size)
        try checkAssetSize(size, what: path)
        // From the start, whatever the descriptor has read already.
        guard lseek(fd, 0, SEEK_SET) == 0 else {
            let e = errno
            throw .fileSystem(
                path: path, message: "cannot read the file from its start: \(String(cString: strerror(e)))",
                cause: SystemCallFailure(call: "lseek", errno: e))
        }
        let asset = try backend.storeAsset(fd: fd, size: size, path: path)
        uploadedAssets[asset.oid, default: []].insert(AssetUse(recordID: recordID, field: field))
        assetSHA256s[asset.oid] = asset.sha256
        return asset
    }

    /// Refuses an asset larger than the store takes.
    func checkAssetSize(_ size: Int64, what: @autoclosure () -> String) throws(RecSyncError) {
        let limit = backend.manifest.assetLimit
        if size > limit {
            throw .limitExceeded(
                """
                \(what()) is \(size) bytes; this store takes assets of at most \(limit) bytes (maxAssetBytes in\
                 the store's recsync.json). Make the file smaller, or raise the limit in the store
                """
            )
        }
    }

    /// Why a record to be saved cannot be, on account of its assets: one over the limit, one
    /// the store does not hold at the stated size or SHA-256, or one that is not the record's
    /// to reference. Nil when all is well.
    ///
    /// A record references a blob uploaded through this handle for that record and field,
    /// or one it holds already at `head` (under its own asset directory): never one it
    /// merely names, which could be any object in the repository (another zone's asset,
    /// say), nor one uploaded for another record or field (the upload's checks, such as
    /// that the zone leaves the field in clear, were made for that one). The content is hashed once per
    /// blob, streaming; an upload through this handle hashed it already. An asset the
    /// record's version at `currentTag` holds in the same field, with the same reference, was
    /// checked when that version was saved: it is not looked at again (an edit of another
    /// field of a record with a 50 MB photo read the photo at every save from a new handle).
    func checkAssets(_ record: Record, at head: String, currentTag: String?) throws(RecSyncError) -> RecSyncError? {
        var own: Set<String>?
        let assets = record.assetFields
        guard !assets.isEmpty else { return nil }
        // The current version's fields; one that cannot be read keeps nothing from the checks.
        var current: [String: FieldValue] = [:]
        if let currentTag {
            do { current = try readRecord(record.recordID, tag: currentTag, path: zonePaths.shownRecord(record.recordID)).fields } catch {}
        }
        for (key, asset) in assets.sorted(by: { $0.key < $1.key }) {
            if current[key] == .asset(asset) { continue }
            let what = "asset '\(key)' of record '\(record.recordID.recordName)' in zone '\(record.recordID.zoneID)'"
            do { try checkAssetSize(asset.size, what: what) } catch { return error }
            guard let stored = try backend.assetSize(asset.oid) else {
                return .assetFileNotFound(
                    "\(what) (object \(asset.oid)) is not in the store; upload the file before saving the record that references it")
            }
            if stored != asset.size {
                return .assetFileModified(
                    """
                    \(what) says \(asset.size) bytes but object \(asset.oid) holds \(stored); upload the file again\
                     and save the reference it returns
                    """
                )
            }
            if uploadedAssets[asset.oid]?.contains(AssetUse(recordID: record.recordID, field: key)) != true {
                if own == nil { own = try backend.recordAssetBlobs(record.recordID, at: head) }
                guard own?.contains(asset.oid) == true else {
                    if let other = uploadedAssets[asset.oid]?.min(by: { ($0.recordID.recordName, $0.field) < ($1.recordID.recordName, $1.field) }) {
                        return .invalidArguments(
                            """
                            \(what) names object \(asset.oid), which was uploaded for field '\(other.field)' of record\
                             '\(other.recordID.recordName)' in zone '\(other.recordID.zoneID)', not for this one; upload the\
                             file for this record and field and save the reference that upload returns
                            """
                        )
                    }
                    return .invalidArguments(
                        """
                        \(what) names object \(asset.oid), which was neither uploaded for it nor is one of its assets in\
                         the store; upload the file and save the reference the upload returns
                        """
                    )
                }
            }
            let sum: String
            if let known = assetSHA256s[asset.oid] {
                sum = known
            } else {
                guard let hashed = try backend.assetSHA256(asset.oid) else {
                    return .assetFileNotFound(
                        "\(what) (object \(asset.oid)) is not in the store; upload the file before saving the record that references it")
                }
                assetSHA256s[asset.oid] = hashed
                sum = hashed
            }
            if sum != asset.sha256 {
                return .assetFileModified(
                    """
                    \(what) says SHA-256 \(asset.sha256) but object \(asset.oid) hashes to \(sum); upload the file\
                     again and save the reference it returns
                    """
                )
            }
        }
        return nil
    }

    /// Writes an asset's content into the file open for writing at `fd` (`path` names it in
    /// errors), emptied first, and makes it durable. The content must match the reference (size and
    /// SHA-256): a garbage or missing blob is an error about that one asset; the caller
    /// removes the file.
    func downloadAsset(_ asset: AssetReference, zone: ZoneID, fd: Int32, path: String) throws(RecSyncError) {
        _ = try visibleZone(zone, at: try backend.zoneHead(zone))
        // The object's size from its header first: a reference that understates a blob (a
        // store written with plain git, or a client around recsync) must not make a pull
        // inflate or write gigabytes before the comparison below refuses it.
        guard let stored = try backend.assetSize(asset.oid) else {
            throw .storeCorrupt(
                "the store lacks asset object \(asset.oid) (\(asset.size) bytes) in zone '\(zone)'; whoever saved it must push it again")
        }
        guard stored == asset.size else {
            throw .storeCorrupt(
                """
                asset object \(asset.oid) in zone '\(zone)' holds \(stored) bytes where its reference says\
                 \(asset.size); the store is damaged: save the asset again
                """
            )
        }
        try checkAssetSize(stored, what: "asset object \(asset.oid) in zone '\(zone)'")
        // The file holds the asset and nothing else, even if an earlier try wrote part of it.
        guard ftruncate(fd, 0) == 0, lseek(fd, 0, SEEK_SET) == 0 else {
            let e = errno
            throw .fileSystem(
                path: path, message: "cannot empty the file to write the asset into: \(String(cString: strerror(e)))",
                cause: SystemCallFailure(call: "ftruncate", errno: e))
        }
        guard let got = try backend.readAsset(asset.oid, toFD: fd, path: path) else {
            throw .storeCorrupt(
                "the store lacks asset object \(asset.oid) (\(asset.size) bytes) in zone '\(zone)'; whoever saved it must push it again")
        }
        guard got == asset else {
            throw .storeCorrupt(
                """
                asset object \(asset.oid) in zone '\(zone)' does not match its reference (\(got.size) bytes,\
                 SHA-256 \(got.sha256); expected \(asset.size) bytes, \(asset.sha256)); the store is damaged:\
                 save the asset again
                """
            )
        }
        guard fsync(fd) == 0 else {
            let e = errno
            throw .fileSystem(
                path: path, message: "cannot sync the asset file: \(String(cString: strerror(e)))", cause: SystemCallFailure(call: "fsync", errno: e))
        }
    }
}
