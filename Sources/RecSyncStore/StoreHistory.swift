import RecSyncGit
import RecSyncModel

/// A store whose history can be read, newest first: its change log (`recsync log`).
///
/// `GitStore` keeps history (its commits); a store that keeps none need not conform.
/// History is read as the store is known now: a network store's mirror is not fetched first.
public protocol StoreHistory: RemoteStore {
    /// The store's commits, newest first, following first parents; with a zone, only those
    /// that changed it. At most `limit`.
    func log(limit: Int, zone: ZoneID?) async throws(RecSyncError) -> [StoreCommit]

    /// The change tag a record had at each commit, newest first, following first parents
    /// (nil: the record did not exist then). At most `limit` commits.
    func recordHistory(_ id: RecordID, limit: Int) async throws(RecSyncError) -> [(commit: String, tag: String?)]

    /// One version of a record by its change tag (the blob a commit held), read without a
    /// fetch; nil when the store has no such version or the record's zone is not visible.
    func recordVersion(_ id: RecordID, changeTag: String) async throws(RecSyncError) -> Record?

    /// The records of a zone at a commit of the history: record name → change tag (empty
    /// when the zone was not there).
    func records(in zone: ZoneID, at commit: String) async throws(RecSyncError) -> [String: String]

    /// The records a commit changed in a zone, against its first parent, by record name.
    func recordChanges(in zone: ZoneID, commit: String) async throws(RecSyncError) -> [RecordVersionChange]

    /// One commit of the history (`recordHistory` names them), as `log` shows it.
    func historyCommit(_ commit: String) async throws(RecSyncError) -> StoreCommit
}

/// A record that one commit changed: its change tags before and after.
public struct RecordVersionChange: Sendable, Hashable {
    public var recordID: RecordID
    /// Nil: the commit created the record.
    public var previousChangeTag: String?
    /// Nil: the commit deleted the record.
    public var changeTag: String?

    public init(recordID: RecordID, previousChangeTag: String?, changeTag: String?) {
        self.recordID = recordID
        self.previousChangeTag = previousChangeTag
        self.changeTag = changeTag
    }
}

/// A commit that changed one record, with the record's change tag after it.
public struct RecordCommit: Sendable, Hashable {
    public var commit: StoreCommit
    /// The record's change tag after the commit; nil when the commit deleted it.
    public var changeTag: String?
    /// The record's change tag before the commit; nil when the commit created it (or the
    /// history shown ends there).
    public var previousChangeTag: String?

    public init(commit: StoreCommit, changeTag: String?, previousChangeTag: String? = nil) {
        self.commit = commit
        self.changeTag = changeTag
        self.previousChangeTag = previousChangeTag
    }
}

/// A point in a store's history, as `recsync show RECORD@REV` names it.
public enum StoreRevision: Sendable, Hashable {
    /// The store's current version (no `@REV`, or an empty one).
    case current
    /// A commit of the store's first-parent history, by its full or abbreviated hash (at
    /// least 4 hex digits), as `recsync log` prints it.
    case commit(String)
    /// The record's Nth version back from its newest one in the store (`~1`: the one before
    /// it; `~0`: the newest), counting the commits that changed the record.
    case versionsBack(Int)

    /// The revision a `REV` text names (`""`, a hash prefix, `~N`, `~` for `~1`); nil when it
    /// is none of these.
    public init?(_ text: String) {
        if text.isEmpty {
            self = .current
        } else if text.first == "~" {
            let digits = text.dropFirst()
            if digits.isEmpty { self = .versionsBack(1); return }
            guard digits.count <= 9, digits.allSatisfy(\.isASCIIDigit), let n = Int(digits) else { return nil }
            self = .versionsBack(n)
        } else {
            guard (4...40).contains(text.count), text.allSatisfy(\.isHexDigit), text.allSatisfy(\.isASCII) else { return nil }
            self = .commit(text.lowercased())
        }
    }

