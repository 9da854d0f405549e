import RecSyncModel

extension StoreCore {
    /// Saves and deletes records against the head, deciding conflicts per record (DESIGN §5).
    ///
    /// Each attempt reads the head, decides every item against it, and commits on top of it by
    /// compare-and-swap; when another writer moved the head first, everything is decided again
    /// against the new head. Nothing is ever decided by "last writer wins".
    ///
    /// `clientChangeTokenData` (CloudKit's) is recorded, in the same commit, for every zone the
    /// request writes to, in this client's slot (`StoreActor.deviceID`), and named in the
    /// commit message (a `Recsync-Client-Token:` trailer per zone); `recordZoneChanges` hands it back.
    func modifyRecords(saving: [Record], deleting: [RecordDeletion], savePolicy: SavePolicy, atomically: Bool, clientChangeTokenData: String? = nil)
        throws(RecSyncError) -> ModifyRecordsResult
    {
        if let clientChangeTokenData { try StoreActor.validateToken(clientChangeTokenData, what: "the client change token") }
        // Checks that do not depend on the store.
        var inputErrors: [Int: RecSyncError] = [:]
        var seen = Set<RecordID>()
        for (i, record) in saving.enumerated() {
            do { try record.validate() } catch { inputErrors[i] = error; continue }
            if !seen.insert(record.recordID).inserted {
                inputErrors[i] = .invalidArguments("record '\(record.recordID)' appears twice in one request; send it once")
            }
        }
        var deleteInputErrors: [Int: RecSyncError] = [:]
        for (i, deletion) in deleting.enumerated() where !seen.insert(deletion.recordID).inserted {
            deleteInputErrors[i] = .invalidArguments(
                "record '\(deletion.recordID)' is both saved and deleted, or deleted twice, in one request; send it once")
        }

        // One commit per ref; where every zone is on the shared ref, one for the whole request.
        var zonesByRef: [StoreRef: Set<ZoneID>] = [:]
        for id in saving.map(\.recordID) + deleting.map(\.recordID) { zonesByRef[backend.ref(of: id.zoneID), default: []].insert(id.zoneID) }
        let undecided = RecSyncError.internalError("not decided")
        var result = ModifyRecordsResult(
            saveResults: saving.map { RecordResult(recordID: $0.recordID, result: .failure(undecided)) },
            deleteResults: deleting.map { DeletionResult(recordID: $0.recordID, result: .failure(undecided)) }, cascadedDeletions: [], commit: nil)
        let parts = try modifyRecords(
            RecordRequest(
                saving: saving, deleting: deleting, savePolicy: savePolicy, atomically: atomically, clientChangeTokenData: clientChangeTokenData,
                inputErrors: inputErrors, deleteInputErrors: deleteInputErrors),
            zonesByRef: zonesByRef)
        for (ref, zones) in zonesByRef.sorted(by: { $0.key < $1.key }) {
            guard let part = parts[ref] else { throw .internalError("no result for \(ref)") }
            for i in saving.indices where zones.contains(saving[i].recordID.zoneID) { result.saveResults[i] = part.saveResults[i] }
            for i in deleting.indices where zones.contains(deleting[i].recordID.zoneID) { result.deleteResults[i] = part.deleteResults[i] }
            result.cascadedDeletions += part.cascadedDeletions
            result.commit = part.commit ?? result.commit
        }
        result.cascadedDeletions.sort()
        return result
    }

