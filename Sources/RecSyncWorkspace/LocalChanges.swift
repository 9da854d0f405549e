import Foundation
import Glibc
import RecSyncModel
import RecSyncSystem

/// One record file of a zone as it is on disk, compared with what was last synced.
package struct LocalRecord: Sendable {
    package enum State: Sendable, Equatable {
        /// The file holds the synced version.
        case clean
        /// The file was edited since the version its sidecar names.
        case modified
        /// A file with no synced version: a new record.
        case new
        /// The sidecar is there but the file is gone: a deletion.
        case deleted
    }

    package var recordID: RecordID
    package var fileName: String
    package var state: State
    /// The sidecar, when there is one (a new record's may hold only its type).
    package var system: SystemFields?
    /// The fields in the file; nil when deleted, or when clean and not read.
    package var fields: [String: FieldValue]?
    /// The file's stat when it was inspected (what an index entry must record, so that an
    /// edit made while a sync runs is still seen as an edit afterwards).
    package var fileStamp: FileStamp?
    /// The change tag of the synced version, when there is one.
    package var knownTag: String?
    /// Fields the file sets to `null`: deletions to push, after which the file is rewritten
    /// without them.
    package var deletedFields: [String] = []
    /// The inspection found no `.assets` directory for the record (false: one is there, or
    /// nobody looked): a pull writing the record need not look again.
    package var withoutAssetDirectory = false

    package init(
        recordID: RecordID, fileName: String, state: State, system: SystemFields?, fields: [String: FieldValue]?, fileStamp: FileStamp?,
        knownTag: String?
    ) {
        self.recordID = recordID
        self.fileName = fileName
        self.state = state
        self.system = system
        self.fields = fields
        self.fileStamp = fileStamp
        self.knownTag = knownTag
    }
}

/// The result of scanning one zone directory.
package struct ZoneScan: Sendable {
    package var zone: ZoneID
    package var records: [LocalRecord]
    /// Files that cannot be read as records, and why.
    package var problems: [FileProblem]
    /// Files that are not record files (`notes.txt`, a `README`) and no ignore rule covers: a
    /// warning, never a reason to refuse a push (see `IgnoreRules`).
    package var untracked: [String] = []
    /// The index, refreshed where files were read and found unchanged.
    package var index: ZoneIndex

    package var changes: [LocalRecord] { records.filter { $0.state != .clean } }
}

extension Workspace {
    /// Looks up the fields of a synced version in the store, for files the index cannot vouch for.
    package typealias BaseLookup = @Sendable (RecordID, String) async throws(RecSyncError) -> [String: FieldValue]?

