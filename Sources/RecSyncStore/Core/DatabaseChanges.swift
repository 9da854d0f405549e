import RecSyncModel

extension StoreCore {
    /// Zones changed or deleted in a scope between a database token and the head.
    ///
    /// A zone is changed when it is new or its content ID differs; deleted when it was visible
    /// at the token and is not now, with the reason from its tombstone (a zone no longer
    /// shared with the user counts as deleted, as in CloudKit's shared database).
    func databaseChanges(scope: DatabaseScope, since token: ServerChangeToken?, resultsLimit: Int) throws(RecSyncError) -> DatabaseChanges {
        try scope.requireSupported(for: "fetching database changes")
        if backend.zonesHaveOwnRefs { return try databaseChangesFromZoneRefs(scope: scope, since: token, resultsLimit: resultsLimit) }
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

    /// Database changes of a store with a ref per zone (docs/zone-refs.md): the scope's zone
    /// refs against the heads a version 2 token kept. A zone whose head is the token's is
    /// unchanged without reading anything; one that moved is read at its head and compared
    /// with the token (visible then and now, and its content).
    ///
    /// A page's token keeps the new head of every zone it delivered or found unchanged and the
    /// old one of every zone still to deliver (none, for a zone new since), so the next call
    /// finds exactly what is left, however the zones moved meanwhile: no resume key is needed.
    /// A version 1 token (of the store before it had a ref per zone) has expired: the client
    /// fetches from the beginning, which a client handles as after any expired token.
    private func databaseChangesFromZoneRefs(scope: DatabaseScope, since token: ServerChangeToken?, resultsLimit: Int) throws(RecSyncError)
        -> DatabaseChanges
    {
        var before = try token.map { t throws(RecSyncError) in try zoneRefHeads(t, scope: scope, what: "token") } ?? [:]
        var warnings: [StoreWarning] = []
        let refs = try scopeZoneRefs(scope, warnings: &warnings)

        // Each ref: its entry in the next token, and what changed, in suffix order.
        var items: [(suffix: String, change: DatabaseZoneChange, was: ZoneRefHead?)] = []
        var kept: [String: ZoneRefHead] = [:]
        for ref in refs {
            let was = before.removeValue(forKey: ref.suffix)
            if let was, was.isHead(ref.head) {
                kept[ref.suffix] = was
                continue
            }
            guard let (entry, visible) = try readZoneRef(ref, scope: scope, warnings: &warnings) else {
                kept[ref.suffix] = was
                continue
            }
            kept[ref.suffix] = ZoneRefHead(refSuffix: ref.suffix, head: ref.head, visible: visible)
            let wasVisible = was?.visible ?? false
            if visible, let entry {
                if let was, wasVisible, try backend.isInHistory(was.head, head: ref.head),
                    try backend.zoneContent(ref.zoneID, at: was.head) == entry.contentID
                {
                    continue  // moved without a change to the zone (a compaction rewrote its ref)
                }
                items.append((ref.suffix, .changed(ref.zoneID), was))
            } else if wasVisible {
                // Gone, or no longer shared with the user.
                let reason = entry != nil ? .deleted : try backend.tombstone(ref.zoneID, at: ref.head) ?? .deleted
                items.append((ref.suffix, .deleted(ZoneDeletion(zoneID: ref.zoneID, reason: reason)), was))
            }
        }
        // A ref the token had that is gone (only plain git deletes one): deleted, if it was seen.
        for (suffix, was) in before where was.visible {
            guard let name = RefNames.parseSuffix(suffix), case .name(let owner) = name.owner, case .name(let zone) = name.zone,
                let id = try? ZoneID(zoneName: zone, ownerName: owner)
            else { continue }
            items.append((suffix, .deleted(ZoneDeletion(zoneID: id, reason: .deleted)), was))
        }
        items.sort { $0.suffix.utf8.lexicographicallyPrecedes($1.suffix.utf8) }

        let limit = resultsLimit > 0 ? resultsLimit : Int.max
        var modifications: [ZoneID] = []
        var deletions: [ZoneDeletion] = []
        for (i, item) in items.enumerated() {
            if i < limit {
                switch item.change {
                case .changed(let id): modifications.append(id)
                case .deleted(let deletion): deletions.append(deletion)
                }
            } else {
                // Not delivered yet: the next token keeps what the client last saw.
                kept[item.suffix] = item.was
            }
        }
        let heads = kept.values.sorted { $0.refSuffix.utf8.lexicographicallyPrecedes($1.refSuffix.utf8) }
        let newToken = ChangeTokenContent(storeID: storeID, scope: scope, user: user, heads: heads)
        return DatabaseChanges(
            modifications: modifications, deletions: deletions, changeToken: newToken.token, moreComing: items.count > limit, warnings: warnings)
    }

    /// The zone heads a version 2 database token (or subscription cursor, `what`) kept, by ref
    /// suffix; a version 1 one, from before the store had a ref per zone, has expired.
    func zoneRefHeads(_ token: ServerChangeToken, scope: DatabaseScope, what: String) throws(RecSyncError) -> [String: ZoneRefHead] {
        let content = try ChangeTokenContent.decodeDatabaseToken(token, storeID: storeID, scope: scope, user: user)
        guard content.version == ChangeTokenContent.zoneRefsVersion, let heads = content.heads else {
            throw .changeTokenExpired("the \(scope.rawValue) database (a \(what) from before the store had a ref per zone)")
        }
        return Dictionary(heads.map { ($0.refSuffix, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The zone refs a scope looks at: the private scope the user's own, the shared scope every
    /// other owner's (visible or not, so that one not shared is read again only when it moves).
    func scopeZoneRefs(_ scope: DatabaseScope, warnings: inout [StoreWarning]) throws(RecSyncError) -> [ZoneRefState] {
        let (listed, found) = try backend.zoneRefs(owner: scope == .private ? user : nil)
        warnings += found
        return scope == .private ? listed : listed.filter { $0.zoneID.ownerName != user }
    }

    /// A zone ref's zone at its head (nil: gone, a tombstone) and whether the user sees it in
    /// the scope; nil, with a warning naming the ref, when plain git broke the ref: one zone's
    /// problem, looked at again next time.
    func readZoneRef(_ ref: ZoneRefState, scope: DatabaseScope, warnings: inout [StoreWarning]) throws(RecSyncError) -> (
        entry: ZoneEntry?, visible: Bool
    )? {
        let entry: ZoneEntry?
        do { entry = try backend.zone(ref.zoneID, at: ref.head) } catch  where error.kind == .storeCorrupt {
            warnings.append(StoreWarning(path: RefNames.zonesPrefix + ref.suffix, message: error.message))
            return nil
        }
        return (entry, entry.map { isVisible($0, scope: scope, warnings: &warnings) } ?? false)
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
                warnings.append(StoreWarning(path: zonePaths.shown(zonePaths.zoneFile(entry.zoneID), in: entry.zoneID), message: error.message))
                return false
            }
        case .public:
            return false
        }
    }

    /// The tombstones of the user's own zones among `ids` that are gone at the head.
    func fetchZoneDeletions(_ ids: [ZoneID]) throws(RecSyncError) -> [ZoneDeletion] {
        var deletions: [ZoneDeletion] = []
        var heads: [StoreRef: String?] = [:]
        for id in Set(ids).sorted() where id.ownerName == user {
            let ref = backend.ref(of: id)
            if heads[ref] == nil { heads[ref] = .some(try backend.head(of: ref)) }
            guard let head = heads[ref] ?? nil, try backend.zone(id, at: head) == nil, let reason = try backend.tombstone(id, at: head)
            else { continue }
            deletions.append(ZoneDeletion(zoneID: id, reason: reason))
        }
        return deletions
    }

    /// Every zone of a scope as the user sees it.
    func fetchAllRecordZones(scope: DatabaseScope) throws(RecSyncError) -> [RecordZone] {
        try scope.requireSupported(for: "fetching zones")
        var entries: [ZoneEntry] = []
        if backend.zonesHaveOwnRefs {
            for ref in try backend.zoneRefs(owner: scope == .private ? user : nil).refs {
                do {
                    if let entry = try backend.zone(ref.zoneID, at: ref.head) { entries.append(entry) }
                } catch  where error.kind == .storeCorrupt {
                    continue  // a zone whose ref plain git broke is left out, as an unreadable zone.json is
                }
            }
        } else {
            entries = try backend.zones(at: backend.head(), owner: scope == .private ? user : nil).zones
        }
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

/// One zone in database changes of a store with a ref per zone.
private enum DatabaseZoneChange {
    case changed(ZoneID)
    case deleted(ZoneDeletion)
}
