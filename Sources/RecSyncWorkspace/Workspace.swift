import Foundation
import Glibc
import RecSyncModel
import RecSyncSystem
import Synchronization

/// The workspace's settings, `.recsync/config`.
public struct WorkspaceConfig: Sendable, Hashable, Codable {
    public static let currentVersion = 1
    public var version: Int
    /// The user every sync acts as.
    public var user: String
    /// Where the store is: a path (or, later, a URL).
    public var remote: String
    /// The store's ID, learnt on the first sync; a different store at the same path is refused.
    public var storeID: String?
    /// Commit a snapshot after each pull (used by `pull --commit`'s default).
    public var commitSnapshots: Bool?
    /// Zones pulled without their assets' content (their directories relative to the root,
    /// `private/photos`): `Workspace.pullsWithoutAssets`.
    public var noAssetZones: [String]?
    /// The zones a partial workspace holds (their directories relative to the root,
    /// `private/todo`, `shared/alice/plans`); nil for a workspace of every zone:
    /// `Workspace.tracks`.
    public var trackedZones: [String]?

    public init(user: String, remote: String, storeID: String? = nil) {
        version = Self.currentVersion
        self.user = user
        self.remote = remote
        self.storeID = storeID
    }
}

/// A directory of record files kept in sync with a store (DESIGN §4).
///
/// ```
/// .recsync/                               config, tokens, index, lock, conflicts, lost+found
/// private/<zone>/<record>.json            user fields
/// private/<zone>/.system/<record>.json    sidecar: system fields
/// shared/<owner>/<zone>/…                 zones shared with the user
/// ```
public final class Workspace: Sendable {
    package static let stateDirName = ".recsync"
    public let root: String
    /// The largest asset file the store takes (its `maxAssetBytes`), set by whoever knows the
    /// store: a bigger file is refused when its record is read, by its size, before anything
    /// reads the file (no limit until set).
    package let assetSizeLimit = Atomic<Int64>(.max)
    package let config: WorkspaceConfig
    /// The directory the workspace was found from (`find(from:)`; the root otherwise): the
    /// paths recsync prints are relative to it (`relative(_:)`), as `git status` prints them
    /// in a subdirectory.
    package let directory: String

    package var stateDir: String { "\(root)/\(Self.stateDirName)" }
    /// The bare mirror of a network store, which libgit2 fetches into and pushes from.
    package var mirrorPath: String { "\(stateDir)/mirror" }
    public var user: String { config.user }

    /// Registers the root with `Confinement`: from now on no path under it is opened through a link.
    init(root: String, config: WorkspaceConfig, directory: String? = nil) {
        self.root = root
        self.config = config
        self.directory = directory ?? root
        Confinement.register(root)
    }

    deinit { Confinement.unregister(root) }

    /// The workspace that contains `directory` (it or a parent holds `.recsync/config`).
    public static func find(from directory: String) throws(RecSyncError) -> Workspace {
        var dir = URL(fileURLWithPath: directory).standardizedFileURL.path
        while true {
            if FileManager.default.fileExists(atPath: "\(dir)/\(stateDirName)/config") {
                let found = try open(at: dir)
                return Workspace(root: found.root, config: found.config, directory: URL(fileURLWithPath: directory).standardizedFileURL.path)
            }
            let parent = (dir as NSString).deletingLastPathComponent
            if parent == dir || parent.isEmpty { throw .notAWorkspace(directory) }
            dir = parent
        }
    }

    /// Opens the workspace rooted exactly at `root`.
    public static func open(at root: String) throws(RecSyncError) -> Workspace {
        let path = "\(root)/\(stateDirName)/config"
        guard let bytes = try FileIO.read(path) else { throw .notAWorkspace(root) }
        let config: WorkspaceConfig
        do { config = try JSONDecoder().decode(WorkspaceConfig.self, from: Data(bytes)) } catch {
            throw .fileSystem(path: path, message: "is not a valid recsync config (\(error)); fix it, or make the workspace again")
        }
        guard config.version == WorkspaceConfig.currentVersion else {
            throw .fileSystem(path: path, message: "has version \(config.version); this recsync reads version \(WorkspaceConfig.currentVersion)")
        }
        do { try NameRules.validateOwnerName(config.user) } catch {
            throw .fileSystem(
                path: path, message: "names user '\(config.user)', which recsync cannot write to a store (\(error.message)); set a valid \"user\"")
        }
        return Workspace(root: root, config: config)
    }