    /// For each ref, the items of a request in its zones (`zonesByRef`) decided against its head
    /// and committed on it, the refs' commits published together; in each ref's result, the
    /// results of other refs' items are left undecided.
    private func modifyRecords(_ request: RecordRequest, zonesByRef: [StoreRef: Set<ZoneID>]) throws(RecSyncError) -> [StoreRef: ModifyRecordsResult]
    {
        let (saving, deleting, savePolicy) = (request.saving, request.deleting, request.savePolicy)
        let (inputErrors, deleteInputErrors, clientChangeTokenData) = (request.inputErrors, request.deleteInputErrors, request.clientChangeTokenData)
        return try commitWithRetry(
            on: zonesByRef.keys.sorted(),
            { (ref: StoreRef, head: String?, time: Int64) throws(RecSyncError) in
                let zones = zonesByRef[ref] ?? []
                var plan = ModifyPlan(saveCount: saving.count, deleteCount: deleting.count)
                guard let head else {
                    // The ref is not there, so none of its zones is.
                    for (i, r) in saving.enumerated() where zones.contains(r.recordID.zoneID) {
                        plan.saveResults[i] = .failure(inputErrors[i] ?? .zoneNotFound(r.recordID.zoneID))
                    }
                    for (i, d) in deleting.enumerated() where zones.contains(d.recordID.zoneID) {
                        plan.deleteResults[i] = .failure(deleteInputErrors[i] ?? .zoneNotFound(d.recordID.zoneID))
                    }
                    return (plan.result(saving: saving, deleting: deleting, cascaded: []), [], "")
                }
                var zoneAccess: [ZoneID: Result<RecordZone, RecSyncError>] = [:]
                func access(_ zoneID: ZoneID) throws(RecSyncError) -> RecSyncError? {
                    if zoneAccess[zoneID] == nil {
                        do throws(RecSyncError) {
                            let zone = try zoneForRecords(zoneID, at: head)
                            if zone.permission(for: user) != .readWrite {
                                throw RecSyncError.permissionFailure(
                                    "zone '\(zoneID)' is shared with \(user) read-only; ask its owner for write access")
                            }
                            zoneAccess[zoneID] = .success(zone)
                        } catch {
                            zoneAccess[zoneID] = .failure(error)
                        }
                    }
                    if case .failure(let e)? = zoneAccess[zoneID] { return e }
                    return nil
                }

                for (i, client) in saving.enumerated() where zones.contains(client.recordID.zoneID) {
                    let id = client.recordID
                    if let e = inputErrors[i] { plan.saveResults[i] = .failure(e); continue }
                    if let e = try access(id.zoneID) { plan.saveResults[i] = .failure(e); continue }
                    if case .success(let zone)? = zoneAccess[id.zoneID], let encryption = zone.encryption,
                        let field = client.fields.keys.sorted().first(where: { key in
                            if case .encrypted = client.fields[key] { false } else { encryption.seals(key) }
                        })
                    {
                        // A client that does not seal must not leak a value into an encrypted zone.
                        if case .asset = client.fields[field] {
                            plan.saveResults[i] = .failure(ZoneEncryption.fileInSealedField(id, field: field))
                            continue
                        }
                        plan.saveResults[i] = .failure(
                            .invalidValue(
                                """
                                zone '\(id.zoneID)' is encrypted, but field '\(field)' of record '\(id.recordName)' arrived in\
                                 clear; it was not saved. Write through a client that seals fields (the recsync command, or\
                                 EncryptingStore in the library)
                                """
                            ))
                        continue
                    }
                    let currentTag = try backend.recordTag(id, at: head)
                    switch try decideSave(client, currentTag: currentTag, policy: savePolicy, time: time) {
                    case .failure(let e):
                        plan.saveResults[i] = .failure(e)
                    case .success(let stored):
                        // Checked after the change tag: a save against a version that moved is a
                        // conflict, whatever its assets (it may keep ones the new version dropped).
                        if let e = try checkAssets(client, at: head, currentTag: currentTag) { plan.saveResults[i] = .failure(e); continue }
                        plan.saveResults[i] = .success(stored)
                        plan.saved[id] = stored
                    }
                }
                for (i, deletion) in deleting.enumerated() where zones.contains(deletion.recordID.zoneID) {
                    let id = deletion.recordID
                    if let e = deleteInputErrors[i] { plan.deleteResults[i] = .failure(e); continue }
                    if let e = try access(id.zoneID) { plan.deleteResults[i] = .failure(e); continue }
                    let currentTag = try backend.recordTag(id, at: head)
                    if let e = try decideDelete(deletion, currentTag: currentTag, policy: savePolicy) {
                        plan.deleteResults[i] = .failure(e)
                    } else {
                        plan.deleteResults[i] = .success(())
                        plan.deleted.insert(id)
                    }
                }
                if request.atomically { plan.failAtomicZones(saving: saving, deleting: deleting) }
                let cascaded = try cascadeDeletions(plan: plan, head: head)
                plan.deleted.formUnion(cascaded)

                var writes: [StoreWrite] = []
                for (id, record) in plan.saved.sorted(by: { $0.key < $1.key }) {
                    writes.append(.saveRecord(id, StoreEncoding.encode(record), assets: record.assetFields.mapValues(\.oid)))
                }
                for id in plan.deleted.sorted() { writes.append(.deleteRecord(id)) }
                var message = commitMessage(saved: Array(plan.saved.keys), deleted: Array(plan.deleted))
                if let clientChangeTokenData {
                    let zones = Set(plan.saved.keys.map(\.zoneID)).union(plan.deleted.map(\.zoneID)).sorted()
                    for zone in zones {
                        writes.append(.saveClientToken(zone, client: actor.clientSlot, Array(clientChangeTokenData.utf8)))
                    }
                    if !zones.isEmpty {
                        // A trailer paragraph: `git log` shows it, `git interpret-trailers` parses it.
                        message +=
                            (message.hasSuffix("\n\n") ? "" : "\n")
                            + zones.map { "Recsync-Client-Token: \(clientChangeTokenData) \(actor.clientSlot) \($0)\n" }.joined()
                    }
                }
                return (plan.result(saving: saving, deleting: deleting, cascaded: cascaded), writes, message)
            },
            finish: { result, commit, tags in
                result.commit = commit
                for i in result.saveResults.indices {
                    if case .success(var record) = result.saveResults[i].result {
                        record.changeTag = tags[record.recordID]
                        result.saveResults[i].result = .success(record)
                    }
                }
            })
    }

