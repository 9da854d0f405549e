import RecSyncModel
import RecSyncStore
import RecSyncWorkspace

extension SyncEngine {
    /// Removes records' files, as `git rm` does (see `Workspace.removeRecords`), all or
    /// nothing; returns for each whether the next push deletes the record on the store.
    ///
    /// Like `git rm`, a record whose file holds what was never pushed is refused unless
    /// `force`: a new record (nothing else holds it; `restore` cannot bring it back) or one
    /// edited since it was synced (the edit would be gone). Whether a file was edited is told
    /// by the stat index, or by the synced version in the store when the index cannot say.
    public func remove(_ ids: [RecordID], force: Bool = false) async throws(RecSyncError) -> [Bool] {
        try await Self.remove(ids, force: force, workspace: workspace, base: baseLookup)
    }

    /// `remove(_:force:)` for a workspace whose store cannot be opened (none configured, or
    /// not reachable): a record the stat index cannot vouch for then counts as edited, and is
    /// refused unless `force`.
    public static func removeOffline(_ ids: [RecordID], force: Bool = false, workspace: Workspace) async throws(RecSyncError) -> [Bool] {
        try await remove(ids, force: force, workspace: workspace, base: { _, _ in nil })
    }

    static func remove(_ ids: [RecordID], force: Bool, workspace: Workspace, base: @escaping Workspace.BaseLookup) async throws(RecSyncError)
        -> [Bool]
    {
        if !force {
            var refusals: [String] = []
            var edited: [String] = []
            var indexes: [ZoneID: ZoneIndex] = [:]
            for id in ids {
                let zone = id.zoneID
                var index = indexes[zone] ?? ZoneIndex.load(workspace, zone: zone)
                let inspection = try await workspace.inspect(zone: zone, file: Workspace.fileName(for: id.recordName), index: &index, base: base)
                indexes[zone] = index
                let path = workspace.relative(workspace.recordPath(id))
                guard try workspace.recordFileStamp(id) != nil else {
                    throw .notFound("no record file at \(path)")
                }
                guard case .record(let local) = inspection else { continue }  // a problem: removeRecords removes it as the user asked
                switch local.state {
                case .new: refusals.append("\(path) is a new record, never pushed: removing it loses it for good")
                case .modified:
                    refusals.append(
                        """
                        \(path) has edits not pushed: removing it loses them
                        """
                    )
                    edited.append(path)
                default: break
                }
            }
            if !refusals.isEmpty {
                var error = RecSyncError.localChanges(refusals.joined(separator: "\n") + "\nnothing was removed")
                error.remedies = edited.map { .showOrUndoEdits(path: $0) } + [.force]
                throw error
            }
        }
        return try workspace.removeRecords(ids)
    }
}
