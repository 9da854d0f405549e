import Foundation
import RecSyncGit
import RecSyncModel

/// Where network operations find credentials and trusted ssh host keys (see `GitNetworkOptions`).
public typealias NetworkOptions = GitNetworkOptions

/// The network side of a `GitBackend` whose repository is a bare mirror of a remote store
/// (DESIGN §8): the mirror's `refs/heads/main` is the remote's head as last fetched, and it
/// moves only by a fetch or after the remote accepted a push.
final class RemoteMirror {
    static let fetchRefspec = "+\(GitBackend.headRef):\(GitBackend.headRef)"
    /// The zone refs of a store of format 2 (none in format 1): fetched with main, never
    /// pruned (a gone zone keeps its ref, holding its tombstone).
    static let zoneRefspec = "+\(RefNames.zonesPrefix)*:\(RefNames.zonesPrefix)*"
    /// Refused pushes in a row after which the store had not moved: a hook or a permission,
    /// not a race, so retrying cannot help.
    static let maxRefusalsWithoutMovement = 3

    let remote: GitRemoteURL
    let options: GitNetworkOptions
    private var refusalsWithoutMovement = 0
    /// When this handle first held its pushes for each lease: it holds for one lease at most
    /// `CompactionLease.longestHold` in all, however many of its pushes meet it.
    private var heldSince: [String: ContinuousClock.Instant] = [:]
    /// The most one publication waits for leases in all, however many it meets (a lease
    /// renewed forever, or a hostile server advertising new ones, cannot stall a push longer).
    var longestTotalHold: Duration = CompactionLease.longestHold
    /// Where a push says that it waits for a compaction (`GitStore.notices`).
    var notices: StoreNotices?

    init(remote: GitRemoteURL, options: GitNetworkOptions) {
        self.remote = remote
        self.options = options
    }

    /// Whether the store has a ref per zone (format 2): its zone refs are fetched with main.
    /// Set once the manifest is read (`GitBackend.init`).
    var fetchesZoneRefs = false

    /// Brings the mirror's `refs/heads/main` up to the remote's (following rewritten history),
    /// and its zone refs in a store of format 2.
    func fetch(into repository: GitRepository) throws(RecSyncError) {
        do {
            try repository.fetch(fetchesZoneRefs ? [Self.fetchRefspec, Self.zoneRefspec] : [Self.fetchRefspec], from: remote, options: options)
        } catch {
            throw Self.map(error)
        }
    }

    /// The remote's ref `name` and those under `prefix`, without fetching (`ls-remote`).
    func remoteReferences(named name: String, under prefix: String) throws(RecSyncError) -> [(name: String, target: GitOID)] {
        do {
            return try GitRepository.remoteReferences(at: remote, options: options).filter { $0.name == name || $0.name.hasPrefix(prefix) }
        } catch {
            throw Self.map(error)
        }
    }

    /// The remote's head without fetching (`ls-remote`).
    func remoteHead() throws(RecSyncError) -> GitOID? {
        do {
            return try GitRepository.remoteReference(GitBackend.headRef, at: remote, options: options)
        } catch {
            throw Self.map(error)
        }
    }

    /// Publishes a commit built on `parent` in the mirror: a non-force push, then, once the
    /// remote accepted it, the mirror's ref. False when the remote refused because the store
    /// moved: the mirror has fetched the new head, and the caller recomputes against it.
    /// `sender` is the handle that wrote the commit (see `GitBackend.commit`): its pack writer
    /// searches no deltas. A push's new objects are record blobs of different records and the
    /// trees above them, which hardly delta against each other (libgit2 sends no thin packs),
    /// so a delta window only costs time.
    ///
    /// `ref` is the remote ref to move (main, or a zone's ref in format 2); a nil `parent`
    /// creates it, and the remote must not have it yet. `waitingForLeases`: false for the one
    /// that placed the lease (an upgrade), which must not wait for itself.
    func publish(
        _ commit: GitOID, parent: GitOID?, to ref: String = GitBackend.headRef, in repository: GitRepository,
        sendingFrom sender: GitRepository? = nil, waitingForLeases: Bool = true
    ) throws(RecSyncError) -> Bool {
        if ref != GitBackend.headRef {
            return try publish([(commit, parent, ref)], in: repository, sendingFrom: sender, waitingForLeases: waitingForLeases).first ?? false
        }
        let wait = LeaseWait(waiting: waitingForLeases)
        var result: GitPushResult
        repeat {
            do {
                result = try (sender ?? repository).push(commit, to: ref, at: remote, options: options, holdOff: holdOff(wait))
            } catch {
                throw Self.map(error)
            }
            if case .heldOff = result { wait.pauseBeforeLookingAgain() }
        } while result.isHeldOff
        switch result {
        case .accepted:
            refusalsWithoutMovement = 0
            // The remote now holds `commit`. If the mirror's ref moved meanwhile (another
            // process sharing this mirror fetched), it already follows the remote: leave it.
            do {
                _ = try repository.updateReference(ref, to: commit, expected: parent, logMessage: "recsync: pushed")
            } catch {
                throw GitBackend.wrap(error, "recording the pushed head in the mirror")
            }
            return true
        case .serverDamaged(let reason, let broken):
            throw serverDamaged(reason, broken)
        case .rejected(let reason), .heldOff(let reason):
            try afterRefusal([(ref, parent)], reason: reason, in: repository)
            return false
        }
    }

