import Foundation
import Glibc
import RecSyncModel
import RecSyncSystem

/// What the workspace knew about one record file after it last synced it.
package struct IndexEntry: Sendable, Hashable, Codable {
    /// The record name (file names may be hashed).
    package var name: String
    /// The change tag the sidecar held.
    package var tag: String
    /// `ContentHash` of the canonical fields of that version.
    package var hash: String
    /// The record file and sidecar as `stat` saw them then.
    package var file: FileStamp?
    package var side: FileStamp?

    package init(name: String, tag: String, hash: String, file: FileStamp?, side: FileStamp?) {
        self.name = name
        self.tag = tag
        self.hash = hash
        self.file = file
        self.side = side
    }
}

/// The stat index of one zone (machine-specific, not part of a snapshot): lets a scan skip
/// reading files that have not changed since they were synced.
///
/// It is a cache: a missing or stale entry only costs a read (and, at worst, a lookup of the
/// base version in the store); it never decides that an edit is not an edit.
///
/// On disk it is a base file sorted by file name plus a journal of later changes, both one
/// line per file (tab-separated, names escaped) read without a JSON decoder. A pull looks up
/// only the files it touches (binary search in the mapped base) and appends what changed to
/// the journal, so its cost follows the changes, not the zone; a scan reads everything. The
/// journal is folded into a new base once it is a sizeable fraction of it.
package struct ZoneIndex: Sendable {
    let path: String
    var journalPath: String { path + ".log" }
    private var base: SortedLines
    /// The whole base decoded, once a scan asked for it (`loadAll`): lean, a base line's
    /// stamps and where it is (its strings are read only for the files that need them).
    private var decoded: [String: Slot]?

    enum Slot: Sendable {
        case line(offset: Int, length: Int, file: FileStamp?, side: FileStamp?)
        case entry(IndexEntry)
    }
    /// The journal's latest word per file (nil: removed), and how many lines it has.
    private var journal: [String: IndexEntry?]
    private var journalLines: Int
    /// Changes since load or save.
    private var changes: [String: IndexEntry?] = [:]
    /// Whether the base must be rewritten (an older format was read).
    private var rewrite = false

    /// Whether anything changed since it was loaded or saved.
    package var dirty: Bool { !changes.isEmpty || rewrite }

    static let header = "recsync-index 2 "
    static let headerV1 = Array("recsync-index 1\n".utf8)

    package static func load(_ workspace: Workspace, zone: ZoneID) -> ZoneIndex {
        load(path: workspace.indexPath(zone))
    }

    static func load(path: String) -> ZoneIndex {
        var journal: [String: IndexEntry?] = [:]
        var lines = 0
        if let bytes = try? FileIO.read(path + ".log") {
            bytes.withUnsafeBufferPointer { buf in
                lines = decode(buf, complete: true) { file, entry in journal[file] = entry }
            }
        }
        let base = SortedLines(path: path, header: header)
        var rewrite = false
        var decoded: [String: Slot]?
        if base == nil, let bytes = try? FileIO.read(path), bytes.starts(with: headerV1) {
            // Version 1: one unsorted file. Read it all; the next save writes version 2.
            var entries: [String: IndexEntry] = [:]
            bytes.withUnsafeBufferPointer { buf in
                _ = decode(UnsafeBufferPointer(rebasing: buf[headerV1.count...]), complete: false) { file, entry in entries[file] = entry }
            }
            decoded = entries.mapValues { .entry($0) }
            rewrite = true
        }
        var index = ZoneIndex(path: path, base: base ?? .empty, decoded: decoded, journal: journal, journalLines: lines)
        index.rewrite = rewrite
        return index
    }

    private init(path: String, base: SortedLines, decoded: [String: Slot]?, journal: [String: IndexEntry?], journalLines: Int) {
        self.path = path
        self.base = base
        self.decoded = decoded
        self.journal = journal
        self.journalLines = journalLines
    }

    /// Decodes the whole base: for a scan, which looks up every file of the zone.
    package mutating func loadAll() {
        guard decoded == nil else { return }
        var entries: [String: Slot] = [:]
        entries.reserveCapacity(base.count)
        base.withBody { buf in
            Self.forEachLine(buf, complete: false) { start, end in
                if let (file, stamps) = Self.parseStamps(UnsafeBufferPointer(rebasing: buf[start..<end])) {
                    entries[file] = .line(offset: start, length: end - start, file: stamps.file, side: stamps.side)
                }
            }
        }
        // The journal's word is folded in: one dictionary to look in per file.
        for (file, entry) in journal { entries[file] = entry.map { .entry($0) } }
        journal.removeAll()
        decoded = entries
    }

    /// The entry of a record file, if the index has one.
    package subscript(file: String) -> IndexEntry? {
        get {
            if !changes.isEmpty, let change = changes[file] { return change }
            if !journal.isEmpty, let logged = journal[file] { return logged }
            if let decoded { return decoded[file].flatMap(entry) }
            return base.find(file).flatMap { line in Self.parse(line)?.entry }
        }
        set { changes[file] = .some(newValue) }
    }

    /// The file names the index has an entry for, in no set order (reads the whole index).
    package mutating func indexedFiles() -> [String] {
        loadAll()
        var files = Set((decoded ?? [:]).keys)
        for (file, entry) in changes {
            if entry == nil { files.remove(file) } else { files.insert(file) }
        }
        return Array(files)
    }

    /// The stamps of a record file and its sidecar as indexed, if the index has the file:
    /// what a scan compares with `stat`, without reading the rest of the entry.
    package func stamps(_ file: String) -> (file: FileStamp?, side: FileStamp?)? {
        if !changes.isEmpty || !journal.isEmpty || decoded == nil { return self[file].map { ($0.file, $0.side) } }
        switch decoded?[file] {
        case .line(_, _, let f, let s)?: return (f, s)
        case .entry(let e)?: return (e.file, e.side)
        case nil: return nil
        }
    }

    private func entry(_ slot: Slot) -> IndexEntry? {
        switch slot {
        case .entry(let e): return e
        case .line(let offset, let length, _, _):
            return base.withBody { buf in Self.parse(UnsafeBufferPointer(rebasing: buf[offset..<offset + length]))?.entry }
        }
    }

    /// Records an entry with the stamps given (from the files as written or as inspected).
    /// `hash` is `ZoneIndex.hash` of the fields, or `ContentHash.of` their canonical bytes.
    package mutating func record(file: String, recordName: String, tag: String, hash: String, fileStamp: FileStamp?, sideStamp: FileStamp?) {
        self[file] = IndexEntry(name: recordName, tag: tag, hash: hash, file: fileStamp, side: sideStamp)
    }

    /// Writes what changed: appended to the journal, or folded into a new base when the
    /// journal would grow past an eighth of the base (and a few thousand lines). `compacting:
    /// false` only appends (a full fetch, which ends with `compactJournal`).
    package mutating func save(compacting: Bool = true) throws(RecSyncError) {
        guard dirty else { return }
        try FileIO.makeDirectories((path as NSString).deletingLastPathComponent)
        let pending = journalLines + changes.count
        if rewrite || (compacting && pending > max(4096, base.count / 8)) {
            try compact()
        } else {
            var out: [UInt8] = []
            out.reserveCapacity(changes.count * 160)
            for (file, entry) in changes { Self.put(file, entry, into: &out) }
            try FileIO.appendDurably(journalPath, out)
            for (file, entry) in changes {
                if decoded != nil { decoded?[file] = entry.map { .entry($0) } } else { journal[file] = entry }
            }
            journalLines += changes.count
        }
        changes.removeAll()
    }

    /// Lets go of what was read (after `save`): the index then looks empty.
    package mutating func unload() {
        base = .empty
        decoded = nil
        journal.removeAll()
        changes.removeAll()
    }

    /// Folds a journal into the base (after a full fetch, so that later loads read one file).
    package mutating func compactJournal() throws(RecSyncError) {
        if journalLines > 0 || dirty { try compact() }
    }

    /// Writes base, journal and changes as one sorted base, then drops the journal.
    private mutating func compact() throws(RecSyncError) {
        loadAll()
        var entries: [String: IndexEntry] = [:]
        entries.reserveCapacity(decoded?.count ?? 0)
        for (file, slot) in decoded ?? [:] { entries[file] = entry(slot) }
        for (file, entry) in journal { entries[file] = entry }
        for (file, entry) in changes { entries[file] = entry }
        let sorted = entries.map { (key: Array($0.key.utf8), file: $0.key, entry: $0.value) }
            .sorted { $0.key.lexicographicallyPrecedes($1.key) }
        var out = Array("\(Self.header)\(sorted.count)\n".utf8)
        out.reserveCapacity(sorted.count * 160 + out.count)
        for e in sorted { Self.put(e.file, e.entry, into: &out) }
        try FileIO.writeAtomically(path, out)
        FileIO.unlinkIfPresent(journalPath)
        base = SortedLines(path: path, header: Self.header) ?? .empty
        decoded = nil  // found in the new base when asked
        journal.removeAll()
        journalLines = 0
        rewrite = false
    }

    package static func remove(_ workspace: Workspace, zone: ZoneID) throws(RecSyncError) {
        let path = workspace.indexPath(zone)
        try FileIO.remove(path + ".log")
        try FileIO.remove(path)
    }

    /// The hash of what a record file means: its fields, and the fields it sets to `null`
    /// (deletions still to push), so that a file holding `"b": null` never hashes like the
    /// synced version it differs from.
    ///
    /// A record file names its assets only by field (`{"$asset": "photo"}`): what each holds
    /// (`AssetReference`) is hashed too, so an edited asset file is an edited record.
    package static func hash(_ fields: [String: FieldValue], deleting deleted: [String] = []) -> String {
        hash(encoded: WorkspaceEncoding.encodeFields(fields), fields: fields, deleting: deleted)
    }

    /// `hash` of fields whose canonical file bytes are already made.
    package static func hash(encoded: [UInt8], fields: [String: FieldValue], deleting deleted: [String] = []) -> String {
        var bytes = encoded
        // No encoding of fields alone ends with a NUL or a 1: none of these can collide.
        for key in deleted { bytes += [0] + Array(key.utf8) }
        for (key, value) in fields.sorted(by: { $0.key < $1.key }) {
            guard case .asset(let a) = value else { continue }
            bytes += [1] + Array(key.utf8) + [0] + Array("\(a.oid) \(a.sha256) \(a.size)".utf8)
        }
        return ContentHash.of(bytes)
    }

    // MARK: Lines

    /// `file \t name \t tag \t hash \t file-stamp \t side-stamp \n`; a removal (journal only)
    /// is the file name alone.
    static func put(_ file: String, _ entry: IndexEntry?, into out: inout [UInt8]) {
        out += Array(file.utf8)
        if let e = entry {
            out.append(9); out += Array(NameEscaping.escape(e.name).utf8)
            out.append(9); out += Array(e.tag.utf8)
            out.append(9); out += Array(e.hash.utf8)
            out.append(9); put(e.file, into: &out)
            out.append(9); put(e.side, into: &out)
        }
        out.append(10)
    }

    static func put(_ stamp: FileStamp?, into out: inout [UInt8]) {
        guard let stamp else { out.append(45); return }
        out += Array("\(stamp.size) \(stamp.mtimeNanos) \(stamp.inode)".utf8)
    }

    /// Decodes lines, calling `each` with (file, entry or nil for a removal). With `complete`,
    /// a last line without its newline (cut short by a crash) is dropped. Returns the lines.
    static func decode(_ buf: UnsafeBufferPointer<UInt8>, complete: Bool, _ each: (String, IndexEntry?) -> Void) -> Int {
        var count = 0
        forEachLine(buf, complete: complete) { start, end in
            if let (file, entry) = parse(UnsafeBufferPointer(rebasing: buf[start..<end])) {
                each(file, entry)
                count += 1
            }
        }
        return count
    }

    /// Calls `each` with the bounds of every line (without its newline). With `complete`, a
    /// last line without its newline (cut short by a crash) is left out.
    static func forEachLine(_ buf: UnsafeBufferPointer<UInt8>, complete: Bool, _ each: (Int, Int) -> Void) {
        var i = 0
        let n = buf.count
        while i < n {
            var end = i
            while end < n && buf[end] != 10 { end += 1 }
            if end == n && complete { return }
            each(i, end)
            i = end + 1
        }
    }

    /// A line's file name and stamps only: nil when it is damaged.
    static func parseStamps(_ line: UnsafeBufferPointer<UInt8>) -> (String, (file: FileStamp?, side: FileStamp?))? {
        var tabs = (0, 0, 0, 0, 0)
        var k = 0
        for j in 0..<line.count where line[j] == 9 {
            switch k {
            case 0: tabs.0 = j
            case 1: tabs.1 = j
            case 2: tabs.2 = j
            case 3: tabs.3 = j
            case 4: tabs.4 = j
            default: return nil
            }
            k += 1
        }
        guard k == 5 else { return nil }
        let file = String(decoding: UnsafeBufferPointer(rebasing: line[0..<tabs.0]), as: UTF8.self)
        return (file, (stamp(line, tabs.3 + 1, tabs.4), stamp(line, tabs.4 + 1, line.count)))
    }

    /// `size mtime inode` in line[from..<to], or nil ("-", or damaged).
    static func stamp(_ line: UnsafeBufferPointer<UInt8>, _ from: Int, _ to: Int) -> FileStamp? {
        var numbers: (Int64, Int64, Int64) = (0, 0, 0)
        var k = 0
        var seen = false
        for j in from..<to {
            let c = line[j]
            if c == 32 { if !seen { return nil }; k += 1; seen = false; if k > 2 { return nil }; continue }
            guard c >= 48 && c <= 57 else { return nil }
            let d = Int64(c - 48)
            switch k {
            case 0: numbers.0 = numbers.0 &* 10 &+ d
            case 1: numbers.1 = numbers.1 &* 10 &+ d
            default: numbers.2 = numbers.2 &* 10 &+ d
            }
            seen = true
        }
        guard k == 2 && seen else { return nil }
        return FileStamp(size: numbers.0, mtimeNanos: numbers.1, inode: UInt64(bitPattern: numbers.2))
    }

    /// One line (without its newline): nil when it is damaged.
    static func parse(_ line: UnsafeBufferPointer<UInt8>) -> (file: String, entry: IndexEntry?)? {
        var fields: [(Int, Int)] = []
        fields.reserveCapacity(6)
        var start = 0
        for j in 0..<line.count where line[j] == 9 {
            fields.append((start, j))
            start = j + 1
        }
        fields.append((start, line.count))
        func text(_ f: (Int, Int)) -> String { String(decoding: UnsafeBufferPointer(rebasing: line[f.0..<f.1]), as: UTF8.self) }
        if fields.count == 1 {
            return line.isEmpty ? nil : (text(fields[0]), nil)
        }
        guard fields.count == 6, let name = NameEscaping.unescape(text(fields[1])) else { return nil }
        func stamp(_ f: (Int, Int)) -> FileStamp? { Self.stamp(line, f.0, f.1) }
        return (text(fields[0]), IndexEntry(name: name, tag: text(fields[2]), hash: text(fields[3]), file: stamp(fields[4]), side: stamp(fields[5])))
    }
}

