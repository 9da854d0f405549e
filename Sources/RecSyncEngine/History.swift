import RecSyncModel
import RecSyncStore

/// One version of a record in the store's history and what it changed (`recsync log -p`).
public struct RecordPatch: Sendable, Hashable {
    /// The commit that made the version, with the record's change tags after and before it.
    public var commit: RecordCommit
    /// What the commit did to the record, in `status`'s words: "new" (created it),
    /// "modified", or "deleted".
    public var kind: LocalChange.Kind
    /// The fields changed against the version before (all added for a new record, all removed
    /// for a deletion).
    public var changes: [FieldChange]
}

extension StoreHistory {
    /// The versions of a record, newest first (at most `limit`), each with its field-level
    /// changes against the version before it.
    public func recordPatches(_ id: RecordID, limit: Int) async throws(RecSyncError) -> [RecordPatch] {
        let log = try await recordLog(id, limit: limit)
        // Each version is read once: a version is the one after one commit and before the next.
        var versions: [String: [String: FieldValue]] = [:]
        for tag in Set(log.flatMap { [$0.changeTag, $0.previousChangeTag] }.compactMap { $0 }) {
            guard let record = try await recordVersion(id, changeTag: tag) else {
                throw .storeCorrupt("the version \(tag.prefix(12)) of '\(id)' in the store's history cannot be read")
            }
            versions[tag] = record.fields
        }
        var patches: [RecordPatch] = []
        for entry in log {
            let after = entry.changeTag.flatMap { versions[$0] }
            let before = entry.previousChangeTag.flatMap { versions[$0] }
            let kind: LocalChange.Kind = after == nil ? .deleted : entry.previousChangeTag == nil ? .new : .modified
            patches.append(RecordPatch(commit: entry, kind: kind, changes: FieldChange.between(before, after)))
        }
        return patches
    }
}
