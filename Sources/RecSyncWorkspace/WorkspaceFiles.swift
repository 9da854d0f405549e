import Glibc
import RecSyncModel
import RecSyncSystem

/// What a sync engine asks of the workspace's files, in the workspace's terms: the engine
/// decides, the workspace touches the file system (`scripts/check-layers.sh` keeps the engine
/// free of file calls).
extension Workspace {
    /// The stamp of a record's file; nil when there is none.
    package func recordFileStamp(_ id: RecordID) throws(RecSyncError) -> FileStamp? {
        try FileIO.stamp(recordPath(id))
    }

    /// The stamp of a record's sidecar (its system fields); nil when there is none.
    package func sidecarStamp(_ id: RecordID) throws(RecSyncError) -> FileStamp? {
        try FileIO.stamp(sidecarPath(id))
    }

    /// The stamp of the file that holds an asset field; nil when there is none.
    package func assetFileStamp(_ id: RecordID, field: String) throws(RecSyncError) -> FileStamp? {
        try FileIO.stamp(assetPath(id, field: field))
    }

    /// The names of the records whose files are in the zone's directory, sorted (what is on
    /// disk, synced or not; for completions and listings).
    package func recordNamesOnDisk(_ zone: ZoneID) throws(RecSyncError) -> [String] {
        try FileIO.entries(zoneDirectory(zone)).names.sorted().compactMap { Self.recordName(forFile: $0) }
    }

    /// Whether the record has an asset directory.
    package func hasAssetDirectory(_ id: RecordID) -> Bool {
        FileIO.isDirectory(assetDirectory(id))
    }

    /// Whether the zone has a note of assets an earlier pull did not fetch.
    package func hasUnfetchedAssetsNote(_ zone: ZoneID) throws(RecSyncError) -> Bool {
        try FileIO.info(unfetchedAssetsPath(zone)) != nil
    }

    /// Removes a temporary file an operation no longer places (best effort: a leftover is
    /// what `removeStaleTemporaryFiles` clears up).
    package func discardTemporaryFile(_ path: String) {
        FileIO.unlinkIfPresent(path)
    }

    /// Moves a file out of the way (to `lost+found`), making the target's directories.
    package func moveAside(_ path: String, to target: String) throws(RecSyncError) {
        try FileIO.move(path, to: target)
    }

    /// A new temporary file in a record's asset directory, created under the workspace root
    /// without following links (a `.assets` directory swapped for a link is refused), handed
    /// to `fill` open for writing; its path, to place with a batch. No file is left behind
    /// when `fill` fails.
    package func newAssetTemporary(
        _ id: RecordID, _ fill: (_ fd: Int32, _ path: String) async throws(RecSyncError) -> Void
    ) async throws(RecSyncError) -> String {
        let temp = try assetTemporaryPath(id)
        guard let fd = try FileIO.openRegularFile(temp, flags: O_WRONLY | O_CREAT | O_EXCL) else {
            throw .fileSystem(path: temp, message: "cannot create the asset file: its directory went away meanwhile; run the command again")
        }
        defer { close(fd) }
        do { try await fill(fd, temp) } catch {
            FileIO.unlinkIfPresent(temp)
            throw error
        }
        return temp
    }

    /// Opens the file of an asset field for reading, under the workspace root without
    /// following links, and hands it to `read`; nil when there is no such file.
    package func readingAssetFile<T>(
        _ id: RecordID, field: String, _ read: (_ fd: Int32, _ path: String) async throws(RecSyncError) -> T
    ) async throws(RecSyncError) -> T? {
        let path = assetPath(id, field: field)
        guard let fd = try FileIO.openRegularFile(path, flags: O_RDONLY) else { return nil }
        defer { close(fd) }
        return try await read(fd, path)
    }
}

/// A workspace keeps its clients' state (an encrypting store's pins) in `.recsync/`.
extension Workspace: ClientStateStore {
    public func readState(_ name: String) throws(RecSyncError) -> [UInt8]? {
        try DirectoryClientState(directory: stateDir).readState(try clientStateName(name))
    }

    public func writeState(_ name: String, _ bytes: [UInt8]) throws(RecSyncError) {
        try DirectoryClientState(directory: stateDir).writeState(try clientStateName(name), bytes)
    }

    /// A client's name for its state: lower-case letters, digits and '-', and none of the
    /// workspace's own files (its config, lock, tokens, write lists…), which a client must not
    /// overwrite.
    private func clientStateName(_ name: String) throws(RecSyncError) -> String {
        let own: Set<String> = [
            "config", "lock", "watch.lock", "subscriptions.lock", "device.lock", "device", "pending-push", "last-contact", "mirror",
            "tokens", "index", "conflicts", "lost+found", "subscriptions", "writing", "sync-state",
        ]
        let allowed = name.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D }
        guard allowed, let first = name.utf8.first, first >= 0x61 && first <= 0x7A, !own.contains(name), !name.hasPrefix("writing") else {
            throw .invalidArguments(
                "'\(name)' cannot name a client's state in a workspace (lower-case letters, digits and '-', not one of its own files)")
        }
        return name
    }

    public func describeState(_ name: String) -> String { "\(stateDir)/\(name)" }
}
