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
    /// Refused pushes in a row after which the store had not moved: a hook or a permission,
    /// not a race, so retrying cannot help.
    static let maxRefusalsWithoutMovement = 3

    let remote: GitRemoteURL
    let options: GitNetworkOptions
    private var refusalsWithoutMovement = 0

    init(remote: GitRemoteURL, options: GitNetworkOptions) {
        self.remote = remote
        self.options = options
    }

    /// Brings the mirror's `refs/heads/main` up to the remote's (following rewritten history).
    func fetch(into repository: GitRepository) throws(RecSyncError) {
        do {
            try repository.fetch([Self.fetchRefspec], from: remote, options: options)
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
    func publish(_ commit: GitOID, parent: GitOID, in repository: GitRepository, sendingFrom sender: GitRepository? = nil) throws(RecSyncError) -> Bool {
        var result: GitPushResult
        // While a compaction's lease is advertised, wait and look again (`CompactionLease`).
        let started = ContinuousClock.now
        repeat {
            do {
                result = try (sender ?? repository).push(commit, to: GitBackend.headRef, at: remote, options: options) { advertised in
                    ContinuousClock.now - started < CompactionLease.longestHold ? CompactionLease.holding(advertised, now: CompactionLease.now()) : nil
                }
            } catch {
                throw Self.map(error)
            }
            if case .heldOff = result { usleep(UInt32.random(in: CompactionLease.pollInterval)) }
        } while result.isHeldOff
        switch result {
        case .accepted:
            refusalsWithoutMovement = 0
            // The remote now holds `commit`. If the mirror's ref moved meanwhile (another
            // process sharing this mirror fetched), it already follows the remote: leave it.
            do {
                _ = try repository.updateReference(GitBackend.headRef, to: commit, expected: parent, logMessage: "recsync: pushed")
            } catch {
                throw GitBackend.wrap(error, "recording the pushed head in the mirror")
            }
            return true
        case .heldOff:
            return false
        case .rejected(let reason):
            try fetch(into: repository)
            let head: GitOID?
            do { head = try repository.referenceTarget(GitBackend.headRef) } catch { throw GitBackend.wrap(error, "reading the mirror's head") }
            if head == parent {
                refusalsWithoutMovement += 1
                if refusalsWithoutMovement >= Self.maxRefusalsWithoutMovement {
                    refusalsWithoutMovement = 0
                    throw .permissionFailure("\(remote.redacted) refused the push (\(reason)) although nobody else had written; check that you may push to it (server-side hooks, branch protection, permissions)")
                }
            } else {
                refusalsWithoutMovement = 0
            }
            return false
        }
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
        case .rejected(let reason), .heldOff(let reason):
            return reason
        }
    }

    /// Asks writers to hold their pushes while a compaction runs: pushes a new lease reference
    /// naming the mirror's head (which the remote has), and removes leases long expired. Nil
    /// when the mirror has no head or the remote refused the reference (a server that allows
    /// only some references): the compaction then runs without one.
    func placeLease(in repository: GitRepository) throws(RecSyncError) -> CompactionLease? {
        let head: GitOID?
        do { head = try repository.referenceTarget(GitBackend.headRef) } catch { throw GitBackend.wrap(error, "reading the mirror's head") }
        guard let head else { return nil }
        let lease = CompactionLease(now: CompactionLease.now())
        var expired: [String] = []
        let result: GitPushResult
        do {
            result = try repository.push(head, to: lease.name, at: remote, options: options) { advertised in
                expired = CompactionLease.expired(advertised, now: CompactionLease.now())
                return nil
            }
        } catch {
            throw Self.map(error)
        }
        for reference in expired { removeReference(reference, in: repository) }
        return result == .accepted ? lease : nil
    }

    /// Removes a compaction's lease. A lease that cannot be removed (the network failed just
    /// then) ends at its deadline by itself, and the next compaction removes it: nothing to
    /// report that the user could act on.
    func removeLease(_ lease: CompactionLease, in repository: GitRepository) {
        removeReference(lease.name, in: repository)
    }

    private func removeReference(_ name: String, in repository: GitRepository) {
        do { _ = try repository.deleteRemoteReference(name, at: remote, options: options) } catch {}
    }

    static func map(_ error: GitNetworkError) -> RecSyncError {
        switch error.kind {
        case .unreachable: .networkUnavailable(error.message)
        case .interrupted: .networkFailure(error.message)
        case .authentication, .untrustedHost: .notAuthenticated(error.message)
        }
    }
}
