import Foundation
import RecSyncModel
import RecSyncSystem

// The per-zone and per-scope sync state a pull and a push keep beside the records, under
// `.recsync/tokens/`: typed here, so the engine never reaches for these files by path.

/// The names a full fetch of a zone has delivered so far, kept on disk so that a full fetch
/// that was killed still knows, when it completes, which local records the store lacks.
/// Appended to page by page (a line a crash cut short only names a record to look up again).
package struct RefetchLog: Sendable {
    package let path: String
    static let fresh = "#fresh"

    /// Starts a full fetch. `fresh`: the zone holds no synced record, so once the fetch is
    /// done there is nothing it could have missed (as for a clone).
    package func start(fresh: Bool) throws(RecSyncError) {
        try FileIO.writeAtomically(path, fresh ? Array("\(Self.fresh)\n".utf8) : [])
    }

    package func add(_ names: [String]) throws(RecSyncError) {
        guard try isUnderWay, !names.isEmpty else { return }
        var out: [UInt8] = []
        for n in names { out += Array(n.utf8) + [10] }
        try FileIO.appendDurably(path, out)
    }

    /// The names delivered, if a full fetch is under way; nil names for a fresh zone.
    package func finishing() throws(RecSyncError) -> (names: Set<String>?, done: Bool) {
        guard let bytes = try FileIO.read(path) else { return (nil, false) }
        if bytes.starts(with: Array("\(Self.fresh)\n".utf8)) { return (nil, true) }
        return (Set(bytes.split(separator: 10).map { String(decoding: $0, as: UTF8.self) }), true)
    }

    package func end() throws(RecSyncError) {
        try FileIO.remove(path)
    }

    /// Whether a full fetch is under way.
    package var isUnderWay: Bool {
        get throws(RecSyncError) { try FileIO.info(path) != nil }
    }
}

