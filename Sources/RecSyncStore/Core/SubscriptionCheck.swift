import RecSyncModel

/// A change to one record, as a query notification names it (CloudKit's `CKQueryNotification`).
public struct RecordChangeNotice: Sendable, Hashable {
    public var recordID: RecordID
    public var reason: RecordChangeReason

    public init(recordID: RecordID, reason: RecordChangeReason) {
        self.recordID = recordID
        self.reason = reason
    }
}

/// What one subscription matched in a stretch of history: one coalesced notification.
public struct SubscriptionMatch: Sendable, Hashable {
    public var subscriptionID: String
    /// How many changes it stands for: record changes, plus zone changes that touch no
    /// record (a zone deleted, or its sharing changed) for database and zone subscriptions.
    public var count: Int = 0
    /// The zones those changes are in.
    public var zones: Set<ZoneID> = []
    /// For query subscriptions: the matching record changes, oldest first, at most
    /// `SubscriptionCheck.recordListLimit` (the count says how many there were).
    public var records: [RecordChangeNotice] = []

    public init(subscriptionID: String) { self.subscriptionID = subscriptionID }
}

/// The result of `checkSubscriptions`: which subscriptions matched, and the cursor to keep.
public struct SubscriptionCheck: Sendable, Hashable {
    /// The most record changes a query notification lists.
    public static let recordListLimit = 100

    /// One entry per subscription that matched something, in the order given.
    public var matches: [SubscriptionMatch]
    /// A database token at the commit checked up to: the subscriptions' next cursor.
    public var cursor: ServerChangeToken
    /// Commits left out because this client made them (`Subscription.includeOwn`).
    public var ownCommitsSkipped: Int
    public var warnings: [StoreWarning]
}

extension StoreCore {
    /// A database token at the head: the cursor of a subscription that starts now.
    func currentDatabaseToken(scope: DatabaseScope) throws(RecSyncError) -> ServerChangeToken {
        try scope.requireSupported(for: "subscribing")
        if backend.zonesHaveOwnRefs {
            return try checkSubscriptionsOnZoneRefs([], scope: scope, since: nil).cursor
        }
        return ChangeTokenContent(storeID: storeID, kind: .database(scope: scope, user: user), commit: try backend.head()).token
    }

    /// Evaluates subscriptions of one scope against what changed since a database token
    /// (nil: since the store began), as CloudKit's server does before it sends a push.
    ///
    /// History is walked commit by commit, so each change counts (a record created and then
    /// deleted is two changes, reported to create and delete subscriptions alike), and
    /// commits this client made (`StoreActor.deviceID`, named in each commit's
    /// `Recsync-Client` trailer) are left out unless a subscription includes them. The cost
    /// follows the commits and their changes, not the store. From the beginning (nil), or
    /// when the first-parent path from the head does not pass the cursor (a merge made with
    /// plain git), the stretch is compared end to end instead.
    func checkSubscriptions(_ subscriptions: [Subscription], scope: DatabaseScope, since token: ServerChangeToken?) throws(RecSyncError)
        -> SubscriptionCheck
    {
        try scope.requireSupported(for: "checking subscriptions")
        if backend.zonesHaveOwnRefs { return try checkSubscriptionsOnZoneRefs(subscriptions, scope: scope, since: token) }
        let head = try backend.head()
        var base: String?
        if let token {
            let content = try ChangeTokenContent.decodeDatabaseToken(token, storeID: storeID, scope: scope, user: user)
            try content.requireMainHistory()
            // A cursor is a whole token; a paged one resumes from where its listing began.
            if !content.commit.isEmpty {
                base = try resolveInHistory(content.commit, head: head, what: "the \(scope.rawValue) database")
            }
        }
        let cursor = ChangeTokenContent(storeID: storeID, kind: .database(scope: scope, user: user), commit: head).token
        var check = SubscriptionCheck(matches: [], cursor: cursor, ownCommitsSkipped: 0, warnings: [])
        guard base != head, !subscriptions.isEmpty else { return check }

        var evaluator = SubscriptionEvaluator(subscriptions: subscriptions)
        try evaluator.prepare()
        let everyone = Set(subscriptions.map(\.id))
        let othersOnly = Set(subscriptions.filter(\.includeOwn).map(\.id))
        if base != nil, let steps = try commitsSince(base, head: head) {
            for step in steps {
                if step.own { check.ownCommitsSkipped += 1 }
                let only = step.own ? othersOnly : everyone
                guard !only.isEmpty else { continue }
                try evaluate(&evaluator, only: only, scope: scope, from: step.parent, to: step.commit, warnings: &check.warnings)
            }
        } else {
            try evaluate(&evaluator, only: everyone, scope: scope, from: base, to: head, warnings: &check.warnings)
        }
        check.matches = subscriptions.compactMap { s in evaluator.matches[s.id].flatMap { $0.count > 0 ? $0 : nil } }
        return check
    }

