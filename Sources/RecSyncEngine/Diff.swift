import RecSyncModel
import RecSyncStore
import RecSyncWorkspace

/// One field that differs between two versions of a record (nil: absent on that side).
public struct FieldChange: Sendable, Hashable {
    public var key: String
    public var old: FieldValue?
    public var new: FieldValue?

    public init(key: String, old: FieldValue?, new: FieldValue?) {
        self.key = key
        self.old = old
        self.new = new
    }

    /// The fields that differ from `old` to `new`, by key (a missing version has no fields).
    public static func between(_ old: [String: FieldValue]?, _ new: [String: FieldValue]?) -> [FieldChange] {
        let a = old ?? [:], b = new ?? [:]
        return Set(a.keys).union(b.keys).sorted().compactMap { key in
            a[key] == b[key] ? nil : FieldChange(key: key, old: a[key], new: b[key])
        }
    }
}

/// How one record's file differs from the version it was last synced at (`SyncEngine.diff`).
public struct RecordDiff: Sendable, Hashable {
    /// Where the record stands.
    public enum State: String, Sendable, Hashable {
        /// Never pushed: every field is added.
        case new
        /// Its file differs from the synced version.
        case modified
        /// Its file was removed: the next push deletes it.
        case deleted
        /// Its file holds the synced version.
        case unchanged
        /// A conflict is pending: `changes` is ours, `theirs` the store's, both since the ancestor.
        case conflict
    }

    /// Something the field lists alone do not say.
    public enum Note: Sendable, Hashable {
        /// A conflict whose store side is a deletion.
        case deletedOnStore
        /// A conflict whose local side is a deletion.
        case deletedHere
        /// The store no longer has the synced version, so no fields could be compared.
        case syncedVersionGone
    }

    public var recordID: RecordID
    public var state: State
    /// The fields changed here: since the synced version, or for a conflict since the ancestor.
    public var changes: [FieldChange]
    /// For a conflict: what the store changed since the common version.
    public var theirs: [FieldChange]?
    public var note: Note?

    /// How many fields this side added, changed and removed (`diff --stat`).
    public struct Stat: Sendable, Hashable {
        public var added = 0
        public var changed = 0
        public var removed = 0

        public init(_ changes: [FieldChange]) {
            for c in changes {
                switch (c.old, c.new) {
                case (nil, _?): added += 1
                case (_?, nil): removed += 1
                default: changed += 1
                }
            }
        }

        public var total: Int { added + changed + removed }
    }

    /// The counts of `changes`.
    public var stat: Stat { Stat(changes) }

    /// Whether there is something to push or settle: not `unchanged`.
    public var differs: Bool { state != .unchanged }

    public init(recordID: RecordID, state: State, changes: [FieldChange], theirs: [FieldChange]? = nil, note: Note? = nil) {
        self.recordID = recordID
        self.state = state
        self.changes = changes
        self.theirs = theirs
        self.note = note
    }
}

extension SyncEngine {
    /// Field-level differences between record files and their synced versions, in record
    /// order: of the given records (an unchanged one as `unchanged`) and of every locally
    /// changed record and pending conflict in the given zones; with neither, of every locally
    /// changed record and pending conflict. The synced version is fetched from the store by
    /// the sidecar's change tag.
    public func diff(_ records: [RecordID]? = nil, zones: [ZoneID] = []) async throws(RecSyncError) -> [RecordDiff] {
        let everything = records == nil && zones.isEmpty
        let zoneSet = Set(zones)
        var targets = Set(records ?? [])
        if everything || !zoneSet.isEmpty {
            // Status first: it settles conflicts whose sides became the same.
            let changed = try await status().changes.map(\.recordID)
            let conflicts = try workspace.allConflicts().map(\.recordID)
            for id in changed + conflicts where everything || zoneSet.contains(id.zoneID) { targets.insert(id) }
        }
        let conflicts = try workspace.allConflicts()
        var diffs: [RecordDiff] = []
        for id in targets.sorted() {
            diffs.append(try await diff(id, conflict: conflicts.first { $0.recordID == id }))
        }
        return diffs
    }

    /// Compares one record's file with the version its sidecar names (or, in a conflict,
    /// both sides with their ancestor).
    func diff(_ id: RecordID, conflict: Conflict?) async throws(RecSyncError) -> RecordDiff {
        let local = try workspace.recordFields(id)
        if let conflict {
            return RecordDiff(
                recordID: id, state: .conflict, changes: FieldChange.between(conflict.ancestor, local),
                theirs: FieldChange.between(conflict.ancestor, conflict.server),
                note: conflict.server == nil ? .deletedOnStore : local == nil ? .deletedHere : nil)
        }
        guard let tag = try workspace.systemFields(id)?.changeTag else {
            guard local != nil else { throw .notFound("no record file at \(workspace.relative(workspace.recordPath(id)))") }
            return RecordDiff(recordID: id, state: .new, changes: FieldChange.between(nil, local))
        }
        guard let synced = try await store.fetchRecordVersion(id, changeTag: tag) else {
            return RecordDiff(recordID: id, state: local == nil ? .deleted : .modified, changes: [], note: .syncedVersionGone)
        }
        let changes = FieldChange.between(synced.fields, local)
        let state: RecordDiff.State = local == nil ? .deleted : changes.isEmpty ? .unchanged : .modified
        return RecordDiff(recordID: id, state: state, changes: changes)
    }
}