/// Records of a zone that the store delivered as failures: a stored copy it cannot read, or
/// one whose assets it cannot deliver.
///
/// The zone token moves past them, so they are kept here (`.recsync/tokens/…/<zone>.retry`);
/// `status` lists them as problems. A record whose stored bytes are at fault names that
/// version (`Entry.unreadableTag`): it reads the same until it changes on the store, and then
/// the zone's changes name it, so it is not fetched by ID. Any other is fetched by ID on
/// every pull until it arrives or is deleted.
///
/// The file is a journal, one line per change (names escaped; a later line about a name
/// overrides an earlier one), so that a page's changes cost that page's lines, appended
/// durably before its token; it is rewritten only when the lines it no longer needs
/// outnumber the entries (`compact`):
/// - `name⇥why`: fetched by ID on every pull (the one kind of line earlier versions wrote);
/// - `name⇥tag⇥why`: waits for the version `tag` to change;
/// - `⇥name⇥`: off the list.
/// Earlier versions read the first two (the tag as part of the why) and skip the third (its
/// name is empty): they fetch by ID every record listed, as they always did. A line a crash
/// cut short, at the end, is read as the first kind or skipped: its page's token was not
/// saved, so that page is fetched again either way.
///
/// A list on which every record waits gives the zone no reason for a look on the next pull
/// (`Workspace.zoneNeedsALook`): `compact` notes the file's stamp then, and any later write
/// to the list, by whatever version, changes the stamp.
package struct RetryList: Sendable {
    /// Why a record is listed, and whether it waits for a change on the store.
    package struct Entry: Sendable, Hashable {
        /// Why the store could not deliver the record, on one line.
        package let why: String
        /// The change tag of the stored version that cannot be read, when the fault is in its
        /// bytes (`RecordResult.unreadableChangeTag`); nil: the record is fetched by ID on
        /// every pull (its assets may arrive, a missing object come back, a zone key come).
        package let unreadableTag: String?

        package init(why: String, unreadableTag: String? = nil) {
            let breaksLine = { (s: String) in s.utf8.contains { $0 == 10 || $0 == 9 || $0 == 13 } }
            self.why = breaksLine(why) ? String(why.map { $0 == "\n" || $0 == "\t" || $0 == "\r" ? " " : $0 }) : why
            self.unreadableTag = unreadableTag.flatMap { $0.isEmpty || breaksLine($0) ? nil : $0 }
        }

        /// As read from a line of the file, which holds neither line break nor tab.
        fileprivate init(line why: String, unreadableTag: String?) {
            self.why = why
            self.unreadableTag = unreadableTag.flatMap { $0.isEmpty ? nil : $0 }
        }
    }

    package let path: String
    /// The note of a list on which every record waits (`Workspace.retryWaitsPath`).
    let waitsPath: String
    /// Record name → why it is listed.
    package private(set) var entries: [String: Entry]
    /// The lines in the file, as loaded and appended since.
    private var lines: Int
    /// Names changed since the last `save`.
    private var changed: Set<String> = []

    package static func load(_ ws: Workspace, zone: ZoneID) throws(RecSyncError) -> RetryList {
        let path = ws.retryPath(zone)
        var entries: [String: Entry] = [:]
        var lines = 0
        let bytes = try FileIO.read(path) ?? []
        entries.reserveCapacity(bytes.count / 64)
        bytes.withUnsafeBufferPointer { buf in
            ZoneIndex.forEachLine(buf, complete: false) { start, end in
                guard start < end else { return }
                lines += 1
                // The first two tabs, by hand: a list of a hundred thousand records is read on
                // every pull of its zone.
                var (first, second) = (end, end)
                var j = start
                while j < end && second == end {
                    if buf[j] == 9 { if first == end { first = j } else { second = j } }
                    j += 1
                }
                func text(_ from: Int, _ to: Int) -> String { String(decoding: UnsafeBufferPointer(rebasing: buf[from..<to]), as: UTF8.self) }
                guard first < end else { return }  // cut short before its first tab
                if first == start {
                    guard second == end - 1, let name = NameEscaping.unescape(text(first + 1, second)) else { return }
                    entries[name] = nil
                } else if let name = NameEscaping.unescape(text(start, first)), !name.isEmpty {
                    entries[name] =
                        second < end
                        ? Entry(line: text(second + 1, end), unreadableTag: text(first + 1, second))
                        : Entry(line: text(first + 1, end), unreadableTag: nil)
                }
            }
        }
        return RetryList(path: path, waitsPath: ws.retryWaitsPath(zone), entries: entries, lines: lines)
    }

    /// The entry of a record; setting one notes the change for the next `save`.
    package subscript(name: String) -> Entry? {
        get { entries[name] }
        set {
            guard entries[name] != newValue else { return }
            entries[name] = newValue
            changed.insert(name)
        }
    }

    /// The records to fetch by ID: those that do not wait for a change on the store, or
    /// with `all` every one (when the zone is fetched whole, which names only what exists).
    package func namesToFetch(all: Bool) -> [String] {
        entries.filter { all || $0.value.unreadableTag == nil }.keys.sorted()
    }

    /// Appends the changes made since the last save to the file, durably: before the zone
    /// token that moves past their records.
    package mutating func save() throws(RecSyncError) {
        guard !changed.isEmpty else { return }
        if try FileIO.info(path) == nil {
            try rewrite()
            return
        }
        var out: [UInt8] = []
        for name in changed.sorted() { out += Self.line(name, entries[name]) }
        try FileIO.appendDurably(path, out)
        lines += changed.count
        changed = []
    }

    /// Saves, then rewrites the file with the entries alone if the lines it no longer needs
    /// outnumber them (a rewrite is paid for by as many appended lines), or removes it if
    /// the list is empty; notes whether every record on it waits for a change on the store.
    package mutating func compact() throws(RecSyncError) {
        try save()
        if entries.isEmpty ? lines > 0 : lines > 2 * entries.count { try rewrite() }
        guard !entries.isEmpty, entries.values.allSatisfy({ $0.unreadableTag != nil }), let info = try FileIO.info(path) else {
            try FileIO.remove(waitsPath)
            return
        }
        let note = Self.note(info.stamp)
        if try FileIO.read(waitsPath) != note { try FileIO.writeAtomically(waitsPath, note) }
    }

    static func note(_ stamp: FileStamp) -> [UInt8] { Array("\(stamp.size) \(stamp.mtimeNanos) \(stamp.inode)\n".utf8) }

    private mutating func rewrite() throws(RecSyncError) {
        changed = []
        lines = entries.count
        guard !entries.isEmpty else {
            try FileIO.remove(path)
            return
        }
        var out: [UInt8] = []
        for (name, entry) in entries.sorted(by: { $0.key < $1.key }) { out += Self.line(name, entry) }
        try FileIO.writeAtomically(path, out)
    }

    private static func line(_ name: String, _ entry: Entry?) -> [UInt8] {
        let escaped = NameEscaping.escape(name)
        guard let entry else { return Array("\t\(escaped)\t\n".utf8) }
        guard let tag = entry.unreadableTag else { return Array("\(escaped)\t\(entry.why)\n".utf8) }
        return Array("\(escaped)\t\(tag)\t\(entry.why)\n".utf8)
    }

    /// The status lines of the records listed, named by their files.
    package func problems(_ ws: Workspace, zone: ZoneID) -> [FileProblem] {
        let dir = ws.relative(ws.zoneDirectory(zone))
        return entries.sorted(by: { $0.key < $1.key }).map { name, entry in
            let when = entry.unreadableTag == nil ? "every pull fetches it again" : "a pull fetches it again once it changes on the store"
            return FileProblem(
                path: "\(dir)/\(Workspace.fileName(for: name))", message: "the store's copy of this record cannot be read (\(entry.why)); \(when)")
        }
    }
}