    /// Compares every record file of a zone with its synced version (records in no set order).
    ///
    /// Files whose stat matches the index are not read. A file whose index entry is missing or
    /// names another change tag is compared with the base version from `base`; if even that is
    /// gone, the file counts as modified (a push then decides by change tag).
    ///
    /// With `changesOnly`, unchanged records are left out of the result (status, push): the
    /// common case is then one `stat` and one index lookup per file, nothing built.
    package func scan(zone: ZoneID, base: BaseLookup, changesOnly: Bool = false) async throws(RecSyncError) -> ZoneScan {
        let dir = zoneDirectory(zone)
        var index = ZoneIndex.load(self, zone: zone)
        index.loadAll()  // every file is looked up
        var problems: [FileProblem] = []
        var untracked: [String] = []
        var records: [LocalRecord] = []
        // Listings that fail are errors: a short one would read as records deleted.
        var files = Set(try FileIO.entries(dir).names.filter { !$0.hasPrefix(".") })
        // Sidecars are recsync's own files and are not stat'ed one by one; one the directory
        // listing says is a link or other non-file is inspected in full (and reported).
        let (sidecarNames, oddSidecars) = try FileIO.entries("\(dir)/.system")
        let sidecars = Set(sidecarNames.filter { $0.hasSuffix(".json") && !$0.hasPrefix(".") })
        // Names that cannot be records and have no sidecar: ignored, or untracked (a warning).
        // A record file with a sidecar is tracked whatever the rules say, as in git.
        let rules = try IgnoreRules.load(self)
        let zonePath = rootRelative(dir)
        // Records' asset directories (`<record>.assets`): read through their record files.
        var assetDirs = Set<String>()
        for file in files where file.hasSuffix(Self.assetDirectorySuffix) && FileIO.isDirectory("\(dir)/\(file)") {
            assetDirs.insert(file)
            files.remove(file)
        }
        for file in files where !sidecars.contains(file) {
            let isRecordName = file.hasSuffix(".json")
            let isDirectory = FileIO.isDirectory("\(dir)/\(file)")
            if rules.ignores("\(zonePath)/\(file)", isDirectory: isDirectory) {
                files.remove(file)
            } else if !isRecordName {
                files.remove(file)
                untracked.append(relative("\(dir)/\(file)") + (isDirectory ? "/" : ""))
            }
        }
        // Stat relative to open directories: no path walk per file.
        let handles = try DirectoryHandles(zoneDirectory: dir)
        // Read once, written once at the end: per record it would make the scan quadratic.
        let assetCache = assetDigestCache(zone)
        defer { assetCache.save() }
        func keep(_ inspection: Inspection) {
            switch inspection {
            case .record(let r): if !changesOnly || r.state != .clean { records.append(r) }
            case .problem(let p): problems.append(p)
            case .nothing: break
            }
        }
        // In directory order (sorting 100k names costs more than the stat calls they need);
        // callers sort what they keep.
        var sidecarsSeen = 0
        for file in files {
            let listed = sidecars.contains(file)
            if listed { sidecarsSeen += 1 }
            // The fast path of `inspect`, without building a record nobody keeps.
            let odd = oddSidecars.contains(file)
            if changesOnly, listed, !odd, handles.zone >= 0, let stamps = index.stamps(file), stamps.side != nil, let stamp = stamps.file,
                let info = try FileIO.info(in: handles.zone, file), info.isRegular,
                info.stamp == stamp, file.hasSuffix(".json"),
                try !assetDirs.contains(Self.assetDirectoryName(forFile: file))
                    ? true
                    : assetsUnchanged(file: file, stamp: stamp, handles: handles, dir: dir, cache: assetCache)
            {
                continue
            }
            keep(
                try await inspect(
                    zone: zone, file: file, index: &index, base: base, handles: handles, sidecarListed: odd ? nil : listed, assetCache: assetCache))
        }
        // A sidecar without its file (a deleted record), when there is any.
        if sidecarsSeen < sidecars.count {
            for file in sidecars where !files.contains(file) {
                keep(
                    try await inspect(
                        zone: zone, file: file, index: &index, base: base, handles: handles, sidecarListed: oddSidecars.contains(file) ? nil : true,
                        assetCache: assetCache))
            }
        }
        return ZoneScan(zone: zone, records: records, problems: problems, untracked: untracked.sorted(), index: index)
    }

    /// What one file name of a zone holds.
    package enum Inspection: Sendable {
        case record(LocalRecord)
        case problem(FileProblem)
        /// Neither a record file nor a sidecar with a synced version.
        case nothing
    }

    /// Open directories of a zone, for stat calls without a path walk; closed when released.
    package final class DirectoryHandles: Sendable {
        let zone: Int32
        let system: Int32

        package init(zoneDirectory dir: String) throws(RecSyncError) {
            let zone = try FileIO.openDirectoryIfPresent(dir)
            do { system = try FileIO.openDirectoryIfPresent("\(dir)/.system") } catch {
                if zone >= 0 { _ = Glibc.close(zone) }
                throw error
            }
            self.zone = zone
        }

        deinit {
            if zone >= 0 { _ = Glibc.close(zone) }
            if system >= 0 { _ = Glibc.close(system) }
        }
    }