    /// Makes `root` a workspace (creating it if needed). Refuses a directory that already is one.
    package static func create(at root: String, config: WorkspaceConfig) throws(RecSyncError) -> Workspace {
        try NameRules.validateOwnerName(config.user)
        let absolute = URL(fileURLWithPath: root).standardizedFileURL.path
        if FileManager.default.fileExists(atPath: "\(absolute)/\(stateDirName)/config") {
            throw .alreadyExists("'\(absolute)' is already a recsync workspace")
        }
        let ws = Workspace(root: absolute, config: config)
        try FileIO.makeDirectories(ws.stateDir)
        try ws.ensureStateIgnored()
        try ws.saveConfig(config)
        return ws
    }

    /// Where a new workspace may be made: a path that does not exist, or an empty directory.
    /// Returns whether the directory exists already (see `discardHalfMade`).
    ///
    /// A directory holding only what a clone killed before it wrote the workspace's config
    /// leaves (`.recsync/` with its `.gitignore` and temporary files) counts as empty: that is
    /// removed, so that the same clone can be run again. One holding a whole workspace is a
    /// clone that was stopped after that: the error says to pull there to finish it.
    package static func checkNewWorkspaceTarget(_ target: String) throws(RecSyncError) -> Bool {
        let existed = try FileIO.info(target) != nil
        guard existed else { return false }
        let entries = FileIO.list(target)
        let state = "\(target)/\(stateDirName)"
        if entries == [stateDirName], let info = try FileIO.info(state), info.isDirectory, !info.isSymlink {
            if try FileIO.info("\(state)/config") != nil {
                throw .alreadyExists(
                    """
                    '\(target)' is a recsync workspace already (a clone that was stopped?); finish it, or choose\
                     another directory
                    """
                ).suggesting(.finishClone(directory: target))
            }
            let leftovers = FileIO.list(state)
            if leftovers.allSatisfy({ $0 == ".gitignore" || $0.contains(TempFile.marker) }) {
                try FileIO.remove(state)
                return true
            }
        }
        if !entries.isEmpty {
            throw .alreadyExists("'\(target)' already exists and is not empty; choose another directory")
        }
        return true
    }

    /// Removes what a failed clone made at `target`: its contents, and the directory itself
    /// unless it existed before (`existed`). A part that cannot be removed is an error naming it.
    package static func discardHalfMade(_ target: String, existed: Bool) throws(RecSyncError) {
        if existed {
            for entry in FileIO.list(target) { try FileIO.remove("\(target)/\(entry)") }
        } else {
            try FileIO.remove(target)
        }
    }

    /// What `.recsync/.gitignore` keeps out of a snapshot: machine-specific state.
    static let machineSpecificState = [
        "index/", "lock", "watch.lock", "subscriptions.lock", "device.lock", "mirror/", "writing*", "device", "pending-push", "subscriptions/",
        "last-contact", "asset-temps", "journal/",
    ]

    /// Writes `.recsync/.gitignore`, or adds the entries a workspace made by an earlier version
    /// lacks (keeping any the user added).
    package func ensureStateIgnored() throws(RecSyncError) {
        let path = "\(stateDir)/.gitignore"
        let existing = try FileIO.read(path, limit: 1 << 20).map { String(decoding: $0, as: UTF8.self) }
        let lines = Set((existing ?? "").split(separator: "\n").map(String.init))
        let missing = Self.machineSpecificState.filter { !lines.contains($0) }
        guard existing == nil || !missing.isEmpty else { return }
        var text = existing ?? "# machine-specific state: not part of a snapshot\n"
        if !text.isEmpty && !text.hasSuffix("\n") { text += "\n" }
        text += missing.map { $0 + "\n" }.joined()
        try FileIO.writeAtomically(path, Array(text.utf8))
    }

    /// Writes a new config (the object keeps the one it was opened with).
    ///
    /// A password in the remote's address is never written (DESIGN §11): the file keeps the
    /// address without it, and the password lives in git's credential helpers or the
    /// environment (`RECSYNC_TOKEN`). The object's own config may still hold it, for the
    /// command that was given it.
    package func saveConfig(_ config: WorkspaceConfig) throws(RecSyncError) {
        var stored = config
        stored.remote = RemoteAddress.withoutPassword(config.remote)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data: Data
        do { data = try encoder.encode(stored) } catch {
            throw .internalError("cannot encode the workspace config: \(error)")
        }
        try FileIO.writeAtomically("\(stateDir)/config", Array(data) + [10])
    }

