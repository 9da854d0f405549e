import Glibc
import RecSyncModel
import RecSyncSystem

/// A write batch's redo log: everything the batch writes and removes, made durable with one
/// sync before any of it lands, so that the files themselves need no sync of their own.
///
/// A pull writes a page of hundreds of record files and sidecars. Syncing each one cost two
/// `fdatasync` calls per record; one `syncfs` per page instead waited for whatever else was
/// dirty on the file system. With the journal, a page costs the journal's own sync, and the
/// files of a whole pull are made durable once at its end (`Workspace.retirePageJournals`),
/// after which the journals go. Until then a crash is repaired from the journal
/// (`Workspace.recoverPageJournals`): a file the batch wrote that came back empty or cut
/// short, or still as it was before the batch, is written again. The zone token that follows
/// the page is written only after the journal is durable, so a token never outlives the
/// records it covers.
///
/// What the journal must not do is put back a batch's write over something written after it:
/// an entry is redone only where the path still holds what the batch found there (the same
/// stamp, or nothing), or what the batch was cut off writing (nothing, or a prefix of its
/// bytes). A record file that holds anything else is someone's edit, and the rest of its
/// group (the sidecar that follows it) is then left alone too, as the batch itself would have.
///
/// The format is binary, written by hand rather than with a `Codable` coder: a page's
/// journal holds every record file of the page, and encoding it as JSON cost a clone of 20,000
/// records more CPU time than writing the files. It is `RSJ1`, then per entry a flags byte
/// (bytes follow, machine-owned, a stamp before, a group), the mode, the path, the group, the
/// stamp and the bytes (strings and bytes length-prefixed, integers little-endian), then the
/// `ContentHash` of all of that and the hash's length in one byte. The file is written whole to a temporary name and renamed,
/// so a journal under its name is complete; the hash guards against a damaged one.
struct PageJournal: Hashable {
    /// One write or removal, in the order the batch applies them (writes, late writes, removals).
    struct Entry: Hashable {
        var path: String
        /// What is written; nil for a removal.
        var bytes: [UInt8]?
        /// What the path held when the batch was made: its stamp, or nil when it held nothing.
        var before: FileStamp?
        /// The batch's group: the first entry of a group decides for the others.
        var group: String?
        /// A file no user edits (a sidecar): one that does not parse was cut off.
        var machineOwned: Bool
        /// The permission bits of a file written.
        var mode: UInt32

        var key: String { group ?? path }
    }

    var entries: [Entry]

    static let magic = Array("RSJ1".utf8)