    /// The commits after `base` up to `head` on the first-parent path, oldest first, each
    /// with its parent and whether this client made it; nil when that path does not reach
    /// `base`.
    func commitsSince(_ base: String?, head: String) throws(RecSyncError) -> [(commit: String, parent: String?, own: Bool)]? {
        try commitsSince(head: head, reaching: base.map { b in { $0 == b } })
    }

    /// `commitsSince` with the base told by `isBase` (a zone ref's head as a cursor keeps it,
    /// perhaps a prefix); nil `isBase`: every commit down to the first.
    func commitsSince(head: String, reaching isBase: ((String) -> Bool)?) throws(RecSyncError) -> [(commit: String, parent: String?, own: Bool)]? {
        let trailer = actor.deviceID.map { _ in "Recsync-Client: \(actor.clientSlot)" }
        var chain: [(commit: String, parent: String?, own: Bool)] = []
        var next: String? = head
        while let commit = next, !(isBase?(commit) ?? false) {
            let (parent, message) = try backend.commitInfo(commit)
            let own = trailer.map { t in Self.trailerLines(message).contains { $0 == t } } ?? false
            chain.append((commit, parent, own))
            next = parent
        }
        return (isBase == nil) == (next == nil) ? chain.reversed() : nil
    }

    /// The lines of a commit message's last paragraph (where trailers are).
    static func trailerLines(_ message: String) -> [Substring] {
        let trimmed = message.hasSuffix("\n") ? message.dropLast() : Substring(message)
        let lastParagraph = trimmed.range(of: "\n\n", options: .backwards).map { trimmed[$0.upperBound...] } ?? trimmed
        return lastParagraph.split(separator: "\n")
    }

