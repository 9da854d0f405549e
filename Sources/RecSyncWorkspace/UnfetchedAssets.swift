import RecSyncModel
import RecSyncSystem

/// Assets a pull deliberately did not download (`pull --no-assets`, or a zone set to pull
/// without them): per zone in `.recsync/index/<zone>.skipped` (a suffix no longer than
/// `.refetch`, so that the longest zone name still fits), one JSON object from
/// `<record file>/<field>` to the asset's reference.
///
/// A record file names such an asset (`{"$asset": "photo"}`) while its file is missing: the
/// note makes the field read as the reference it holds, so the record is clean, a push sends
/// the reference unchanged, and `fetchAssets` knows what to download. A file at that path
/// (downloaded, or put there by the user) always wins over the note: it is the field.
///
/// Not a cache: written durably before the record files that need it land, so a record file
/// never names a missing asset without a note (a note left over for a file that is there, or
/// a field gone, is ignored).
extension Workspace {
    /// Where a zone's notes of assets not fetched are kept.
    package func unfetchedAssetsPath(_ zone: ZoneID) -> String { "\(stateDir)/index/\(zoneStateKey(zone)).skipped" }

    /// The key of a record's asset field in the notes.
    static func unfetchedKey(_ id: RecordID, field: String) -> String { "\(fileName(for: id.recordName))/\(field)" }

    /// The assets of a zone that were not fetched: record → field → reference. A damaged
    /// note file is an error naming it (the assets it names would read as missing otherwise).
    package func unfetchedAssets(in zone: ZoneID) throws(RecSyncError) -> [RecordID: [String: AssetReference]] {
        var result: [RecordID: [String: AssetReference]] = [:]
        for (key, entry) in try loadUnfetched(zone) {
            guard case .object(let o) = entry, case .string(let name)? = o["record"],
                case .string(let field)? = o["field"], let asset = Self.assetReference(o),
                let id = try? RecordID(recordName: name, zoneID: zone), Self.unfetchedKey(id, field: field) == key
            else { throw damagedUnfetched(zone) }
            result[id, default: [:]][field] = asset
        }
        return result
    }

    /// The reference noted for a record's asset field not fetched, if there is one. With
    /// `cache` (the zone's, shared by a scan), the notes are read once for all its lookups.
    package func unfetchedAsset(_ id: RecordID, field: String, cache: AssetDigestCache? = nil) throws(RecSyncError) -> AssetReference? {
        let load = { () throws(RecSyncError) -> [String: JSONValue] in try self.loadUnfetched(id.zoneID) }
        let notes: [String: JSONValue]
        if let cache { notes = try cache.notes(load) } else { notes = try load() }
        guard case .object(let o)? = notes[Self.unfetchedKey(id, field: field)] else { return nil }
        guard let asset = Self.assetReference(o) else { throw damagedUnfetched(id.zoneID) }
        return asset
    }

    /// Changes a zone's notes, durably: for each record in `records`, its notes become the
    /// fields given (none: the record has no asset waiting).
    package func setUnfetchedAssets(_ records: [RecordID: [String: AssetReference]], in zone: ZoneID) throws(RecSyncError) {
        guard !records.isEmpty else { return }
        var all = try loadUnfetched(zone)
        let before = all
        for (id, fields) in records {
            let prefix = "\(Self.fileName(for: id.recordName))/"
            for key in all.keys where key.hasPrefix(prefix) { all[key] = nil }
            for (field, asset) in fields {
                all[Self.unfetchedKey(id, field: field)] = .object([
                    "record": .string(id.recordName), "field": .string(field),
                    "oid": .string(asset.oid), "sha256": .string(asset.sha256), "size": .int(asset.size),
                ])
            }
        }
        guard all != before else { return }
        let path = unfetchedAssetsPath(zone)
        if all.isEmpty {
            try FileIO.remove(path)
        } else {
            try FileIO.makeDirectories(FileIO.split(path).dir)
            try FileIO.writeAtomically(path, JSON.serialize(.object(all), pretty: false))
        }
    }

    private func loadUnfetched(_ zone: ZoneID) throws(RecSyncError) -> [String: JSONValue] {
        guard let bytes = try FileIO.read(unfetchedAssetsPath(zone)) else { return [:] }
        guard case .object(let o)? = try? JSON.parse(bytes) else { throw damagedUnfetched(zone) }
        return o
    }

    private func damagedUnfetched(_ zone: ZoneID) -> RecSyncError {
        .fileSystem(
            path: relative(unfetchedAssetsPath(zone)),
            message:
                """
                is damaged: it lists the assets of zone \(zone) a pull did not fetch; restore it from a\
                 snapshot, or remove it and put those asset files in place
                """
        )
    }

    private static func assetReference(_ o: [String: JSONValue]) -> AssetReference? {
        guard case .string(let oid)? = o["oid"], case .string(let sum)? = o["sha256"], case .int(let size)? = o["size"] else { return nil }
        return try? AssetReference(oid: oid, size: size, sha256: sum)
    }
}
