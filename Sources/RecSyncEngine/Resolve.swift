import Foundation
import RecSyncModel
import RecSyncStore
import RecSyncWorkspace

/// How `resolve` settles a conflict.
public enum ResolveStrategy: String, Sendable, CaseIterable {
    /// Keep the local version; the next push overwrites the store's.
    case ours
    /// Take the store's version.
    case theirs
    /// Field by field against the common version: a field changed on one side only takes
    /// that side's value, one changed identically on both takes it. Fields both sides changed
    /// differently (true clashes) keep our value in the file, which holds the merge of the
    /// rest; the conflict then stays, naming the clashes (`ResolveOutcome.clashes`), until
    /// the file is edited and merged again, or settled with `ours` (the file as it is) or
    /// `theirs` (the store's version whole).
    case merge
}

/// The outcome of resolving one conflict.
public struct ResolveOutcome: Sendable, Hashable {
    public var recordID: RecordID
    /// Nil when resolved or merged in part; otherwise why not (the conflict stays, nothing
    /// was written).
    public var failure: String?
    /// After a merge that left the conflict pending: the fields both sides changed
    /// differently (the file holds ours for them, merged for the rest). Empty otherwise.
    public var clashes: [String] = []
    /// Whether the record now differs from the store's version (the next push sends it);
    /// false when the store's version was taken (or both sides were the same).
    public var toPush = false
    /// The asset fields whose settled content (the store's) is not here yet: the file this
    /// workspace held went to `setAside`, and the next `pull` (or `get --asset`) brings the
    /// store's. Sorted.
    public var assetsNotFetched: [String] = []
    /// Where the asset files that held another content went (under `.recsync/lost+found/`).
    public var setAside: [String] = []

    public init(recordID: RecordID, failure: String? = nil, clashes: [String] = [], toPush: Bool = false) {
        self.recordID = recordID
        self.failure = failure
        self.clashes = clashes
        self.toPush = toPush
    }

    /// Whether the conflict is settled.
    public var resolved: Bool { failure == nil && clashes.isEmpty }
}

/// A field-by-field three-way merge of two versions of a record (`SyncEngine.merge`).
public struct FieldMerge: Sendable, Hashable {
    /// The merged fields: each side's change where only one side changed a field, the common
    /// value where both made the same change, and our value for a clash.
    public var fields: [String: FieldValue]
    /// The fields both sides changed differently, sorted.
    public var clashes: [String]

    public init(fields: [String: FieldValue], clashes: [String]) {
        self.fields = fields
        self.clashes = clashes
    }
}

extension SyncEngine {
    /// Settles pending conflicts (all, or those of the given records). Resolved records are
    /// ready to push: the sidecar now names the store's version.
    public func resolve(_ records: [RecordID]? = nil, strategy: ResolveStrategy) throws(RecSyncError) -> [ResolveOutcome] {
        try workspace.withLock(purpose: "resolve") { () throws(RecSyncError) -> [ResolveOutcome] in try resolveLocked(records, strategy: strategy) }
    }

