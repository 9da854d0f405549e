import Foundation
import RecSyncModel
import RecSyncStore
import RecSyncWorkspace

/// What a push is sending, noted in `.recsync/pending-push` before it is sent and removed once
/// the push has written its sidecars: with the client change token it sends, it lets the next
/// sync tell which of those saves landed (DESIGN §11; CloudKit's `clientChangeTokenData`).
struct PendingPush: Codable, Sendable {
    struct Saved: Codable, Sendable {
        var name: String
        var type: String
        /// `ZoneIndex.hash` of the fields sent.
        var hash: String
    }

    struct Zone: Codable, Sendable {
        var owner: String
        var zone: String
        var records: [Saved]
    }

    /// The client change token the push sends: unique per push (workspaces each have their
    /// own device slot in the store; the UUID keeps pushes of one workspace apart).
    var token: String
    var zones: [Zone]
    /// The device ID the push was sent as (nil in notes of older versions). A workspace copied
    /// or restored since has another ID, and the store keeps the token in the old one's slot.
    var device: String?

    init(saves: [Record], device: String?) {
        self.device = device
        token = "push-" + UUID().uuidString.lowercased()
        var byZone: [ZoneID: [Saved]] = [:]
        for r in saves {
            byZone[r.recordID.zoneID, default: []].append(Saved(name: r.recordID.recordName, type: r.recordType, hash: ZoneIndex.hash(r.fields)))
        }
        zones = byZone.keys.sorted().map { Zone(owner: $0.ownerName, zone: $0.zoneName, records: byZone[$0] ?? []) }
    }
}

extension SyncEngine {
    /// Notes what a push is about to send (durably, before it is sent).
    func notePendingPush(_ note: PendingPush, workspace ws: Workspace) throws(RecSyncError) {
        let bytes: Data
        do { bytes = try JSONEncoder().encode(note) } catch { throw .internalError("cannot encode the pending push note: \(error)") }
        try ws.writePendingPushNote(Array(bytes))
    }

    /// Settles the note of a push that ended before writing its sidecars (killed, or failed
    /// after sending): for each zone whose client change token on the store is the note's, the
    /// save landed, and each record the store still holds as it was sent gets the store's
    /// system fields in its sidecar (its change tag adopted) — even if its file was edited
    /// again since, which then is an ordinary edit on top of it. A record changed on the
    /// store after that is left alone (a real conflict, found the usual way); a zone whose
    /// token is another means nothing landed there. Then the note goes.
    func settlePendingPush(workspace ws: Workspace) async throws(RecSyncError) {
        guard let bytes = try ws.pendingPushNote() else { return }
        // An unreadable note (cut short by a crash before it was complete) means nothing was
        // sent with it: writing it is the first thing a push sends.
        guard let note = try? JSONDecoder().decode(PendingPush.self, from: Data(bytes)) else {
            try ws.clearPendingPushNote()
            return
        }
        // Sent by this workspace under another device ID (it was copied or restored since):
        // the store cannot say whether the save landed, so each record is settled by content
        // alone, as below — a record the store holds exactly as it was sent is that save.
        let current = try ws.deviceID()
        let sameDevice = note.device == nil || note.device == current
        var batch = try ws.recordBatch()
        for pending in note.zones {
            guard let zoneID = try? ZoneID(zoneName: pending.zone, ownerName: pending.owner) else { continue }
            var landed = true
            if sameDevice {
                do throws(RecSyncError) {
                    landed = try await ZoneChangeFeed.clientChangeToken(of: zoneID, in: store) == note.token
                } catch  where error.code == .zoneNotFound || error.code == .userDeletedZone {
                    continue  // the zone went away since; pull and push handle that
                }
            }
            guard landed else { continue }
            let ids = pending.records.compactMap { try? RecordID(recordName: $0.name, zoneID: zoneID) }
            guard ids.count == pending.records.count else { continue }
            for (result, sent) in zip(try await store.fetchRecords(ids, desiredKeys: nil), pending.records) {
                guard case .success(let stored) = result.result, stored.recordType == sent.type, ZoneIndex.hash(stored.fields) == sent.hash else {
                    continue
                }
                batch.write(ws.sidecarPath(stored.recordID), WorkspaceEncoding.encodeSystemFields(stored.systemFields), machineOwned: true)
            }
            // As a push that finished would: the next pull looks these up by name, since one
            // created by this save and deleted elsewhere since is in neither end of its diff.
            try ws.notePushed(pending.records.map(\.name), in: zoneID, batch: &batch)
        }
        try batch.commit()
        try ws.clearPendingPushNote()
    }
}
