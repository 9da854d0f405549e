// Store-level measurements: write N records into a new git store, then fetch K changes.
//
// usage: recsync-bench [--records N] [--changes K] [--zones Z] [--runs R]
//        recsync-bench --make-store PATH [--records N] [--zones Z] [--commits C] [--format F]
// Prints one line per figure. Run a release build: swift run -c release recsync-bench
import Foundation
import RecSyncEngine
import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import RecSyncWorkspace

func argument(_ name: String, _ fallback: Int) -> Int {
    let args = CommandLine.arguments
    guard let i = args.firstIndex(of: name), i + 1 < args.count, let v = Int(args[i + 1]) else { return fallback }
    return v
}

func seconds(_ body: () async throws -> Void) async rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try await body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

func peakRSSMiB() -> Double {
    var usage = rusage()
    getrusage(Int32(RUSAGE_SELF.rawValue), &usage)
    return Double(usage.ru_maxrss) / 1024
}

func median(_ xs: [Double]) -> Double { xs.sorted()[xs.count / 2] }
func ms(_ s: Double) -> String { String(format: "%.1f ms", s * 1000) }

// `--make-store PATH`: only write a store of N realistic records for Benchmarks/run.sh.
if let i = CommandLine.arguments.firstIndex(of: "--make-store"), i + 1 < CommandLine.arguments.count {
    let path = CommandLine.arguments[i + 1]
    let n = argument("--records", 10_000)
    let user = ProcessInfo.processInfo.environment["RECSYNC_USER"] ?? "bench"
    let actor = try StoreActor(userRecordName: user)
    // `--format 2`: a store with a ref per zone (docs/zone-refs.md), for the writers table.
    let format = argument("--format", StoreLayout.formatVersion)
    try GitStore.create(at: path, actor: actor, format: format)
    let store = try GitStore(path: path, actor: actor, acceptingZoneRefs: format == StoreLayout.zoneRefsFormat)
    let zones = try (0..<argument("--zones", 10)).map { try ZoneID(zoneName: "zone\($0)", ownerName: user) }
    _ = try await store.modifyRecordZones(zones.map { .save(RecordZone(zoneID: $0, defaultRecordType: "Item")) })
    // In slices, so that memory stays bounded at a million records.
    var start = 0
    while start < n {
        let end = min(n, start + 100_000)
        let records = (start..<end).map { RecordGenerator.realisticRecord(index: $0, zoneID: zones[$0 % zones.count]) }
        let result = try await store.modifyRecords(saving: records, deleting: [], savePolicy: .ifServerRecordUnchanged, atomically: true)
        for r in result.saveResults { _ = try r.result.get() }
        start = end
    }
    // `--commits C`: then C more commits, each editing one record, for a long history
    // (what `recsync store compact` folds).
    let commits = argument("--commits", 0)
    for c in 0..<commits {
        var record = RecordGenerator.realisticRecord(index: (c * 7919) % max(n, 1), zoneID: zones[((c * 7919) % max(n, 1)) % zones.count])
        record.fields["edit"] = .int64(Int64(c))
        let result = try await store.modifyRecords(saving: [record], deleting: [], savePolicy: .allKeys, atomically: true)
        for r in result.saveResults { _ = try r.result.get() }
    }
    print("made \(path): \(n) records in \(zones.count) zones, then \(commits) one-record commits")
    exit(0)
}

let n = argument("--records", 100_000)
let k = argument("--changes", 100)
let zoneCount = argument("--zones", 10)
let runs = argument("--runs", 7)

let dir = TempDirectory("bench")
let path = dir.file("store.git")
let actor = try StoreActor(userRecordName: "bench")
try GitStore.create(at: path, actor: actor)
let store = try GitStore(path: path, actor: actor)
let zones = try (0..<zoneCount).map { try ZoneID(zoneName: "zone\($0)", ownerName: "bench") }
_ = try await store.modifyRecordZones(zones.map { .save(RecordZone(zoneID: $0)) })

let records = (0..<n).map { RecordGenerator.realisticRecord(index: $0, zoneID: zones[$0 % zoneCount]) }
let bytes = records.reduce(0) { $0 + WorkspaceEncoding.encodeFields($1.fields).count } / max(n, 1)
print("records: \(n) in \(zoneCount) zones, ~\(bytes) B of plain JSON each")

var saved: [Record] = []
let writeTime = try await seconds {
    let result = try await store.modifyRecords(saving: records, deleting: [], savePolicy: .ifServerRecordUnchanged, atomically: true)
    saved = try result.saveResults.map { try $0.result.get() }
}
print("write \(n) records into a new store (one modification): \(String(format: "%.2f s", writeTime))")

let zone = zones[0]
let before = try await store.recordZoneChanges(zone: zone, since: nil, resultsLimit: 1, desiredKeys: nil)
var fullToken: ServerChangeToken?
let fullTime = try await seconds {
    var token: ServerChangeToken? = nil
    var count = 0
    while true {
        let page = try await store.recordZoneChanges(zone: zone, since: token, resultsLimit: 0, desiredKeys: nil)
        count += page.modifications.count
        token = page.changeToken
        if !page.moreComing { break }
    }
    fullToken = token
    precondition(count == n / zoneCount, "full fetch returned \(count)")
}
_ = before
print("full fetch of one zone (\(n / zoneCount) records, pages of 400): \(ms(fullTime))")

