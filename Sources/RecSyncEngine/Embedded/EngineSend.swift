import RecSyncModel
import RecSyncStore

extension RecordSyncEngine {
    /// Sends the pending changes: zone saves and deletes first, then records in batches, each
    /// batch's records asked of the delegate just before it goes. Every result is delivered
    /// (`.sentDatabaseChanges`, `.sentRecordZoneChanges`) before the state drops the changes
    /// it confirms. A change the store refused for good (a conflict, a zone gone, a bad
    /// record) is dropped from the pending list and reported: the app decides, and adds it
    /// again after a merge. One refused only because another change in its atomic zone
    /// failed (`batchRequestFailed`), or because the store was busy, stays pending. When the
    /// send is over, refusals are thrown too, as one `partialFailure` with the error of each
    /// (after `.didSendChanges`: every event went, and the state is saved). When the store
    /// cannot be reached the send stops there with the error; nothing pending is lost.
    ///
    /// `options` narrows the send to some zones or records; the other pending changes stay
    /// pending, in their order (see ``SendChangesOptions``).
    public func sendChanges(_ options: SendChangesOptions = SendChangesOptions()) async throws(RecSyncError) {
        try await sendChanges(options, reason: .manual)
    }

    func sendChanges(_ options: SendChangesOptions, reason: SyncReason) async throws(RecSyncError) {
        let refused = try await exclusively { () async throws(RecSyncError) -> PartialFailure in
            try await settleAccount()
            let context = SendChangesContext(reason: reason, options: options)
            try await emit(.willSendChanges(context))
            try checkNotCancelled("the send")
            var refused = PartialFailure()
            refused.zones = try await sendDatabaseChanges(options.scope)
            let marks = untrackedMarks
            refused.records = try await sendRecordZoneChanges(context)
            // The delegate was asked for its batches until it had none: what it tracked went.
            // (Set again meanwhile, the mark stays.)
            if state.hasPendingUntrackedChanges, untrackedMarks == marks {
                setState { $0.untrackedChanges = nil }
                try await emit(.stateUpdate(state))
            }
            try await emit(.didSendChanges(context))
            return refused
        }
        // Refusals reach an app twice, as they do from CKSyncEngine: in the sent events, and
        // as the send's error once every event went. The workspace reports its own.
        if client == nil, !refused.isEmpty { throw .partialFailure(refused) }
    }

