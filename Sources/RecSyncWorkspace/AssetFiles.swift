import Glibc
import RecSyncModel
import RecSyncSystem
import Synchronization

/// Numbers asset temp files of this process.
private let assetTempCounter = Atomic<Int>(0)

/// Assets in a workspace: one plain file per asset field, in a directory beside the record
/// file, named after the record file: `private/<zone>/<record>.assets/<field>` beside
/// `private/<zone>/<record>.json`. The record file names the field's file,
/// `{"$asset": "<field>"}`; editing the file is editing the field.
///
/// Beside, not under `.system/`: the files are the user's to open and replace, like the
/// record files. Named after the record *file* (escaped or hashed as that is), so every record
/// name has one, and a record file and its assets sort together in a listing.
///
/// Reading an asset's reference hashes the file (git blob ID and SHA-256, streaming); what a
/// file hashed to is kept per zone in `.recsync/index/<zone>.assets` by size, mtime and inode,
/// so an unchanged file is not read again. That is a cache: a missing or stale entry costs
/// one hash, never a wrong answer.
extension Workspace {
    /// The suffix of a record's asset directory.
    package static let assetDirectorySuffix = ".assets"

    /// The name of a record file's asset directory (`<record>.assets` for `<record>.json`).
    package static func assetDirectoryName(forFile file: String) -> String {
        (file.hasSuffix(".json") ? String(file.dropLast(5)) : file) + assetDirectorySuffix
    }

    /// A record's asset directory.
    package func assetDirectory(_ id: RecordID) -> String {
        "\(zoneDirectory(id.zoneID))/\(Self.assetDirectoryName(forFile: Self.fileName(for: id.recordName)))"
    }

    /// Where a record's asset field lives.
    package func assetPath(_ id: RecordID, field: String) -> String { "\(assetDirectory(id))/\(field)" }

    /// Where the asset directories that temp files were made in are noted.
    var assetTempsNote: String { "\(stateDir)/asset-temps" }

    /// Removes the temp files in the asset directories noted in `assetTempsNote` (call it
    /// holding the lock), then the note.
    func removeStaleAssetTemporaryFiles() {
        guard let note = try? FileIO.read(assetTempsNote) else { return }
        for line in Set(String(decoding: note, as: UTF8.self).split(separator: "\n").map(String.init)) where line.hasPrefix(root + "/") {
            for name in FileIO.list(line) where name.hasPrefix(".") && name.contains(TempFile.marker) {
                FileIO.unlinkIfPresent("\(line)/\(name)")
            }
        }
        FileIO.unlinkIfPresent(assetTempsNote)
    }

    var assetCachePath: (ZoneID) -> String { { zone in "\(self.stateDir)/index/\(self.zoneStateKey(zone)).assets" } }

    /// The zone's cache of what its asset files hashed to, read on first use. Whoever holds
    /// it for many records (a scan, a page of a pull) saves it once at the end.
    package func assetDigestCache(_ zone: ZoneID) -> AssetDigestCache { AssetDigestCache(path: assetCachePath(zone)) }

