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
    /// store cannot be reached the send stops there with the error; nothing pending is lost.
    ///
    /// `options` narrows the send to some zones or records; the other pending changes stay
    /// pending, in their order (see ``SendChangesOptions``).
    public func sendChanges(_ options: SendChangesOptions = SendChangesOptions()) async throws(RecSyncError) {
        try await exclusively { () async throws(RecSyncError) in
            try await emit(.willSendChanges)
            try checkNotCancelled("the send")
            try await sendDatabaseChanges(options.scope)
            try await sendRecordZoneChanges(options.scope)
            try await emit(.didSendChanges)
        }
    }

    private func sendDatabaseChanges(_ scope: SendChangesOptions.Scope) async throws(RecSyncError) {
        let pending = state.pendingDatabaseChanges.filter(scope.contains)
        guard !pending.isEmpty else { return }
        // A zone that exists keeps its participants: its sharing is changed with
        // `RemoteStore.share` and `unshare`, not by a device making sure its zone exists (which
        // would unshare it from everyone). Such a save that changes nothing else is not sent.
        let own = pending.contains { $0.zoneID.ownerName == store.userRecordName }
        let existing = own ? Dictionary(try await store.fetchAllRecordZones(scope: .private).map { ($0.zoneID, $0) }, uniquingKeysWith: { a, _ in a }) : [:]
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
                return (.uploadAfterReset(zone), nil)
            case .deleteZone(let id):
                return (.delete(id), nil)
            }
        }
        let operations = planned.compactMap(\.operation)
        var sentResults = operations.isEmpty ? [] : try await store.modifyRecordZones(operations)
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
            case (.deleteZone(let id), .failure(.zoneNotFound)):
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
    }

    private func sendRecordZoneChanges(_ scope: SendChangesOptions.Scope) async throws(RecSyncError) {
        // Each change is tried once per send: those added meanwhile wait for the next. One the
        // app replaced or removed while an earlier batch was out is not sent (an undone delete).
        var queue = state.pendingRecordZoneChanges.filter(scope.contains)[...]
        while !queue.isEmpty {
            let pending = Set(state.pendingRecordZoneChanges)
            var batch: [PendingRecordZoneChange] = []
            while batch.count < options.sendBatchSize, let next = queue.popFirst() {
                if pending.contains(next) { batch.append(next) }
            }
            if !batch.isEmpty {
                try checkNotCancelled("the send")
                try await sendBatch(batch)
            }
        }
    }

    private func sendBatch(_ batch: [PendingRecordZoneChange]) async throws(RecSyncError) {
        let taken = batch.map { ($0, generation(of: $0)) }
        let saveIDs = batch.compactMap { if case .saveRecord(let id) = $0 { id } else { nil } }
        let deletions = batch.compactMap { change -> RecordDeletion? in
            if case .deleteRecord(let id) = change { RecordDeletion(recordID: id, changeTag: nil) } else { nil }
        }
        var provided: [RecordID: Record] = [:]
        if !saveIDs.isEmpty {
            let wanted = Set(saveIDs)
            for record in try await recordsToSave(saveIDs) {
                guard wanted.contains(record.recordID) else {
                    throw .delegateFailed(event: "recordsToSave", message: "it returned record '\(record.recordID)', which was not asked for; return only the records named")
                }
                // An invalid record (one over the size limit) is the store's to refuse, as a
                // failed save of that record: throwing here would hold up every change after it.
                provided[record.recordID] = record
            }
        }
        // A record the app no longer has: its pending save is dropped, as CKSyncEngine does.
        let saves = saveIDs.compactMap { provided[$0] }
        var sent = SentRecordZoneChanges()
        var keep = Set<PendingRecordZoneChange>()
        if !saves.isEmpty || !deletions.isEmpty {
            let result = try await store.modifyRecognisingOwnSaves(
                saving: saves, deleting: deletions, savePolicy: .ifServerRecordUnchanged, atomically: options.atomicByZone, clientChangeTokenData: nil)
            var goneZones = Set<ZoneID>()
            for (record, item) in zip(saves, result.saveResults) {
                switch item.result {
                case .success(let stored): sent.savedRecords.append(stored)
                case .failure(let error):
                    sent.failedRecordSaves.append(FailedRecordSave(record: record, error: error))
                    if Self.staysPending(error) { keep.insert(.saveRecord(record.recordID)) }
                    if case .zoneNotFound(let z) = error { goneZones.insert(z) }
                    if case .userDeletedZone(let z) = error { goneZones.insert(z) }
                }
            }
            for (deletion, item) in zip(deletions, result.deleteResults) {
                switch item.result {
                case .success, .failure(.unknownItem): sent.deletedRecordIDs.append(deletion.recordID)
                case .failure(let error):
                    sent.failedRecordDeletes.append(RecordFailure(recordID: deletion.recordID, error: error))
                    if Self.staysPending(error) { keep.insert(.deleteRecord(deletion.recordID)) }
                    if case .zoneNotFound(let z) = error { goneZones.insert(z) }
                    if case .userDeletedZone(let z) = error { goneZones.insert(z) }
                }
            }
            // Own zones the store refused: why they went (a zone never created has no tombstone).
            let own = goneZones.filter { $0.ownerName == store.userRecordName }.sorted()
            sent.zonesGone = own.isEmpty ? [] : try await store.fetchZoneDeletions(own)
        }
        try await emit(.sentRecordZoneChanges(sent))
        removeSent(taken.filter { !keep.contains($0.0) })
        setState { $0.noteWritten(Array(Set(sent.savedRecords.map(\.recordID.zoneID))).sorted()) }
        try await emit(.stateUpdate(state))
    }

    /// Refusals worth sending again unchanged: collateral in an atomic zone, a busy store.
    static func staysPending(_ error: RecSyncError) -> Bool {
        switch error {
        case .batchRequestFailed, .storeBusy: true
        default: false
        }
    }
}