    /// Sends the pending zone changes in `scope`; returns the zones the store refused.
    private func sendDatabaseChanges(_ scope: SendChangesOptions.Scope) async throws(RecSyncError) -> [ZoneID: RecSyncError] {
        let pending = state.pendingDatabaseChanges.filter(scope.contains)
        guard !pending.isEmpty else { return [:] }
        // A zone that exists keeps its participants: its sharing is changed with
        // `RemoteStore.share` and `unshare`, not by a device making sure its zone exists (which
        // would unshare it from everyone). Such a save that changes nothing else is not sent.
        let own = pending.contains { $0.zoneID.ownerName == store.userRecordName }
        let listed =
            own
            ? try await retryingTransient("the send") { () async throws(RecSyncError) in try await store.fetchAllRecordZones(scope: .private) } : []
        let existing = Dictionary(listed.map { ($0.zoneID, $0) }, uniquingKeysWith: { a, _ in a })
        // A zone saved that the store lacks is uploaded again if its tombstone says its
        // encrypted data was reset, and otherwise created as new: an encrypting store takes an
        // upload after a reset for an encrypted zone, so a plain new zone must not go as one.
        let missing =
            client != nil
            ? []
            : pending.compactMap { change -> ZoneID? in
                guard case .saveZone(let zone) = change, existing[zone.zoneID] == nil, zone.zoneID.ownerName == store.userRecordName else {
                    return nil
                }
                return zone.zoneID
            }
        let reset =
            missing.isEmpty
            ? []
            : Set(
                try await retryingTransient("the send") { () async throws(RecSyncError) in
                    try await store.fetchZoneDeletions(missing)
                }.filter { $0.reason == .encryptedDataReset }.map(\.zoneID))
        // Per change, the operation to send, or the zone as it is when nothing is to be sent.
        let planned: [(operation: ZoneOperation?, unchanged: RecordZone?)] = pending.map { change in
            switch change {
            case .saveZone(var zone), .recreateZone(var zone):
                if let current = existing[zone.zoneID] {
                    zone.participants = current.participants
                    if zone.defaultRecordType == current.defaultRecordType { return (nil, current) }
                }
                // Creates a zone reset for its encrypted data again (the upload after a reset),
                // never one deleted or purged: the store decides that in the same commit. Only
                // an explicit recreate brings those back.
                if case .recreateZone = change { return (.recreate(zone), nil) }
                if let chosen = client?.operation(saving: zone) { return (chosen, nil) }
                return (reset.contains(zone.zoneID) ? .uploadAfterReset(zone) : .save(zone), nil)
            case .deleteZone(let id):
                return (.delete(id), nil)
            }
        }
        let operations = planned.compactMap(\.operation)
        // Sent again after a dropped answer, a zone created or deleted is so already: the same outcome.
        var sentResults =
            operations.isEmpty
            ? [] : try await retryingTransient("the send") { () async throws(RecSyncError) in try await store.modifyRecordZones(operations) }
        sentResults.reverse()
        let results: [Result<RecordZone?, RecSyncError>] = planned.map { plan in
            if let current = plan.unchanged { return .success(current) }
            return sentResults.removeLast().result
        }
        var sent = SentDatabaseChanges()
        var done: [PendingDatabaseChange] = []
        for (change, outcome) in zip(pending, results) {
            switch (change, outcome) {
            case (.saveZone(let zone), .success(let stored)), (.recreateZone(let zone), .success(let stored)):
                sent.savedZones.append(stored ?? zone)
            case (.deleteZone(let id), .success):
                sent.deletedZoneIDs.append(id)
            case (.deleteZone(let id), .failure(let error)) where error.kind == .zoneNotFound:
                // Already gone: what the app asked for.
                sent.deletedZoneIDs.append(id)
            case (.saveZone(let zone), .failure(let error)), (.recreateZone(let zone), .failure(let error)):
                sent.failedZoneSaves.append(ZoneFailure(zoneID: zone.zoneID, error: error))
            case (.deleteZone(let id), .failure(let error)):
                sent.failedZoneDeletes.append(ZoneFailure(zoneID: id, error: error))
            }
            if case .failure(let error) = outcome, Self.staysPending(error) { continue }
            done.append(change)
        }
        try await emit(.sentDatabaseChanges(sent))
        setState { s in
            s.pendingDatabaseChanges.removeAll { done.contains($0) }
            s.noteWritten(sent.savedZones.map(\.zoneID))
        }
        try await emit(.stateUpdate(state))
        return Dictionary((sent.failedZoneSaves + sent.failedZoneDeletes).map { ($0.zoneID, $0.error) }, uniquingKeysWith: { a, _ in a })
    }

    /// Sends batches of the pending record changes; returns the records the store refused.
    private func sendRecordZoneChanges(_ context: SendChangesContext) async throws(RecSyncError) -> [RecordID: RecSyncError] {
        // Each change is tried once per send: those added meanwhile wait for the next. One the
        // app replaced or removed while an earlier batch was out is not sent (an undone delete).
        currentSend = SendRun(candidates: Set(state.pendingRecordZoneChanges.filter(context.options.scope.contains)))
        defer { currentSend = nil }
        var refused: [RecordID: RecSyncError] = [:]
        while true {
            try checkNotCancelled("the send")
            guard var batch = try await nextBatch(context) else { return refused }
            let tried = currentSend?.tried ?? []
            batch.recordsToSave.removeAll { tried.contains(.saveRecord($0.recordID)) }
            batch.recordIDsToDelete.removeAll { tried.contains(.deleteRecord($0)) }
            batch.recordIDsNoLongerHeld.removeAll { tried.contains(.saveRecord($0)) }
            guard !batch.isEmpty else { return refused }
            currentSend?.tried.formUnion(batch.changes)
            let sent = try await sendBatch(batch)
            for failure in sent.failedRecordSaves { refused[failure.record.recordID] = failure.error }
            for failure in sent.failedRecordDeletes { refused[failure.recordID] = failure.error }
        }
    }

