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

    /// The user sets one field of a record file (creating it, and its zone directory, if needed;
    /// in a zone shared with the user, only where a pull brought the zone in).
    case edit(ws: Int, zone: Int, record: Int, field: String, value: String)
    /// The user removes a record file.
    case remove(ws: Int, zone: Int, record: Int)
    /// `recsync push`, killed before its write is sent or after the store committed it.
    case push(ws: Int, crash: FaultInjectingStore.Fault?)
    /// `recsync pull`, killed at its `crashAt`-th checkpoint (nil: runs to the end).
    case pull(ws: Int, crashAt: Int?)
    /// `recsync resolve --ours/--theirs/--merge`.
    case resolve(ws: Int, strategy: ResolveStrategy)
    /// A zone created, deleted, purged or reset on the store, by its owner (for a zone of the
    /// other owner, `reset` is that owner's key reset).
    case zone(ZoneAction, zone: Int)
    /// The store's history is rewritten: every token held anywhere expires.
    case rewriteHistory
    /// The other owner sets one field of a record of one of their zones, on the store.
    case ownerEdit(zone: Int, record: Int, field: String, value: String)
    /// The other owner shares one of their zones with the workspaces' user (or changes the
    /// permission).
    case share(zone: Int, permission: SharePermission)
    /// The other owner stops sharing one of their zones with the workspaces' user.
    case unshare(zone: Int)

    var description: String {
        switch self {
        case .edit(let ws, let z, let r, let f, let v): ".edit(ws: \(ws), zone: \(z), record: \(r), field: \"\(f)\", value: \"\(v)\")"
        case .remove(let ws, let z, let r): ".remove(ws: \(ws), zone: \(z), record: \(r))"
        case .push(let ws, let crash): ".push(ws: \(ws), crash: \(crash.map { ".\($0.rawValue)" } ?? "nil"))"
        case .pull(let ws, let at): ".pull(ws: \(ws), crashAt: \(at.map(String.init) ?? "nil"))"
        case .resolve(let ws, let s): ".resolve(ws: \(ws), strategy: .\(s.rawValue))"
        case .zone(let a, let z): ".zone(.\(a.rawValue), zone: \(z))"
        case .rewriteHistory: ".rewriteHistory"
        case .ownerEdit(let z, let r, let f, let v): ".ownerEdit(zone: \(z), record: \(r), field: \"\(f)\", value: \"\(v)\")"
        case .share(let z, let p): ".share(zone: \(z), permission: .\(p.rawValue))"
        case .unshare(let z): ".unshare(zone: \(z))"
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
        case .zone(.create, let z): SimHistory.isShared(z) ? .sharedZoneCreate : .zoneCreate
        case .zone(.delete, let z): SimHistory.isShared(z) ? .sharedZoneDelete : .zoneDelete
        case .zone(.purge, let z): SimHistory.isShared(z) ? .sharedZonePurge : .zonePurge
        case .zone(.reset, let z): SimHistory.isShared(z) ? .sharedZoneReset : .zoneReset
        case .rewriteHistory: .rewriteHistory
        case .ownerEdit: .ownerEdit
        case .share: .share
        case .unshare: .unshare
        }
    }
}

/// Every kind of step the simulation can take.
enum SimOperation: String, Hashable, Sendable, CaseIterable {
    case edit, remove, push, pushKilledBeforeWrite, pushKilledAfterCommit, pull, pullKilledAtCheckpoint
    case resolve, zoneCreate, zoneDelete, zonePurge, zoneReset, rewriteHistory
    /// The other owner's steps: their zones, records and shares.
    case sharedZoneCreate, sharedZoneDelete, sharedZonePurge, sharedZoneReset, ownerEdit, share, unshare
}

/// A history: how many workspaces, and what happens, in order.
struct SimHistory: Sendable, CustomStringConvertible {
    var seed: UInt64
    var workspaces: Int
    var steps: [SimStep]

    /// Names of the universe a history plays in: a few zones and records, so that devices collide.
    /// Zones `0..<zones` are the workspaces' user's own; the `sharedZones` after them belong to
    /// `owner`, who has no workspace and acts on the store, sharing them with `user`.
    static let zones = 3
    static let sharedZones = 2
    static let records = 4
    static let fields = ["a", "b"]
    static let user = "alice"
    static let owner = "bob"

    static var allZones: Range<Int> { 0..<(zones + sharedZones) }

    /// Whether zone `n` is one of `owner`'s (shared with the workspaces, or not).
    static func isShared(_ n: Int) -> Bool { n >= zones }

    /// The steps every history starts with: `owner` makes a zone with a record and shares it
    /// read-write, and another shared read-only (steps, so shrinking can drop them).
    static var sharingPrologue: [SimStep] {
        [zones, zones + 1].flatMap { z -> [SimStep] in
            [
                .zone(.create, zone: z), .ownerEdit(zone: z, record: 0, field: "a", value: "o\(z)"),
                .share(zone: z, permission: z == zones ? .readWrite : .readOnly),
            ]
        }
    }

    var description: String {
        "seed \(seed), \(workspaces) workspaces, \(steps.count) steps:\n" + steps.map { "    \($0)," }.joined(separator: "\n")
    }

    /// A random history drawn from `seed`, without the operations in `excluded`.
    static func generate(seed: UInt64, excluded: Set<SimOperation>, length: ClosedRange<Int> = 20...40) -> SimHistory {
        var rng = SeededRandom(seed: seed)
        let workspaces = 3 + rng.below(3)
        let count = length.lowerBound + rng.below(length.count)
        var steps = sharingPrologue.filter { !excluded.contains($0.kind) }
        var values = 0
        while steps.count < count {
            let ws = rng.below(workspaces)
            // Mostly the user's own zones; a third of the time (half for zone operations) the owner's.
            let ownZone = rng.below(zones)
            let sharedZone = zones + rng.below(sharedZones)
            let record = rng.below(records)
            let roll = rng.below(100)
            let step: SimStep
            switch roll {
            case 0..<30:
                values += 1
                step = .edit(ws: ws, zone: rng.chance(33) ? sharedZone : ownZone, record: record, field: rng.pick(fields), value: "w\(ws)v\(values)")
            case 30..<35:
                step = .remove(ws: ws, zone: rng.chance(33) ? sharedZone : ownZone, record: record)
            case 35..<53:
                let crash: FaultInjectingStore.Fault? = rng.chance(15) ? rng.pick(FaultInjectingStore.Fault.allCases) : nil
                step = .push(ws: ws, crash: crash)
            case 53..<73:
                step = .pull(ws: ws, crashAt: rng.chance(15) ? 1 + rng.below(4) : nil)
            case 73..<80:
                step = .resolve(ws: ws, strategy: rng.pick(ResolveStrategy.allCases))
            case 80..<89:
                step = .zone(rng.pick(SimStep.ZoneAction.allCases), zone: rng.chance(50) ? sharedZone : ownZone)
            case 89..<93:
                values += 1
                step = .ownerEdit(zone: sharedZone, record: record, field: rng.pick(fields), value: "ov\(values)")
            case 93..<96:
                step = .share(zone: sharedZone, permission: rng.chance(50) ? .readWrite : .readOnly)
            case 96..<98:
                step = .unshare(zone: sharedZone)
            default:
                step = .rewriteHistory
            }
            if !excluded.contains(step.kind) { steps.append(step) }
        }
        return SimHistory(seed: seed, workspaces: workspaces, steps: steps)
    }
}
