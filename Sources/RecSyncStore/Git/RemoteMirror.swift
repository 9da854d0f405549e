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
    /// creates it, and the remote must not have it yet.
    func publish(
        _ commit: GitOID, parent: GitOID?, to ref: String = GitBackend.headRef, in repository: GitRepository,
        sendingFrom sender: GitRepository? = nil
    ) throws(RecSyncError) -> Bool {
        var result: GitPushResult
        // While a compaction's lease is advertised, wait and look again (`CompactionLease`),
        // saying so once per lease, and for `longestTotalHold` at most in all.
        var pause = CompactionLease.firstPause
        let started = ContinuousClock.now
        var announced: Set<String> = []
        repeat {
            let holdOff: (_ advertised: [String]) -> String? = { advertised in
                guard ContinuousClock.now - started < self.longestTotalHold, let lease = self.shouldHold(advertised) else { return nil }
                if announced.insert(lease).inserted {
                    let until = CompactionLease.deadline(of: lease).map { Timestamps.iso8601($0) } ?? "?"
                    let held = Int((ContinuousClock.now - started).components.seconds)
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
            do {
                result = try push(commit, parent: parent, to: ref, from: sender ?? repository, holdOff: holdOff)
            } catch {
                throw Self.map(error)
            }
            if case .heldOff = result {
                // Backing off, with jitter: every poll is a connection (and an authentication).
                usleep(UInt32.random(in: pause * 750...pause * 1_250))
                pause = min(pause * 2, CompactionLease.longestPause)
            }
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
            try fetch(into: repository)
            let head: GitOID?
            do { head = try repository.referenceTarget(ref) } catch { throw GitBackend.wrap(error, "reading the mirror's \(ref)") }
            if head == parent {
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
            } else {
                refusalsWithoutMovement = 0
            }
            return false
        }
    }

    /// One push of `commit` to `ref`: main moves by git's own fast-forward check (no force),
    /// a zone's ref by the update's expected value (`GitRefUpdate`: nil, the ref must not
    /// exist yet), answered in the single push's terms.
    private func push(
        _ commit: GitOID, parent: GitOID?, to ref: String, from sender: GitRepository, holdOff: @escaping (_ advertised: [String]) -> String?
    ) throws(GitNetworkError) -> GitPushResult {
        if ref == GitBackend.headRef { return try sender.push(commit, to: ref, at: remote, options: options, holdOff: holdOff) }
        switch try sender.push([GitRefUpdate(commit, to: ref, expected: parent)], at: remote, options: options, holdOff: holdOff) {
        case .heldOff(let reason): return .heldOff(reason)
        case .pushed(let results):
            switch results.first {
            case .accepted?: return .accepted
            case .moved(let advertised)?: return .rejected("\(ref) on \(remote.redacted) is at \(advertised?.hex ?? "nothing"), the store moved")
            case .rejected(let reason)?: return .rejected(reason)
            case .serverDamaged(let reason, let broken)?: return .serverDamaged(reason, brokenReferences: broken)
            case nil: return .rejected("\(remote.redacted) answered nothing for \(ref)")
            }
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

    /// Pushes several references in one connection, each over its expected value
    /// (`GitRefUpdate`), and moves the mirror's copy of each one the remote took; the result
    /// of each update, in their order. A refused or moved one is for the caller to look at
    /// again after a fetch.
    func publish(_ updates: [GitRefUpdate], in repository: GitRepository) throws(RecSyncError) -> [GitRefUpdateResult] {
        let outcome: GitMultiPushResult
        do { outcome = try repository.push(updates, at: remote, options: options) } catch { throw Self.map(error) }
        guard case .pushed(let results) = outcome else { throw .internalError("a push with no hold-off check was held off (\(outcome))") }
        for (update, result) in zip(updates, results) {
            if case .serverDamaged(let reason, let broken) = result { throw serverDamaged(reason, broken) }
            guard result == .accepted else { continue }
            do {
                _ = try repository.updateReference(update.remoteRef, to: update.commit, expected: update.expected, logMessage: "recsync: pushed")
            } catch {
                throw GitBackend.wrap(error, "recording the pushed \(update.remoteRef) in the mirror")
            }
        }
        return results
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
