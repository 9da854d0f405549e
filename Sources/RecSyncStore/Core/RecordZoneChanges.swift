import RecSyncModel

/// The largest stored record blob read at all (see `StoreCore.readRecord`).
let maxRecordBlobBytes = 16 * Record.maxFieldDataBytes

extension StoreCore {
    /// Records changed and deleted in a zone since a zone token, a page at a time.
    ///
    /// The diff runs between the token's commit and a target commit fixed when the first page
    /// is handed out, so paging continues exactly where it stopped even if the head moves.
    func recordZoneChanges(zone zoneID: ZoneID, since token: ServerChangeToken?, resultsLimit: Int, desiredKeys: [String]?) throws(RecSyncError)
        -> RecordZoneChanges
    {
        guard let head = try backend.zoneHead(zoneID) else { throw .zoneNotFound(zoneID) }
        let zone = try zoneForRecords(zoneID, at: head)
        let incarnation = zone.incarnation ?? ""
        var range = HistoryRange(base: nil, target: head, after: nil)
        if let token {
            let content = try ChangeTokenContent.decodeZoneToken(token, storeID: storeID, zoneID: zoneID)
            guard case .zone(_, let tokenIncarnation) = content.kind, tokenIncarnation == incarnation else {
                throw .changeTokenExpired("zone '\(zoneID)' (the zone was deleted and created again)")
            }
            range = try historyRange(of: content, head: head, what: "zone '\(zoneID)'")
        }
        let (base, target, after) = (range.base, range.target, range.after)
        let limit = resultsLimit > 0 ? resultsLimit : Self.defaultRecordLimit
        // The zone's content at both ends: the record reads take versions of the zone.
        let baseContent = try base.map { c throws(RecSyncError) in try backend.zoneContent(zoneID, at: c) } ?? nil
        let targetContent = try backend.zoneContent(zoneID, at: target)
        let batch = try backend.recordChanges(zone: zoneID, from: baseContent, to: targetContent, after: after, limit: limit)
        var warnings = batch.warnings
        var modifications: [RecordResult] = []
        var deletions: [RecordDeletionEvent] = []
        // Entries are named in messages only; the zone's part of the name is made once.
        let records = zonePaths.shown(zonePaths.records(zoneID), in: zoneID)
        for change in batch.changes {
            let path = "\(records)/\(change.key)"
            guard let recordID = recordID(of: change, in: zoneID, path: path, warnings: &warnings) else { continue }
            if let new = change.new {
                if let problem = change.problem {
                    modifications.append(RecordResult(recordID: recordID, result: .failure(.storeCorrupt("\(path): \(problem)"))))
                    continue
                }
                modifications.append(recordResult(recordID, tag: new, path: path, desiredKeys: desiredKeys))
            } else if let old = change.old {
                // The deletion stands whatever its last version holds; a version that cannot be
                // read is said, not hidden behind a made-up type.
                let type: String
                if let previous = try readVersionIfPresent(recordID, tag: old, path: path, warnings: &warnings) {
                    type = previous.recordType
                } else {
                    type = ""
                }
                deletions.append(RecordDeletionEvent(recordID: recordID, recordType: type))
            }
        }
        let kind = ChangeTokenContent.Kind.zone(zoneID, incarnation: incarnation)
        let newToken: ChangeTokenContent
        if batch.more, let last = batch.changes.last {
            newToken = ChangeTokenContent(storeID: storeID, kind: kind, commit: base ?? "", target: target, after: last.key)
        } else {
            newToken = ChangeTokenContent(storeID: storeID, kind: kind, commit: target)
        }
        // As of the range's target: one lookup in the zone's tree, whatever the history's length.
        let clientToken = try targetContent.flatMap { c throws(RecSyncError) in try backend.clientToken(zoneID, client: actor.clientSlot, in: c) }
            .map { String(decoding: $0, as: UTF8.self) }
        // A batch resumed from a saved page token ends at the target it was fixed to; what
        // was committed since is more to come, or a client whose database token has moved on
        // to the head would never fetch it.
        let more = batch.more || target != head
        // The total to show progress against, on a fetch's first page: the zone's size from the
        // beginning, else the records the tree diff finds changed (this page's, if it is the only one).
        let estimate: Int?
        if token == nil {
            estimate = try backend.recordCountEstimate(zone: zoneID, in: targetContent)
        } else if after == nil {
            estimate = batch.more ? try backend.recordChangeCountEstimate(zone: zoneID, from: baseContent, to: targetContent) : batch.changes.count
        } else {
            estimate = nil
        }
        return RecordZoneChanges(
            modifications: modifications, deletions: deletions, changeToken: newToken.token, moreComing: more, warnings: warnings,
            clientChangeTokenData: clientToken, recordCountEstimate: estimate)
    }

    /// The record ID a changed tree entry names; nil, with a warning naming its path, when the
    /// name is not one a record can have (an entry only plain git could write).
    func recordID(of change: RawRecordChange, in zone: ZoneID, path: String, warnings: inout [StoreWarning]) -> RecordID? {
        do { return try RecordID(recordName: change.recordName, zoneID: zone) } catch {
            warnings.append(StoreWarning(path: path, message: "ignored: \(error.message)"))
            return nil
        }
    }

    /// One stored record version as a result (see `readRecord`), with only `desiredKeys`'
    /// fields (nil: all); a failure that lies in the stored bytes names the version
    /// (`RecordResult.unreadableChangeTag`).
    func recordResult(_ id: RecordID, tag: String, path: String, desiredKeys: [String]?) -> RecordResult {
        var inTheBytes = false
        do throws(RecSyncError) {
            var record = try readRecord(id, tag: tag, path: path, inTheBytes: &inTheBytes)
            if let desiredKeys { record.fields = record.fields.filter { desiredKeys.contains($0.key) } }
            return RecordResult(recordID: id, result: .success(record))
        } catch {
            return RecordResult(recordID: id, result: .failure(error), unreadableChangeTag: inTheBytes ? tag : nil)
        }
    }