    /// Publishes commits on several zone refs in one push (one connection, one pack), each ref
    /// by compare-and-swap over its `parent` (nil: the ref must not exist yet); whether each
    /// landed, in their order. As `publish` does for one: the mirror's ref moves once the
    /// remote took it, and when any was refused the mirror fetches, for the caller to decide
    /// those again.
    func publish(
        _ commits: [(commit: GitOID, parent: GitOID?, ref: String)], in repository: GitRepository, sendingFrom sender: GitRepository? = nil,
        waitingForLeases: Bool = true
    ) throws(RecSyncError) -> [Bool] {
        let updates = commits.map { GitRefUpdate($0.commit, to: $0.ref, expected: $0.parent) }
        let wait = LeaseWait(waiting: waitingForLeases)
        var results: [GitRefUpdateResult] = []
        while true {
            let outcome: GitMultiPushResult
            do { outcome = try (sender ?? repository).push(updates, at: remote, options: options, holdOff: holdOff(wait)) } catch {
                throw Self.map(error)
            }
            if case .pushed(let r) = outcome {
                results = r
                break
            }
            wait.pauseBeforeLookingAgain()
        }
        guard results.count == updates.count else { throw .internalError("\(results.count) answers for a push of \(updates.count) refs") }
        var refused: [(ref: String, parent: GitOID?)] = []
        var reason = ""
        for (c, result) in zip(commits, results) {
            switch result {
            case .accepted:
                do { _ = try repository.updateReference(c.ref, to: c.commit, expected: c.parent, logMessage: "recsync: pushed") } catch {
                    throw GitBackend.wrap(error, "recording the pushed \(c.ref) in the mirror")
                }
            case .serverDamaged(let why, let broken):
                throw serverDamaged(why, broken)
            case .moved(let advertised):
                refused.append((c.ref, c.parent))
                reason = "\(c.ref) on \(remote.redacted) is at \(advertised?.hex ?? "nothing"), the store moved"
            case .rejected(let why):
                refused.append((c.ref, c.parent))
                reason = why
            }
        }
        if refused.isEmpty {
            refusalsWithoutMovement = 0
        } else {
            try afterRefusal(refused, reason: reason, in: repository)
        }
        return results.map { $0 == .accepted }
    }

    /// After refused updates: fetches, and fails with what to check when pushes keep being
    /// refused although none of those refs had moved (a hook or a permission, not a race).
    private func afterRefusal(_ refused: [(ref: String, parent: GitOID?)], reason: String, in repository: GitRepository) throws(RecSyncError) {
        try fetch(into: repository)
        var moved = false
        for (ref, parent) in refused {
            let head: GitOID?
            do { head = try repository.referenceTarget(ref) } catch { throw GitBackend.wrap(error, "reading the mirror's \(ref)") }
            if head != parent { moved = true }
        }
        guard !moved else {
            refusalsWithoutMovement = 0
            return
        }
        refusalsWithoutMovement += 1
        if refusalsWithoutMovement >= Self.maxRefusalsWithoutMovement {
            refusalsWithoutMovement = 0
            throw .permissionFailure(
                """
                \(remote.redacted) refused the push (\(reason)) although nobody else had written; check that you\
                 may push to it (server-side hooks, branch protection, permissions)
                """
            )
        }
    }

    /// One publication's wait for compaction leases (`CompactionLease`): said once per lease,
    /// and `longestTotalHold` at most in all.
    private final class LeaseWait {
        let started = ContinuousClock.now
        /// False: leases are not waited for at all.
        let waiting: Bool
        var announced: Set<String> = []
        var pause = CompactionLease.firstPause

        init(waiting: Bool) { self.waiting = waiting }

        /// Backing off, with jitter: every poll is a connection (and an authentication).
        func pauseBeforeLookingAgain() {
            usleep(UInt32.random(in: pause * 750...pause * 1_250))
            pause = min(pause * 2, CompactionLease.longestPause)
        }
    }

