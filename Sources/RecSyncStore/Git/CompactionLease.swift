import Foundation
import RecSyncGit

/// A network compaction's lease: a reference `refs/recsync/compacting/<deadline>-<id>` on the
/// remote, whose deadline is milliseconds since the epoch by the compacting machine's clock.
/// While one is advertised and its deadline is ahead, recsync writers hold their pushes
/// (`RemoteMirror.publish` looks again, backing off, until it is gone), so that the
/// compaction's force push is not refused again and again by a steady stream of writes.
/// Writers see it in the ref advertisement every push already reads: holding costs nothing
/// when no compaction runs.
///
/// A lease is advice, never a lock: it ends at its deadline whether or not it is removed (a
/// killed compaction leaves one behind, and the next compaction removes it); a deadline
/// further ahead than `furthestAhead` is not believed (a skewed clock, or a hostile server);
/// a writer holds for one lease at most `longestHold`; and the compaction's compare-and-swap
/// stays what keeps writes from being lost, with or without the lease (older recsync
/// versions and plain git do not hold).
struct CompactionLease: Sendable, Hashable {
    static let prefix = "refs/recsync/compacting/"
    /// How long a lease holds writers, in milliseconds; a compaction that runs longer places a
    /// new one when less than `renewBefore` is left.
    static let duration: Int64 = 20_000
    static let renewBefore: Int64 = 8_000
    static let furthestAhead: Int64 = 60_000
    static let longestHold: Duration = .seconds(30)
    /// A held writer's pauses between looks, in milliseconds (doubling, with jitter).
    static let firstPause: UInt32 = 50
    static let longestPause: UInt32 = 1_000
    /// The commit every lease names: no parent, an empty tree, fixed identity and time.
    static let signature = GitSignature(name: "recsync", email: "recsync@localhost", time: 0)
    static let message = "recsync compaction lease\n\nWriters hold their pushes while this reference is advertised and its deadline is ahead.\n"

    let name: String
    let deadline: Int64

    init(now: Int64) {
        deadline = now + Self.duration
        name = "\(Self.prefix)\(deadline)-\(UUID().uuidString.prefix(8).lowercased())"
    }

    /// The deadline a lease reference names; nil for any other reference.
    static func deadline(of reference: String) -> Int64? {
        guard reference.hasPrefix(prefix) else { return nil }
        let digits = reference.dropFirst(prefix.count).prefix { $0.isASCII && $0.isNumber }
        guard !digits.isEmpty, digits.count <= 15 else { return nil }
        return Int64(digits)
    }

    /// The advertised lease a writer should hold for, nil to push now: one whose deadline is
    /// ahead of `now` and not past belief.
    static func holding(_ advertised: [String], now: Int64) -> String? {
        advertised.first { reference in
            guard let deadline = deadline(of: reference) else { return false }
            return deadline > now && deadline - now <= furthestAhead
        }
    }

    /// Leases nobody holds for: ended over a minute ago (left by a compaction that was
    /// killed), or with a deadline past belief.
    static func stale(_ advertised: [String], now: Int64) -> [String] {
        advertised.filter { reference in
            guard let deadline = deadline(of: reference) else { return false }
            return deadline < now - 60_000 || deadline - now > furthestAhead
        }
    }

    /// The wall clock, in milliseconds since the epoch (not the store actor's clock, which
    /// tests fix: a lease is about real time).
    static func now() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }
}

/// The leases one compaction places on a network store, renewed while it runs and removed at
/// the end. Leases are advice: placing one that fails (the server refuses the reference, or
/// the connection fails) leaves the compaction to run without, and says so in its report.
final class CompactionLeaseHolder {
    private let link: RemoteMirror
    private let repository: GitRepository
    private var current: CompactionLease?
    /// Every lease placed, and the stale ones seen, to remove at the end.
    private var toRemove: [String] = []
    private var refused = false
    private var released = false

    init(link: RemoteMirror, repository: GitRepository) {
        self.link = link
        self.repository = repository
    }

    /// True once a lease was placed.
    var placed: Bool { current != nil }

    /// Makes sure a lease with at least `renewBefore` left is advertised, unless the server
    /// refused one already.
    func ensure() {
        guard !refused else { return }
        let now = CompactionLease.now()
        if let current, current.deadline - now > CompactionLease.renewBefore { return }
        let lease = CompactionLease(now: now)
        do {
            let (result, stale) = try link.placeLease(lease, in: repository)
            toRemove += stale.filter { !toRemove.contains($0) }
            guard result == .accepted else { refused = true; return }
            current = lease
            toRemove.append(lease.name)
        } catch {
            // A network failure here fails the compaction's own fetch or push next, with the
            // error the user acts on; without a lease the compaction is only less favoured.
            refused = true
        }
    }

    /// Removes the leases placed (and the stale ones seen), in one push: the names still on
    /// the server (it refused, or the connection failed: either way they end at their
    /// deadline, and the compaction they served is done, so that is reported, not thrown).
    @discardableResult
    func release() -> [String] {
        guard !released else { return [] }
        released = true
        guard !toRemove.isEmpty else { return [] }
        do {
            return try link.removeReferences(toRemove, in: repository)
        } catch {
            return toRemove
        }
    }
}