    package func withConfig(_ config: WorkspaceConfig) -> Workspace { Workspace(root: root, config: config, directory: directory) }

    // MARK: Zones

    /// The zone ID of a directory in the workspace, given its scope.
    package func zoneDirectory(_ zone: ZoneID) -> String {
        if zone.ownerName == user {
            return "\(root)/private/\(NameEscaping.escape(zone.zoneName))"
        }
        return "\(root)/shared/\(NameEscaping.escape(zone.ownerName))/\(NameEscaping.escape(zone.zoneName))"
    }

    package func scope(of zone: ZoneID) -> DatabaseScope { zone.ownerName == user ? .private : .shared }

    /// A path as recsync prints it: relative to the directory the command runs in
    /// (`directory`), with `../` where needed; a path outside the workspace stays absolute.
    /// Every path a user reads (text, JSON, error messages) goes through this.
    package func relative(_ path: String) -> String {
        guard path == root || path.hasPrefix(root + "/") else { return path }
        if directory == root { return rootRelative(path) }
        let from = directory.split(separator: "/"), to = path.split(separator: "/")
        var common = 0
        while common < from.count, common < to.count, from[common] == to[common] { common += 1 }
        let parts = Array(repeating: "..", count: from.count - common) + to[common...].map(String.init)
        return parts.isEmpty ? "." : parts.joined(separator: "/")
    }

    /// A path relative to the root (`private/ZONE/NAME.json`), whatever the directory: for
    /// what is kept or compared, not shown.
    package func rootRelative(_ path: String) -> String {
        path.hasPrefix(root + "/") ? String(path.dropFirst(root.count + 1)) : path
    }

    /// Every zone directory present in the workspace, and the directories that are not zones.
    ///
    /// A directory whose name is not a zone name recsync can keep — not in NFC (a second
    /// spelling of a name, as `café` typed decomposed), too long once escaped — is a problem,
    /// never a zone: two spellings of one name would otherwise be two zones that compare equal.
    /// A link in place of a zone directory (or of `private`, `shared` or an owner's directory)
    /// is a problem too: recsync neither reads nor writes through it.
    package func localZones() -> (zones: [ZoneID], problems: [FileProblem]) {
        var zones: [ZoneID] = []
        var problems: [FileProblem] = []
        func isLink(_ relative: String) -> Bool {
            let link: Bool
            do { link = try FileIO.isSymlink("\(root)/\(relative)") } catch {
                // Cannot be looked at: a problem to report, and nothing to read as a zone.
                problems.append(FileProblem(path: relative, message: error.message))
                return true
            }
            guard link else { return false }
            problems.append(
                FileProblem(
                    path: relative,
                    message: "is a symbolic link; recsync does not read or write through links inside a workspace: replace it with a real directory"))
            return true
        }
        for base in ["private", "shared"] { _ = isLink(base) }
        for name in FileIO.list("\(root)/private") where !isLink("private/\(name)") && FileIO.isDirectory("\(root)/private/\(name)") {
            switch Self.zone(directory: name, in: "\(root)/private", ownerName: user) {
            case .success(let id): zones.append(id)
            case .failure(let why):
                problems.append(FileProblem(path: "private/\(name)", message: "not a valid zone directory (\(why.message)); rename the directory"))
            }
        }
        for owner in FileIO.list("\(root)/shared") where !isLink("shared/\(owner)") && FileIO.isDirectory("\(root)/shared/\(owner)") {
            for name in FileIO.list("\(root)/shared/\(owner)")
            where !isLink("shared/\(owner)/\(name)") && FileIO.isDirectory("\(root)/shared/\(owner)/\(name)") {
                guard let ownerName = NameEscaping.unescape(owner) else {
                    problems.append(
                        FileProblem(
                            path: "shared/\(owner)/\(name)", message: "not a valid zone directory (the owner directory is not an escaped user name)"))
                    continue
                }
                switch Self.zone(directory: name, in: "\(root)/shared/\(owner)", ownerName: ownerName) {
                case .success(let id): zones.append(id)
                case .failure(let why):
                    problems.append(FileProblem(path: "shared/\(owner)/\(name)", message: "not a valid zone directory (\(why.message))"))
                }
            }
        }
        return (zones.sorted(), problems)
    }

