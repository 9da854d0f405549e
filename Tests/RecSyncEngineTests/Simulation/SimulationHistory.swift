// The randomized sync simulation: what a history is made of, and how one is generated.
//
// Generation and shrinking are our own: a seeded SplitMix64 (`SeededRandom`) draws a
// history, and a failing history is shrunk by deleting steps while it still fails (see
// `SimulationShrinker`). swift-property-based was not used: a history is a plain step list,
// replayed against real files and a real store, and deleting steps is the shrink that matters.
import RecSyncEngine
import RecSyncModel
import RecSyncStore
import RecSyncTestSupport

/// One thing a user, a device or the store does in a simulated history.
///
/// Steps hold only data (indexes and values), never state, so that any subsequence of a
/// history is again a history: a step that no longer applies (an edit in a zone removed
/// meanwhile, a delete of a missing file) does nothing.
enum SimStep: Hashable, Sendable, CustomStringConvertible {
    /// Zone operations made on the store by another device (`recsync zone ...`).
    enum ZoneAction: String, Hashable, Sendable, CaseIterable {
        case create, delete, purge, reset
    }

    /// The user sets one field of a record file (creating it, and its zone directory, if needed).
    case edit(ws: Int, zone: Int, record: Int, field: String, value: String)
    /// The user removes a record file.
    case remove(ws: Int, zone: Int, record: Int)
    /// `recsync push`, killed before its write is sent or after the store committed it.
    case push(ws: Int, crash: FaultInjectingStore.Fault?)
    /// `recsync pull`, killed at its `crashAt`-th checkpoint (nil: runs to the end).
    case pull(ws: Int, crashAt: Int?)
    /// `recsync resolve --ours/--theirs/--merge`.
    case resolve(ws: Int, strategy: ResolveStrategy)
    /// A zone created, deleted, purged or reset on the store.
    case zone(ZoneAction, zone: Int)
    /// The store's history is rewritten: every token held anywhere expires.
    case rewriteHistory

    var description: String {
        switch self {
        case .edit(let ws, let z, let r, let f, let v): ".edit(ws: \(ws), zone: \(z), record: \(r), field: \"\(f)\", value: \"\(v)\")"
        case .remove(let ws, let z, let r): ".remove(ws: \(ws), zone: \(z), record: \(r))"
        case .push(let ws, let crash): ".push(ws: \(ws), crash: \(crash.map { ".\($0.rawValue)" } ?? "nil"))"
        case .pull(let ws, let at): ".pull(ws: \(ws), crashAt: \(at.map(String.init) ?? "nil"))"
        case .resolve(let ws, let s): ".resolve(ws: \(ws), strategy: .\(s.rawValue))"
        case .zone(let a, let z): ".zone(.\(a.rawValue), zone: \(z))"
        case .rewriteHistory: ".rewriteHistory"
        }
    }

    /// The kind of operation, for switching kinds off (`SimulationOptions.excluded`).
    var kind: SimOperation {
        switch self {
        case .edit: .edit
        case .remove: .remove
        case .push(_, nil): .push
        case .push(_, .beforeWrite?): .pushKilledBeforeWrite
        case .push(_, .afterWrite?): .pushKilledAfterCommit
        case .pull(_, nil): .pull
        case .pull: .pullKilledAtCheckpoint
        case .resolve: .resolve
        case .zone(.create, _): .zoneCreate
        case .zone(.delete, _): .zoneDelete
        case .zone(.purge, _): .zonePurge
        case .zone(.reset, _): .zoneReset
        case .rewriteHistory: .rewriteHistory
        }
    }
}

/// Every kind of step the simulation can take.
enum SimOperation: String, Hashable, Sendable, CaseIterable {
    case edit, remove, push, pushKilledBeforeWrite, pushKilledAfterCommit, pull, pullKilledAtCheckpoint
    case resolve, zoneCreate, zoneDelete, zonePurge, zoneReset, rewriteHistory
}

/// A history: how many workspaces, and what happens, in order.
struct SimHistory: Sendable, CustomStringConvertible {
    var seed: UInt64
    var workspaces: Int
    var steps: [SimStep]

    /// Names of the universe a history plays in: a few zones and records, so that devices collide.
    static let zones = 3
    static let records = 4
    static let fields = ["a", "b"]

    var description: String {
        "seed \(seed), \(workspaces) workspaces, \(steps.count) steps:\n" + steps.map { "    \($0)," }.joined(separator: "\n")
    }

    /// A random history drawn from `seed`, without the operations in `excluded`.
    static func generate(seed: UInt64, excluded: Set<SimOperation>, length: ClosedRange<Int> = 20...40) -> SimHistory {
        var rng = SeededRandom(seed: seed)
        let workspaces = 3 + rng.below(3)
        let count = length.lowerBound + rng.below(length.count)
        var steps: [SimStep] = []
        var values = 0
        while steps.count < count {
            let ws = rng.below(workspaces)
            let zone = rng.below(zones)
            let record = rng.below(records)
            let roll = rng.below(100)
            let step: SimStep
            switch roll {
            case 0..<34:
                values += 1
                step = .edit(ws: ws, zone: zone, record: record, field: rng.pick(fields), value: "w\(ws)v\(values)")
            case 34..<40:
                step = .remove(ws: ws, zone: zone, record: record)
            case 40..<59:
                let crash: FaultInjectingStore.Fault? = rng.chance(15) ? rng.pick(FaultInjectingStore.Fault.allCases) : nil
                step = .push(ws: ws, crash: crash)
            case 59..<80:
                step = .pull(ws: ws, crashAt: rng.chance(15) ? 1 + rng.below(4) : nil)
            case 80..<88:
                step = .resolve(ws: ws, strategy: rng.pick(ResolveStrategy.allCases))
            case 88..<97:
                step = .zone(rng.pick(SimStep.ZoneAction.allCases), zone: zone)
            default:
                step = .rewriteHistory
            }
            if !excluded.contains(step.kind) { steps.append(step) }
        }
        return SimHistory(seed: seed, workspaces: workspaces, steps: steps)
    }
}