    /// `checkSubscriptions` on a store with a ref per zone (docs/zone-refs.md): the cursor is a
    /// version 2 database token (each zone ref's head), and each zone whose ref moved since is
    /// walked on its own ref, commit by commit, as the shared ref is in format 1. A zone new
    /// since the cursor is walked from its first commit; one whose ref no longer passes the
    /// cursor's head (rewritten) is compared end to end. Records of one zone are listed oldest
    /// first, zones one after another. A version 1 cursor (from before the store had a ref per
    /// zone) has expired, as a database token of that age has.
    private func checkSubscriptionsOnZoneRefs(_ subscriptions: [Subscription], scope: DatabaseScope, since token: ServerChangeToken?)
        throws(RecSyncError) -> SubscriptionCheck
    {
        let before = try token.map { t throws(RecSyncError) in try zoneRefHeads(t, scope: scope, what: "cursor") }
        var warnings: [StoreWarning] = []
        let refs = try scopeZoneRefs(scope, warnings: &warnings)
        var evaluator = SubscriptionEvaluator(subscriptions: subscriptions)
        try evaluator.prepare()
        let everyone = Set(subscriptions.map(\.id))
        let othersOnly = Set(subscriptions.filter(\.includeOwn).map(\.id))
        var heads: [ZoneRefHead] = []
        var ownCommitsSkipped = 0
        for ref in refs {
            let was = before?[ref.suffix]
            if let was, was.isHead(ref.head) {
                heads.append(was)
                continue
            }
            guard let (entry, visible) = try readZoneRef(ref, scope: scope, warnings: &warnings) else {
                if let was { heads.append(was) }
                continue
            }
            heads.append(ZoneRefHead(refSuffix: ref.suffix, head: ref.head, visible: visible))
            guard !subscriptions.isEmpty else { continue }
            func compare(_ a: String?, _ b: String, only: Set<String>) throws(RecSyncError) {
                let earlier = try a.flatMap { c throws(RecSyncError) in try backend.zone(ref.zoneID, at: c) }
                let later = b == ref.head ? entry : try backend.zone(ref.zoneID, at: b)
                guard earlier != nil || later != nil, earlier?.contentID != later?.contentID else { return }
                try evaluate(&evaluator, only: only, scope: scope, changes: [ZoneChange(before: earlier, after: later)], warnings: &warnings)
            }
            if before != nil, let steps = try commitsSince(head: ref.head, reaching: was.map { w in { w.isHead($0) } }) {
                for step in steps {
                    if step.own { ownCommitsSkipped += 1 }
                    let only = step.own ? othersOnly : everyone
                    guard !only.isEmpty else { continue }
                    try compare(step.parent, step.commit, only: only)
                }
            } else {
                // The first-parent path does not pass the cursor's head. Still in the zone's
                // history (a merge made with plain git): compared end to end. Gone from it (or a
                // hidden zone's, whose head the cursor keeps only a prefix of): the zone's history
                // was rewritten, and the cursor has expired, as a database token naming a commit
                // no longer in the store's history has.
                let base = was.flatMap { $0.visible ? $0.head : nil }
                if was != nil, try !(base.map { b throws(RecSyncError) in try backend.isInHistory(b, head: ref.head) } ?? false) {
                    throw .changeTokenExpired("the \(scope.rawValue) database (the history of zone '\(ref.zoneID)' was rewritten)")
                }
                try compare(base, ref.head, only: everyone)
            }
        }
        heads.sort { $0.refSuffix.utf8.lexicographicallyPrecedes($1.refSuffix.utf8) }
        let cursor = ChangeTokenContent(storeID: storeID, scope: scope, user: user, heads: heads).token
        let matches = subscriptions.compactMap { s in evaluator.matches[s.id].flatMap { $0.count > 0 ? $0 : nil } }
        return SubscriptionCheck(matches: matches, cursor: cursor, ownCommitsSkipped: ownCommitsSkipped, warnings: warnings)
    }

    /// Adds what changed between two commits to the matches of the subscriptions in `only`.
    private func evaluate(
        _ evaluator: inout SubscriptionEvaluator, only: Set<String>, scope: DatabaseScope, from a: String?, to b: String,
        warnings: inout [StoreWarning]
    ) throws(RecSyncError) {
        // Only the zones the commit touched: the cost follows the changes, not the store.
        let (zoneChanges, found) = try backend.zoneChanges(from: a, to: b, owner: scope == .private ? user : nil)
        warnings += found
        try evaluate(&evaluator, only: only, scope: scope, changes: zoneChanges, warnings: &warnings)
    }