    /// The zone a directory stands for. A name not in NFC is accepted only where the file
    /// system itself folds it onto the NFC name (the NFC path is the same directory, as on
    /// macOS), since recsync always addresses the directory by its NFC name.
    static func zone(directory name: String, in parent: String, ownerName: String) -> Result<ZoneID, RecSyncError> {
        guard let zoneName = NameEscaping.unescape(name) else {
            return .failure(.invalidName("the name is not an escaped zone name: write '/' as %2F, '%' as %25 and a leading '.' as %2E"))
        }
        let nfc = NameRules.normalizedZoneName(zoneName)
        if Array(nfc.utf8) != Array(zoneName.utf8) {
            // The same directory under its composed name: a file system that folds names.
            let here: FileInfo?, folded: FileInfo?
            do {
                here = try FileIO.info("\(parent)/\(name)")
                folded = try FileIO.info("\(parent)/\(NameEscaping.escape(nfc))")
            } catch { return .failure(error) }
            if let here, let folded, here.stamp.inode == folded.stamp.inode {
                return Result { () throws(RecSyncError) in try ZoneID(zoneName: nfc, ownerName: ownerName) }
            }
        }
        return Result { () throws(RecSyncError) in try ZoneID(zoneName: zoneName, ownerName: ownerName) }
    }

    // MARK: Record files

    /// The file name of a record: escaped name + `.json`, or a hash when that is too long.
    package static func fileName(for recordName: String) -> String {
        let escaped = NameEscaping.escape(recordName)
        if escaped.utf8.count + 5 <= 250 { return escaped + ".json" }
        // Record names never start with '_', so hashed names cannot collide with plain ones.
        return "_" + ContentHash.of(Array(recordName.utf8)) + ".json"
    }

    /// The record name a file name stands for, nil for a hashed name (read the sidecar) or a non-record.
    package static func recordName(forFile file: String) -> String? {
        guard file.hasSuffix(".json"), !file.hasPrefix("_"), !file.hasPrefix(".") else { return nil }
        return NameEscaping.unescape(String(file.dropLast(5)))
    }

    package func recordPath(_ id: RecordID) -> String { "\(zoneDirectory(id.zoneID))/\(Self.fileName(for: id.recordName))" }
    package func sidecarPath(_ id: RecordID) -> String { "\(zoneDirectory(id.zoneID))/.system/\(Self.fileName(for: id.recordName))" }

    // MARK: Tokens and sync state

    func zoneStateKey(_ zone: ZoneID) -> String {
        "\(scope(of: zone).rawValue)/\(NameEscaping.escape(zone.ownerName))/\(NameEscaping.escape(zone.zoneName))"
    }

    package func scopeTokenPath(_ scope: DatabaseScope) -> String { "\(stateDir)/tokens/\(scope.rawValue).token" }
    /// Present while a pull of a scope may have saved zone tokens ahead of its scope token.
    package func interruptedPullPath(_ scope: DatabaseScope) -> String { "\(stateDir)/tokens/\(scope.rawValue).pulling" }
    package func zoneTokenPath(_ zone: ZoneID) -> String { "\(stateDir)/tokens/\(zoneStateKey(zone)).token" }
    package func refetchPath(_ zone: ZoneID) -> String { "\(stateDir)/tokens/\(zoneStateKey(zone)).refetch" }
    /// Records of the zone the store could not deliver, to fetch again (see `RetryList`).
    package func retryPath(_ zone: ZoneID) -> String { "\(stateDir)/tokens/\(zoneStateKey(zone)).retry" }
    /// The stamp of the zone's retry list when every record on it waited for a change on the
    /// store (see `zoneNeedsALook`).
    package func retryWaitsPath(_ zone: ZoneID) -> String { "\(stateDir)/tokens/\(zoneStateKey(zone)).waiting" }
    /// Names this workspace saved to a zone since its zone token: the next pull checks them,
    /// since a record created here and deleted elsewhere in between is in neither end of the diff.
    package func pushedPath(_ zone: ZoneID) -> String { "\(stateDir)/tokens/\(zoneStateKey(zone)).pushed" }
    /// Names of the records a pull is writing ahead of the zone token (see `pullZone`).
    package func applyingPath(_ zone: ZoneID) -> String { "\(stateDir)/tokens/\(zoneStateKey(zone)).apply" }
    package func indexPath(_ zone: ZoneID) -> String { "\(stateDir)/index/\(zoneStateKey(zone)).idx" }
    /// What a push sent and the client change token it sent with, until its sidecars are written.
    package var pendingPushPath: String { "\(stateDir)/pending-push" }
    /// When this workspace last pulled from or pushed to its store (`recordContact`).
    package var lastContactPath: String { "\(stateDir)/last-contact" }
    package func reuploadMarker(_ zone: ZoneID) -> String { "\(stateDir)/reupload/\(zoneStateKey(zone))" }
    /// Whether a zone is marked to be created and uploaded again (after an encrypted-data
    /// reset): the marker must be a regular file, so a link placed there means nothing.
    package func awaitsReupload(_ zone: ZoneID) throws(RecSyncError) -> Bool { try FileIO.info(reuploadMarker(zone))?.isRegular == true }
    package func conflictDirectory(_ zone: ZoneID) -> String { "\(stateDir)/conflicts/\(zoneStateKey(zone))" }

