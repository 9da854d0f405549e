import Foundation
import RecSyncGit
import RecSyncModel

/// Where `GitStore.compact` cuts a store's history.
public enum CompactionHorizon: Sendable, Hashable {
    /// Keep the `n` newest commits (first-parent): the horizon is the parent of the `n`th newest.
    /// Commits that land while the compaction is published are kept as well.
    case keepLast(Int)
    /// Keep the commits made at or after a moment: the horizon is the newest first-parent
    /// commit older than it (commit time, whole seconds).
    case before(Date)
}

/// What `GitStore.compact` did (or would have nothing to do).
public struct CompactionReport: Sendable, Hashable {
    /// False when there was nothing to compact: the store was left as it was.
    public var compacted: Bool
    /// The head before, and after (the same when nothing was compacted).
    public var oldHead: String
    public var newHead: String
    /// The horizon commit of the old history (its tree is the new root's), and its commit
    /// time (milliseconds since the epoch); nil when no commit qualified.
    public var horizon: String?
    public var horizonTime: Int64?
    /// The new root commit.
    public var newRoot: String?
    /// First-parent commits from the head before and after.
    public var commitsBefore: Int
    public var commitsAfter: Int
    /// Commits folded into the new root (the horizon and everything before it).
    public var commitsFolded: Int
    /// Commits after the horizon, replayed on the new root with their trees, authors,
    /// messages and times.
    public var commitsReplayed: Int
    /// Zones whose `deleted` tombstones were dropped (`dropDeletedTombstones`).
    public var tombstonesDropped: [ZoneID]
    /// Old commits that tokens may still name and that now stand for new ones (the horizon
    /// and the replayed commits, plus those carried over from earlier compactions).
    public var tokenMapEntries: Int
    /// How many times the compaction was published: more than once when the store moved under
    /// it (what landed meanwhile was replayed too, so more than the newest N may be kept).
    public var attempts: Int
    /// True when, on a network store, writers were asked to hold their pushes while the
    /// compaction ran (its lease, `refs/recsync/compacting/…`, was accepted by the server).
    public var writersHeldOff: Bool = false
    /// Lease references the server would not let recsync remove afterwards (it denies
    /// deletions): they end at their deadline, but keep a small commit advertised until
    /// someone with the right deletes them (`git push URL :REF`).
    public var leasesLeft: [String] = []
}

/// The marker a compaction leaves in the store's tree (`compaction.json` at the top): which
/// new commit each kept old commit became, so that change tokens naming them keep working.
///
/// It lives in the tree, not in a ref or a note, so that it moves with `main` in the same
/// compare-and-swap, reaches every mirror by the fetch that brings the new history, and
/// survives a plain `git clone` (which copies neither `refs/recsync/*` nor notes).
struct CompactionMarker: Sendable, Hashable {
    static let path = "compaction.json"
    static let format = 1

    /// The old horizon commit, its commit time (milliseconds since the epoch), and the new root.
    var horizon: String
    var horizonTime: Int64
    var root: String
    var compacted: ChangeStamp
    /// Old commit → the commit of today's history it stands for.
    var commits: [String: String]

    func encoded() -> [UInt8] {
        JSON.serialize(
            .object([
                "format": .int(Int64(Self.format)),
                "horizon": .object(["commit": .string(horizon), "time": .int(horizonTime), "root": .string(root)]),
                "compacted": ZoneDocuments.stamp(compacted),
                "commits": .object(commits.mapValues { .string($0) }),
            ]), pretty: true)
    }