    /// Adds what changed in zones to the matches of the subscriptions in `only`.
    private func evaluate(
        _ evaluator: inout SubscriptionEvaluator, only: Set<String>, scope: DatabaseScope, changes zoneChanges: [ZoneChange],
        warnings: inout [StoreWarning]
    ) throws(RecSyncError) {
        var gone: [ZoneID] = []
        var changed: [(zone: ZoneID, before: ZoneContentID?, after: ZoneContentID?)] = []
        for change in zoneChanges {
            // Problems with the earlier version were reported when it was the later one.
            var ignored: [StoreWarning] = []
            let was = change.before.map { isVisible($0, scope: scope, warnings: &ignored) } ?? false
            let now = change.after.map { isVisible($0, scope: scope, warnings: &warnings) } ?? false
            // A zone the user could not see before (new, or newly shared): all its records are new.
            if now {
                changed.append((change.zoneID, was ? change.before?.contentID : nil, change.after?.contentID))
            } else if was {
                gone.append(change.zoneID)
            }
        }
        for zone in gone.sorted() {
            evaluator.zoneEvent(zone, only: only)
        }
        for (zone, from, to) in changed.sorted(by: { $0.zone < $1.zone }) {
            let (wantsRecords, needsBodies) = evaluator.interest(in: zone, only: only)
            guard wantsRecords else { continue }
            var sawRecord = false
            var resume: String?
            let records = zonePaths.shown(zonePaths.records(zone), in: zone)
            repeat {
                let batch = try backend.recordChanges(zone: zone, from: from, to: to, after: resume, limit: 1000)
                warnings += batch.warnings
                for change in batch.changes {
                    let path = "\(records)/\(change.key)"
                    guard let id = recordID(of: change, in: zone, path: path, warnings: &warnings) else { continue }
                    let reason: RecordChangeReason = change.old == nil ? .created : (change.new == nil ? .deleted : .updated)
                    sawRecord = true
                    var body: Record?
                    if needsBodies, let problem = change.problem {
                        warnings.append(StoreWarning(path: path, message: "not checked against query subscriptions: \(problem)"))
                    } else if needsBodies, let tag = reason == .deleted ? change.old : change.new {
                        do { body = try readRecord(id, tag: tag, path: path) } catch {
                            warnings.append(StoreWarning(path: path, message: "not checked against query subscriptions: \(error.message)"))
                        }
                    }
                    evaluator.recordChange(id, reason: reason, body: body, only: only)
                }
                resume = batch.more ? batch.changes.last?.key : nil
            } while resume != nil
            if !sawRecord { evaluator.zoneEvent(zone, only: only) }
        }
    }
}

/// Accumulates matches while history is compared (`checkSubscriptions`).
struct SubscriptionEvaluator {
    let subscriptions: [Subscription]
    var matchers: [String: QuerySubscription.Matcher] = [:]
    var matches: [String: SubscriptionMatch] = [:]

    init(subscriptions: [Subscription]) {
        self.subscriptions = subscriptions
    }

    mutating func prepare() throws(RecSyncError) {
        for s in subscriptions {
            if case .query(let q) = s.kind { matchers[s.id] = try q.matcher() }
        }
    }

    /// Whether any of `only` looks at the zone's records, and whether any must read them.
    func interest(in zone: ZoneID, only: Set<String>) -> (records: Bool, bodies: Bool) {
        var records = false, bodies = false
        for s in subscriptions where only.contains(s.id) {
            switch s.kind {
            case .database: records = true
            case .zone(let z): if z == zone { records = true }
            case .query(let q):
                if q.zone == nil || q.zone == zone { records = true; bodies = true }
            }
        }
        return (records, bodies)
    }

    /// A zone deleted, or changed without a record changing: counts for database and zone
    /// subscriptions.
    mutating func zoneEvent(_ zone: ZoneID, only: Set<String>) {
        for s in subscriptions where only.contains(s.id) {
            switch s.kind {
            case .database: add(s.id, zone: zone, notice: nil)
            case .zone(let z): if z == zone { add(s.id, zone: zone, notice: nil) }
            case .query: break
            }
        }
    }

    mutating func recordChange(_ id: RecordID, reason: RecordChangeReason, body: Record?, only: Set<String>) {
        for s in subscriptions where only.contains(s.id) {
            switch s.kind {
            case .database: add(s.id, zone: id.zoneID, notice: nil)
            case .zone(let z): if z == id.zoneID { add(s.id, zone: id.zoneID, notice: nil) }
            case .query(let q):
                guard q.zone == nil || q.zone == id.zoneID, q.firesOn.contains(reason),
                    let body, matchers[s.id]?.matches(body) == true
                else { continue }
                add(s.id, zone: id.zoneID, notice: RecordChangeNotice(recordID: id, reason: reason))
            }
        }
    }

    private mutating func add(_ id: String, zone: ZoneID, notice: RecordChangeNotice?) {
        var match = matches[id] ?? SubscriptionMatch(subscriptionID: id)
        match.count += 1
        match.zones.insert(zone)
        if let notice, match.records.count < SubscriptionCheck.recordListLimit { match.records.append(notice) }
        matches[id] = match
    }
}