    /// Splits `RECORD@REV` at its last `@`: the record reference and the revision. When what
    /// follows the `@` is not a revision (a record named `bob@example.com`), or there is no
    /// `@`, the whole text is the record at `.current`; a record whose name ends in `@` and a
    /// hash-like word is named with a trailing `@` (`x@cafe@`).
    public static func split(_ text: String) -> (record: String, revision: StoreRevision) {
        guard let at = text.lastIndex(of: "@"), at != text.startIndex,
            let revision = StoreRevision(String(text[text.index(after: at)...]))
        else {
            return (text, .current)
        }
        return (String(text[..<at]), revision)
    }

    /// The revision as it is written after `@`.
    public var text: String {
        switch self {
        case .current: ""
        case .commit(let hash): hash
        case .versionsBack(let n): "~\(n)"
        }
    }
}

/// A record as a store revision holds it, with the commit the revision names.
public struct RecordAtRevision: Sendable, Hashable {
    public var commit: StoreCommit
    public var record: Record
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}

extension StoreHistory {
    /// How far back the history of one record is read (first-parent commits).
    public static var historyDepth: Int { 10_000 }

    /// The commits that changed a record (its change tag differs from the commit before),
    /// newest first, at most `limit`.
    public func recordLog(_ id: RecordID, limit: Int) async throws(RecSyncError) -> [RecordCommit] {
        let history = try await recordHistory(id, limit: Self.historyDepth)
        var result: [RecordCommit] = []
        for c in Self.changes(in: history).prefix(limit) {
            result.append(RecordCommit(commit: try await historyCommit(c.commit), changeTag: c.tag, previousChangeTag: c.before))
        }
        return result
    }

    /// The entries of a record's history where its tag changed, with the tag before.
    static func changes(in history: [(commit: String, tag: String?)]) -> [(index: Int, commit: String, tag: String?, before: String?)] {
        var changed: [(index: Int, commit: String, tag: String?, before: String?)] = []
        for (i, h) in history.enumerated() {
            let before = i + 1 < history.count ? history[i + 1].tag : nil
            if h.tag != before { changed.append((i, h.commit, h.tag, before)) }
        }
        return changed
    }

    /// The commit a revision names: `.current` the head, `.commit` the one commit of the
    /// first-parent history its hash starts with. `.versionsBack` counts one record's
    /// versions and names no commit by itself: `invalidArguments`.
    public func commit(_ revision: StoreRevision) async throws(RecSyncError) -> StoreCommit {
        switch revision {
        case .current:
            guard let head = try await log(limit: 1, zone: nil).first else { throw .notFound("the store has no history yet") }
            return head
        case .versionsBack(let n):
            throw .invalidArguments("'~\(n)' counts one record's versions; name a commit (as the store's log prints it) instead")
        case .commit(let prefix):
            let matches = try await log(limit: Self.historyDepth, zone: nil).filter { $0.commit.hasPrefix(prefix) }
            guard let first = matches.first else {
                throw .notFound("unknown revision '\(prefix)': no commit of the store's history starts with it").suggesting(.listHistory)
            }
            guard matches.count == 1 else {
                throw .invalidArguments("ambiguous revision '\(prefix)': \(matches.count) commits start with it; give more digits")
            }
            return first
        }
    }

