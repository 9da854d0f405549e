import RecSyncModel
import RecSyncStore

/// One write attempt by a stress writer, as logged for later verification.
public struct WriteAttempt: Sendable, Hashable, Codable {
    public enum Outcome: String, Sendable, Codable { case saved, conflict, unknownItem, failed }
    public var writer: String
    public var recordName: String
    /// The change tag the write was based on (nil: a create).
    public var base: String?
    public var outcome: Outcome
    /// The new change tag when saved.
    public var tag: String?
    /// What went wrong, for `failed`.
    public var error: String?
}

/// Writes to a store the way several devices would: read a record, change it, save it with
/// the change tag it read. Shared records overlap between writers; own records do not.
public enum StressWriter {
    /// `thinkMilliseconds`: how long a device waits between reading and writing (0: it only
    /// yields), so writers on other threads overlap reliably.
    public static func run(
        store: any RemoteStore, zone: ZoneID, writer: String, iterations: Int, sharedRecords: Int, seed: UInt64, thinkMilliseconds: Int = 0
    ) async -> [WriteAttempt] {
        var random = SeededRandom(seed: seed)
        var log: [WriteAttempt] = []
        for i in 0..<iterations {
            let shared = sharedRecords > 0 && Bool.random(using: &random)
            let name = shared ? "shared-\(Int.random(in: 0..<sharedRecords, using: &random))" : "\(writer)-\(i % 5)"
            log.append(await attempt(store: store, zone: zone, writer: writer, name: name, thinkMilliseconds: thinkMilliseconds))
        }
        return log
    }

    static func attempt(store: any RemoteStore, zone: ZoneID, writer: String, name: String, thinkMilliseconds: Int) async -> WriteAttempt {
        var entry = WriteAttempt(writer: writer, recordName: name, base: nil, outcome: .failed, tag: nil, error: nil)
        do {
            let id = try RecordID(recordName: name, zoneID: zone)
            var record: Record
            switch try await store.fetchRecords([id])[0].result {
            case .success(let current):
                record = current
                entry.base = current.changeTag
                let count: Int64 = if case .int64(let c)? = current.fields["count"] { c } else { 0 }
                record.fields["count"] = .int64(count + 1)
            case .failure(let error) where error.kind == .unknownItem:
                record = try Record(recordID: id, recordType: "Counter", fields: ["count": .int64(1)])
            case .failure(let e):
                throw e
            }
            record.fields["lastWriter"] = .string(writer)
            // A device thinks between reading and writing: let other writers run meanwhile.
            await Task.yield()
            await Task.yield()
            if thinkMilliseconds > 0 { try? await Task.sleep(nanoseconds: UInt64(thinkMilliseconds) * 1_000_000) }
            let result = try await store.modifyRecords(saving: [record], deleting: [], savePolicy: .ifServerRecordUnchanged, atomically: true)
            switch result.saveResults[0].result {
            case .success(let saved):
                entry.outcome = .saved
                entry.tag = saved.changeTag
            case .failure(let error) where error.kind == .serverRecordChanged:
                entry.outcome = .conflict
            case .failure(let error) where error.kind == .unknownItem:
                entry.outcome = .unknownItem
            case .failure(let e):
                entry.outcome = .failed
                entry.error = e.message
            }
        } catch {
            entry.outcome = .failed
            entry.error = "\(error)"
        }
        return entry
    }

    /// Checks that no accepted write was lost: per record, accepted writes form one chain from
    /// "did not exist" through distinct bases to the store's current tag.
    /// Returns a list of problems (empty when the log is consistent with `finalTags`).
    public static func verify(_ log: [WriteAttempt], finalTags: [String: String]) -> [String] {
        var problems: [String] = []
        let accepted = Dictionary(grouping: log.filter { $0.outcome == .saved }, by: \.recordName)
        for (name, writes) in accepted {
            var byBase: [String: WriteAttempt] = [:]
            for w in writes {
                let key = w.base ?? "<new>"
                if let other = byBase[key] {
                    problems.append("\(name): two accepted writes (\(other.writer), \(w.writer)) were both based on \(key): one was lost")
                }
                byBase[key] = w
            }
            var current = "<new>"
            var steps = 0
            while let next = byBase[current], let tag = next.tag {
                current = tag
                steps += 1
                if steps > writes.count { break }
            }
            if steps != writes.count { problems.append("\(name): only \(steps) of \(writes.count) accepted writes form a chain") }
            if finalTags[name] != current {
                problems.append("\(name): the store holds \(finalTags[name] ?? "nothing"), the last accepted write was \(current)")
            }
        }
        for name in finalTags.keys where accepted[name] == nil {
            problems.append("\(name) exists in the store but no writer saved it")
        }
        return problems
    }
}