    private func resolveLocked(_ records: [RecordID]?, strategy: ResolveStrategy) throws(RecSyncError) -> [ResolveOutcome] {
        let ws = workspace
        // Conflicts whose sides are the same by now are settled whatever the strategy.
        var outcomes = try settleIdenticalConflictsLocked().filter { records == nil || records!.contains($0) }.map { ResolveOutcome(recordID: $0) }
        let conflicts = try ws.allConflicts().filter { records == nil || records!.contains($0.recordID) }
        if let records {
            for id in records where !conflicts.contains(where: { $0.recordID == id }) && !outcomes.contains(where: { $0.recordID == id }) {
                outcomes.append(ResolveOutcome(recordID: id, failure: "no conflict is pending for this record"))
            }
        }
        for conflict in conflicts {
            let id = conflict.recordID
            var batch = try ws.recordBatch()
            // What the record file holds once settled (nil: no file).
            var settled: [String: FieldValue]?
            switch strategy {
            case .ours:
                // What is on disk stays, including edits made after the conflict arose.
                do { settled = try ws.recordFields(id) } catch {
                    if case .fileSystem = error.reason { throw error }
                    settled = [:]  // undecodable: certainly not the store's version
                }
            case .theirs:
                settled = conflict.server
                if let server = conflict.server {
                    batch.write(ws.recordPath(id), WorkspaceEncoding.encodeFields(server))
                } else {
                    batch.remove(ws.recordPath(id))
                }
            case .merge:
                // Ours is what is on disk now: the user may have edited it since the conflict arose.
                let client: [String: FieldValue]?
                do { client = try ws.recordFields(id) } catch {
                    outcomes.append(ResolveOutcome(recordID: id, failure: "\(error.message); fix the file first"))
                    continue
                }
                switch Self.merge(client: client, server: conflict.server, ancestor: conflict.ancestor) {
                case .success(let merged) where !merged.clashes.isEmpty:
                    // The true clashes stay a conflict; the rest is merged into the file now.
                    if merged.fields != client {
                        batch.write(ws.recordPath(id), WorkspaceEncoding.encodeFields(merged.fields))
                        try batch.commit()
                    }
                    outcomes.append(ResolveOutcome(recordID: id, clashes: merged.clashes, toPush: true))
                    continue
                case .success(let merged):
                    batch.write(ws.recordPath(id), WorkspaceEncoding.encodeFields(merged.fields))
                    settled = merged.fields
                case .failure(let why):
                    outcomes.append(ResolveOutcome(recordID: id, failure: why.message))
                    continue
                }
            }
            let assets = try setAssetsAside(id, settled: settled)
            try finish(conflict, batch: &batch, indexTheirs: strategy == .theirs)
            var outcome = ResolveOutcome(recordID: id, toPush: settled != conflict.server)
            (outcome.assetsNotFetched, outcome.setAside) = assets
            outcomes.append(outcome)
        }
        return outcomes
    }

    /// Makes the asset files agree with the settled fields before the record file lands. An
    /// asset field the settled version takes from the store, whose file here holds something
    /// else (our side's file), cannot be fetched here (resolving does not reach the store): the
    /// file goes to `.recsync/lost+found/` and the store's reference is noted as not fetched,
    /// so the record reads as settled and the next pull brings the file. Left in place, our
    /// file would have read as an edit of the field and been pushed over the store's, though
    /// the user chose the store's side. Returns the fields noted and where the files went.
    private func setAssetsAside(_ id: RecordID, settled: [String: FieldValue]?) throws(RecSyncError) -> ([String], [String]) {
        let ws = workspace
        let wanted =
            settled?.compactMapValues { value -> AssetReference? in
                if case .asset(let a) = value { return a }
                return nil
            } ?? [:]
        guard !wanted.isEmpty else { return ([], []) }
        // What the files hold now (a record file that does not decode: nothing known).
        var here: [String: FieldValue] = [:]
        do { here = try ws.recordFields(id) ?? [:] } catch {
            if case .fileSystem = error.reason { throw error }
        }
        let notesBefore = try ws.unfetchedAssets(in: id.zoneID)[id] ?? [:]
        var notes = notesBefore.filter { wanted[$0.key] == $0.value }
        var noted: [String] = [], moved: [String] = []
        // A missing file without a note does not resolve (`here` is then empty): noted too.
        for (field, asset) in wanted.sorted(by: { $0.key < $1.key }) where here[field] != .asset(asset) {
            let path = ws.assetPath(id, field: field)
            notes[field] = asset
            noted.append(field)
            guard try ws.assetFileStamp(id, field: field) != nil else { continue }
            let target = "\(ws.stateDir)/lost+found/resolved-\(Int(Date().timeIntervalSince1970))-\(getpid())/\(ws.relative(path))"
            // Noted first: a crash after the move leaves the record reading as settled.
            try ws.setUnfetchedAssets([id: notes], in: id.zoneID)
            try ws.moveAside(path, to: target)
            moved.append(ws.relative(target))
        }
        if notes != notesBefore { try ws.setUnfetchedAssets([id: notes], in: id.zoneID) }
        return (noted, moved)
    }