extension Workspace {
    /// The zone's full-fetch log (see `RefetchLog`).
    package func refetchLog(_ zone: ZoneID) -> RefetchLog { RefetchLog(path: refetchPath(zone)) }

    // MARK: A pull that stopped between zone tokens and the scope token

    /// Whether a pull of `scope` saved zone tokens and then stopped before its scope token.
    package func pullWasInterrupted(_ scope: DatabaseScope) throws(RecSyncError) -> Bool { try FileIO.info(interruptedPullPath(scope)) != nil }

    /// Notes, durably, that zone tokens of `scope` are about to move ahead of its scope token.
    package func notePullUnderWay(_ scope: DatabaseScope) throws(RecSyncError) {
        try FileIO.writeAtomically(interruptedPullPath(scope), Array("pulling\n".utf8))
    }

    /// The scope token caught up: this note and that of the zones it removed go.
    package func clearPullUnderWay(_ scope: DatabaseScope) throws(RecSyncError) {
        try FileIO.remove(removedZonesPath(scope))
        try FileIO.remove(interruptedPullPath(scope))
    }

    /// Zones a pull of `scope` removed ahead of its scope token, until that token is saved.
    func removedZonesPath(_ scope: DatabaseScope) -> String { "\(stateDir)/tokens/\(scope.rawValue).removed" }

    /// Notes, durably and before they go, zones a pull is about to remove ahead of its scope
    /// token: killed before that token, the next pull reads the feed from the old token, in
    /// which a zone that came back as it was (shared again with the same participants) is
    /// not named at all.
    package func noteRemovingZones(_ zones: [ZoneID], scope: DatabaseScope) throws(RecSyncError) {
        guard !zones.isEmpty else { return }
        var all = try zonesRemovedAheadOfScopeToken(scope)
        for zone in zones where !all.contains(zone) { all.append(zone) }
        let bytes: Data
        do { bytes = try JSONEncoder().encode(all) } catch { throw .internalError("cannot encode the zones a pull removes: \(error)") }
        try FileIO.writeAtomically(removedZonesPath(scope), Array(bytes))
    }

    /// The zones noted by `noteRemovingZones` since the scope token was last saved. A note that
    /// does not decode (cut short: impossible with an atomic write, or written by hand) names
    /// none.
    package func zonesRemovedAheadOfScopeToken(_ scope: DatabaseScope) throws(RecSyncError) -> [ZoneID] {
        guard let bytes = try FileIO.read(removedZonesPath(scope)) else { return [] }
        return (try? JSONDecoder().decode([ZoneID].self, from: Data(bytes))) ?? []
    }

    // MARK: Records pushed since the zone was last pulled

    /// Names of records this workspace saved to the zone since its zone token (the next pull
    /// looks them up by name); nil when there are none.
    package func pushedRecordNames(_ zone: ZoneID) throws(RecSyncError) -> Set<String>? {
        guard let bytes = try FileIO.read(pushedPath(zone)) else { return nil }
        return Set(bytes.split(separator: 10).map { String(decoding: $0, as: UTF8.self) })
    }

