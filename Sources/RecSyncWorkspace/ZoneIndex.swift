import Foundation
import RecSyncModel

/// What the workspace knew about one record file after it last synced it.
public struct IndexEntry: Sendable, Hashable, Codable {
    /// The record name (file names may be hashed).
    public var name: String
    /// The change tag the sidecar held.
    public var tag: String
    /// `ContentHash` of the canonical fields of that version.
    public var hash: String
    /// The record file and sidecar as `stat` saw them then.
    public var file: FileStamp?
    public var side: FileStamp?
}

/// The stat index of one zone (machine-specific, not part of a snapshot): lets a scan skip
/// reading files that have not changed since they were synced.
///
/// It is a cache: a missing or stale entry only costs a read (and, at worst, a lookup of the
/// base version in the store); it never decides that an edit is not an edit. Kept as one line
/// per record (tab-separated, names escaped), read and written without a JSON decoder: at
/// 100k records it is read by every status and pull.
public struct ZoneIndex: Sendable {
    public var entries: [String: IndexEntry] {
        didSet { dirty = true }
    }
    let path: String
    /// Whether `entries` changed since it was loaded or saved.
    public private(set) var dirty = false

    static let header = Array("recsync-index 1\n".utf8)

    public static func load(_ workspace: Workspace, zone: ZoneID) -> ZoneIndex {
        let path = workspace.indexPath(zone)
        var entries: [String: IndexEntry] = [:]
        if let bytes = try? FileIO.read(path), bytes.starts(with: header) {
            entries = decode(bytes[header.count...])
        }
        var index = ZoneIndex(entries: entries, path: path)
        index.dirty = false
        return index
    }

    /// Writes the index if it changed.
    public mutating func save() throws(RecSyncError) {
        guard dirty else { return }
        var out = Self.header
        out.reserveCapacity(entries.count * 160)
        for (file, e) in entries {
            out += Array(file.utf8); out.append(9)
            out += Array(NameEscaping.escape(e.name).utf8); out.append(9)
            out += Array(e.tag.utf8); out.append(9)
            out += Array(e.hash.utf8); out.append(9)
            Self.put(e.file, into: &out); out.append(9)
            Self.put(e.side, into: &out); out.append(10)
        }
        try FileIO.writeAtomically(path, out)
        dirty = false
    }

    static func put(_ stamp: FileStamp?, into out: inout [UInt8]) {
        guard let stamp else { out.append(45); return }
        out += Array("\(stamp.size) \(stamp.mtimeNanos) \(stamp.inode)".utf8)
    }

    static func decode(_ bytes: ArraySlice<UInt8>) -> [String: IndexEntry] {
        var entries: [String: IndexEntry] = [:]
        entries.reserveCapacity(bytes.count / 150)
        bytes.withUnsafeBufferPointer { buf in
            var i = 0
            let n = buf.count
            // One pass: six tab-separated fields per line, no intermediate arrays.
            while i < n {
                var fields: [(Int, Int)] = []
                fields.reserveCapacity(6)
                var start = i
                while i < n && buf[i] != 10 {
                    if buf[i] == 9 { fields.append((start, i)); start = i + 1 }
                    i += 1
                }
                fields.append((start, i))
                i += 1
                guard fields.count == 6 else { continue }
                func text(_ f: (Int, Int)) -> String { String(decoding: UnsafeBufferPointer(rebasing: buf[f.0..<f.1]), as: UTF8.self) }
                func stamp(_ f: (Int, Int)) -> FileStamp? {
                    var numbers: [Int64] = [0, 0, 0]
                    var k = 0
                    var seen = false
                    for j in f.0..<f.1 {
                        let c = buf[j]
                        if c == 32 { if !seen { return nil }; k += 1; seen = false; if k > 2 { return nil }; continue }
                        guard c >= 48 && c <= 57 else { return nil }
                        numbers[k] = numbers[k] &* 10 &+ Int64(c - 48)
                        seen = true
                    }
                    guard k == 2 && seen else { return nil }
                    return FileStamp(size: numbers[0], mtimeNanos: numbers[1], inode: UInt64(bitPattern: numbers[2]))
                }
                guard let name = NameEscaping.unescape(text(fields[1])) else { continue }
                entries[text(fields[0])] = IndexEntry(name: name, tag: text(fields[2]), hash: text(fields[3]), file: stamp(fields[4]), side: stamp(fields[5]))
            }
        }
        return entries
    }

    public static func remove(_ workspace: Workspace, zone: ZoneID) throws(RecSyncError) {
        try FileIO.remove(workspace.indexPath(zone))
    }

    /// Records an entry with the stamps given (from the files as written or as inspected).
    /// `hash` is `ZoneIndex.hash` of the fields, or `ContentHash.of` their canonical bytes.
    public mutating func record(file: String, recordName: String, tag: String, hash: String, fileStamp: FileStamp?, sideStamp: FileStamp?) {
        entries[file] = IndexEntry(name: recordName, tag: tag, hash: hash, file: fileStamp, side: sideStamp)
    }

    public static func hash(_ fields: [String: FieldValue]) -> String {
        ContentHash.of(WorkspaceEncoding.encodeFields(fields))
    }
}