    /// A record as it was at a revision. An unknown revision is `notFound`, an ambiguous one
    /// `invalidArguments`; a record that did not exist at the revision is `unknownItem`.
    public func record(_ id: RecordID, at revision: StoreRevision) async throws(RecSyncError) -> RecordAtRevision {
        let history = try await recordHistory(id, limit: Self.historyDepth)
        let index: Int
        switch revision {
        case .current:
            guard !history.isEmpty else { throw .unknownItem(id) }
            index = 0
        case .commit(let prefix):
            let matches = history.indices.filter { history[$0].commit.hasPrefix(prefix) }
            guard let first = matches.first else {
                throw .notFound("unknown revision '\(prefix)': no commit of the store's history starts with it").suggesting(.listHistory)
            }
            guard matches.count == 1 else {
                throw .invalidArguments("ambiguous revision '\(prefix)': \(matches.count) commits start with it; give more digits")
            }
            index = first
        case .versionsBack(let n):
            let changed = Self.changes(in: history)
            guard n < changed.count else {
                throw .notFound(
                    """
                    unknown revision '~\(n)': the record has \(changed.count)\
                     version\(changed.count == 1 ? "" : "s") in the store's history ('~0' to\
                     '~\(max(0, changed.count - 1))')
                    """
                ).suggesting(.listRecordVersions)
            }
            index = changed[n].index
        }
        guard let tag = history[index].tag else { throw .unknownItem(id) }
        guard let record = try await recordVersion(id, changeTag: tag) else {
            throw .storeCorrupt("the version \(tag.prefix(12)) of '\(id)' named by commit \(history[index].commit.prefix(12)) cannot be read")
        }
        return RecordAtRevision(commit: try await historyCommit(history[index].commit), record: record)
    }
}

extension GitStore: StoreHistory {
    public func historyCommit(_ commit: String) throws(RecSyncError) -> StoreCommit {
        guard let oid = GitOID(hex: commit) else { throw .invalidArguments("'\(commit)' is not a commit ID") }
        let found: GitCommit
        do { found = try core.backend.repository.commit(oid) } catch {
            guard error.isNotFound else { throw GitBackend.wrap(error, "reading commit \(commit)") }
            throw .notFound("the store has no commit \(commit)")
        }
        return StoreCommit(found)
    }

    public func recordVersion(_ id: RecordID, changeTag: String) throws(RecSyncError) -> Record? {
        try core.fetchRecordVersion(id, changeTag: changeTag)
    }

    /// With a ref per zone, `commit` must be one of the zone's ref (or from before the upgrade):
    /// another zone's commit does not say what this zone held then, and is refused rather than
    /// read as an empty zone.
    public func records(in zone: ZoneID, at commit: String) throws(RecSyncError) -> [String: String] {
        if try !holdsZone(zone, commit) {
            guard try core.backend.zoneHead(zone) == nil else {
                throw .invalidArguments(
                    """
                    commit \(commit.prefix(12)) is not in the history of zone '\(zone)': each zone has its own history in this\
                     store; name a commit of that zone's log
                    """
                ).suggesting(.listHistory)
            }
            return [:]
        }
        return Dictionary(
            try core.backend.allRecords(zone: zone, in: core.backend.zoneContent(zone, at: commit)).map { ($0.recordName, $0.tag) },
            uniquingKeysWith: { a, _ in a })
    }

    /// Whether a commit of the history can hold the zone: any commit of main in format 1; with
    /// a ref per zone, one of the zone's ref (another zone's commit holds that zone as `zone/`),
    /// or of main's history from before the upgrade.
    private func holdsZone(_ zone: ZoneID, _ commit: String) throws(RecSyncError) -> Bool {
        let backend = core.backend
        guard backend.zonesHaveOwnRefs else { return true }
        if let head = try backend.zoneHead(zone), try backend.isInHistory(commit, head: head) { return true }
        return try backend.commitBeforeUpgrade(commit) != nil
    }

    public func recordChanges(in zone: ZoneID, commit: String) throws(RecSyncError) -> [RecordVersionChange] {
        guard try holdsZone(zone, commit) else { return [] }
        let parent = try core.backend.commitInfo(commit).parent
        let before = try parent.map { c throws(RecSyncError) in try core.backend.zoneContent(zone, at: c) } ?? nil
        let now = try core.backend.zoneContent(zone, at: commit)
        var changes: [RecordVersionChange] = []
        var after: String?
        while true {
            let batch = try core.backend.recordChanges(zone: zone, from: before, to: now, after: after, limit: 1_000)
            for c in batch.changes where c.problem == nil {
                changes.append(
                    RecordVersionChange(recordID: try RecordID(recordName: c.recordName, zoneID: zone), previousChangeTag: c.old, changeTag: c.new))
            }
            guard batch.more, let last = batch.changes.last else { break }
            after = last.key
        }
        return changes
    }
}