    /// Adds record names to the zone's pushed list, as part of `batch` (they land with it).
    package func notePushed(_ names: [String], in zone: ZoneID, batch: inout WriteBatch) throws(RecSyncError) {
        let existing = try FileIO.read(pushedPath(zone)) ?? []
        batch.write(pushedPath(zone), existing + names.flatMap { Array($0.utf8) + [10] })
    }

    /// The pushed records were looked up.
    package func clearPushed(_ zone: ZoneID) throws(RecSyncError) {
        try FileIO.remove(pushedPath(zone))
    }

    // MARK: The page a pull is applying

    /// Notes, durably, the records of a page about to land before its token.
    package func noteApplying(_ names: [String], in zone: ZoneID) throws(RecSyncError) {
        try FileIO.writeAtomically(applyingPath(zone), names.flatMap { Array($0.utf8) + [10] })
    }

    /// The page's token is saved.
    package func clearApplying(_ zone: ZoneID) throws(RecSyncError) {
        try FileIO.remove(applyingPath(zone))
    }

    /// The names of a page a killed pull was applying (none: no such page).
    package func interruptedPageNames(_ zone: ZoneID) throws(RecSyncError) -> Set<String> {
        guard let bytes = try FileIO.read(applyingPath(zone)) else { return [] }
        return Set(bytes.split(separator: 10).map { String(decoding: $0, as: UTF8.self) })
    }

    /// A page a killed pull was applying: its names join the pushed list (looked up by name
    /// at the end of the next pull of the zone), and the note goes.
    package func adoptInterruptedPage(_ zone: ZoneID) throws(RecSyncError) {
        guard let names = try FileIO.read(applyingPath(zone)) else { return }
        let existing = try FileIO.read(pushedPath(zone)) ?? []
        try FileIO.writeAtomically(pushedPath(zone), existing + names + (names.last == 10 || names.isEmpty ? [] : [10]))
        try FileIO.remove(applyingPath(zone))
    }

    /// Whether the zone must be looked at by the next pull even if the store's database
    /// changes do not name it: records pushed or being applied, or records to fetch by ID
    /// (a retry list not noted, as it stands, as one on which every record waits for a change).
    package func zoneNeedsALook(_ zone: ZoneID) throws(RecSyncError) -> Bool {
        for path in [pushedPath(zone), applyingPath(zone)] where try FileIO.info(path) != nil { return true }
        guard let list = try FileIO.info(retryPath(zone)) else { return false }
        return (try? FileIO.read(retryWaitsPath(zone))) != RetryList.note(list.stamp)
    }

    // MARK: Uploading a zone again after an encrypted-data reset

    /// Marks the zone to be uploaded again (its data stays).
    package func markAwaitsReupload(_ zone: ZoneID) throws(RecSyncError) {
        try FileIO.writeAtomically(reuploadMarker(zone), Array("encryptedDataReset\n".utf8))
    }

    /// The zone was uploaded again.
    package func clearAwaitsReupload(_ zone: ZoneID) throws(RecSyncError) {
        try FileIO.remove(reuploadMarker(zone))
    }

    // MARK: A zone shared read-only

    /// Present while the zone is shared with this user read-only: its record and asset files
    /// are written without write permission.
    package func readOnlyMarker(_ zone: ZoneID) -> String { "\(stateDir)/tokens/\(zoneStateKey(zone)).rdonly" }

    /// Whether the zone's files are written read-only (`setReadOnly`).
    package func isReadOnly(_ zone: ZoneID) throws(RecSyncError) -> Bool { try FileIO.info(readOnlyMarker(zone)) != nil }

    /// Notes whether the zone is shared with this user read-only and, when that changed, takes
    /// the write permission from its record and asset files or gives it back (to the owner of
    /// the files). A zone whose directory is a link is not touched: what the link points to is
    /// not recsync's.
    package func setReadOnly(_ readOnly: Bool, zone: ZoneID) throws(RecSyncError) {
        guard try readOnly != isReadOnly(zone) else { return }
        if readOnly {
            try FileIO.writeAtomically(readOnlyMarker(zone), Array("read-only\n".utf8))
        } else {
            try FileIO.remove(readOnlyMarker(zone))
        }
        guard hasZoneDirectory(zone) else { return }
        let dir = zoneDirectory(zone)
        for name in FileIO.listUnsorted(dir) where !name.hasPrefix(".") {
            let path = "\(dir)/\(name)"
            if name.hasSuffix(Self.assetDirectorySuffix), FileIO.isDirectory(path) {
                for asset in FileIO.listUnsorted(path) where !asset.hasPrefix(".") {
                    try Self.setWritable(!readOnly, "\(path)/\(asset)")
                }
            } else {
                try Self.setWritable(!readOnly, path)
            }
        }
    }

