import Foundation
import RecSyncModel

// The per-zone and per-scope sync state a pull and a push keep beside the records, under
// `.recsync/tokens/`: typed here, so the engine never reaches for these files by path.

/// The names a full fetch of a zone has delivered so far, kept on disk so that a full fetch
/// that was killed still knows, when it completes, which local records the store lacks.
/// Appended to page by page (a line a crash cut short only names a record to look up again).
public struct RefetchLog: Sendable {
    public let path: String
    static let fresh = "#fresh"

    /// Starts a full fetch. `fresh`: the zone holds no synced record, so once the fetch is
    /// done there is nothing it could have missed (as for a clone).
    public func start(fresh: Bool) throws(RecSyncError) {
        try FileIO.writeAtomically(path, fresh ? Array("\(Self.fresh)\n".utf8) : [])
    }

    public func add(_ names: [String]) throws(RecSyncError) {
        guard isUnderWay, !names.isEmpty else { return }
        var out: [UInt8] = []
        for n in names { out += Array(n.utf8) + [10] }
        try FileIO.appendDurably(path, out)
    }

    /// The names delivered, if a full fetch is under way; nil names for a fresh zone.
    public func finishing() throws(RecSyncError) -> (names: Set<String>?, done: Bool) {
        guard let bytes = try FileIO.read(path) else { return (nil, false) }
        if bytes.starts(with: Array("\(Self.fresh)\n".utf8)) { return (nil, true) }
        return (Set(bytes.split(separator: 10).map { String(decoding: $0, as: UTF8.self) }), true)
    }

    public func end() throws(RecSyncError) {
        try FileIO.remove(path)
    }

    /// Whether a full fetch is under way.
    public var isUnderWay: Bool { FileIO.info(path) != nil }
}

/// Records of a zone that the store delivered as failures (a stored copy it cannot decode).
///
/// The zone token moves past them, so they are kept here (`.recsync/tokens/…/<zone>.retry`)
/// and fetched by ID on every pull until they decode or are deleted; `status` lists them as
/// problems. One line per record: its escaped name, a tab, why it failed.
public struct RetryList: Sendable, Equatable {
    public let path: String
    /// Record name → why the store could not deliver it.
    public var entries: [String: String]

    public static func load(_ ws: Workspace, zone: ZoneID) throws(RecSyncError) -> RetryList {
        let path = ws.retryPath(zone)
        var entries: [String: String] = [:]
        for line in try FileIO.read(path)?.split(separator: 10) ?? [] {
            let parts = line.split(separator: 9, maxSplits: 1, omittingEmptySubsequences: false)
            // A line a crash cut short names nothing readable: its record fails again if it still fails.
            guard let name = NameEscaping.unescape(String(decoding: parts[0], as: UTF8.self)), !name.isEmpty else { continue }
            entries[name] = parts.count > 1 ? String(decoding: parts[1], as: UTF8.self) : ""
        }
        return RetryList(path: path, entries: entries)
    }

    /// Writes the list durably, before the zone token that moves past its records; an empty
    /// list is removed.
    public func save() throws(RecSyncError) {
        guard !entries.isEmpty else {
            try FileIO.remove(path)
            return
        }
        var out: [UInt8] = []
        for (name, why) in entries.sorted(by: { $0.key < $1.key }) {
            let oneLine = String(why.map { $0 == "\n" || $0 == "\t" || $0 == "\r" ? " " : $0 })
            out += Array(NameEscaping.escape(name).utf8) + [9] + Array(oneLine.utf8) + [10]
        }
        try FileIO.writeAtomically(path, out)
    }

    /// The status lines of the records listed, named by their files.
    public func problems(_ ws: Workspace, zone: ZoneID) -> [FileProblem] {
        let dir = ws.relative(ws.zoneDirectory(zone))
        return entries.sorted(by: { $0.key < $1.key }).map { name, why in
            FileProblem(path: "\(dir)/\(Workspace.fileName(for: name))", message: "the store's copy of this record cannot be read (\(why)); every pull fetches it again")
        }
    }
}


extension Workspace {
    /// The zone's full-fetch log (see `RefetchLog`).
    public func refetchLog(_ zone: ZoneID) -> RefetchLog { RefetchLog(path: refetchPath(zone)) }

    // MARK: A pull that stopped between zone tokens and the scope token

    /// Whether a pull of `scope` saved zone tokens and then stopped before its scope token.
    public func pullWasInterrupted(_ scope: DatabaseScope) -> Bool { FileIO.info(interruptedPullPath(scope)) != nil }

    /// Notes, durably, that zone tokens of `scope` are about to move ahead of its scope token.
    public func notePullUnderWay(_ scope: DatabaseScope) throws(RecSyncError) {
        try FileIO.writeAtomically(interruptedPullPath(scope), Array("pulling\n".utf8))
    }

    /// The scope token caught up.
    public func clearPullUnderWay(_ scope: DatabaseScope) throws(RecSyncError) {
        try FileIO.remove(interruptedPullPath(scope))
    }

    // MARK: Records pushed since the zone was last pulled

    /// Names of records this workspace saved to the zone since its zone token (the next pull
    /// looks them up by name); nil when there are none.
    public func pushedRecordNames(_ zone: ZoneID) throws(RecSyncError) -> Set<String>? {
        guard let bytes = try FileIO.read(pushedPath(zone)) else { return nil }
        return Set(bytes.split(separator: 10).map { String(decoding: $0, as: UTF8.self) })
    }

