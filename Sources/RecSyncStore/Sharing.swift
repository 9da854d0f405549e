import RecSyncModel

/// Sharing one of the acting user's zones: a fetch, a change to its participants, a save.
extension RemoteStore {
    /// Shares one of the user's own zones with `user` at `permission` (a participant already
    /// there gets the new permission); returns the zone as saved.
    @discardableResult
    public func share(_ zoneID: ZoneID, with user: String, permission: SharePermission) async throws(RecSyncError) -> RecordZone {
        try await changeParticipants(of: zoneID) { (participants: inout [ShareParticipant]) throws(RecSyncError) in
            try NameRules.validateOwnerName(user)
            participants.removeAll { $0.userRecordName == user }
            participants.append(ShareParticipant(userRecordName: user, permission: permission))
        }
    }

    /// Stops sharing one of the user's own zones with `user`; an error when it is not shared
    /// with them. Returns the zone as saved.
    @discardableResult
    public func unshare(_ zoneID: ZoneID, with user: String) async throws(RecSyncError) -> RecordZone {
        try await changeParticipants(of: zoneID) { (participants: inout [ShareParticipant]) throws(RecSyncError) in
            guard participants.contains(where: { $0.userRecordName == user }) else {
                throw .notFound("zone \(zoneID.zoneName) is not shared with \(user)").suggesting(.listZones)
            }
            participants.removeAll { $0.userRecordName == user }
        }
    }

    /// Reads one of the user's zones, changes its participant list, saves it; `zoneNotFound`
    /// when the user has no such zone.
    func changeParticipants(of zoneID: ZoneID, _ change: (inout [ShareParticipant]) throws(RecSyncError) -> Void) async throws(RecSyncError)
        -> RecordZone
    {
        guard var zone = try await fetchAllRecordZones(scope: .private).first(where: { $0.zoneID == zoneID }) else {
            // A zone someone shares with the user: only its owner changes who it is shared with.
            let shared = try await fetchAllRecordZones(scope: .shared).filter { $0.zoneID.zoneName == zoneID.zoneName }
            if let other = shared.first(where: { $0.zoneID.ownerName == zoneID.ownerName }) ?? shared.first {
                let owner = other.zoneID.ownerName
                throw .permissionFailure("zone '\(zoneID.zoneName)' belongs to \(owner); only its owner can share it")
            }
            throw .zoneNotFound(zoneID)
        }
        try change(&zone.participants)
        _ = try await modifyRecordZones([.save(zone)])[0].result.get()
        return zone
    }
}
