import RecSyncModel

extension StoreCore {
    /// Zones changed or deleted in a scope between a database token and the head.
    ///
    /// A zone is changed when it is new or its content ID differs; deleted when it was visible
    /// at the token and is not now, with the reason from its tombstone (a zone no longer
    /// shared with the user counts as deleted, as in CloudKit's shared database).
    func databaseChanges(scope: DatabaseScope, since token: ServerChangeToken?, resultsLimit: Int) throws(RecSyncError) -> DatabaseChanges {
        try scope.requireSupported(for: "fetching database changes")
        let head = try backend.head()
        var range = HistoryRange(base: nil, target: head, after: nil)
        if let token {
            let content = try ChangeTokenContent.decodeDatabaseToken(token, storeID: storeID, scope: scope, user: user)
            range = try historyRange(of: content, head: head, what: "the \(scope.rawValue) database")
        }
        let (base, target, after) = (range.base, range.target, range.after)
        var warnings: [StoreWarning] = []
        let before = try base.map { c throws(RecSyncError) in try visibleZones(scope: scope, at: c, warnings: &warnings) } ?? [:]
        let now = try visibleZones(scope: scope, at: target, warnings: &warnings)

        var items: [(ZoneID, deleted: Bool)] = []
        for (id, contentID) in now where before[id] != contentID {
            items.append((id, false))
        }
        for id in before.keys where now[id] == nil {
            items.append((id, true))
        }
        items.sort { $0.0.description < $1.0.description }
        if let after {
            items.removeAll { $0.0.description <= after }
        }
        let limit = resultsLimit > 0 ? resultsLimit : Int.max
        let more = items.count > limit
        let page = items.prefix(limit)

        var modifications: [ZoneID] = []
        var deletions: [ZoneDeletion] = []
        for (id, deleted) in page {
            if !deleted {
                modifications.append(id)
            } else {
                let reason: ZoneDeletionReason
                if try backend.zone(id, at: target) != nil {
                    reason = .deleted  // still there, no longer shared with this user
                } else {
                    reason = try backend.tombstone(id, at: target) ?? .deleted
                }
                deletions.append(ZoneDeletion(zoneID: id, reason: reason))
            }
        }
        let kind = ChangeTokenContent.Kind.database(scope: scope, user: user)
        let newToken: ChangeTokenContent
        if more, let last = page.last {
            newToken = ChangeTokenContent(storeID: storeID, kind: kind, commit: base ?? "", target: target, after: last.0.description)
        } else {
            newToken = ChangeTokenContent(storeID: storeID, kind: kind, commit: target)
        }
        // As for zones: a resumed listing ends at its fixed target; what came since follows.
        return DatabaseChanges(
            modifications: modifications, deletions: deletions, changeToken: newToken.token, moreComing: more || target != head, warnings: warnings)
    }

    /// The zones of a scope visible to the user at a commit, with their content IDs.
    func visibleZones(scope: DatabaseScope, at commit: String, warnings: inout [StoreWarning]) throws(RecSyncError) -> [ZoneID: ZoneContentID] {
        let (entries, found) = try backend.zones(at: commit, owner: scope == .private ? user : nil)
        warnings.append(contentsOf: found)
        var result: [ZoneID: ZoneContentID] = [:]
        for entry in entries where isVisible(entry, scope: scope, warnings: &warnings) {
            result[entry.zoneID] = entry.contentID
        }
        return result
    }

    /// Whether the user sees a zone in a scope: in the private database their own zones (one
    /// with unreadable metadata too), in the shared one others' zones shared with them (zone.json
    /// is part of the zone's subtree, so a change of participants changes the content ID and
    /// shows as a change of the zone); a shared zone whose metadata cannot be read is reported.
    func isVisible(_ entry: ZoneEntry, scope: DatabaseScope, warnings: inout [StoreWarning]) -> Bool {
        switch scope {
        case .private:
            return entry.zoneID.ownerName == user
        case .shared:
            guard entry.zoneID.ownerName != user else { return false }
            switch entry.zone {
            case .success(let zone):
                return zone.permission(for: user) != nil
            case .failure(let error):
                warnings.append(StoreWarning(path: StoreLayout.zoneFilePath(entry.zoneID), message: error.message))
                return false
            }
        case .public:
            return false
        }
    }

    /// The tombstones of the user's own zones among `ids` that are gone at the head.
    func fetchZoneDeletions(_ ids: [ZoneID]) throws(RecSyncError) -> [ZoneDeletion] {
        var deletions: [ZoneDeletion] = []
        for id in Set(ids).sorted() where id.ownerName == user {
            guard let head = try backend.zoneHead(id), try backend.zone(id, at: head) == nil, let reason = try backend.tombstone(id, at: head)
            else { continue }
            deletions.append(ZoneDeletion(zoneID: id, reason: reason))
        }
        return deletions
    }

    /// Every zone of a scope as the user sees it.
    func fetchAllRecordZones(scope: DatabaseScope) throws(RecSyncError) -> [RecordZone] {
        try scope.requireSupported(for: "fetching zones")
        let head = try backend.head()
        let (entries, _) = try backend.zones(at: head, owner: scope == .private ? user : nil)
        var zones: [RecordZone] = []
        for entry in entries {
            guard case .success(let zone) = entry.zone else { continue }
            let mine = zone.zoneID.ownerName == user
            if (scope == .private && mine) || (scope == .shared && !mine && zone.permission(for: user) != nil) {
                zones.append(zone)
            }
        }
        return zones.sorted { $0.zoneID < $1.zoneID }
    }
}