    /// Reads the assets a record file names, for `WorkspaceEncoding.decodeFieldsAndDeletions`.
    ///
    /// `cache`: the zone's `assetDigestCache`, which the caller saves; without one, the
    /// resolver reads the zone's cache itself and saves each entry it learns (one record).
    package func assetResolver(_ id: RecordID, cache: AssetDigestCache? = nil) -> WorkspaceEncoding.AssetResolver {
        let saveEach = cache == nil
        let cache = cache ?? assetDigestCache(id.zoneID)
        let dir = assetDirectory(id)
        let file = Self.fileName(for: id.recordName)
        return { [self] (key: String, name: String) throws(RecSyncError) -> AssetReference in
            let path = "\(dir)/\(name)"
            guard let info = try FileIO.info(path) else {
                // Not fetched on purpose: the field holds what the note says.
                if let noted = try unfetchedAsset(id, field: name, cache: cache) { return noted }
                throw .malformedInput(
                    "field '\(key)': the asset file \(relative(path)) is missing; put the file there, or set the field to null to delete it")
            }
            guard info.isRegular else {
                throw .malformedInput("field '\(key)': \(relative(path)) is not a plain file; an asset is a regular file")
            }
            let limit = assetSizeLimit.load(ordering: .relaxed)
            guard info.stamp.size <= limit else {
                throw .malformedInput(
                    """
                    field '\(key)': \(relative(path)) is \(info.stamp.size) bytes; the store takes assets of at most\
                     \(limit) bytes (maxAssetBytes in the store's recsync.json): make it smaller
                    """
                )
            }
            let cacheKey = "\(file)/\(name)"
            if let known = cache.lookup(cacheKey, stamp: info.stamp) { return known }
            let asset = try Self.hashAsset(at: path, shownAs: relative(path))
            cache.remember(cacheKey, stamp: info.stamp, asset: asset)
            if saveEach { cache.save() }
            return asset
        }
    }

    /// Whether the asset files of a synced record are, by `stat`, what they were when its
    /// file, at `stamp`, was last found to hold the synced version: the fast path for a record
    /// with a `.assets` directory (nothing is read). False when the cache does not know.
    func assetsUnchanged(file: String, stamp: FileStamp, handles: DirectoryHandles?, dir: String, cache: AssetDigestCache) throws(RecSyncError)
        -> Bool
    {
        guard let assets = cache.cleanAssets(ofFile: file, stamp: stamp) else { return false }
        let assetDir = Self.assetDirectoryName(forFile: file)
        for (name, known) in assets {
            let info = try FileIO.info(in: handles?.zone, "\(assetDir)/\(name)", orAt: "\(dir)/\(assetDir)/\(name)")
            guard let info, info.isRegular, info.stamp == known else { return false }
        }
        return true
    }

    /// The stamps the asset files `names` of a record had when `cache` last looked at them.
    func assetStamps(_ names: Set<String>, file: String, cache: AssetDigestCache) -> [String: FileStamp]? {
        var result: [String: FileStamp] = [:]
        for name in names {
            guard let s = cache.stamp(of: "\(file)/\(name)") else { return nil }
            result[name] = s
        }
        return result
    }

    /// A new, unique path in a record's asset directory (made if missing) for streaming an
    /// asset into before a `WriteBatch.place` puts it in place: a hidden temporary name that
    /// no scan reads as an asset, and that `removeStaleTemporaryFiles` clears after a crash.
    ///
    /// The directory is noted first in `.recsync/asset-temps`, durably: a killed pull's
    /// leftover there is then found by `removeStaleTemporaryFiles` without looking through
    /// every record's asset directory.
    package func assetTemporaryPath(_ id: RecordID) throws(RecSyncError) -> String {
        let dir = assetDirectory(id)
        try FileIO.makeDirectories(dir)
        try FileIO.appendDurably(assetTempsNote, Array((dir + "\n").utf8))
        return "\(dir)/\(TempFile.marker)a\(getpid())-\(assetTempCounter.add(1, ordering: .relaxed).newValue)"
    }

    /// Removes, in a batch, the files of a record's asset directory that were its assets
    /// (`were`: the asset fields of the version the workspace held) and are not any more
    /// (`keeping`). Any other file there is the user's (one dropped in before the record
    /// names it, say) and is left alone.
    package func unstageAssets(_ id: RecordID, were: Set<String>, keeping: Set<String>, in batch: inout WriteBatch) {
        let gone = were.subtracting(keeping)
        guard !gone.isEmpty else { return }
        let dir = assetDirectory(id)
        let group = Self.fileName(for: id.recordName)
        for name in FileIO.list(dir) where gone.contains(name) {
            batch.remove("\(dir)/\(name)", group: group)
        }
    }