    func encoded() -> [UInt8] {
        var out = Self.magic
        out.reserveCapacity(entries.reduce(64) { $0 + $1.path.utf8.count + ($1.bytes?.count ?? 0) + 64 })
        func put<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { out.append(contentsOf: $0) } }
        func put(_ bytes: [UInt8]) {
            put(UInt32(bytes.count))
            out.append(contentsOf: bytes)
        }
        for e in entries {
            let flags: UInt8 =
                (e.bytes != nil ? 1 : 0) | (e.machineOwned ? 2 : 0) | (e.before != nil ? 4 : 0) | (e.group != nil ? 8 : 0)
            out.append(flags)
            put(e.mode)
            put(Array(e.path.utf8))
            if let group = e.group { put(Array(group.utf8)) }
            if let before = e.before {
                put(before.size)
                put(before.mtimeNanos)
                put(before.inode)
            }
            if let bytes = e.bytes { put(bytes) }
        }
        let hash = Array(ContentHash.of(out).utf8)
        return out + hash + [UInt8(hash.count)]
    }

    /// The journal in `bytes`, or nil when they are not a whole journal (a damaged file).
    static func decode(_ bytes: [UInt8]) -> PageJournal? {
        guard let hashLength = bytes.last.map(Int.init), bytes.count > magic.count + hashLength, bytes.starts(with: magic) else { return nil }
        let body = bytes[..<(bytes.count - 1 - hashLength)]
        guard Array(ContentHash.of(Array(body)).utf8) == Array(bytes[body.endIndex..<(bytes.count - 1)]) else { return nil }
        var at = magic.count
        func take(_ n: Int) -> ArraySlice<UInt8>? {
            guard n >= 0, body.endIndex - at >= n else { return nil }
            defer { at += n }
            return body[at..<(at + n)]
        }
        func int<T: FixedWidthInteger>(_: T.Type) -> T? {
            guard let raw = take(MemoryLayout<T>.size) else { return nil }
            return raw.reversed().reduce(T.zero) { $0 << 8 | T($1) }
        }
        func blob() -> [UInt8]? { int(UInt32.self).flatMap { take(Int($0)) }.map(Array.init) }
        var entries: [Entry] = []
        while at < body.endIndex {
            guard let flags = take(1)?.first, let mode = int(UInt32.self), let path = blob() else { return nil }
            var entry = Entry(path: String(decoding: path, as: UTF8.self), machineOwned: flags & 2 != 0, mode: mode)
            if flags & 8 != 0 {
                guard let group = blob() else { return nil }
                entry.group = String(decoding: group, as: UTF8.self)
            }
            if flags & 4 != 0 {
                guard let size = int(Int64.self), let mtime = int(Int64.self), let inode = int(UInt64.self) else { return nil }
                entry.before = FileStamp(size: size, mtimeNanos: mtime, inode: inode)
            }
            if flags & 1 != 0 {
                guard let data = blob() else { return nil }
                entry.bytes = data
            }
            entries.append(entry)
        }
        return PageJournal(entries: entries)
    }

    /// The paths the journal names under `root`: none that climbs out of it with `..`.
    func paths(under root: String) -> [String] {
        entries.map(\.path).filter { Self.isUnder(root, $0) }
    }

    static func isUnder(_ root: String, _ path: String) -> Bool {
        path.hasPrefix(root + "/") && !path.dropFirst(root.count).split(separator: "/").contains("..")
    }

    /// Redoes what a batch cut off by a crash did not leave on disk (see the type's notes).
    /// Only paths under `root` are touched. Throws at the first file that cannot be written.
    func replay(under root: String) throws(RecSyncError) {
        var ahead: [String: Bool] = [:]
        for entry in entries where Self.isUnder(root, entry.path) {
            let leads = ahead[entry.key] == nil
            if !leads && ahead[entry.key] != true { continue }  // its group's file is someone's now
            let info = try FileIO.info(entry.path)
            if let info, !info.isRegular || info.linkCount != 1 {
                if leads { ahead[entry.key] = false }
                continue  // not a plain file of one name: nothing is written through it
            }
            guard let bytes = entry.bytes else {
                // A removal: the first of a group only where the file is still the one it removed.
                if leads { ahead[entry.key] = info == nil || info?.stamp == entry.before }
                if info != nil && (!leads || info?.stamp == entry.before) { try FileIO.remove(entry.path) }
                continue
            }
            let current = info == nil ? nil : try FileIO.read(entry.path, limit: FileIO.recordFileReadLimit)
            if current == bytes {
                if leads { ahead[entry.key] = true }
                continue
            }
            let redo: Bool
            if !leads {
                redo = true  // a sidecar following its record file, which holds this batch's version
            } else if let current {
                redo = info?.stamp == entry.before || current.isEmpty || bytes.starts(with: current) || (entry.machineOwned && !Self.parses(current))
            } else {
                redo = entry.before == nil
            }
            if leads { ahead[entry.key] = redo }
            if redo { try FileIO.writeAtomically(entry.path, bytes, mode: mode_t(entry.mode)) }
        }
    }

    /// Whether a machine-owned file's bytes are a whole sidecar.
    static func parses(_ bytes: [UInt8]) -> Bool {
        (try? WorkspaceEncoding.decodeSystemFields(bytes)) != nil
    }
}

extension Workspace {
    /// Where journaled batches (`PageJournal`) keep their journals while their pull runs.
    var journalDirectory: String { "\(stateDir)/journal" }
    /// Where a pull that finished leaves its journals: its files are in the kernel's hands,
    /// written to disk by it in time, and lost only with the machine (see `closePageJournals`).
    var closedJournalDirectory: String { "\(journalDirectory)/closed" }

