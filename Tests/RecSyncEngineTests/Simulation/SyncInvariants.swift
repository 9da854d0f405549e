import RecSyncModel

/// The invariants every client of the engine keeps, whatever it keeps its data in: the
/// workspace simulation (record files, through `pull` and `push`) and the engine simulation
/// (an app's records in memory, through `RecordSyncEngine`) check both with these, so that one
/// engine is held to one standard by both of its kinds of client. Each returns the broken
/// invariant as (name, detail), or nil.
enum SyncInvariants {
    typealias Fields = [String: FieldValue]

    /// Every value on the store is explained: `explained` holds, per record, the values the
    /// history allows there now (a write that was acknowledged, or one that landed without an
    /// acknowledgement since; nil for none). A value outside is an acknowledged write lost, or
    /// a write nobody made. Records in neither map are absent and allowed to be.
    static func storeExplained(_ store: [RecordID: Fields], by explained: [RecordID: Set<Fields?>]) -> (String, String)? {
        for id in Set(explained.keys).union(store.keys).sorted(by: { "\($0)" < "\($1)" }) {
            let value = store[id]
            let allowed = explained[id] ?? [nil]
            if !allowed.contains(value) {
                return ("acknowledged-write-kept", "\(describe(id)) on the store is \(describe(value)); explained: \(allowed.map(describe).sorted())")
            }
        }
        return nil
    }

    /// No zone the store deleted or purged (or reset, where only its owner may upload it
    /// again) is live again without an explicit create.
    static func noZoneResurrected(live: Set<ZoneID>, removed: [ZoneID: String]) -> (String, String)? {
        for (zone, how) in removed.sorted(by: { "\($0.key)" < "\($1.key)" }) where live.contains(zone) {
            return ("zone-resurrected", "zone \(zone) was \(how) and is live again without an explicit create")
        }
        return nil
    }

    /// A client holds what the store holds, record for record, once nothing fails and every
    /// client has sent and fetched until nothing changes. `name` names the client; the keys
    /// are what the client holds records by (a file's path, a record ID).
    static func converged<Key: Hashable>(_ name: String, holds held: [Key: Fields], store: [Key: Fields]) -> (String, String)? {
        guard held != store else { return nil }
        let differing = Set(held.keys).union(store.keys).filter { held[$0] != store[$0] }.map { "\($0)" }.sorted()
        let keyed = Dictionary(Set(held.keys).union(store.keys).map { ("\($0)", $0) }, uniquingKeysWith: { a, _ in a })
        return (
            "converges",
            """
            \(name) differs from the store at\
             \(differing.compactMap { keyed[$0] }.map { "\($0): \(describe(held[$0])) vs store \(describe(store[$0]))" })
            """
        )
    }

    static func describe(_ id: RecordID) -> String { "\(id.zoneID)/\(id.recordName)" }

    static func describe(_ fields: Fields?) -> String {
        guard let fields else { return "absent" }
        return "{"
            + fields.keys.sorted().map { "\($0): \(fields[$0].map { v in if case .string(let s) = v { s } else { "\(v)" } } ?? "")" }.joined(
                separator: ", ") + "}"
    }
}