    /// Removes a record's asset directory if it is empty (its record deleted, or its last
    /// asset dropped): never a file in it, which may be the user's.
    package func removeAssetDirectoryIfEmpty(_ id: RecordID) {
        // rmdir refuses a directory that holds anything; a missing one is already gone, and
        // one that cannot be removed is only left behind, as before.
        if Glibc.rmdir(assetDirectory(id)) != 0 { return }
    }

    /// Notes what a file recsync has just written holds (a pulled asset): the next scan
    /// need not read it.
    /// `cache`: the zone's `assetDigestCache`, saved by the caller.
    package func rememberAsset(_ id: RecordID, field: String, stamp: FileStamp, asset: AssetReference, in cache: AssetDigestCache) {
        cache.remember("\(Self.fileName(for: id.recordName))/\(field)", stamp: stamp, asset: asset)
    }

    /// The reference of an asset file: its git blob ID, size and SHA-256, read in chunks.
    /// Under a workspace root the file is opened from the root down without following links
    /// (see `Confinement`): a `.assets` directory that is a link is refused, not read through.
    package static func hashAsset(at path: String, shownAs shown: String) throws(RecSyncError) -> AssetReference {
        guard let fd = try FileIO.openRegularFile(path, flags: O_RDONLY) else {
            throw .fileSystem(
                path: shown, message: "cannot open the asset file: \(String(cString: strerror(ENOENT)))",
                cause: SystemCallFailure(call: "openat", errno: ENOENT))
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            let e = errno
            throw .fileSystem(
                path: shown, message: "cannot stat the asset file: \(String(cString: strerror(e)))", cause: SystemCallFailure(call: "fstat", errno: e)
            )
        }
        let digest = try ContentDigest.of(fd: fd, size: Int64(st.st_size), path: shown)
        return try AssetReference(oid: digest.blobID, size: digest.size, sha256: digest.sha256)
    }
}

