import RecSyncModel
import RecSyncStore
import RecSyncWorkspace

/// How `resolve` settles a conflict.
public enum ResolveStrategy: String, Sendable, CaseIterable {
    /// Keep the local version; the next push overwrites the store's.
    case ours
    /// Take the store's version.
    case theirs
    /// Field by field: take each side's change where only one side changed a field; fails
    /// (and keeps the conflict) when both sides changed the same field differently.
    case merge
}

/// The outcome of resolving one conflict.
public struct ResolveOutcome: Sendable, Hashable {
    public var recordID: RecordID
    /// Nil when resolved; otherwise why not (the conflict stays).
    public var failure: String?
}

extension SyncEngine {
    /// Settles pending conflicts (all, or those of the given records). Resolved records are
    /// ready to push: the sidecar now names the store's version.
    public func resolve(_ records: [RecordID]? = nil, strategy: ResolveStrategy) throws(RecSyncError) -> [ResolveOutcome] {
        try workspace.withLock(purpose: "resolve") { () throws(RecSyncError) -> [ResolveOutcome] in try resolveLocked(records, strategy: strategy) }
    }

    private func resolveLocked(_ records: [RecordID]?, strategy: ResolveStrategy) throws(RecSyncError) -> [ResolveOutcome] {
        let ws = workspace
        var outcomes: [ResolveOutcome] = []
        let conflicts = try ws.allConflicts().filter { records == nil || records!.contains($0.recordID) }
        if let records {
            for id in records where !conflicts.contains(where: { $0.recordID == id }) {
                outcomes.append(ResolveOutcome(recordID: id, failure: "no conflict is pending for this record"))
            }
        }
        for conflict in conflicts {
            let id = conflict.recordID
            var batch = ws.recordBatch()
            switch strategy {
            case .ours:
                break  // what is on disk stays, including edits made after the conflict arose
            case .theirs:
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
                case .success(let merged):
                    batch.write(ws.recordPath(id), WorkspaceEncoding.encodeFields(merged))
                case .failure(let why):
                    outcomes.append(ResolveOutcome(recordID: id, failure: why.message))
                    continue
                }
            }
            if let system = conflict.serverSystem {
                batch.write(ws.sidecarPath(id), WorkspaceEncoding.encodeSystemFields(system))
            } else {
                // The store has no such record: what remains here is a new record.
                batch.remove(ws.sidecarPath(id))
            }
            try batch.commit()
            var index = ZoneIndex.load(ws, zone: id.zoneID)
            if strategy == .theirs, let system = conflict.serverSystem, let server = conflict.server {
                index.record(file: conflict.fileName, recordName: id.recordName, tag: system.changeTag ?? "", hash: ZoneIndex.hash(server),
                             fileStamp: batch.writtenStamps[ws.recordPath(id)], sideStamp: batch.writtenStamps[ws.sidecarPath(id)])
            } else {
                index[conflict.fileName] = nil
            }
            try index.save()
            try ws.removeConflict(id.zoneID, fileName: conflict.fileName)
            outcomes.append(ResolveOutcome(recordID: id, failure: nil))
        }
        return outcomes
    }

    /// The field-level three-way merge: for each key, a side that kept the ancestor's value
    /// yields to the side that changed it. Fails naming the keys both sides changed differently.
    public static func merge(client: [String: FieldValue]?, server: [String: FieldValue]?, ancestor: [String: FieldValue]?) -> Result<[String: FieldValue], MergeFailure> {
        guard let client, let server else {
            return .failure(MergeFailure(message: "one side deleted the record; choose --ours or --theirs"))
        }
        var merged: [String: FieldValue] = [:]
        var clashes: [String] = []
        for key in Set(client.keys).union(server.keys).union((ancestor ?? [:]).keys).sorted() {
            let c = client[key], s = server[key]
            if c == s {
                merged[key] = c
            } else if let ancestor {
                let a = ancestor[key]
                if c == a { merged[key] = s } else if s == a { merged[key] = c } else { clashes.append(key) }
            } else {
                // No common version known: a key on one side only may be an addition there or
                // a deletion on the other side; only a person can tell.
                clashes.append(key)
            }
        }
        if !clashes.isEmpty {
            return .failure(MergeFailure(message: "both sides changed \(clashes.map { "'\($0)'" }.joined(separator: ", ")) differently; edit the file and use --ours, or use --theirs"))
        }
        return .success(merged)
    }
}

/// Why a three-way merge could not be done.
public struct MergeFailure: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