    /// Reads a marker; nil when it is not one this recsync wrote (tokens then simply expire).
    static func decode(_ bytes: [UInt8]) -> CompactionMarker? {
        let json: JSONValue
        do { json = try JSON.parse(bytes) } catch { return nil }
        guard case .object(let o) = json, case .int(let f)? = o["format"], f == Int64(format),
            case .object(let h)? = o["horizon"], case .string(let horizon)? = h["commit"], case .string(let root)? = h["root"],
            case .object(let map)? = o["commits"]
        else { return nil }
        var commits: [String: String] = [:]
        for (old, new) in map {
            guard case .string(let n) = new, GitOID(hex: old) != nil, GitOID(hex: n) != nil else { return nil }
            commits[old] = n
        }
        var time: Int64 = 0
        if case .int(let t)? = h["time"] { time = t }
        let stamp = o["compacted"].flatMap(ZoneDocuments.decodeStamp) ?? ChangeStamp(timestamp: 0, userRecordName: "")
        return CompactionMarker(horizon: horizon, horizonTime: time, root: root, compacted: stamp, commits: commits)
    }
}

extension GitStore {
    /// How many times a compaction is published when other writers moved the head first.
    static let maxCompactionAttempts = 32

    /// Rewrites the history before `horizon` into one root commit and replays the commits
    /// after it on top, then moves `main` by compare-and-swap.
    ///
    /// The root's tree is the horizon commit's: every live record, zone, share and tombstone
    /// stays (with `dropDeletedTombstones`, tombstones of zones deleted — not purged, not
    /// reset — at or before the horizon go, from the root and the replayed trees alike). The
    /// replayed commits keep their trees, authors, committers, messages and times; a last
    /// commit adds `compaction.json` (`CompactionMarker`), through which change tokens naming
    /// the horizon or a replayed commit keep working; tokens naming older commits expire
    /// (`changeTokenExpired`), and clients refetch from nil.
    ///
    /// A local store's ref moves only if it still names the head the compaction read; a
    /// network store is force-pushed, guarded the same way (`GitRepository.forcePush`). When
    /// another writer got in first, the commits that landed are replayed on the compacted
    /// history and it is published again (computed from the start only if the history was
    /// rewritten meanwhile). On a network store, recsync writers hold their pushes while the
    /// compaction runs (`CompactionLease`).
    public func compact(_ horizon: CompactionHorizon, dropDeletedTombstones: Bool = false) throws(RecSyncError) -> CompactionReport {
        try compact(horizon, dropDeletedTombstones: dropDeletedTombstones, beforePublishing: { _ throws(RecSyncError) in })
    }