    /// The check a push runs on the advertised refs: a reason to hold off while a compaction's
    /// lease is advertised, nil to push now.
    private func holdOff(_ wait: LeaseWait) -> (_ advertised: [String]) -> String? {
        { advertised in
            guard wait.waiting, ContinuousClock.now - wait.started < self.longestTotalHold, let lease = self.shouldHold(advertised) else {
                return nil
            }
            if wait.announced.insert(lease).inserted {
                let until = CompactionLease.deadline(of: lease).map { Timestamps.iso8601($0) } ?? "?"
                let held = Int((ContinuousClock.now - wait.started).components.seconds)
                self.notices?.post(
                    """
                    waiting for a compaction of \(self.remote.redacted) to finish: its lease\
                     \(NameRules.printable(String(lease.prefix(200)))) asks writers to hold until\
                     \(until)\(held > 0 ? " (waiting for \(held) s already)" : ""); this push waits at most\
                     \(self.longestTotalHold.components.seconds) s in all
                    """
                )
            }
            return "a compaction of the store asked writers to wait (\(lease))"
        }
    }

    /// The error for a push the remote refused while advertising references with no object:
    /// its repository is damaged, and only whoever runs it can repair it. The names come from
    /// the server: shown with control characters escaped, and no more than three.
    private func serverDamaged(_ reason: String, _ broken: [String]) -> RecSyncError {
        let names = broken.prefix(3).map { NameRules.printable(String($0.prefix(200))) }.joined(separator: ", ") + (broken.count > 3 ? ", …" : "")
        return .storeCorrupt(
            """
            \(remote.redacted) refused the push (\(reason)): its repository holds broken references, which\
             it advertises with no object (\(names)); git ignores them, but they fail the server's check of\
             every push. Whoever runs the server must remove them (in the server's repository: 'git\
             for-each-ref' warns of them; delete their files under refs/ or their lines in packed-refs)
            """
        )
    }

    /// The lease a push should wait for (one this handle has not yet held for `longestHold`),
    /// nil to push now.
    private func shouldHold(_ advertised: [String]) -> String? {
        guard let lease = CompactionLease.holding(advertised, now: CompactionLease.now()) else { return nil }
        let now = ContinuousClock.now
        if heldSince.count > 64 { heldSince = heldSince.filter { now - $0.value < .seconds(600) } }
        let since = heldSince[lease] ?? now
        heldSince[lease] = since
        guard now - since < CompactionLease.longestHold else { return nil }
        return lease
    }

    /// Replaces the remote's head with `commit` (a rewritten history) if it still is `expected`:
    /// a force push guarded by the expected old value (`GitRepository.forcePush`), then the
    /// mirror's ref. Nil when it landed, else the remote's reason for refusing: the caller
    /// fetches, and computes again if the store moved.
    func forcePublish(_ commit: GitOID, over expected: GitOID, in repository: GitRepository) throws(RecSyncError) -> String? {
        let result: GitPushResult
        do {
            result = try repository.forcePush(commit, to: GitBackend.headRef, expecting: expected, at: remote, options: options)
        } catch {
            throw Self.map(error)
        }
        switch result {
        case .accepted:
            do {
                _ = try repository.updateReference(GitBackend.headRef, to: commit, expected: expected, logMessage: "recsync: compacted")
            } catch {
                throw GitBackend.wrap(error, "recording the compacted head in the mirror")
            }
            return nil
        case .serverDamaged(let reason, let broken):
            throw serverDamaged(reason, broken)
        case .rejected(let reason), .heldOff(let reason):
            return reason
        }
    }

    /// Pushes a new compaction lease (`CompactionLease`), and notes the advertised leases
    /// that ended long ago or name a deadline past belief (`CompactionLease.stale`), for the
    /// caller to remove with its own.
    ///
    /// The lease names a parentless commit with an empty tree, always the same one, so that it
    /// keeps nothing alive on the server (naming the head would keep the history the
    /// compaction removes). The pushed result is `.rejected` when the server refused the
    /// reference (one that allows only some references).
    func placeLease(_ lease: CompactionLease, in repository: GitRepository) throws(RecSyncError) -> (result: GitPushResult, stale: [String]) {
        let target: GitOID
        do {
            let empty = try repository.updateTree(base: nil, updates: [])
            target = try repository.createCommit(tree: empty, parents: [], author: CompactionLease.signature, message: CompactionLease.message)
        } catch {
            throw GitBackend.wrap(error, "writing the compaction lease's commit in the mirror")
        }
        var stale: [String] = []
        do {
            let result = try repository.push(target, to: lease.name, at: remote, options: options) { advertised in
                stale = CompactionLease.stale(advertised, now: CompactionLease.now())
                return nil
            }
            return (result, stale)
        } catch {
            throw Self.map(error)
        }
    }

    /// Deletes references on the remote in one push; returns those it kept (a hook or a
    /// protection rule refused).
    func removeReferences(_ names: [String], in repository: GitRepository) throws(RecSyncError) -> [String] {
        do {
            return try repository.deleteRemoteReferences(names, at: remote, options: options)
        } catch {
            throw Self.map(error)
        }
    }

    static func map(_ error: GitNetworkError) -> RecSyncError {
        switch error.kind {
        case .unreachable: .networkUnavailable(error.message)
        case .interrupted: .networkFailure(error.message)
        case .authentication, .untrustedHost: .notAuthenticated(error.message)
        }
    }
}