    /// This workspace's device ID for the store (`StoreActor.deviceID`), made on first use:
    /// the store keeps this workspace's client change tokens apart from other workspaces',
    /// and subscriptions leave out the changes it made.
    ///
    /// The file also names where it was made (`DeviceHome`: the inode of `.recsync/`, its
    /// file system's device number and ID): a workspace copied with `cp -r`, restored from a
    /// backup or taken as a file-system snapshot finds a different home and takes a new ID,
    /// or each copy would take the other's pushes for its own. Moving a workspace within a
    /// file system keeps it, and so does a new device number for the same file system (a
    /// container's overlay, NFS or btrfs mounted again, a reboot).
    package func deviceID() throws(RecSyncError) -> String {
        try deviceID(home: try deviceHome())
    }

    /// Where `.recsync/` is now.
    func deviceHome() throws(RecSyncError) -> DeviceHome {
        var st = stat()
        try Syscall.retrying("stat", path: stateDir, "cannot read") { stat(stateDir, &st) }
        var fs = statvfs()
        try Syscall.retrying("statvfs", path: stateDir, "cannot read its file system") { statvfs(stateDir, &fs) }
        return DeviceHome(device: UInt64(st.st_dev), inode: UInt64(st.st_ino), fileSystem: String(UInt64(fs.f_fsid), radix: 16))
    }

    func deviceID(home: DeviceHome) throws(RecSyncError) -> String {
        if let id = try deviceID(home: home, minting: false) { return id }
        // Two processes starting at once in a copied workspace must agree on its new ID.
        return try withLock(purpose: "device ID", file: "device.lock", wait: true) { () throws(RecSyncError) -> String in
            return try deviceID(home: home, minting: true) ?? ""
        }
    }