    /// Decodes one stored record version, checking that it is the record its path says.
    func readRecord(_ id: RecordID, tag: String, path: String) throws(RecSyncError) -> Record {
        var inTheBytes = false
        return try readRecord(id, tag: tag, path: path, inTheBytes: &inTheBytes)
    }

    /// An earlier version of a record (a conflict's ancestor, a deleted record's last
    /// version), nil when the store no longer holds it (a compaction folded it away). A
    /// version it holds but cannot read is nil too, with a warning when `warnings` is given;
    /// a failure to read the store at all (I/O, the git library) is thrown, never taken for
    /// a missing version.
    func readVersionIfPresent(_ id: RecordID, tag: String, path: String, warnings: inout [StoreWarning]) throws(RecSyncError) -> Record? {
        guard try backend.blobSize(tag) != nil else { return nil }
        do { return try readRecord(id, tag: tag, path: path) } catch {
            guard case .storeCorrupt = error.reason else { throw error }
            warnings.append(StoreWarning(path: path, message: "an earlier version (\(tag.prefix(12))) cannot be read: \(error.message)"))
            return nil
        }
    }

    /// `readVersionIfPresent`, where nothing collects warnings: a version that cannot be read
    /// is nil, as one the store no longer holds.
    func readVersionIfPresent(_ id: RecordID, tag: String, path: String) throws(RecSyncError) -> Record? {
        var unheard: [StoreWarning] = []
        return try readVersionIfPresent(id, tag: tag, path: path, warnings: &unheard)
    }

    /// `inTheBytes` is set once the failure, if any, can only lie in the version's bytes:
    /// they were read (or their size was), so reading them again fails the same way.
    func readRecord(_ id: RecordID, tag: String, path: String, inTheBytes: inout Bool) throws(RecSyncError) -> Record {
        // A blob far past what any record within the limit encodes to (escaping a string's
        // control characters takes 6 bytes each) is refused from its header, unread: someone
        // may have committed 50 MB there with plain git, and every pull would read it.
        if let size = try backend.blobSize(tag), size > maxRecordBlobBytes {
            inTheBytes = true
            throw .storeCorrupt(
                """
                \(path): record '\(id.recordName)' is stored as \(size) bytes, far over the 1 MB limit every\
                 save keeps to; skipped unread. Shrink or remove it in the store
                """
            )
        }
        guard let bytes = try backend.blob(tag) else {
            throw .storeCorrupt("\(path): the store lacks object \(tag); run 'git fsck' on the store")
        }
        inTheBytes = true
        let record: Record
        do { record = try StoreEncoding.decode(bytes, zoneID: id.zoneID, changeTag: tag) } catch {
            throw .storeCorrupt("\(path): not a valid record (\(error.message)); fix or remove it in the store")
        }
        guard record.recordID == id else {
            throw .storeCorrupt(
                "\(path): the record inside is named '\(record.recordID.recordName)', not '\(id.recordName)'; move or fix it in the store")
        }
        // The limit a save enforces holds for reading too, whoever wrote the blob. The
        // compact field data is never larger than the (pretty) blob, so most records need no count.
        if bytes.count > Record.maxFieldDataBytes {
            let size = StoreEncoding.fieldDataSize(of: record)
            if size > Record.maxFieldDataBytes {
                throw .storeCorrupt(
                    """
                    \(path): record '\(id.recordName)' holds \(size) bytes of field data, over the 1 MB limit every\
                     save keeps to; skipped. Shrink or remove it in the store
                    """
                )
            }
        }
        return record
    }

    /// The current version of each record, as the user may see it.
    func fetchRecords(_ ids: [RecordID], desiredKeys: [String]?) throws(RecSyncError) -> [RecordResult] {
        // Each zone read at its ref's head, taken once.
        var heads: [StoreRef: String?] = [:]
        var zoneErrors: [ZoneID: RecSyncError] = [:]
        return try ids.map { id throws(RecSyncError) in
            let ref = backend.ref(of: id.zoneID)
            if heads[ref] == nil { heads[ref] = .some(try backend.head(of: ref)) }
            let head = heads[ref] ?? nil
            if zoneErrors[id.zoneID] == nil {
                do throws(RecSyncError) { _ = try zoneForRecords(id.zoneID, at: head) } catch { zoneErrors[id.zoneID] = error }
            }
            if let error = zoneErrors[id.zoneID] { return RecordResult(recordID: id, result: .failure(error)) }
            guard let head, let tag = try backend.recordTag(id, at: head) else {
                return RecordResult(recordID: id, result: .failure(.unknownItem(id)))
            }
            return recordResult(id, tag: tag, path: zonePaths.shownRecord(id), desiredKeys: desiredKeys)
        }
    }

    /// A version of a record by change tag, if the store still has it and the user may see the zone.
    func fetchRecordVersion(_ id: RecordID, changeTag: String) throws(RecSyncError) -> Record? {
        let head = try backend.zoneHead(id.zoneID)
        do { _ = try visibleZone(id.zoneID, at: head) } catch {
            switch error.reason {
            // A zone entry someone broke is that zone's problem, reported where it is read;
            // here it is a version this user cannot have.
            case .zoneNotFound, .userDeletedZone, .permissionFailure, .storeCorrupt: return nil
            default: throw error
            }
        }
        return try readVersionIfPresent(id, tag: changeTag, path: zonePaths.shownRecord(id))
    }
}