/// A read-only mapping of a file of lines sorted by their first tab-separated field (as
/// bytes), after a header line `<header><count>`: lines are found by binary search without
/// reading the rest. Unmapped when the last copy goes.
final class SortedLines: @unchecked Sendable {
    // Immutable after init: the mapping is only read.
    private let start: UnsafeRawPointer?
    private let length: Int
    private let bodyOffset: Int
    let count: Int

    static let empty = SortedLines()

    private init() {
        start = nil
        length = 0
        bodyOffset = 0
        count = 0
    }

    /// Maps the file; nil when it is missing, not a regular file (a link inside the
    /// workspace is not followed), or does not start with the header: the index is rebuilt.
    init?(path: String, header: String) {
        guard let fd = try? FileIO.openRegularFile(path, flags: O_RDONLY) else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_size > 0 else { return nil }
        let size = Int(st.st_size)
        guard let map = mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0), map != MAP_FAILED else { return nil }
        let bytes = UnsafeBufferPointer(start: map.assumingMemoryBound(to: UInt8.self), count: size)
        let headerBytes = Array(header.utf8)
        var ok = bytes.starts(with: headerBytes)
        var k = headerBytes.count
        var number = 0
        while ok && k < size && bytes[k] != 10 {
            let c = bytes[k]
            if c < 48 || c > 57 { ok = false; break }
            number = number &* 10 &+ Int(c - 48)
            k += 1
        }
        guard ok, k < size else {
            munmap(map, size)
            return nil
        }
        start = UnsafeRawPointer(map)
        length = size
        bodyOffset = k + 1
        count = number
    }

    deinit {
        if let start { munmap(UnsafeMutableRawPointer(mutating: start), length) }
    }

    func withBody<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        guard let start else { return body(UnsafeBufferPointer(start: nil, count: 0)) }
        let all = UnsafeBufferPointer(start: start.assumingMemoryBound(to: UInt8.self), count: length)
        return body(UnsafeBufferPointer(rebasing: all[bodyOffset...]))
    }

    /// The line (without its newline) whose first field is `key`, if there is one.
    func find(_ key: String) -> UnsafeBufferPointer<UInt8>? {
        let target = Array(key.utf8)
        return withBody { buf -> UnsafeBufferPointer<UInt8>? in
            var lo = 0
            var hi = buf.count
            while lo < hi {
                var s = (lo + hi) / 2
                while s > lo && buf[s - 1] != 10 { s -= 1 }
                var e = s
                while e < buf.count && buf[e] != 10 { e += 1 }
                var k = s
                while k < e && buf[k] != 9 { k += 1 }
                // Compare the line's key buf[s..<k] with the target, byte by byte.
                var order = 0
                var a = s, b = 0
                while order == 0 {
                    if a == k && b == target.count { break }
                    if a == k { order = -1; break }
                    if b == target.count { order = 1; break }
                    if buf[a] != target[b] { order = buf[a] < target[b] ? -1 : 1; break }
                    a += 1; b += 1
                }
                if order == 0 { return UnsafeBufferPointer(rebasing: buf[s..<e]) }
                if order < 0 { lo = e + 1 } else { hi = s }
            }
            return nil
        }
    }
}