    /// The engine's own next batch of a send: up to ``Options/sendBatchSize`` of the pending
    /// changes in the context's scope that were pending when the send began and that it has
    /// not tried yet, in their order, with the records the delegate's
    /// ``RecordSyncEngineDelegate/recordsToSave(_:syncEngine:)`` gives. Nil when none is left,
    /// or when no send is running.
    public func defaultRecordZoneChangeBatch(_ context: SendChangesContext) async throws(RecSyncError) -> RecordZoneChangeBatch? {
        guard let run = currentSend else { return nil }
        let changes = Array(
            state.pendingRecordZoneChanges.lazy
                .filter { context.options.scope.contains($0) && run.candidates.contains($0) && !run.tried.contains($0) }
                .prefix(options.sendBatchSize))
        guard !changes.isEmpty else { return nil }
        let saveIDs = changes.compactMap { if case .saveRecord(let id) = $0 { id } else { nil } }
        var provided: [RecordID: Record] = [:]
        if !saveIDs.isEmpty {
            let wanted = Set(saveIDs)
            for record in try await recordsToSave(saveIDs) {
                guard wanted.contains(record.recordID) else {
                    throw .delegateFailed(
                        event: "recordsToSave",
                        message: "it returned record '\(record.recordID)', which was not asked for; return only the records named")
                }
                // An invalid record (one over the size limit) is the store's to refuse, as a
                // failed save of that record: throwing here would hold up every change after it.
                provided[record.recordID] = record
            }
        }
        var batch = RecordZoneChangeBatch(atomicByZone: options.atomicByZone)
        for change in changes {
            switch change {
            case .saveRecord(let id):
                // A record the app no longer has: its pending save is dropped, as CKSyncEngine does.
                if let record = provided[id] { batch.recordsToSave.append(record) } else { batch.recordIDsNoLongerHeld.append(id) }
            case .deleteRecord(let id):
                batch.recordIDsToDelete.append(id)
            }
        }
        return batch
    }

    private func sendBatch(_ batch: RecordZoneChangeBatch) async throws(RecSyncError) -> SentRecordZoneChanges {
        let taken = batch.changes.map { ($0, generation(of: $0)) }
        let saves = batch.recordsToSave
        let deletions = batch.recordIDsToDelete.map { RecordDeletion(recordID: $0, changeTag: batch.deletionTags[$0]) }
        var sent = SentRecordZoneChanges()
        var keep = Set<PendingRecordZoneChange>()
        if !saves.isEmpty || !deletions.isEmpty {
            // Sent again after a dropped answer, the saves that landed are recognised as ours.
            let result = try await retryingTransient("the send") { () async throws(RecSyncError) in
                try await store.modifyRecognisingOwnSaves(
                    saving: saves, deleting: deletions, savePolicy: batch.savePolicy, atomically: batch.atomicByZone,
                    clientChangeTokenData: batch.clientChangeTokenData)
            }
            sent.commit = result.commit
            var goneZones = Set<ZoneID>()
            for (record, item) in zip(saves, result.saveResults) {
                switch item.result {
                case .success(let stored): sent.savedRecords.append(stored)
                case .failure(let error):
                    sent.failedRecordSaves.append(FailedRecordSave(record: record, error: error))
                    if Self.staysPending(error) { keep.insert(.saveRecord(record.recordID)) }
                    if case .zoneNotFound(let z) = error.reason { goneZones.insert(z) }
                    if case .userDeletedZone(let z) = error.reason { goneZones.insert(z) }
                }
            }
            for (deletion, item) in zip(deletions, result.deleteResults) {
                switch item.result {
                case .success: sent.deletedRecordIDs.append(deletion.recordID)
                case .failure(let error) where error.kind == .unknownItem: sent.deletedRecordIDs.append(deletion.recordID)
                case .failure(let error):
                    sent.failedRecordDeletes.append(RecordFailure(recordID: deletion.recordID, error: error))
                    if Self.staysPending(error) { keep.insert(.deleteRecord(deletion.recordID)) }
                    if case .zoneNotFound(let z) = error.reason { goneZones.insert(z) }
                    if case .userDeletedZone(let z) = error.reason { goneZones.insert(z) }
                }
            }
            // Own zones the store refused: why they went (a zone never created has no tombstone).
            let own = goneZones.filter { $0.ownerName == store.userRecordName }.sorted()
            if !own.isEmpty {
                sent.zonesGone = try await retryingTransient("the send") { () async throws(RecSyncError) in try await store.fetchZoneDeletions(own) }
            }
        }
        try await emit(.sentRecordZoneChanges(sent))
        removeSent(taken.filter { !keep.contains($0.0) })
        setState { s in
            s.noteWritten(Array(Set(sent.savedRecords.map(\.recordID.zoneID))).sorted())
            s.noteSaved(sent.savedRecords)
        }
        try await emit(.stateUpdate(state))
        return sent
    }

    /// Refusals worth sending again unchanged: collateral in an atomic zone, a busy store.
    static func staysPending(_ error: RecSyncError) -> Bool {
        switch error.reason {
        case .batchRequestFailed, .storeBusy: true
        default: false
        }
    }
}
