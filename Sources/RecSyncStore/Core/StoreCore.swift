import Glibc
import RecSyncModel

/// CloudKit's semantics over any `StoreBackend`: the one place where changes are computed,
/// tokens issued and checked, and conflicts decided. Both `GitStore` and `MemoryStore` run it.
final class StoreCore<Backend: StoreBackend> {
    let backend: Backend
    let actor: StoreActor
    /// How many times a modification is recomputed when another writer moved the head first.
    var maxCommitAttempts = 64
    /// Asset blobs uploaded through this handle, with the record fields each was uploaded
    /// for: a record saved through it may reference one in a field it was uploaded for
    /// (see `checkAssets`).
    var uploadedAssets: [String: Set<AssetUse>] = [:]
    /// The SHA-256 of asset blobs this handle has hashed (uploaded or checked): a blob ID
    /// names its content, so the answer never changes.
    var assetSHA256s: [String: String] = [:]
    /// Page size when a caller passes `resultsLimit: 0`.
    static var defaultRecordLimit: Int { 400 }

    init(backend: Backend, actor: StoreActor) {
        self.backend = backend
        self.actor = actor
    }

    var user: String { actor.userRecordName }
    var storeID: String { backend.manifest.storeID }
    /// Where the zones' entries are, for messages that name them.
    var zonePaths: ZonePaths { ZonePaths(ownRefs: backend.zonesHaveOwnRefs) }

    /// The zone as `user` sees it at a commit of its ref (nil: the ref does not exist, so
    /// neither does the zone), or the error a fetch or write on it gets.
    func visibleZone(_ id: ZoneID, at commit: String?) throws(RecSyncError) -> RecordZone {
        guard let commit else { throw .zoneNotFound(id) }
        if let entry = try backend.zone(id, at: commit) {
            let zone = try entry.zone.get()
            if zone.permission(for: user) != nil { return zone }
            throw .zoneNotFound(id)
        }
        if try backend.tombstone(id, at: commit) == .purged { throw .userDeletedZone(id) }
        throw .zoneNotFound(id)
    }

    /// The zone as `visibleZone` gives it, for reading or writing its records: a zone whose
    /// directory has the wrong shape (`zoneShapeProblem`) fails with `storeCorrupt` naming the
    /// entry, since read as it is it would look like every record deleted, and no write lands.
    func zoneForRecords(_ id: ZoneID, at commit: String?) throws(RecSyncError) -> RecordZone {
        let zone = try visibleZone(id, at: commit)
        guard let commit else { return zone }
        if let problem = try backend.zoneShapeProblem(id, at: commit) { throw .storeCorrupt(problem) }
        return zone
    }

    /// The commit of the store's history a token's commit stands for: itself while it is in
    /// the history, else the commit a compaction replayed it as (`rewrittenCommit`); a commit
    /// that is in neither (history rewritten before it) fails with `changeTokenExpired`.
    func resolveInHistory(_ commit: String, head: String, what: @autoclosure () -> String) throws(RecSyncError) -> String {
        if try backend.isInHistory(commit, head: head) { return commit }
        if let replayed = try backend.rewrittenCommit(commit, head: head), try backend.isInHistory(replayed, head: head) {
            return replayed
        }
        // A zone token from before the store's upgrade to a ref per zone: read from main's old history.
        if let before = try backend.commitBeforeUpgrade(commit) { return before }
        throw .changeTokenExpired(what())
    }

    /// The part of history a token asks about: from `base` (nil: the beginning) to `target`,
    /// resuming after key `after`. Fails with `changeTokenExpired` when the token's commits are
    /// no longer in the store's history and no compaction replayed them.
    func historyRange(of token: ChangeTokenContent, head: String, what: String) throws(RecSyncError) -> HistoryRange {
        try token.requireMainHistory()
        var range = HistoryRange(base: nil, target: head, after: nil)
        if !token.commit.isEmpty {
            range.base = try resolveInHistory(token.commit, head: head, what: what)
        }
        if let target = token.target {
            range.target = try resolveInHistory(target, head: head, what: what)
            range.after = token.after
        }
        return range
    }

    func stamp(_ time: Int64) -> ChangeStamp { ChangeStamp(timestamp: time, userRecordName: user) }