    /// Decides one save against the store's current version; the record to store on success.
    func decideSave(_ client: Record, currentTag: String?, policy: SavePolicy, time: Int64) throws(RecSyncError) -> Result<Record, RecSyncError> {
        let id = client.recordID
        let path = zonePaths.shownRecord(id)
        var server: Record?
        var unreadable: RecSyncError?
        if let currentTag {
            // An unreadable server copy can still be overwritten by a client that saw its tag.
            do { server = try readRecord(id, tag: currentTag, path: path) } catch { unreadable = error }
        }
        if policy == .ifServerRecordUnchanged {
            switch (client.changeTag, currentTag) {
            case (nil, nil):
                break
            case (nil, .some):
                if let unreadable { return .failure(Self.unreadableServerCopy(id, path: path, unreadable)) }
                return .failure(.serverRecordChanged(RecordConflict(recordID: id, server: server, client: client, ancestor: nil)))
            case (.some, nil):
                return .failure(.unknownItem(id))
            case (.some(let mine), .some(let theirs)):
                if mine != theirs {
                    if let unreadable { return .failure(Self.unreadableServerCopy(id, path: path, unreadable)) }
                    let ancestor = try readVersionIfPresent(id, tag: mine, path: path)
                    return .failure(.serverRecordChanged(RecordConflict(recordID: id, server: server, client: client, ancestor: ancestor)))
                }
            }
        }
        var stored = client
        if policy == .changedKeys, let server {
            stored.fields = server.fields.merging(client.fields) { _, new in new }
        }
        stored.created = server?.created ?? (currentTag == nil ? stamp(time) : client.created ?? stamp(time))
        stored.modified = stamp(time)
        stored.changeTag = nil
        if policy == .changedKeys {
            // The merge can make a record too large; the other policies store what was validated.
            do { try stored.validate() } catch { return .failure(error) }
        }
        return .success(stored)
    }

    /// Decides one deletion; the error, or nil when it may go ahead.
    func decideDelete(_ deletion: RecordDeletion, currentTag: String?, policy: SavePolicy) throws(RecSyncError) -> RecSyncError? {
        let id = deletion.recordID
        guard let currentTag else { return .unknownItem(id) }
        if policy == .ifServerRecordUnchanged, let mine = deletion.changeTag, mine != currentTag {
            let path = zonePaths.shownRecord(id)
            do { _ = try readRecord(id, tag: currentTag, path: path) } catch {
                return Self.unreadableServerCopy(id, path: path, error)
            }
            return .serverRecordChanged(
                RecordConflict(
                    recordID: id, server: try readRecord(id, tag: currentTag, path: path),
                    client: nil, ancestor: try readVersionIfPresent(id, tag: mine, path: path)))
        }
        return nil
    }