/// The per-zone cache of what asset files hashed to (see `Workspace` asset files), read
/// once and written once by whoever holds it: a scan of n records with assets parses and
/// writes it once, not once per record.
///
/// Entries: `<record file>/<name>` → the asset file's stamp and reference; `<record file>`
/// → the record file's stamp and its asset files' stamps when it last held the synced
/// version (for `assetsUnchanged`).
package final class AssetDigestCache: Sendable {
    let path: String
    private struct State {
        var entries: [String: JSONValue]?
        var dirty = false
        /// The zone's notes of assets not fetched, once read (`notes`).
        var notes: [String: JSONValue]?
    }
    private let state = Mutex(State())

    /// The zone's notes of assets a pull did not fetch (`Workspace.unfetchedAssets`), read on
    /// first use and kept for the cache's life (a scan, or a pull's page): in a zone pulled
    /// without its assets every record has a missing file, and each lookup read and parsed
    /// the whole notes file again.
    func notes(_ load: () throws(RecSyncError) -> [String: JSONValue]) throws(RecSyncError) -> [String: JSONValue] {
        if let known = state.withLock({ $0.notes }) { return known }
        let loaded = try load()
        state.withLock { $0.notes = loaded }
        return loaded
    }

    init(path: String) {
        self.path = path
    }

    private func withEntries<T>(_ body: (inout [String: JSONValue], inout Bool) -> T) -> T {
        state.withLock { s in
            if s.entries == nil { s.entries = Self.load(path) }
            var entries = s.entries ?? [:]
            s.entries = nil  // no copy on write while `body` changes it
            defer { s.entries = entries }
            return body(&entries, &s.dirty)
        }
    }

    static func load(_ path: String) -> [String: JSONValue] {
        // A cache: one that cannot be read is empty, and costs one hash per file.
        do {
            guard let bytes = try FileIO.read(path), case .object(let o) = try JSON.parse(bytes) else { return [:] }
            return o
        } catch {
            return [:]
        }
    }

    static func stamp(of entry: [String: JSONValue]) -> FileStamp? {
        guard case .int(let size)? = entry["size"], case .int(let mtime)? = entry["mtime"], case .int(let inode)? = entry["inode"] else { return nil }
        return FileStamp(size: size, mtimeNanos: mtime, inode: UInt64(bitPattern: inode))
    }

    static func fields(_ stamp: FileStamp) -> [String: JSONValue] {
        ["size": .int(stamp.size), "mtime": .int(stamp.mtimeNanos), "inode": .int(Int64(bitPattern: stamp.inode))]
    }

    func lookup(_ key: String, stamp: FileStamp) -> AssetReference? {
        withEntries { entries, _ in
            guard case .object(let e)? = entries[key], Self.stamp(of: e) == stamp,
                case .string(let oid)? = e["oid"], case .string(let sum)? = e["sha256"]
            else { return nil }
            return try? AssetReference(oid: oid, size: stamp.size, sha256: sum)
        }
    }

    func remember(_ key: String, stamp: FileStamp, asset: AssetReference) {
        var entry = Self.fields(stamp)
        entry["oid"] = .string(asset.oid)
        entry["sha256"] = .string(asset.sha256)
        withEntries { entries, dirty in
            if entries[key] != .object(entry) { entries[key] = .object(entry); dirty = true }
        }
    }

    /// The asset files a synced record held, by name, with their stamps, when its file was
    /// at `stamp` and found to hold the synced version; nil when not known.
    func cleanAssets(ofFile file: String, stamp: FileStamp) -> [String: FileStamp]? {
        withEntries { entries, _ in
            guard case .object(let e)? = entries[file], Self.stamp(of: e) == stamp, case .object(let assets)? = e["assets"] else { return nil }
            var result: [String: FileStamp] = [:]
            for (name, value) in assets {
                guard case .object(let a) = value, let s = Self.stamp(of: a) else { return nil }
                result[name] = s
            }
            return result
        }
    }

    /// The asset names a synced record's file at `stamp` holds (see `cleanAssets`).
    package func assetNames(ofFile file: String, stamp: FileStamp) -> Set<String>? {
        cleanAssets(ofFile: file, stamp: stamp).map { Set($0.keys) }
    }

    /// The stamp an asset file had when its entry was last looked up or made.
    func stamp(of key: String) -> FileStamp? {
        withEntries { entries, _ in
            guard case .object(let e)? = entries[key] else { return nil }
            return Self.stamp(of: e)
        }
    }

    /// Notes that a record file at `stamp` holds the synced version, with these asset files
    /// (name → stamp) as they are now, for the `stat` fast path (`assetsUnchanged`); forgets
    /// the entries of asset files it named before and no longer does.
    package func rememberClean(file: String, stamp: FileStamp, assets: [String: FileStamp]) {
        var entry = Self.fields(stamp)
        entry["assets"] = .object(assets.mapValues { .object(Self.fields($0)) })
        withEntries { entries, dirty in
            guard entries[file] != .object(entry) else { return }
            if case .object(let old)? = entries[file], case .object(let before)? = old["assets"] {
                for name in before.keys where assets[name] == nil { entries["\(file)/\(name)"] = nil }
            }
            entries[file] = .object(entry)
            dirty = true
        }
    }

    /// Forgets what `rememberClean` noted of a record file.
    package func forgetClean(file: String) {
        withEntries { entries, dirty in
            if entries.removeValue(forKey: file) != nil { dirty = true }
        }
    }

    /// Writes what changed since it was read, once. Best effort on purpose: a cache that
    /// cannot be written costs a hash later, never a wrong answer.
    package func save() {
        let bytes: [UInt8]? = state.withLock { s in
            guard s.dirty, let entries = s.entries else { return nil }
            s.dirty = false
            return JSON.serialize(.object(entries), pretty: false)
        }
        guard let bytes else { return }
        let dir = FileIO.split(path).dir
        do {
            if !FileIO.isDirectory(dir) { try FileIO.makeDirectories(dir) }
            try FileIO.writeAtomically(path, bytes)
        } catch {
            // A cache: the next scan hashes the file again.
        }
    }
}