    /// `compact`, with `beforePublishing` run between computing and publishing each attempt
    /// (tests move the store there).
    func compact(_ horizon: CompactionHorizon, dropDeletedTombstones: Bool, beforePublishing: @Sendable (Int) throws(RecSyncError) -> Void)
        throws(RecSyncError) -> CompactionReport
    {
        if case .keepLast(let n) = horizon, n < 1 {
            throw .invalidArguments("the number of newest commits to keep must be at least 1")
        }
        if core.backend.zonesHaveOwnRefs {
            // Compacting main alone would report a compaction while every zone's history stayed.
            throw .unsupported("compacting a store with a ref per zone (format 2) is not built yet; nothing was changed")
        }
        let backend = core.backend
        let repository = backend.repository
        let actor = core.actor
        var refusal: String?
        var rewrite: HistoryRewrite?
        // On a network store, writers are asked to hold their pushes while this is published
        // (`CompactionLease`): without that, a steady stream of pushes can keep refusing ours.
        let leases = backend.remote.map { CompactionLeaseHolder(link: $0, repository: repository) }
        // Removed on every way out; `release` is idempotent, so the report can say what stayed.
        defer { leases?.release() }
        for attempt in 1...Self.maxCompactionAttempts {
            if let link = backend.remote {
                let seen = refusal == nil ? nil : try backend.head()
                try link.fetch(into: repository)
                // Refused while the remote still held what we expected: not a race but a server
                // that forbids rewriting history.
                if let refusal, try backend.head() == seen {
                    throw .permissionFailure(
                        """
                        \(link.remote.redacted) refused to replace its history (\(refusal)) although nobody else had\
                         written; a compaction needs a force push: allow it for you (receive.denyNonFastForwards =\
                         false, or lift the branch protection), or compact the store where it lives
                        """
                    ).suggesting(.compactStoreWhereItLives)
                }
            }
            let head = try backend.head()
            guard let headOID = GitOID(hex: head) else { throw .storeCorrupt("the store's head '\(head)' is not a commit ID") }
            let previous = rewrite
            rewrite = try Self.git("compacting the store") { () throws(GitError) -> HistoryRewrite? in
                if let previous, let extended = try previous.extended(to: headOID, in: repository, actor: actor) { return extended }
                return try HistoryRewrite.compute(
                    in: repository, head: headOID, horizon: horizon, dropDeletedTombstones: dropDeletedTombstones, actor: actor)
            }
            guard var current = rewrite else {
                var report = try nothingToCompact(head: headOID)
                report.attempts = attempt
                report.leasesLeft = leases?.release() ?? []
                return report
            }
            // Placed once there is something to publish (computing can take long on a large
            // store, and holds nobody up), renewed when an attempt finds it running out.
            leases?.ensure()
            try beforePublishing(attempt)
            let landed: Bool
            if let link = backend.remote {
                refusal = try link.forcePublish(current.newHead, over: headOID, in: repository)
                landed = refusal == nil
            } else {
                landed = try Self.git("moving the head") { () throws(GitError) in
                    try repository.updateReference(GitBackend.headRef, to: current.newHead, expected: headOID, logMessage: "recsync: compact history")
                }
                if !landed, let lock = repository.referenceLock(GitBackend.headRef) {
                    try GitBackend.clearAbandoned(lock, in: repository, notices: backend.notices)
                }
            }
            if landed {
                current.report.attempts = attempt
                current.report.writersHeldOff = leases?.placed ?? false
                current.report.leasesLeft = leases?.release() ?? []
                return current.report
            }
            // Another writer got in first: a short random pause, longer with each attempt, lets
            // the compaction slip between their writes; then look again and replay what landed.
            usleep(UInt32.random(in: 0...UInt32(min(100_000, 1_000 << min(attempt, 7)))))
        }
        throw .storeBusy(
            """
            the store kept moving while recsync compacted it (\(Self.maxCompactionAttempts) attempts);\
             nothing was changed. Run the compaction again when fewer writers are busy
            """
        )
    }

    /// The report of a compaction with nothing to do.
    private func nothingToCompact(head: GitOID) throws(RecSyncError) -> CompactionReport {
        var count = 0
        try walkHistory { (_, _) throws(GitError) -> Bool in
            count += 1
            return true
        }
        return CompactionReport(
            compacted: false, oldHead: head.hex, newHead: head.hex, horizon: nil, horizonTime: nil, newRoot: nil,
            commitsBefore: count, commitsAfter: count, commitsFolded: 0, commitsReplayed: 0,
            tombstonesDropped: [], tokenMapEntries: 0, attempts: 1)
    }

    static func git<T>(_ doing: String, _ body: () throws(GitError) -> T) throws(RecSyncError) -> T {
        do { return try body() } catch { throw GitBackend.wrap(error, doing) }
    }
}

/// One computed compaction: the new history's objects are written, no ref has moved yet.
struct HistoryRewrite {
    var newHead: GitOID
    var report: CompactionReport

    /// What `extended` needs to replay commits that land after `report.oldHead`.
    private let horizonCommit: GitCommit
    private let root: GitOID
    private let dropped: [(path: String, blob: GitOID, zone: ZoneID)]
    /// The last replayed commit (the marker commit's parent), its tree, and old → new commits.
    private var tip: GitOID
    private var tipTree: GitOID
    private var map: [String: String]