    /// Takes every write bit from a regular file, or gives the owner's back; anything else
    /// (a link, a directory, a file gone meanwhile) is left alone.
    static func setWritable(_ writable: Bool, _ path: String) throws(RecSyncError) {
        var st = stat()
        guard lstat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return }
        let mode = writable ? st.st_mode | 0o200 : st.st_mode & ~0o222
        guard mode != st.st_mode else { return }
        switch Syscall.attempt({ chmod(path, mode & 0o7777) }) {
        case .success: return
        case .failure(let failure) where failure.code == ENOENT: return
        case .failure(let failure): throw Syscall.error("chmod", path: path, "cannot set the permissions of", errno: failure.code)
        }
    }

    // MARK: The zone's directory

    /// Whether the zone has a directory here (a link to one does not count).
    package func hasZoneDirectory(_ zone: ZoneID) -> Bool { FileIO.isDirectory(zoneDirectory(zone)) }

    /// Whether the zone's path here is a symbolic link (never followed, never recsync's).
    package func zoneDirectoryIsLink(_ zone: ZoneID) throws(RecSyncError) -> Bool { try FileIO.isSymlink(zoneDirectory(zone)) }

    /// Makes the zone's directory; returns whether it was made now.
    package func makeZoneDirectory(_ zone: ZoneID) throws(RecSyncError) -> Bool {
        let made = !hasZoneDirectory(zone)
        try FileIO.makeDirectories(zoneDirectory(zone))
        return made
    }

    /// Removes the zone's directory (or the link in its place) and makes that durable.
    package func removeZoneDirectory(_ zone: ZoneID) throws(RecSyncError) {
        let dir = zoneDirectory(zone)
        try FileIO.remove(dir)
        try FileIO.syncDirectory((dir as NSString).deletingLastPathComponent)
    }

    /// The names in the zone's directory and in its `.system` (sidecars), unsorted.
    package func zoneFileNames(_ zone: ZoneID) throws(RecSyncError) -> (files: Set<String>, sidecars: Set<String>) {
        let dir = zoneDirectory(zone)
        return (Set(try FileIO.entries(dir).names), Set(try FileIO.entries("\(dir)/.system").names))
    }

    /// Removes the zone's directory if it holds nothing.
    package func removeZoneDirectoryIfEmpty(_ zone: ZoneID) throws(RecSyncError) {
        if FileIO.list(zoneDirectory(zone)).isEmpty { try FileIO.remove(zoneDirectory(zone)) }
    }

    // MARK: A zone that went away

    /// Forgets everything kept about a zone besides its files: conflicts, index, token and the
    /// notes above.
    package func forgetZoneState(_ zone: ZoneID) throws(RecSyncError) {
        try FileIO.remove(conflictDirectory(zone))
        try ZoneIndex.remove(self, zone: zone)
        for path in [
            refetchPath(zone), pushedPath(zone), retryPath(zone), retryWaitsPath(zone), applyingPath(zone), unfetchedAssetsPath(zone),
            readOnlyMarker(zone),
        ] { try FileIO.remove(path) }
        try saveToken(nil, at: zoneTokenPath(zone))
    }

    // MARK: The note of a push under way

    /// The note a push wrote before sending (see the engine's `PendingPush`); nil if none.
    package func pendingPushNote() throws(RecSyncError) -> [UInt8]? { try FileIO.read(pendingPushPath) }

    /// Writes the note, durably, before the push sends anything.
    package func writePendingPushNote(_ bytes: [UInt8]) throws(RecSyncError) { try FileIO.writeAtomically(pendingPushPath, bytes) }

    /// The push's sidecars say what landed: the note goes.
    package func clearPendingPushNote() throws(RecSyncError) { try FileIO.remove(pendingPushPath) }
}