    /// The saved ID if it belongs here; else, when `minting`, the ID adopted or made new.
    private func deviceID(home: DeviceHome, minting: Bool) throws(RecSyncError) -> String? {
        let path = "\(stateDir)/device"
        if let bytes = try FileIO.read(path, limit: 4096) {
            let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            let id = lines.first ?? ""
            let valid = !id.isEmpty && id.utf8.count <= 64 && id.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) || $0 == 45 })
            if valid, lines.count >= 2 {
                let saved = DeviceHome(line: lines[1])
                if saved == home { return id }
                if !minting { return nil }
                if let saved, saved.isSameDirectory(as: home) {
                    try FileIO.writeAtomically(path, Array("\(id)\n\(home.line)\n".utf8))
                    return id
                }
            }
            // Made by the first release, which noted no home: adopt it here.
            if !minting { return nil }
            if valid && lines.count == 1 {
                try FileIO.writeAtomically(path, Array("\(id)\n\(home.line)\n".utf8))
                return id
            }
        }
        if !minting { return nil }
        let id = UUID().uuidString.lowercased()
        try FileIO.writeAtomically(path, Array("\(id)\n\(home.line)\n".utf8))
        return id
    }

    package func loadToken(_ path: String) throws(RecSyncError) -> ServerChangeToken? {
        guard let bytes = try FileIO.read(path) else { return nil }
        let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : ServerChangeToken(rawValue: text)
    }

    package func saveToken(_ token: ServerChangeToken?, at path: String) throws(RecSyncError) {
        if let token {
            try FileIO.writeAtomically(path, Array((token.rawValue + "\n").utf8))
        } else {
            var batch = WriteBatch()
            batch.remove(path)
            try batch.commit()
        }
    }

    /// Notes that this workspace pulled from or pushed to its store at `time` (milliseconds
    /// since the epoch): what `status` measures "last contact with the store" from.
    package func recordContact(at time: Int64) throws(RecSyncError) {
        try FileIO.writeAtomically(lastContactPath, Array("\(time)\n".utf8))
    }

    /// When this workspace last pulled from or pushed to its store; nil if it never did (or
    /// was made by a version that did not note it).
    package func lastContact() throws(RecSyncError) -> Int64? {
        guard let bytes = try FileIO.read(lastContactPath, limit: 4096) else { return nil }
        let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let time = Int64(text), time >= 0 else {
            throw .malformed(
                MalformedInput(path: relative(lastContactPath), detail: "not a time in milliseconds; the next pull or push writes it again"))
        }
        return time
    }

    /// Zones that have a zone token, i.e. that a pull has brought in.
    package func zonesWithTokens() -> [ZoneID] {
        var zones: [ZoneID] = []
        for scope in [DatabaseScope.private, .shared] {
            let dir = "\(stateDir)/tokens/\(scope.rawValue)"
            for owner in FileIO.list(dir) {
                for file in FileIO.list("\(dir)/\(owner)") where file.hasSuffix(".token") {
                    if let o = NameEscaping.unescape(owner), let z = NameEscaping.unescape(String(file.dropLast(6))),
                        let id = try? ZoneID(zoneName: z, ownerName: o)
                    {
                        zones.append(id)
                    }
                }
            }
        }
        return zones.sorted()
    }

    /// Whether a zone has no sidecar at all, so no record in it was ever synced (a zone
    /// being cloned). Reads one directory entry, not the whole directory.
    package func holdsNoSyncedRecord(_ zone: ZoneID) -> Bool {
        let fd = FileIO.openDirectory("\(zoneDirectory(zone))/.system")
        guard fd >= 0 else { return true }
        guard let dir = fdopendir(fd) else {
            close(fd)
            return true
        }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let name = FileIO.entryName(entry)
            if !name.hasPrefix(".") { return false }
        }
        return true
    }

    // MARK: Crash leftovers

    /// Where a running write batch lists the directories it has temp files in and the files
    /// it creates in place.
    package var tempRegistry: String { "\(stateDir)/writing" }

    /// The registry of a zone's batches: zones are pulled side by side, each batch lists its own.
    package func tempRegistry(_ zone: ZoneID) -> String {
        "\(tempRegistry)-\(ContentHash.of(Array(zoneStateKey(zone).utf8)).prefix(16))"
    }

    /// A write batch for record files and sidecars (see `removeStaleTemporaryFiles`).
    package func recordBatch(zone: ZoneID? = nil) throws(RecSyncError) -> WriteBatch {
        let readOnly = try zone.map { zone throws(RecSyncError) in try isReadOnly(zone) } ?? false
        return WriteBatch(registry: zone.map(tempRegistry) ?? tempRegistry, userFileMode: readOnly ? 0o444 : 0o644)
    }

    /// The registries an interrupted sync left.
    package var leftoverRegistries: [String] {
        FileIO.list(stateDir).filter { $0 == "writing" || $0.hasPrefix("writing-") }.map { "\(stateDir)/\($0)" }
    }

    /// Removes the temp files a killed sync left beside their targets (`.tmp-<pid>-<n>`): in the
    /// directories the interrupted batch listed, and in the sync state; and takes back the files
    /// it created in place (see `WriteBatch.commit`). Call it holding the lock: then no other
    /// sync is writing any. Cost follows the leftovers, not the workspace.
    /// Returns the files it had to keep aside in lost+found (ones that are not what was written).
    @discardableResult
    /// A registry that cannot be read is an error, and stays: what its batch created cannot be
    /// told from the user's files without it.
    package func removeStaleTemporaryFiles() throws(RecSyncError) -> [String] {
        removeStaleAssetTemporaryFiles()
        // A journaled batch keeps no registry: its journal redoes it, and its temp files are
        // looked for in every zone directory.
        let journaled = try recoverPageJournals()
        var dirs = [stateDir]
        var keptAside: [String] = []
        let registries = leftoverRegistries
        var unfinished = Set<String>()
        for registry in registries {
            // An entry that is not a plain file is no list a batch wrote: it stays for the user
            // (doctor names it), and does not stop the clean-up of the others.
            if let info = try FileIO.info(registry), !info.isRegular {
                unfinished.insert(registry)
                continue
            }
            guard let listed = try FileIO.read(registry) else { continue }  // gone meanwhile
            // A batch was interrupted: look where it said, and in every zone directory too,
            // since the list of directories is only as durable as the batch that wrote it.
            let contents = CrashRegistry.decode(listed)
            for creation in contents.creations where creation.path.hasPrefix(root + "/") {
                // One that cannot be looked at now is left, with its registry, for the next
                // command, as a restore that cannot be put back is; the others go on.
                do {
                    if let kept = try takeBack(creation.path, hash: creation.hash, machineOwned: creation.machineOwned) { keptAside.append(kept) }
                } catch {
                    unfinished.insert(registry)
                }
            }
            for restore in contents.restores where restore.path.hasPrefix(root + "/") {
                if !putBack(restore) { unfinished.insert(registry) }
            }
            dirs += contents.directories.filter { $0.hasPrefix(root + "/") }
        }
        if !registries.isEmpty || journaled {
            for zone in localZones().zones {
                dirs.append(zoneDirectory(zone))
                dirs.append("\(zoneDirectory(zone))/.system")
            }
            // A registry whose files could not all be put back stays, for the next command.
            for registry in registries where !unfinished.contains(registry) { FileIO.unlinkIfPresent(registry) }
        }
        while let dir = dirs.popLast() {
            for name in FileIO.list(dir) {
                let path = "\(dir)/\(name)"
                if name.hasPrefix("."), name.contains(TempFile.marker) {
                    FileIO.unlinkIfPresent(path)
                } else if dir.hasPrefix(stateDir), !["mirror", "lost+found"].contains(name), FileIO.isDirectory(path), try !FileIO.isSymlink(path) {
                    dirs.append(path)
                }
            }
        }
        return keptAside
    }

    /// Puts back what a machine-owned file held before an interrupted batch overwrote it in
    /// place (it may be cut off half-way), durably. One that is gone stays gone, and one that
    /// is no longer a plain file of one name is left alone. False when it could not be written.
    func putBack(_ restore: CrashRegistry.Restore) -> Bool {
        let (dir, name) = FileIO.split(restore.path)
        do throws(RecSyncError) {
            guard let directory = try FileIO.openDirectory(dir, create: false) else { return true }
            defer { close(directory.fd) }
            // Gone, or not a plain file of one name any more: nothing is written through it.
            guard let info = try FileIO.info(in: directory.fd, name), info.isRegular, info.linkCount == 1 else { return true }
            try WriteBatch.overwrite(in: directory.fd, name, path: restore.path, with: restore.bytes, sync: true)
            return true
        } catch {
            return false
        }
    }

    /// Undoes one in-place creation of an interrupted batch. A file holding exactly what the
    /// batch meant to write (or nothing: it was cut off) goes: the store still has it and the
    /// next pull writes it again. A sidecar that does not parse was cut off; one that does was
    /// there before (the batch fell back to a rename). A record file holding anything else may be someone's edit
    /// made since, so it is moved to lost+found; returns where it went.
    func takeBack(_ path: String, hash: String, machineOwned: Bool) throws(RecSyncError) -> String? {
        guard let info = try FileIO.info(path), !info.isDirectory, !info.isSymlink else { return nil }
        let bytes = (try? FileIO.read(path)) ?? nil
        if info.stamp.size == 0 || bytes.map({ ContentHash.of($0) == hash }) == true {
            FileIO.unlinkIfPresent(path)
            return nil
        }
        if machineOwned {
            // A sidecar that was there before (a type note) stays; one cut off half-way goes.
            if bytes.map({ (try? WorkspaceEncoding.decodeSystemFields($0)) == nil }) ?? true { FileIO.unlinkIfPresent(path) }
            return nil
        }
        let target = "\(stateDir)/lost+found/interrupted-\(getpid())/\(rootRelative(path))"
        do {
            try FileIO.move(path, to: target)
            return target
        } catch {
            return nil  // left where it is: it then reads as a local change, which loses nothing
        }
    }

    // MARK: Lock

    /// Takes the workspace lock for one sync. It is released when the returned object goes
    /// away or the process dies (an advisory `flock`, so a crashed process leaves no stale lock).
    ///
    /// `file` names another lock in `.recsync/` (`watch.lock`: one process delivers a
    /// workspace's notifications at a time).
    /// With `wait`, blocks until the lock is free instead of failing (for short edits).
    package func lock(purpose: String, file: String = "lock", wait: Bool = false) throws(RecSyncError) -> WorkspaceLock {
        let path = "\(stateDir)/\(file)"
        guard let fd = try FileIO.openRegularFile(path, flags: O_RDWR | O_CREAT) else {
            throw .fileSystem(path: path, message: "cannot open the lock file")
        }
        var locked = flock(fd, LOCK_EX | LOCK_NB) == 0
        if !locked && wait, case .success = Syscall.attempt({ flock(fd, LOCK_EX) }) { locked = true }
        if !locked {
            let holder = (try? FileIO.read(path)).flatMap { $0.map { String(decoding: $0, as: UTF8.self) } } ?? "unknown"
            Glibc.close(fd)
            throw .workspaceLocked(holder.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        let note = Array("pid \(getpid()): \(purpose)\n".utf8)
        _ = ftruncate(fd, 0)
        _ = note.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        return WorkspaceLock(fd: fd)
    }
}

extension Workspace {
    /// Runs `body` holding a workspace lock (`lock(purpose:file:wait:)`), released when it returns.
    package func withLock<T>(purpose: String, file: String = "lock", wait: Bool = false, _ body: () throws(RecSyncError) -> T) throws(RecSyncError)
        -> T
    {
        let lock = try lock(purpose: purpose, file: file, wait: wait)
        defer { withExtendedLifetime(lock) {} }
        return try body()
    }

    /// Runs `body` holding a workspace lock (`lock(purpose:file:wait:)`), released when it returns.
    package func withLock<T>(purpose: String, file: String = "lock", wait: Bool = false, _ body: () async throws(RecSyncError) -> T)
        async throws(RecSyncError) -> T
    {
        let lock = try lock(purpose: purpose, file: file, wait: wait)
        defer { withExtendedLifetime(lock) {} }
        return try await body()
    }
}

/// The held workspace lock; released on `deinit`.
public final class WorkspaceLock: Sendable {
    let fd: Int32
    init(fd: Int32) { self.fd = fd }
    deinit {
        flock(fd, LOCK_UN)
        Glibc.close(fd)
    }
}

/// Where a workspace's `.recsync/` is (`Workspace.deviceID`): the directory's inode, and the
/// device number and ID (`statvfs` f_fsid) of its file system.
struct DeviceHome: Sendable, Hashable {
    var device: UInt64
    var inode: UInt64
    var fileSystem: String

    /// As the device file notes it: `home <device>:<inode> fs <ID>`.
    var line: String { "home \(device):\(inode) fs \(fileSystem)" }

    init(device: UInt64, inode: UInt64, fileSystem: String) {
        self.device = device
        self.inode = inode
        self.fileSystem = fileSystem
    }

    /// A noted home; the file system ID is empty in a note made before it was kept.
    init?(line: String) {
        let words = line.split(separator: " ")
        guard words.count == 2 || words.count == 4, words[0] == "home" else { return nil }
        let numbers = words[1].split(separator: ":")
        guard numbers.count == 2, let d = UInt64(numbers[0]), let i = UInt64(numbers[1]) else { return nil }
        if words.count == 4 { guard words[2] == "fs" else { return nil } }
        self.init(device: d, inode: i, fileSystem: words.count == 4 ? String(words[3]) : "")
    }

    /// The same directory: the same inode on the same file system, which a device number
    /// alone does not name for long (it is handed out at mount time for overlay, NFS, btrfs,
    /// FUSE, device-mapper volumes). A copy has another inode; a snapshot (btrfs, ZFS)
    /// keeps the inode but is another file system, with another ID.
    func isSameDirectory(as other: DeviceHome) -> Bool {
        guard inode == other.inode else { return false }
        if device == other.device { return fileSystem.isEmpty || other.fileSystem.isEmpty || fileSystem == other.fileSystem }
        return !fileSystem.isEmpty && fileSystem != String(repeating: "0", count: fileSystem.count) && fileSystem == other.fileSystem
    }
}