    /// Makes a settled conflict's record synced at the store's version: the sidecar names it
    /// (or goes, when the store has no such record), the conflict goes. With `indexTheirs`,
    /// the batch wrote the store's fields into the file, and the index records it as clean.
    private func finish(_ conflict: Conflict, batch: inout WriteBatch, indexTheirs: Bool) throws(RecSyncError) {
        let ws = workspace, id = conflict.recordID
        if let system = conflict.serverSystem {
            batch.write(ws.sidecarPath(id), WorkspaceEncoding.encodeSystemFields(system), machineOwned: true)
        } else {
            // The store has no such record: what remains here is a new record.
            batch.remove(ws.sidecarPath(id))
        }
        try batch.commit()
        var index = ZoneIndex.load(ws, zone: id.zoneID)
        if indexTheirs, let system = conflict.serverSystem, let server = conflict.server {
            index.record(
                file: conflict.fileName, recordName: id.recordName, tag: system.changeTag ?? "", hash: ZoneIndex.hash(server),
                fileStamp: batch.writtenStamps[ws.recordPath(id)], sideStamp: batch.writtenStamps[ws.sidecarPath(id)])
        } else {
            index[conflict.fileName] = nil
        }
        try index.save()
        try ws.removeConflict(id.zoneID, fileName: conflict.fileName)
    }

    /// Settles the pending conflicts whose two sides are the same by now (the record file holds
    /// the store's version's fields, or both deleted it): there is nothing to choose, so the
    /// record is simply synced at the store's version. Returns the records settled.
    ///
    /// Pull, push and resolve call it themselves; `status` calls it when it can take the lock.
    public func settleIdenticalConflicts() throws(RecSyncError) -> [RecordID] {
        try workspace.withLock(purpose: "settle conflicts") { () throws(RecSyncError) -> [RecordID] in try settleIdenticalConflictsLocked() }
    }

    func settleIdenticalConflictsLocked() throws(RecSyncError) -> [RecordID] {
        var settled: [RecordID] = []
        for conflict in try workspace.allConflicts() {
            let local: [String: FieldValue]?
            do { local = try workspace.recordFields(conflict.recordID) } catch { continue }  // mid-edit: not the same
            guard local == conflict.server else { continue }
            var batch = try workspace.recordBatch()
            try finish(conflict, batch: &batch, indexTheirs: false)
            settled.append(conflict.recordID)
        }
        return settled.sorted()
    }

    /// The field-level three-way merge: for each key, a side that kept the ancestor's value
    /// yields to the side that changed it, and the same change on both sides is taken; a key
    /// both changed differently is a clash, kept at our value. Without an ancestor every key
    /// that differs clashes. Fails only when one side deleted the record (no fields to merge).
    public static func merge(client: [String: FieldValue]?, server: [String: FieldValue]?, ancestor: [String: FieldValue]?) -> Result<
        FieldMerge, MergeFailure
    > {
        guard let client, let server else {
            return .failure(MergeFailure(message: "one side deleted the record; choose --ours or --theirs"))
        }
        var merged: [String: FieldValue] = [:]
        var clashes: [String] = []
        for key in Set(client.keys).union(server.keys).union((ancestor ?? [:]).keys).sorted() {
            let c = client[key], s = server[key]
            if c == s {
                merged[key] = c
            } else if let ancestor, c == ancestor[key] {
                merged[key] = s
            } else if let ancestor, s == ancestor[key] {
                merged[key] = c
            } else {
                // Both changed it differently; or, with no common version known, a key on one
                // side only may be an addition there or a deletion on the other: only a
                // person can tell. Ours stays in the file meanwhile.
                merged[key] = c
                clashes.append(key)
            }
        }
        return .success(FieldMerge(fields: merged, clashes: clashes))
    }
}

/// Why a three-way merge could not be done.
public struct MergeFailure: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
