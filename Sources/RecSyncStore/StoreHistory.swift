import RecSyncModel

/// A store whose history can be read, newest first: its change log (`recsync log`).
///
/// `GitStore` keeps history (its commits); a store that keeps none need not conform.
public protocol StoreHistory: RemoteStore {
    /// The store's commits, newest first, following first parents; with a zone, only those
    /// that changed it. At most `limit`.
    func log(limit: Int, zone: ZoneID?) async throws(RecSyncError) -> [StoreCommit]

    /// The change tag a record had at each commit, newest first, following first parents
    /// (nil: the record did not exist then). At most `limit` commits.
    func recordHistory(_ id: RecordID, limit: Int) async throws(RecSyncError) -> [(commit: String, tag: String?)]
}

/// A commit that changed one record, with the record's change tag after it.
public struct RecordCommit: Sendable, Hashable {
    public var commit: StoreCommit
    /// The record's change tag after the commit; nil when the commit deleted it.
    public var changeTag: String?

    public init(commit: StoreCommit, changeTag: String?) {
        self.commit = commit
        self.changeTag = changeTag
    }
}

extension StoreHistory {
    /// The commits that changed a record (its change tag differs from the commit before),
    /// newest first, at most `limit`.
    public func recordLog(_ id: RecordID, limit: Int) async throws(RecSyncError) -> [RecordCommit] {
        let history = try await recordHistory(id, limit: 10_000)
        var changed: [(commit: String, tag: String?)] = []
        for (i, h) in history.enumerated() {
            let before = i + 1 < history.count ? history[i + 1].tag : nil
            if h.tag != before { changed.append(h) }
            if changed.count == limit { break }
        }
        let commits = try await log(limit: history.count, zone: nil)
        let byID = Dictionary(commits.map { ($0.commit, $0) }, uniquingKeysWith: { a, _ in a })
        return changed.compactMap { c in byID[c.commit].map { RecordCommit(commit: $0, changeTag: c.tag) } }
    }
}

extension GitStore: StoreHistory {}