    /// Adds record names to the zone's pushed list, as part of `batch` (they land with it).
    public func notePushed(_ names: [String], in zone: ZoneID, batch: inout WriteBatch) throws(RecSyncError) {
        let existing = try FileIO.read(pushedPath(zone)) ?? []
        batch.write(pushedPath(zone), existing + names.flatMap { Array($0.utf8) + [10] })
    }

    /// The pushed records were looked up.
    public func clearPushed(_ zone: ZoneID) throws(RecSyncError) {
        try FileIO.remove(pushedPath(zone))
    }

    // MARK: The page a pull is applying

    /// Notes, durably, the records of a page about to land before its token.
    public func noteApplying(_ names: [String], in zone: ZoneID) throws(RecSyncError) {
        try FileIO.writeAtomically(applyingPath(zone), names.flatMap { Array($0.utf8) + [10] })
    }

    /// The page's token is saved.
    public func clearApplying(_ zone: ZoneID) throws(RecSyncError) {
        try FileIO.remove(applyingPath(zone))
    }

    /// A page a killed pull was applying: its names join the pushed list (looked up by name
    /// at the end of the next pull of the zone), and the note goes.
    public func adoptInterruptedPage(_ zone: ZoneID) throws(RecSyncError) {
        guard let names = try FileIO.read(applyingPath(zone)) else { return }
        let existing = try FileIO.read(pushedPath(zone)) ?? []
        try FileIO.writeAtomically(pushedPath(zone), existing + names + (names.last == 10 || names.isEmpty ? [] : [10]))
        try FileIO.remove(applyingPath(zone))
    }

    /// Whether the zone must be looked at by the next pull even if the store's database
    /// changes do not name it: records pushed or being applied, or records to fetch again.
    public func zoneNeedsALook(_ zone: ZoneID) -> Bool {
        [pushedPath(zone), retryPath(zone), applyingPath(zone)].contains { FileIO.info($0) != nil }
    }

    // MARK: Uploading a zone again after an encrypted-data reset

    /// Marks the zone to be uploaded again (its data stays).
    public func markAwaitsReupload(_ zone: ZoneID) throws(RecSyncError) {
        try FileIO.writeAtomically(reuploadMarker(zone), Array("encryptedDataReset\n".utf8))
    }

    /// The zone was uploaded again.
    public func clearAwaitsReupload(_ zone: ZoneID) throws(RecSyncError) {
        try FileIO.remove(reuploadMarker(zone))
    }

    // MARK: The zone's directory

    /// Whether the zone has a directory here (a link to one does not count).
    public func hasZoneDirectory(_ zone: ZoneID) -> Bool { FileIO.isDirectory(zoneDirectory(zone)) }

    /// Whether the zone's path here is a symbolic link (never followed, never recsync's).
    public func zoneDirectoryIsLink(_ zone: ZoneID) -> Bool { FileIO.isSymlink(zoneDirectory(zone)) }

    /// Makes the zone's directory; returns whether it was made now.
    public func makeZoneDirectory(_ zone: ZoneID) throws(RecSyncError) -> Bool {
        let made = !hasZoneDirectory(zone)
        try FileIO.makeDirectories(zoneDirectory(zone))
        return made
    }

    /// Removes the zone's directory (or the link in its place) and makes that durable.
    public func removeZoneDirectory(_ zone: ZoneID) throws(RecSyncError) {
        let dir = zoneDirectory(zone)
        try FileIO.remove(dir)
        try FileIO.syncDirectory((dir as NSString).deletingLastPathComponent)
    }

    /// The names in the zone's directory and in its `.system` (sidecars), unsorted.
    public func zoneFileNames(_ zone: ZoneID) -> (files: Set<String>, sidecars: Set<String>) {
        let dir = zoneDirectory(zone)
        return (Set(FileIO.listUnsorted(dir)), Set(FileIO.listUnsorted("\(dir)/.system")))
    }

    /// Removes the zone's directory if it holds nothing.
    public func removeZoneDirectoryIfEmpty(_ zone: ZoneID) throws(RecSyncError) {
        if FileIO.list(zoneDirectory(zone)).isEmpty { try FileIO.remove(zoneDirectory(zone)) }
    }

    // MARK: A zone that went away

    /// Forgets everything kept about a zone besides its files: conflicts, index, token and the
    /// notes above.
    public func forgetZoneState(_ zone: ZoneID) throws(RecSyncError) {
        try FileIO.remove(conflictDirectory(zone))
        try ZoneIndex.remove(self, zone: zone)
        for path in [refetchPath(zone), pushedPath(zone), retryPath(zone), applyingPath(zone), unfetchedAssetsPath(zone)] { try FileIO.remove(path) }
        try saveToken(nil, at: zoneTokenPath(zone))
    }

    // MARK: The note of a push under way

    /// The note a push wrote before sending (see the engine's `PendingPush`); nil if none.
    public func pendingPushNote() throws(RecSyncError) -> [UInt8]? { try FileIO.read(pendingPushPath) }

    /// Writes the note, durably, before the push sends anything.
    public func writePendingPushNote(_ bytes: [UInt8]) throws(RecSyncError) { try FileIO.writeAtomically(pendingPushPath, bytes) }

    /// The push's sidecars say what landed: the note goes.
    public func clearPendingPushNote() throws(RecSyncError) { try FileIO.remove(pendingPushPath) }
}