var edits = saved.filter { $0.recordID.zoneID == zone }.prefix(k).map { r -> Record in
    var r = r
    r.fields["edited"] = .boolean(true)
    return r
}
let editTime = try await seconds {
    let result = try await store.modifyRecords(saving: Array(edits), deleting: [], savePolicy: .ifServerRecordUnchanged, atomically: true)
    edits = try result.saveResults.map { try $0.result.get() }
}
print("save \(k) edited records (one modification, tag checks): \(ms(editTime))")

var fetchTimes: [Double] = []
for _ in 0..<runs {
    fetchTimes.append(
        try await seconds {
            let page = try await store.recordZoneChanges(zone: zone, since: fullToken, resultsLimit: 0, desiredKeys: nil)
            precondition(page.modifications.count == k && !page.moreComing, "incremental fetch returned \(page.modifications.count)")
        })
}
print("fetch \(k) changes incrementally (median of \(runs), min \(ms(fetchTimes.min()!)), max \(ms(fetchTimes.max()!))): \(ms(median(fetchTimes)))")

var dbTimes: [Double] = []
let dbToken = try await store.databaseChanges(scope: .private, since: nil).changeToken
_ = try await store.modifyRecords(
    saving: [RecordGenerator.realisticRecord(index: n + 1, zoneID: zones[1])], deleting: [], savePolicy: .ifServerRecordUnchanged, atomically: true)
for _ in 0..<runs {
    dbTimes.append(
        try await seconds {
            let changes = try await store.databaseChanges(scope: .private, since: dbToken)
            precondition(changes.modifications == [zones[1]])
        })
}
print("database changes, one zone changed (median of \(runs)): \(ms(median(dbTimes)))")
// Subscriptions as `recsync notifications` checks them: a database and a query subscription
// (which reads every changed record), k changes since the cursor.
let cursor = try await store.currentDatabaseToken(scope: .private)
let queried = saved.filter { $0.recordID.zoneID == zones[3] }.prefix(k).map { r -> Record in
    var r = r
    r.fields["queried"] = .boolean(true)
    return r
}
_ = try await store.modifyRecords(saving: Array(queried), deleting: [], savePolicy: .ifServerRecordUnchanged, atomically: true)
let subscriptions = [
    Subscription(id: "db", kind: .database(.private)),
    Subscription(
        id: "queried",
        kind: .query(
            QuerySubscription(
                scope: .private, recordType: queried.first?.recordType ?? "Item", conditions: [FieldCondition(field: "queried", test: .exists)]))),
]
var subscriptionTimes: [Double] = []
for _ in 0..<runs {
    subscriptionTimes.append(
        try await seconds {
            let check = try await store.checkSubscriptions(subscriptions, scope: .private, since: cursor)
            precondition(check.matches.map(\.count) == [k, k], "subscription check counted \(check.matches.map(\.count))")
        })
}
print("subscription check, \(k) changes (median of \(runs)): \(ms(median(subscriptionTimes)))")
// A backlog: `--commits C` one-record commits since the cursor (a watch that was not running
// while another device pushed C times), checked commit by commit.
let commits = argument("--commits", 200)
let backlogCursor = try await store.currentDatabaseToken(scope: .private)
for i in 0..<commits {
    var r = saved[i % saved.count]
    r.changeTag = nil
    r.fields["backlog"] = .int64(Int64(i))
    _ = try await store.modifyRecords(saving: [r], deleting: [], savePolicy: .allKeys, atomically: true)
}
var backlogCount = 0
let backlogTime = try await seconds {
    backlogCount = try await store.checkSubscriptions(subscriptions, scope: .private, since: backlogCursor).matches.first?.count ?? 0
}
precondition(backlogCount == commits, "backlog check counted \(backlogCount)")
print(
    """
    subscription check, \(commits) commits of one change each: \(ms(backlogTime))\
     (\(String(format: "%.2f", backlogTime * 1000 / Double(max(commits, 1)))) ms a commit)
    """
)
// The workspace side: a full pull (a clone), status with nothing changed, an incremental pull.
let ws = try Workspace.create(at: dir.file("ws"), config: WorkspaceConfig(user: "bench", remote: path))
let engine = SyncEngine(workspace: ws, store: store)
var cloneReport = PullReport()
let cloneTime = try await seconds { cloneReport = try await engine.pull() }
print("pull into an empty workspace (\(cloneReport.recordsWritten) records): \(String(format: "%.2f s", cloneTime))")
var statusTimes: [Double] = []
for _ in 0..<3 {
    statusTimes.append(
        try await seconds {
            let status = try await engine.status()
            precondition(status.isClean, "status after a clone: \(status.changes.count) changes")
        })
}
print("status, nothing changed (median of 3): \(ms(median(statusTimes)))")
let more = saved.filter { $0.recordID.zoneID == zones[2] }.prefix(k).map { r -> Record in
    var r = r
    r.fields["edited"] = .boolean(true)
    return r
}
_ = try await store.modifyRecords(saving: Array(more), deleting: [], savePolicy: .ifServerRecordUnchanged, atomically: true)
var incremental = PullReport()
let incrementalTime = try await seconds { incremental = try await engine.pull() }
print("incremental pull of \(incremental.recordsWritten) changed records: \(ms(incrementalTime))")
print(String(format: "peak RSS: %.0f MiB", peakRSSMiB()))