    /// Inspects one record file (and its sidecar) of a zone; see `scan`.
    ///
    /// `sidecarListed` (from a scan, which lists `.system`) says whether the sidecar exists;
    /// a listed sidecar of an indexed record is then taken as indexed without a `stat`: the
    /// sidecar is recsync's own file, and a scan at 100k records is mostly `stat` calls.
    ///
    /// `assetCache`: the zone's `assetDigestCache`, saved by the caller (one per scan or
    /// page, not one read and write per record); without one, this call reads and saves it.
    package func inspect(
        zone: ZoneID, file: String, index: inout ZoneIndex, base: BaseLookup, handles: DirectoryHandles? = nil, sidecarListed: Bool? = nil,
        assetCache: AssetDigestCache? = nil
    ) async throws(RecSyncError) -> Inspection {
        let ownCache = assetCache == nil
        let assetCache = assetCache ?? assetDigestCache(zone)
        defer { if ownCache { assetCache.save() } }
        let dir = zoneDirectory(zone)
        let entry = index[file]
        let fileInfo = try FileIO.info(in: handles?.zone, file, orAt: "\(dir)/\(file)")
        let sideInfo: FileInfo?
        switch sidecarListed {
        case false?: sideInfo = nil
        case true? where entry?.side != nil: sideInfo = FileInfo(stamp: entry!.side!)
        default: sideInfo = try FileIO.info(in: handles?.system, file, orAt: "\(dir)/.system/\(file)")
        }
        if fileInfo == nil && sideInfo == nil { return .nothing }
        // Fast path: both files exactly as recsync left them (no path strings, no reads), and
        // no asset files, or ones their own cache vouches for by `stat` (the index does not).
        let assetDirName = Self.assetDirectoryName(forFile: file)
        if let entry, let fileInfo, let sideInfo, fileInfo.isRegular,
            entry.file == fileInfo.stamp, entry.side == sideInfo.stamp, file.hasSuffix(".json")
        {
            let noAssetDirectory = try FileIO.info(in: handles?.zone, assetDirName, orAt: "\(dir)/\(assetDirName)") == nil
            let assetsClean =
                noAssetDirectory ? true : try assetsUnchanged(file: file, stamp: fileInfo.stamp, handles: handles, dir: dir, cache: assetCache)
            if assetsClean, let id = try? RecordID(recordName: entry.name, zoneID: zone) {
                var record = LocalRecord(
                    recordID: id, fileName: file, state: .clean, system: nil, fields: nil, fileStamp: fileInfo.stamp, knownTag: entry.tag)
                record.withoutAssetDirectory = noAssetDirectory
                return .record(record)
            }
        }
        let path = "\(dir)/\(file)"
        let sidePath = "\(dir)/.system/\(file)"
        let fileExists = fileInfo != nil
        if let fileInfo {
            let rel = relative(path)
            guard file.hasSuffix(".json") else { return .problem(FileProblem(path: rel, message: "not a record file (record files end in .json)")) }
            if !fileInfo.isRegular {
                return .problem(
                    FileProblem(
                        path: rel,
                        message: "is a directory, symbolic link, FIFO or device, not a record file; recsync reads only plain files: remove it"))
            }
        }
        if let sideInfo, !sideInfo.isRegular {
            return .problem(
                FileProblem(
                    path: relative(sidePath), message: "the sidecar is a directory, symbolic link, FIFO or device, not a plain file; remove it"))
        }
        let fileStamp = fileInfo?.stamp
        let sideStamp = sideInfo?.stamp
        let rel = relative(path)

        var system: SystemFields?
        // A file replaced since it was stat'ed (by a FIFO, say) is a problem, not a failed scan.
        func read(_ path: String, in directory: Int32?, _ name: String) -> Result<[UInt8]?, RecSyncError> {
            do throws(RecSyncError) {
                if let directory, directory >= 0 {
                    return .success(try FileIO.read(in: directory, name, path: path, limit: FileIO.recordFileReadLimit))
                }
                return .success(try FileIO.read(path, limit: FileIO.recordFileReadLimit))
            } catch {
                return .failure(error)
            }
        }
        func problem(_ rel: String, _ error: RecSyncError) -> Inspection {
            if case .fileSystem(_, let message, _) = error.reason { return .problem(FileProblem(path: rel, message: message)) }
            return .problem(FileProblem(path: rel, message: error.message))
        }
        var sideBytes: [UInt8]?
        if sideStamp != nil {
            switch read(sidePath, in: handles?.system, file) {
            case .success(let bytes): sideBytes = bytes
            case .failure(let error): return problem(relative(sidePath), error)
            }
        }
        if let bytes = sideBytes {
            do { system = try WorkspaceEncoding.decodeSystemFields(bytes) } catch {
                return .problem(
                    FileProblem(
                        path: relative(sidePath),
                        message:
                            "the sidecar is damaged (\(error.message)); restore it from a snapshot, or delete it to push the file as a new record"))
            }
            if let s = system, s.recordID.zoneID != zone {
                return .problem(FileProblem(path: relative(sidePath), message: "the sidecar belongs to zone '\(s.recordID.zoneID)', not '\(zone)'"))
            }
        }
        let recordName = system?.recordID.recordName ?? Self.recordName(forFile: file)
        guard let recordName, let id = try? RecordID(recordName: recordName, zoneID: zone) else {
            return .problem(
                FileProblem(
                    path: rel,
                    message:
                        """
                        the file name is not a valid record name (ASCII, 1–255 characters, not starting with '_' or '.';\
                         write '/' as %2F and '%' as %25)
                        """
                ))
        }
        if Self.fileName(for: recordName) != file {
            return .problem(
                FileProblem(path: rel, message: "holds record '\(recordName)', whose file name is '\(Self.fileName(for: recordName))'; rename it"))
        }
        var fields: [String: FieldValue]?
        var deleted: [String] = []
        var fileBytes: [UInt8]?
        var assetsNamed = Set<String>()
        if fileExists {
            switch read(path, in: handles?.zone, file) {
            case .success(let bytes): fileBytes = bytes
            case .failure(let error): return problem(rel, error)
            }
        }
        if let bytes = fileBytes {
            let resolve = assetResolver(id, cache: assetCache)
            var named = Set<String>()
            do {
                (fields, deleted) = try WorkspaceEncoding.decodeFieldsAndDeletions(
                    bytes,
                    assets: { (key, name) throws(RecSyncError) in
                        named.insert(name)
                        return try resolve(key, name)
                    })
            } catch {
                return .problem(FileProblem(path: rel, message: error.message))
            }
            assetsNamed = named
        }
        let tag = system?.changeTag
        switch (fields, tag) {
        case (nil, nil):
            return .nothing  // a type note for a record that was never written
        case (nil, .some):
            return .record(LocalRecord(recordID: id, fileName: file, state: .deleted, system: system, fields: nil, fileStamp: nil, knownTag: tag))
        case (.some(let f), nil):
            var record = LocalRecord(recordID: id, fileName: file, state: .new, system: system, fields: f, fileStamp: fileStamp, knownTag: nil)
            record.deletedFields = deleted
            return .record(record)
        case (.some(let f), .some(let t)):
            let hash = ZoneIndex.hash(f, deleting: deleted)
            var baseHash = entry?.tag == t ? entry?.hash : nil
            if baseHash == nil, let baseFields = try await base(id, t) {
                baseHash = ZoneIndex.hash(baseFields)
            }
            let clean = baseHash == hash
            if clean {
                index[file] = IndexEntry(name: recordName, tag: t, hash: hash, file: fileStamp, side: sideStamp)
                // The asset files as they were read, for the fast path next time.
                if let fileStamp, !assetsNamed.isEmpty || FileIO.isDirectory("\(dir)/\(assetDirName)"),
                    let stamps = assetStamps(assetsNamed, file: file, cache: assetCache)
                {
                    assetCache.rememberClean(file: file, stamp: fileStamp, assets: stamps)
                }
            }
            var record = LocalRecord(
                recordID: id, fileName: file, state: clean ? .clean : .modified, system: system, fields: f, fileStamp: fileStamp, knownTag: t)
            record.deletedFields = deleted
            return .record(record)
        }
    }
}