    /// This boot of the machine (Linux's `boot_id`, without its dashes), or nil where it cannot
    /// be read: then a pull makes its files durable itself as it ends.
    static let bootID: String? = {
        // A /proc file says it is empty (`stat`): read it as far as it goes.
        let fd = Glibc.open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { Glibc.close(fd) }
        var buffer = [UInt8](repeating: 0, count: 128)
        let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return nil }
        let id = String(decoding: buffer.prefix(n), as: UTF8.self).filter { $0.isHexDigit }
        return id.count >= 16 ? id : nil
    }()

    /// A new journal's path for a batch of `zone`'s: journals sort in the order they were made,
    /// and name the boot they were made in.
    package func newPageJournalPath(_ zone: ZoneID) -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let nanos = String(UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec))
        let key = ContentHash.of(Array(zoneStateKey(zone).utf8)).prefix(16)
        return "\(journalDirectory)/\(String(repeating: "0", count: max(0, 20 - nanos.count)))\(nanos)-\(Self.bootID ?? "0")-\(key)"
    }

    private func journals(in directory: String) -> [String] {
        FileIO.list(directory).filter { !$0.hasPrefix(".") && $0 != "closed" }.sorted().map { "\(directory)/\($0)" }
    }

    /// The journals of batches whose pull did not finish (killed, or failed), oldest first.
    var openPageJournals: [String] { journals(in: journalDirectory) }
    /// The journals of finished pulls, oldest first.
    var closedPageJournals: [String] { journals(in: closedJournalDirectory) }
    /// Every journal not yet retired.
    var pageJournals: [String] { openPageJournals + closedPageJournals }

    /// How many journals wait to be retired: a long pull retires them as it goes, so that a
    /// crash has little to redo and the journals take little room.
    package var pageJournalCount: Int { pageJournals.count }

    /// The journals the next command must finish before it reads the workspace: those of a
    /// pull that did not finish, and those of any pull before the machine last started.
    package var pageJournalsToRecover: [String] {
        openPageJournals + closedPageJournals.filter { Self.boot(ofJournal: $0) != Self.bootID }
    }

    /// The boot a journal names, and its number of entries.
    static func boot(ofJournal path: String) -> String? {
        let parts = FileIO.split(path).name.split(separator: "-")
        return parts.count == 4 ? String(parts[1]) : nil
    }

    static func entryCount(ofJournal path: String) -> Int {
        Int(FileIO.split(path).name.split(separator: "-").last ?? "") ?? Int.max / 2  // one without is counted as many
    }

    /// How many entries of finished pulls' journals are kept before their files are synced.
    static let closedJournalEntryLimit = 20_000

    /// Ends a pull's journals: its files were written whole (the kernel has them all), so
    /// until the machine stops they need no sync, and the journals are kept to redo them if it
    /// does (`recoverPageJournals`, which tells by the boot). Once the kept journals name more
    /// than `closedJournalEntryLimit` files, or where the boot cannot be told, they are synced
    /// with one `syncfs` and go: a pull of any size syncs its files at most once, and a
    /// small one not at all.
    package func closePageJournals() throws(RecSyncError) {
        let open = openPageJournals
        guard Self.bootID != nil else { return try retirePageJournals() }
        if !open.isEmpty { try FileIO.makeDirectories(closedJournalDirectory) }
        for journal in open {
            // Not synced: a rename lost with the machine leaves the journal open, which is
            // finished the same way.
            try FileIO.move(journal, to: "\(closedJournalDirectory)/\(FileIO.split(journal).name)", durably: false)
        }
        let kept = closedPageJournals.reduce(0) { $0 + Self.entryCount(ofJournal: $1) }
        if kept > Self.closedJournalEntryLimit { try retirePageJournals() }
    }

    /// Makes the files of every journal durable, then removes the journals.
    ///
    /// Up to `BatchDirectories.perFileLimit` files an `fdatasync` of each and an `fsync` of
    /// their directories, which waits for nothing another process left dirty; above that one
    /// `syncfs`.
    package func retirePageJournals() throws(RecSyncError) {
        let journals = pageJournals
        guard !journals.isEmpty else { return }
        var directories = BatchDirectories()
        defer { directories.closeAll() }
        let count = journals.reduce(0) { $0 + Self.entryCount(ofJournal: $1) }
        if count > BatchDirectories.perFileLimit, try directories.syncFileSystem(at: journalDirectory) {
            try removeRetired(journals)
            return
        }
        var paths = Set<String>()
        for journal in journals {
            let bytes: [UInt8]?
            do { bytes = try FileIO.read(journal) } catch { continue }  // not a journal: nothing of it to sync
            guard let bytes, let decoded = PageJournal.decode(bytes) else { continue }
            paths.formUnion(decoded.paths(under: root))
        }
        var files: [(directory: Int32, name: String, path: String)] = []
        var touched = Set<String>()
        for path in paths.sorted() {
            let (dir, name) = FileIO.split(path)
            guard let fd = try directories.existingDirectory(dir) else { continue }
            touched.insert(dir)
            if let info = try FileIO.info(in: fd, name), info.isRegular { files.append((fd, name, path)) }
        }
        try directories.syncFiles(files, createdIn: touched)
        try removeRetired(journals)
    }

    private func removeRetired(_ journals: [String]) throws(RecSyncError) {
        for journal in journals { FileIO.unlinkIfPresent(journal) }
        try FileIO.syncDirectory(journalDirectory)
        if FileIO.isDirectory(closedJournalDirectory) { try FileIO.syncDirectory(closedJournalDirectory) }
    }

    /// Finishes the batches a kill or a crash cut off (`PageJournal.replay`), and those of
    /// pulls made before the machine last stopped, then retires every journal. Call it holding
    /// the lock. A journal that is damaged is set aside in lost+found: it cannot be trusted to
    /// redo anything. Returns whether there was one to finish.
    @discardableResult
    package func recoverPageJournals() throws(RecSyncError) -> Bool {
        let journals = pageJournalsToRecover
        guard !journals.isEmpty else { return false }
        for journal in journals {
            // One that is not a plain file recsync wrote (a directory, a FIFO put there) is set
            // aside too, rather than stopping every command.
            let bytes: [UInt8]?
            do { bytes = try FileIO.read(journal) } catch { bytes = [] }
            guard let bytes else { continue }
            guard let decoded = PageJournal.decode(bytes) else {
                try FileIO.move(journal, to: "\(stateDir)/lost+found/journal-\(FileIO.split(journal).name)")
                continue
            }
            try decoded.replay(under: root)
        }
        try retirePageJournals()
        return true
    }
}
