import RecSyncModel
import RecSyncWorkspace

/// One record of `SyncEngine.list`: what `recsync ls` prints.
public struct RecordListing: Sendable, Hashable {
    /// Where a record stands against what was last synced (the words of `status`, and
    /// `synced` for a record with no local change).
    public enum State: String, Sendable, Hashable {
        case synced, new, modified, deleted, conflict
    }

    public var recordID: RecordID
    /// The type its sidecar names; nil for a new record that takes the zone's default type.
    public var recordType: String?
    public var state: State
    public var changeTag: String?
    /// When the record was created and last modified on the store (ms since the epoch).
    public var created: Int64?
    public var modified: Int64?
}

extension SyncEngine {
    /// The records of the given zones (every zone of the workspace when nil), sorted by zone,
    /// then by record name, with their state. A zone not in the workspace is an error.
    public func list(_ zones: [ZoneID]?) async throws(RecSyncError) -> [RecordListing] {
        let ws = workspace
        let local = ws.localZones().zones
        for zone in zones ?? [] where !local.contains(zone) {
            throw .notFound(
                """
                no zone '\(zone.zoneName)'\(zone.ownerName == ws.user ? "" : " of \(zone.ownerName)") in this\
                 workspace (\(ws.relative(ws.zoneDirectory(zone))) is not there)
                """
            ).suggesting(.listZones)
        }
        let chosen = zones ?? local
        let conflicts = Set(try ws.allConflicts().map(\.recordID))
        var listing: [RecordListing] = []
        for scan in try await scanZones(chosen, workspace: ws) {
            for r in scan.records {
                var system = r.system
                if system == nil { system = try ws.systemFields(r.recordID) }
                let state: RecordListing.State =
                    if conflicts.contains(r.recordID) { .conflict } else {
                        switch r.state {
                        case .clean: .synced
                        case .new: .new
                        case .modified: .modified
                        case .deleted: .deleted
                        }
                    }
                listing.append(
                    RecordListing(
                        recordID: r.recordID, recordType: system?.recordType, state: state, changeTag: system?.changeTag,
                        created: system?.created?.timestamp, modified: system?.modified?.timestamp))
            }
        }
        listing.sort {
            $0.recordID.zoneID != $1.recordID.zoneID
                ? $0.recordID.zoneID < $1.recordID.zoneID
                : $0.recordID.recordName.utf8.lexicographicallyPrecedes($1.recordID.recordName.utf8)
        }
        return listing
    }
}