    /// Writes the compacted history of `head` (one pack file); nil when there is nothing to
    /// compact (no commit before the horizon, and no tombstone to drop).
    static func compute(
        in repository: GitRepository, head: GitOID, horizon: CompactionHorizon, dropDeletedTombstones: Bool, actor: StoreActor
    ) throws(GitError) -> HistoryRewrite? {
        // The first-parent chain, newest first.
        var chain: [GitCommit] = []
        var next: GitOID? = head
        while let oid = next {
            let commit = try repository.commit(oid)
            chain.append(commit)
            next = commit.parents.first
        }
        let horizonIndex: Int
        switch horizon {
        case .keepLast(let n):
            guard n < chain.count else { return nil }
            horizonIndex = n
        case .before(let date):
            let cut = Int64(date.timeIntervalSince1970.rounded(.up))
            guard let i = chain.firstIndex(where: { $0.time < cut }) else { return nil }
            horizonIndex = i
        }
        let horizonCommit = chain[horizonIndex]
        let dropped = dropDeletedTombstones ? try deletedTombstones(in: repository, tree: horizonCommit.tree) : []
        // Already a root, with nothing to drop: the history before the horizon is one commit.
        if horizonCommit.parents.isEmpty && dropped.isEmpty { return nil }

        let bulk = try GitRepository.open(at: repository.path, bulkWrites: true)
        let folded = chain.count - horizonIndex
        let rootMessage =
            """
            Compacted history: \(folded) commits up to \(horizonCommit.oid.hex)\
             (\(Self.shown(horizonCommit.time))) folded into this one\n\nRecsync-Compacted-From:\
             \(horizonCommit.oid.hex)\n
            """
        let rootTree = try pruned(horizonCommit.tree, dropping: dropped, in: bulk)
        let root = try bulk.copyCommit(horizonCommit.oid, tree: rootTree, parents: [], message: rootMessage)
        let report = CompactionReport(
            compacted: true, oldHead: head.hex, newHead: "", horizon: horizonCommit.oid.hex, horizonTime: horizonCommit.time * 1000,
            newRoot: root.hex, commitsBefore: chain.count, commitsAfter: 2, commitsFolded: folded, commitsReplayed: 0,
            tombstonesDropped: dropped.map(\.zone), tokenMapEntries: 0, attempts: 1)
        var rewrite = HistoryRewrite(
            newHead: root, report: report, horizonCommit: horizonCommit, root: root, dropped: dropped,
            tip: root, tipTree: rootTree, map: [horizonCommit.oid.hex: root.hex])
        try rewrite.replay(chain[..<horizonIndex].reversed(), with: bulk)
        try rewrite.seal(head: chain[0], in: repository, with: bulk, actor: actor)
        return rewrite
    }

    /// This compaction carried on to `head`, a head that moved on from `report.oldHead` while
    /// the compaction was being published: only the commits that landed meanwhile are replayed
    /// (on the same horizon, so they are kept too), and the marker is written again. Nil when
    /// `report.oldHead` is not in `head`'s first-parent history (the history was rewritten):
    /// the compaction must be computed from the start.
    ///
    /// Computing again from the start would make the window in which another write can get
    /// in first as long as the whole computation, on every attempt; this one is as long as
    /// replaying what landed.
    func extended(to head: GitOID, in repository: GitRepository, actor: StoreActor) throws(GitError) -> HistoryRewrite? {
        guard let old = GitOID(hex: report.oldHead) else { return nil }
        if head == old { return self }
        var landed: [GitCommit] = []
        var next: GitOID? = head
        while let oid = next, oid != old {
            let commit = try repository.commit(oid)
            landed.append(commit)
            next = commit.parents.first
        }
        guard next == old, let newest = landed.first else { return nil }
        let bulk = try GitRepository.open(at: repository.path, bulkWrites: true)
        var rewrite = self
        rewrite.report.oldHead = head.hex
        rewrite.report.commitsBefore += landed.count
        try rewrite.replay(landed.reversed(), with: bulk)
        try rewrite.seal(head: newest, in: repository, with: bulk, actor: actor)
        return rewrite
    }

    /// Copies `commits` (oldest first) onto the tip, each with its tree less the dropped tombstones.
    private mutating func replay(_ commits: some Sequence<GitCommit>, with bulk: GitRepository) throws(GitError) {
        for commit in commits {
            tipTree = try Self.pruned(commit.tree, dropping: dropped, in: bulk)
            tip = try bulk.copyCommit(commit.oid, tree: tipTree, parents: [tip])
            map[commit.oid.hex] = tip.hex
            report.commitsReplayed += 1
        }
    }