    /// Runs `attempt` against the head of `ref` until its commit lands, bounded.
    ///
    /// `attempt` computes results and writes from the head (nil: the ref does not exist yet);
    /// an empty write list means nothing to commit. Its writes touch only what `ref` holds.
    func commitWithRetry<T>(
        on ref: StoreRef,
        _ attempt: (_ head: String?, _ time: Int64) throws(RecSyncError) -> (result: T, writes: [StoreWrite], message: String),
        finish: (inout T, _ commit: String?, _ tags: [RecordID: String]) -> Void
    ) throws(RecSyncError) -> T {
        let results = try commitWithRetry(on: [ref], { (_, head, time) throws(RecSyncError) in try attempt(head, time) }, finish: finish)
        guard let result = results[ref] else { throw .internalError("no result for \(ref)") }
        return result
    }

    /// `attempt` run against the head of each ref, and the commits published together (one
    /// push for a network store), until each has landed, bounded: a ref that another writer
    /// moved first is decided again against its new head, the others are done.
    ///
    /// `attempt` computes results and writes from one ref's head (nil: the ref does not exist
    /// yet); an empty write list means nothing to commit. Its writes touch only what that ref holds.
    func commitWithRetry<T>(
        on refs: [StoreRef],
        _ attempt: (_ ref: StoreRef, _ head: String?, _ time: Int64) throws(RecSyncError) -> (result: T, writes: [StoreWrite], message: String),
        finish: (inout T, _ commit: String?, _ tags: [RecordID: String]) -> Void
    ) throws(RecSyncError) -> [StoreRef: T] {
        var done: [StoreRef: T] = [:]
        var pending = refs
        for n in 0..<maxCommitAttempts {
            let time = actor.clock()
            var batch: [RefCommit] = []
            var decided: [T] = []
            for ref in pending {
                let head = try backend.head(of: ref)
                var (result, writes, message) = try attempt(ref, head, time)
                if writes.isEmpty {
                    finish(&result, nil, [:])
                    done[ref] = result
                    continue
                }
                batch.append(RefCommit(ref: ref, parent: head, writes: writes, message: signed(message)))
                decided.append(result)
            }
            if batch.isEmpty { return done }
            let outcomes = try backend.commit(batch, actor: actor, time: time)
            guard outcomes.count == batch.count else { throw .internalError("\(outcomes.count) outcomes for \(batch.count) commits") }
            pending = []
            for (i, outcome) in outcomes.enumerated() {
                switch outcome {
                case .committed(let commit, let tags):
                    var result = decided[i]
                    finish(&result, commit, tags)
                    done[batch[i].ref] = result
                case .headMoved:
                    pending.append(batch[i].ref)
                }
            }
            if pending.isEmpty { return done }
            backoff(attempt: n)
        }
        throw .storeBusy(
            """
            the store kept moving while recsync tried to write (\(maxCommitAttempts) attempts); other\
             writers are busy, try again in a moment. If nothing else writes to the store, a crashed writer\
             may have left a lock file (refs/heads/main.lock in a git store): remove it
            """
        )
    }

    /// A commit message with this client's `Recsync-Client: <user>/<device>` trailer, by
    /// which subscriptions leave out a client's own changes (CloudKit does not notify the
    /// device a change came from). Clients without a device ID are not told apart.
    func signed(_ message: String) -> String {
        guard actor.deviceID != nil else { return message }
        var text = message.hasSuffix("\n") ? message : message + "\n"
        let lines = Self.trailerLines(text)
        if !(text.contains("\n\n") && lines.allSatisfy({ $0.hasPrefix("Recsync-") })) { text += "\n" }
        return text + "Recsync-Client: \(actor.clientSlot)\n"
    }

    private func backoff(attempt: Int) {
        let micros = UInt32.random(in: 0...UInt32(min(50_000, 500 << min(attempt, 6))))
        usleep(micros)
    }
}

/// A stretch of history between two commits, and where in it a paged fetch stands.
struct HistoryRange {
    var base: String?
    var target: String
    var after: String?
}

extension ChangeTokenContent {
    /// Refuses a token that does not name commits of main (a version 2 token, of a store
    /// with one ref per zone) as a token of a version this store does not read, as before
    /// version 2 could be decoded.
    func requireMainHistory() throws(RecSyncError) {
        guard version == Self.currentVersion else { throw .badToken(.unsupportedVersion(version)) }
    }
}

/// A record field an asset was uploaded for.
struct AssetUse: Hashable {
    var recordID: RecordID
    var field: String
}