    /// The refusal of a change whose store copy cannot be read: not a conflict, since a conflict
    /// with no server copy reads as a deletion on the store, and settling it that way would
    /// drop the client's edit while the store still holds the record.
    static func unreadableServerCopy(_ id: RecordID, path: String, _ cause: RecSyncError) -> RecSyncError {
        .storeCorrupt(
            """
            \(path): the store's copy of record '\(id.recordName)' cannot be read (\(cause.message));\
             nothing was saved over it: fix it in the store, or save with no change tag to replace it
            """
        ).suggesting(.forceSave)
    }

    /// Records that must go because they reference a deleted record with action `deleteSelf`,
    /// transitively. Records saved in the same request are left alone.
    func cascadeDeletions(plan: ModifyPlan, head: String) throws(RecSyncError) -> Set<RecordID> {
        let zones = Set(plan.deleted.map(\.zoneID))
        guard !zones.isEmpty else { return [] }
        var cascaded = Set<RecordID>()
        for zoneID in zones.sorted() {
            // Who references whom with deleteSelf, read once per zone.
            var referrers: [String: [String]] = [:]
            for (name, tag) in try backend.allRecords(zone: zoneID, in: backend.zoneContent(zoneID, at: head)) {
                guard let id = try? RecordID(recordName: name, zoneID: zoneID), plan.saved[id] == nil,
                    let bytes = try backend.blob(tag), Self.mayHoldDeleteSelf(bytes),
                    let record = try? StoreEncoding.decode(bytes, zoneID: zoneID, changeTag: tag)
                else { continue }
                for target in Self.deleteSelfTargets(record) { referrers[target, default: []].append(name) }
            }
            for (_, record) in plan.saved where record.recordID.zoneID == zoneID {
                for target in Self.deleteSelfTargets(record) { referrers[target, default: []].append(record.recordID.recordName) }
            }
            var queue = plan.deleted.filter { $0.zoneID == zoneID }.map(\.recordName)
            var gone = Set(queue)
            while let target = queue.popLast() {
                for name in referrers[target] ?? [] where !gone.contains(name) {
                    guard let id = try? RecordID(recordName: name, zoneID: zoneID), plan.saved[id] == nil else { continue }
                    gone.insert(name)
                    cascaded.insert(id)
                    queue.append(name)
                }
            }
        }
        return cascaded
    }

    static func mayHoldDeleteSelf(_ bytes: [UInt8]) -> Bool {
        let needle = Array("DELETE_SELF".utf8)
        guard bytes.count >= needle.count else { return false }
        var i = 0
        while i + needle.count <= bytes.count {
            if bytes[i] == needle[0] && bytes[i..<(i + needle.count)].elementsEqual(needle) { return true }
            i += 1
        }
        return false
    }

    static func deleteSelfTargets(_ record: Record) -> [String] {
        var targets: [String] = []
        for value in record.fields.values {
            switch value {
            case .reference(let r) where r.action == .deleteSelf: targets.append(r.recordName)
            case .list(let items):
                for case .reference(let r) in items where r.action == .deleteSelf { targets.append(r.recordName) }
            default: break
            }
        }
        return targets
    }

