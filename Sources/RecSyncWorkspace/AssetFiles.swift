import Glibc
import RecSyncGit
import RecSyncModel
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
    public static let assetDirectorySuffix = ".assets"

    /// The name of a record file's asset directory (`<record>.assets` for `<record>.json`).
    public static func assetDirectoryName(forFile file: String) -> String {
        (file.hasSuffix(".json") ? String(file.dropLast(5)) : file) + assetDirectorySuffix
    }

    /// A record's asset directory.
    public func assetDirectory(_ id: RecordID) -> String {
        "\(zoneDirectory(id.zoneID))/\(Self.assetDirectoryName(forFile: Self.fileName(for: id.recordName)))"
    }

    /// Where a record's asset field lives.
    public func assetPath(_ id: RecordID, field: String) -> String { "\(assetDirectory(id))/\(field)" }

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

    /// Reads the assets a record file names, for `WorkspaceEncoding.decodeFieldsAndDeletions`.
    public func assetResolver(_ id: RecordID) -> WorkspaceEncoding.AssetResolver {
        let cache = AssetDigestCache(path: assetCachePath(id.zoneID))
        let dir = assetDirectory(id)
        let file = Self.fileName(for: id.recordName)
        return { [self] (key: String, name: String) throws(RecSyncError) -> AssetReference in
            let path = "\(dir)/\(name)"
            guard let info = FileIO.info(path) else {
                // Not fetched on purpose: the field holds what the note says.
                if let noted = try unfetchedAsset(id, field: name) { return noted }
                throw .malformedInput("field '\(key)': the asset file \(relative(path)) is missing; put the file there, or set the field to null to delete it")
            }
            guard info.isRegular else {
                throw .malformedInput("field '\(key)': \(relative(path)) is not a plain file; an asset is a regular file")
            }
            let cacheKey = "\(file)/\(name)"
            if let known = cache.lookup(cacheKey, stamp: info.stamp) { return known }
            let asset = try Self.hashAsset(at: path, shownAs: relative(path))
            cache.remember(cacheKey, stamp: info.stamp, asset: asset)
            return asset
        }
    }

    /// A new, unique path in a record's asset directory (made if missing) for streaming an
    /// asset into before a `WriteBatch.place` puts it in place: a hidden temporary name that
    /// no scan reads as an asset, and that `removeStaleTemporaryFiles` clears after a crash.
    ///
    /// The directory is noted first in `.recsync/asset-temps`, durably: a killed pull's
    /// leftover there is then found by `removeStaleTemporaryFiles` without looking through
    /// every record's asset directory.
    public func assetTemporaryPath(_ id: RecordID) throws(RecSyncError) -> String {
        let dir = assetDirectory(id)
        try FileIO.makeDirectories(dir)
        try FileIO.appendDurably(assetTempsNote, Array((dir + "\n").utf8))
        return "\(dir)/\(TempFile.marker)a\(getpid())-\(assetTempCounter.add(1, ordering: .relaxed).newValue)"
    }

    /// Removes, in a batch, the files of a record's asset directory that were its assets
    /// (`were`: the asset fields of the version the workspace held) and are not any more
    /// (`keeping`). Any other file there is the user's (one dropped in before the record
    /// names it, say) and is left alone.
    public func unstageAssets(_ id: RecordID, were: Set<String>, keeping: Set<String>, in batch: inout WriteBatch) {
        let gone = were.subtracting(keeping)
        guard !gone.isEmpty else { return }
        let dir = assetDirectory(id)
        let group = Self.fileName(for: id.recordName)
        for name in FileIO.list(dir) where gone.contains(name) {
            batch.remove("\(dir)/\(name)", group: group)
        }
    }

    /// Notes what a file recsync has just written holds (a pulled asset): the next scan
    /// need not read it.
    public func rememberAsset(_ id: RecordID, field: String, stamp: FileStamp, asset: AssetReference) {
        AssetDigestCache(path: assetCachePath(id.zoneID)).remember("\(Self.fileName(for: id.recordName))/\(field)", stamp: stamp, asset: asset)
    }

    /// The reference of an asset file: its git blob ID, size and SHA-256, read in chunks.
    public static func hashAsset(at path: String, shownAs shown: String) throws(RecSyncError) -> AssetReference {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else {
            let e = errno
            throw .fileSystem(path: shown, message: "cannot open the asset file: \(String(cString: strerror(e)))", cause: SystemCallFailure(call: "open", errno: e))
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
            throw .malformedInput("\(shown) is not a plain file; an asset is a regular file")
        }
        let digest: BlobDigest
        do { digest = try BlobDigest.of(fd: fd, size: Int64(st.st_size), path: shown) } catch {
            throw .fileSystem(path: shown, message: error.message)
        }
        return try AssetReference(oid: digest.oid.hex, size: digest.size, sha256: digest.sha256)
    }
}

/// The per-zone cache of what asset files hashed to (see `Workspace` asset files).
struct AssetDigestCache {
    let path: String

    func load() -> [String: JSONValue] {
        guard let bytes = try? FileIO.read(path), case .object(let o)? = try? JSON.parse(bytes) else { return [:] }
        return o
    }

    func lookup(_ key: String, stamp: FileStamp) -> AssetReference? {
        guard case .object(let e)? = load()[key],
              case .int(let size)? = e["size"], case .int(let mtime)? = e["mtime"], case .int(let inode)? = e["inode"],
              case .string(let oid)? = e["oid"], case .string(let sum)? = e["sha256"],
              FileStamp(size: size, mtimeNanos: mtime, inode: UInt64(bitPattern: inode)) == stamp
        else { return nil }
        return try? AssetReference(oid: oid, size: size, sha256: sum)
    }

    /// Records one entry. Best effort on purpose: a cache that cannot be written costs a
    /// hash later, never a wrong answer.
    func remember(_ key: String, stamp: FileStamp, asset: AssetReference) {
        var all = load()
        all[key] = .object([
            "size": .int(stamp.size), "mtime": .int(stamp.mtimeNanos), "inode": .int(Int64(bitPattern: stamp.inode)),
            "oid": .string(asset.oid), "sha256": .string(asset.sha256),
        ])
        let dir = FileIO.split(path).dir
        if !FileIO.isDirectory(dir) { try? FileIO.makeDirectories(dir) }
        do { try FileIO.writeAtomically(path, JSON.serialize(.object(all), pretty: false)) } catch {
            // A cache: the next scan hashes the file again.
        }
    }
}
