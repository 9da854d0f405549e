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
/// base version in the store); it never decides that an edit is not an edit.
public struct ZoneIndex: Sendable {
    public var entries: [String: IndexEntry]
    let path: String

    public static func load(_ workspace: Workspace, zone: ZoneID) -> ZoneIndex {
        let path = workspace.indexPath(zone)
        var entries: [String: IndexEntry] = [:]
        if let bytes = try? FileIO.read(path), let decoded = try? JSONDecoder().decode([String: IndexEntry].self, from: Data(bytes)) {
            entries = decoded
        }
        return ZoneIndex(entries: entries, path: path)
    }

    public func save() throws(RecSyncError) {
        let data = (try? JSONEncoder().encode(entries)) ?? Data("{}".utf8)
        try FileIO.writeAtomically(path, Array(data))
    }

    public static func remove(_ workspace: Workspace, zone: ZoneID) throws(RecSyncError) {
        try FileIO.remove(workspace.indexPath(zone))
    }

    /// Records the state of a record right after recsync wrote or verified it.
    public mutating func record(file: String, recordName: String, tag: String, fields: [String: FieldValue], workspace: Workspace, zone: ZoneID) {
        let dir = workspace.zoneDirectory(zone)
        entries[file] = IndexEntry(
            name: recordName, tag: tag, hash: Self.hash(fields),
            file: FileIO.stamp("\(dir)/\(file)"), side: FileIO.stamp("\(dir)/.system/\(file)"))
    }

    public static func hash(_ fields: [String: FieldValue]) -> String {
        ContentHash.of(WorkspaceEncoding.encodeFields(fields))
    }
}
