import Foundation
import RecSyncModel

extension StoreCore {
    /// Creates, updates, deletes and purges zones in one commit per ref (one commit where every
    /// zone is on the shared ref).
    ///
    /// Only a zone's owner may change it. Deleting leaves a tombstone with the reason, which
    /// database changes report; only `recreate` creates such a zone again (a `save` is refused
    /// there, decided against the same head the commit lands on, so a delete racing a client's
    /// create cannot be undone by it). Creating again removes the tombstone and starts a new
    /// incarnation, so zone tokens of the old one expire.
    func modifyRecordZones(_ operations: [ZoneOperation]) throws(RecSyncError) -> [ZoneOperationResult] {
        // One incarnation per created zone, kept across retries so a retry does not mint another.
        var incarnations: [ZoneID: String] = [:]
        var results = [ZoneOperationResult?](repeating: nil, count: operations.count)
        let groups = Dictionary(grouping: operations.indices, by: { backend.ref(of: operations[$0].zoneID) })
        for (_, decided) in try modifyRecordZones(operations, groups, incarnations: &incarnations) {
            for (i, result) in decided { results[i] = result }
        }
        return results.compactMap { $0 }
    }

    /// For each ref, the operations at its indices in `groups` (all of zones on it) in one
    /// commit on it, the refs' commits published together: each result with its index in
    /// the request.
    private func modifyRecordZones(_ operations: [ZoneOperation], _ groups: [StoreRef: [Int]], incarnations: inout [ZoneID: String])
        throws(RecSyncError) -> [StoreRef: [(Int, ZoneOperationResult)]]
    {
        try commitWithRetry(
            on: groups.keys.sorted(),
            { (ref: StoreRef, head: String?, time: Int64) throws(RecSyncError) in
                let indices = groups[ref] ?? []
                var results: [(Int, ZoneOperationResult)] = []
                var writes: [StoreWrite] = []
                var touched = Set<ZoneID>()
                var summary: [String] = []
                for i in indices {
                    let operation = operations[i]
                    let zoneID = operation.zoneID
                    let outcome = Result { () throws(RecSyncError) -> RecordZone? in
                        guard zoneID.ownerName == user else {
                            throw .permissionFailure("zone '\(zoneID)' belongs to \(zoneID.ownerName); only its owner can change or delete it")
                        }
                        guard touched.insert(zoneID).inserted else {
                            throw .invalidArguments("zone '\(zoneID)' appears twice in one request; send one operation per zone")
                        }
                        let existing = try head.flatMap { h throws(RecSyncError) in try backend.zone(zoneID, at: h) }
                            .map { entry throws(RecSyncError) in try entry.zone.get() }
                        let tombstone = existing != nil ? nil : try head.flatMap { h throws(RecSyncError) in try backend.tombstone(zoneID, at: h) }
                        switch operation {
                        case .save(var zone), .recreate(var zone), .uploadAfterReset(var zone):
                            if let t = zone.defaultRecordType { try NameRules.validateRecordType(t) }
                            for p in zone.participants {
                                try NameRules.validateOwnerName(p.userRecordName)
                                if p.userRecordName == user {
                                    throw .invalidArguments("zone '\(zoneID)': the owner cannot be a participant of their own zone")
                                }
                            }
                            if let existing {
                                // An encrypted zone stays encrypted: a client that does not know
                                // about encryption must not turn it off by saving the zone.
                                if zone.encryption == nil { zone.encryption = existing.encryption }
                                zone.created = existing.created
                                zone.incarnation = existing.incarnation
                                summary.append("updated \(zoneID)")
                            } else {
                                if let reason = tombstone {
                                    switch operation {
                                    case .save: throw Self.zoneGoneError(zoneID, reason: reason)
                                    case .uploadAfterReset where reason != .encryptedDataReset: throw Self.zoneGoneError(zoneID, reason: reason)
                                    default: break
                                    }
                                }
                                zone.created = stamp(time)
                                let incarnation = incarnations[zoneID] ?? UUID().uuidString.lowercased()
                                incarnations[zoneID] = incarnation
                                zone.incarnation = incarnation
                                if tombstone != nil { writes.append(.removeTombstone(zoneID)) }
                                summary.append("created \(zoneID)")
                            }
                            writes.append(.saveZone(zoneID, ZoneDocuments.encodeZone(zone)))
                            return zone
                        case .delete, .purge, .markEncryptedDataReset:
                            guard existing != nil else { throw .zoneNotFound(zoneID) }
                            let reason: ZoneDeletionReason =
                                switch operation {
                                case .purge: .purged
                                case .markEncryptedDataReset: .encryptedDataReset
                                default: .deleted
                                }
                            writes.append(.removeZone(zoneID))
                            writes.append(.saveTombstone(zoneID, ZoneDocuments.encodeTombstone(reason: reason, stamp: stamp(time), zone: zoneID)))
                            summary.append("\(reason == .deleted ? "deleted" : reason == .purged ? "purged" : "reset encrypted data of") \(zoneID)")
                            return nil
                        }
                    }
                    results.append((i, ZoneOperationResult(operation: operation, result: outcome)))
                }
                let message = "\(user): \(summary.joined(separator: ", "))\n"
                return (results, writes, message)
            }, finish: { _, _, _ in })
    }

    /// Why a plain save may not bring back a zone with a tombstone.
    static func zoneGoneError(_ zoneID: ZoneID, reason: ZoneDeletionReason) -> RecSyncError {
        switch reason {
        case .purged: .userDeletedZone(zoneID)
        case .deleted, .encryptedDataReset: .zoneNotFound(zoneID)
        }
    }
}
