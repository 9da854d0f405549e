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
    /// for a deletion); empty when `unreadable` says why they cannot be told.
    public var changes: [FieldChange]
    /// Why this version, or the one before it, cannot be read from the store (a damaged or
    /// tampered entry): its changes are unknown, the other versions are shown as usual.
    public var unreadable: String?
}

extension StoreHistory {
    /// The versions of a record, newest first (at most `limit`), each with its field-level
    /// changes against the version before it.
    public func recordPatches(_ id: RecordID, limit: Int) async throws(RecSyncError) -> [RecordPatch] {
        let log = try await recordLog(id, limit: limit)
        // Each version is read once: a version is the one after one commit and before the next.
        // One that cannot be read spoils only the patches it is a side of.
        var versions: [String: [String: FieldValue]] = [:]
        var unreadable: [String: String] = [:]
        for tag in Set(log.flatMap { [$0.changeTag, $0.previousChangeTag] }.compactMap { $0 }) {
            do throws(RecSyncError) {
                if let record = try await recordVersion(id, changeTag: tag) {
                    versions[tag] = record.fields
                } else {
                    unreadable[tag] =
                        """
                        the version \(tag.prefix(12)) of '\(id)' cannot be read from the store's history (missing, or\
                         not a record recsync can decode)
                        """
                }
            } catch {
                unreadable[tag] = "the version \(tag.prefix(12)) of '\(id)' cannot be read: \(error.message)"
            }
        }
        var patches: [RecordPatch] = []
        for entry in log {
            let kind: LocalChange.Kind = entry.changeTag == nil ? .deleted : entry.previousChangeTag == nil ? .new : .modified
            let problem = [entry.changeTag, entry.previousChangeTag].compactMap { $0 }.compactMap { unreadable[$0] }.first
            if let problem {
                patches.append(RecordPatch(commit: entry, kind: kind, changes: [], unreadable: problem))
                continue
            }
            let after = entry.changeTag.flatMap { versions[$0] }
            let before = entry.previousChangeTag.flatMap { versions[$0] }
            patches.append(RecordPatch(commit: entry, kind: kind, changes: FieldChange.between(before, after)))
        }
        return patches
    }
}

/// One commit that changed a zone, with what it did to each of the zone's records (`recsync
/// log -p ZONE`).
public struct ZonePatch: Sendable, Hashable {
    public var commit: StoreCommit
    /// The records the commit changed in the zone, by name.
    public var records: [Entry]

    /// What the commit did to one record.
    public struct Entry: Sendable, Hashable {
        public var recordID: RecordID
        /// "new" (created it), "modified" or "deleted".
        public var kind: LocalChange.Kind
        /// The fields changed against the version before; empty when `unreadable` says why
        /// they cannot be told.
        public var changes: [FieldChange]
        public var unreadable: String?
    }
}

extension StoreHistory {
    /// The commits that changed a zone, newest first (at most `limit`), each with the records
    /// it changed there and their field-level changes against the version before.
    public func zonePatches(_ zone: ZoneID, limit: Int) async throws(RecSyncError) -> [ZonePatch] {
        var patches: [ZonePatch] = []
        for commit in try await log(limit: limit, zone: zone) {
            var entries: [ZonePatch.Entry] = []
            for change in try await recordChanges(in: zone, commit: commit.commit) {
                let id = change.recordID
                let kind: LocalChange.Kind = change.changeTag == nil ? .deleted : change.previousChangeTag == nil ? .new : .modified
                var sides: [[String: FieldValue]?] = []
                var problem: String?
                for tag in [change.previousChangeTag, change.changeTag] {
                    guard let tag else {
                        sides.append(nil)
                        continue
                    }
                    do throws(RecSyncError) {
                        guard let record = try await recordVersion(id, changeTag: tag) else {
                            problem = "the version \(tag.prefix(12)) of '\(id)' cannot be read from the store's history"
                            break
                        }
                        sides.append(record.fields)
                    } catch {
                        problem = "the version \(tag.prefix(12)) of '\(id)' cannot be read: \(error.message)"
                        break
                    }
                }
                let changes = problem == nil ? FieldChange.between(sides[0], sides[1]) : []
                entries.append(ZonePatch.Entry(recordID: id, kind: kind, changes: changes, unreadable: problem))
            }
            patches.append(ZonePatch(commit: commit, records: entries.sorted { $0.recordID < $1.recordID }))
        }
        return patches
    }
}