    /// Writes the marker commit on the tip (the old `head`'s token map carried over), and the pack.
    private mutating func seal(head: GitCommit, in repository: GitRepository, with bulk: GitRepository, actor: StoreActor) throws(GitError) {
        // Tokens an earlier compaction kept working keep working if their commit is kept again.
        if let entry = try repository.entry(atPath: CompactionMarker.path, inTree: head.tree), entry.kind == .blob,
            let earlier = CompactionMarker.decode(try repository.blob(entry.oid))
        {
            for (old, replayed) in earlier.commits where map[old] == nil {
                if let now = map[replayed] { map[old] = now }
            }
        }
        let time = actor.clock()
        let marker = CompactionMarker(
            horizon: horizonCommit.oid.hex, horizonTime: horizonCommit.time * 1000, root: root.hex,
            compacted: ChangeStamp(timestamp: time, userRecordName: actor.userRecordName), commits: map)
        let markerBlob = try bulk.createBlob(marker.encoded())
        let markerTree = try bulk.updateTree(base: tipTree, updates: [.upsertBlob(path: CompactionMarker.path, oid: markerBlob)])
        let signature = GitSignature(name: actor.displayName, email: actor.email, time: time / 1000)
        var message = "\(actor.userRecordName): compact store history before \(Self.shown(horizonCommit.time))\n\n"
        message += "\(report.commitsFolded) commits folded into the root \(root.hex), \(report.commitsReplayed) replayed on it"
        if !dropped.isEmpty { message += ", \(dropped.count) deleted-zone tombstones dropped" }
        message += ".\nChange tokens naming the horizon or a replayed commit follow compaction.json; older ones expire.\n"
        newHead = try bulk.createCommit(tree: markerTree, parents: [tip], author: signature, message: message)
        try bulk.writePack()
        report.newHead = newHead.hex
        report.commitsAfter = report.commitsReplayed + 2
        report.tokenMapEntries = map.count
    }

    /// A tree without the dropped tombstones (only where it still holds the same blob).
    private static func pruned(_ tree: GitOID, dropping dropped: [(path: String, blob: GitOID, zone: ZoneID)], in bulk: GitRepository)
        throws(GitError) -> GitOID
    {
        var removals: [GitTreeUpdate] = []
        for (path, blob, _) in dropped where try bulk.entry(atPath: path, inTree: tree)?.oid == blob {
            removals.append(.remove(path: path))
        }
        return removals.isEmpty ? tree : try bulk.updateTree(base: tree, updates: removals)
    }

    /// A commit time (seconds) as the messages show it.
    private static func shown(_ time: Int64) -> String {
        ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: TimeInterval(time)))
    }

    /// The tombstones at `tree` whose reason is `deleted`: path, blob, zone.
    static func deletedTombstones(in repository: GitRepository, tree: GitOID) throws(GitError) -> [(path: String, blob: GitOID, zone: ZoneID)] {
        guard let top = try repository.entry(atPath: StoreLayout.tombstonesDir, inTree: tree), top.kind == .tree else { return [] }
        var result: [(path: String, blob: GitOID, zone: ZoneID)] = []
        for owner in try repository.treeEntries(top.oid) where owner.kind == .tree {
            guard let ownerName = StoreLayout.unescape(owner.name) else { continue }
            for file in try repository.treeEntries(owner.oid) where file.kind == .blob && file.name.hasSuffix(".json") {
                // Only a tombstone recsync can name and read as `deleted`; anything else stays.
                guard let zoneName = StoreLayout.unescape(String(file.name.dropLast(5))) else { continue }
                let zone: ZoneID
                do { zone = try ZoneID(zoneName: zoneName, ownerName: ownerName) } catch { continue }
                guard ZoneDocuments.recordedReason(try repository.blob(file.oid)) == .deleted else { continue }
                result.append(("\(StoreLayout.tombstonesDir)/\(owner.name)/\(file.name)", file.oid, zone))
            }
        }
        return result
    }
}