    /// The commit's message: a subject that names what a small commit changed ("alice: saved
    /// todo/milk", "alice: saved 3 in todo: a, b, c", "alice: saved 2, deleted 1 in todo";
    /// a zone of another owner is OWNER/ZONE), then, for more than one record, a line per zone
    /// and verb with the names (the first five).
    func commitMessage(saved: [RecordID], deleted: [RecordID]) -> String {
        // Names are anyone's text: a control character (a newline, an escape sequence) is
        // written as %XX, so a name cannot break the message's lines or drive a terminal.
        func shown(_ text: String) -> String {
            guard text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else { return text }
            var out = ""
            for scalar in text.unicodeScalars {
                if scalar.properties.generalCategory == .control {
                    for byte in String(scalar).utf8 { out += String(format: "%%%02X", byte) }
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
            return out
        }
        var perZone: [ZoneID: (saved: [String], deleted: [String])] = [:]
        for id in saved { perZone[id.zoneID, default: ([], [])].saved.append(shown(id.recordName)) }
        for id in deleted { perZone[id.zoneID, default: ([], [])].deleted.append(shown(id.recordName)) }
        func zoneName(_ zone: ZoneID) -> String { shown(zone.ownerName == user ? zone.zoneName : zone.description) }
        var counts: [String] = []
        if !saved.isEmpty { counts.append("saved \(saved.count)") }
        if !deleted.isEmpty { counts.append("deleted \(deleted.count)") }
        let zones = perZone.keys.sorted()
        var subject: String
        if saved.count + deleted.count == 1, let id = saved.first ?? deleted.first {
            subject = "\(saved.isEmpty ? "deleted" : "saved") \(zoneName(id.zoneID))/\(shown(id.recordName))"
        } else {
            let zoneList = zones.prefix(3).map(zoneName).joined(separator: ", ") + (zones.count > 3 ? " and \(zones.count - 3) more zones" : "")
            subject = "\(counts.joined(separator: ", ")) in \(zoneList)"
            let names = (saved.isEmpty ? deleted : saved).map { shown($0.recordName) }.sorted().joined(separator: ", ")
            if zones.count == 1 && (saved.isEmpty || deleted.isEmpty) && saved.count + deleted.count <= 5 && names.count <= 60 {
                subject += ": \(names)"
            }
        }
        var message = "\(user): \(subject)\n"
        if zones.count > 1 || saved.count + deleted.count > 1 {
            message += "\n"
            for zone in zones {
                let (s, d) = perZone[zone]!
                func names(_ list: [String]) -> String {
                    let sorted = list.sorted()
                    return sorted.prefix(5).joined(separator: ", ") + (sorted.count > 5 ? ", … (\(sorted.count - 5) more)" : "")
                }
                if !s.isEmpty { message += "\(shown(zone.description)): saved \(s.count): \(names(s))\n" }
                if !d.isEmpty { message += "\(shown(zone.description)): deleted \(d.count): \(names(d))\n" }
            }
        }
        return message
    }
}

/// What one attempt of `modifyRecords` decided.
/// A request to save and delete records, with what its checks that do not depend on the
/// store found, by index.
struct RecordRequest {
    var saving: [Record]
    var deleting: [RecordDeletion]
    var savePolicy: SavePolicy
    var atomically: Bool
    var clientChangeTokenData: String?
    var inputErrors: [Int: RecSyncError]
    var deleteInputErrors: [Int: RecSyncError]
}

struct ModifyPlan {
    var saveResults: [Result<Record, RecSyncError>]
    var deleteResults: [Result<Void, RecSyncError>]
    var saved: [RecordID: Record] = [:]
    var deleted: Set<RecordID> = []

    init(saveCount: Int, deleteCount: Int) {
        saveResults = Array(repeating: .failure(.internalError("not decided")), count: saveCount)
        deleteResults = Array(repeating: .failure(.internalError("not decided")), count: deleteCount)
    }

    func result(saving: [Record], deleting: [RecordDeletion], cascaded: Set<RecordID>) -> ModifyRecordsResult {
        ModifyRecordsResult(
            saveResults: zip(saving, saveResults).map { RecordResult(recordID: $0.recordID, result: $1) },
            deleteResults: zip(deleting, deleteResults).map { DeletionResult(recordID: $0.recordID, result: $1) },
            cascadedDeletions: cascaded.sorted(), commit: nil)
    }

    /// In an atomic request, a zone with any failure lands nothing: its other items get `batchRequestFailed`.
    mutating func failAtomicZones(saving: [Record], deleting: [RecordDeletion]) {
        var failedZones = Set<ZoneID>()
        for (i, r) in saveResults.enumerated() { if case .failure = r { failedZones.insert(saving[i].recordID.zoneID) } }
        for (i, r) in deleteResults.enumerated() { if case .failure = r { failedZones.insert(deleting[i].recordID.zoneID) } }
        guard !failedZones.isEmpty else { return }
        for (i, r) in saveResults.enumerated() where failedZones.contains(saving[i].recordID.zoneID) {
            if case .success = r {
                saveResults[i] = .failure(.batchRequestFailed(saving[i].recordID))
                saved[saving[i].recordID] = nil
            }
        }
        for (i, r) in deleteResults.enumerated() where failedZones.contains(deleting[i].recordID.zoneID) {
            if case .success = r {
                deleteResults[i] = .failure(.batchRequestFailed(deleting[i].recordID))
                deleted.remove(deleting[i].recordID)
            }
        }
    }
}
