import Foundation
import RecSyncGit

/// A network compaction's lease: a reference `refs/recsync/compacting/<deadline>-<id>` on the
/// remote, whose deadline is milliseconds since the epoch by the compacting machine's clock.
/// While one is advertised and its deadline is ahead, recsync writers hold their pushes
/// (`RemoteMirror.publish` polls until it is gone), so that the compaction's force push is not
/// refused again and again by a steady stream of writes. Writers see it in the ref
/// advertisement every push already reads: holding costs nothing when no compaction runs.
///
/// A lease is advice, never a lock: it ends at its deadline whether or not it is removed
/// (a killed compaction leaves one behind, and the next compaction removes it); a deadline
/// further ahead than `furthestAhead` is not believed (a skewed clock, or a hostile server);
/// a writer holds one push for at most `longestHold`; and the compaction's compare-and-swap
/// stays what keeps writes from being lost, with or without the lease (older recsync
/// versions and plain git do not hold).
struct CompactionLease: Sendable, Hashable {
    static let prefix = "refs/recsync/compacting/"
    /// How long a lease holds writers, in milliseconds.
    static let duration: Int64 = 20_000
    static let furthestAhead: Int64 = 60_000
    static let longestHold: Duration = .seconds(30)
    /// How long a writer waits before looking again.
    static let pollInterval: ClosedRange<UInt32> = 40_000...80_000

    let name: String
    let deadline: Int64

    init(now: Int64) {
        deadline = now + Self.duration
        name = "\(Self.prefix)\(deadline)-\(UUID().uuidString.prefix(8).lowercased())"
    }

    /// The deadline a lease reference names; nil for any other reference.
    static func deadline(of reference: String) -> Int64? {
        guard reference.hasPrefix(prefix) else { return nil }
        let rest = reference.dropFirst(prefix.count)
        let digits = rest.prefix { $0.isASCII && $0.isNumber }
        guard !digits.isEmpty, digits.count <= 15 else { return nil }
        return Int64(digits)
    }

    /// Why a writer should hold its push, nil to push now: an advertised lease whose deadline
    /// is ahead of `now` and not absurdly far.
    static func holding(_ advertised: [String], now: Int64) -> String? {
        for reference in advertised {
            guard let deadline = deadline(of: reference), deadline > now, deadline - now <= furthestAhead else { continue }
            return "a compaction of the store asked writers to wait (\(reference))"
        }
        return nil
    }

    /// Leases whose deadline passed over a minute ago: left by compactions that were killed.
    static func expired(_ advertised: [String], now: Int64) -> [String] {
        advertised.filter { reference in deadline(of: reference).map { $0 < now - 60_000 } ?? false }
    }

    /// The wall clock, in milliseconds since the epoch (not the store actor's clock, which
    /// tests fix: a lease is about real time).
    static func now() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }
}
