import Foundation
import RecSyncGit
import RecSyncModel
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

@testable import RecSyncStore

/// Random histories: the commit-by-commit subscription walk gives the same on both stores, and
/// the git store's tree diff of `zones/` (`zoneChanges`) finds exactly the zones a full
/// listing of both commits does, whatever plain git put there.
@Suite(.ownThreads) struct SubscriptionHistoryPropertyTests {
    static let aliceZones = ["z0", "z1", "z2"].map { Build.zone($0) }
    static let bobZones = ["b0", "b1"].map { Build.zone($0, owner: "bob") }

    /// One step of a history, applied the same way to every store.
    enum Step {
        case createZone(ZoneID, by: String, device: String)
        case deleteZone(ZoneID, by: String, device: String)
        case share(ZoneID, with: Bool)
        case save(RecordID, type: String, open: Bool, by: String, device: String)
        case delete(RecordID, by: String, device: String)
    }

    /// A history that is valid step by step (zones exist before records go in, and so on).
    static func history(seed: UInt64, steps: Int) -> [Step] {
        var g = SeededRandom(seed: seed)
        var zones: Set<ZoneID> = []
        var shared: Set<ZoneID> = []
        var records: [ZoneID: Set<String>] = [:]
        var result: [Step] = []
        while result.count < steps {
            let aliceDevice = Bool.random(using: &g) ? "a1" : "a2"
            switch Int.random(in: 0..<10, using: &g) {
            case 0:
                let z = (aliceZones + bobZones).randomElement(using: &g)!
                guard !zones.contains(z) else { continue }
                zones.insert(z)
                records[z] = []
                result.append(.createZone(z, by: z.ownerName, device: z.ownerName == "alice" ? aliceDevice : "b"))
            case 1:
                guard let z = zones.randomElement(using: &g), Int.random(in: 0..<3, using: &g) == 0 else { continue }
                zones.remove(z)
                shared.remove(z)
                records[z] = nil
                result.append(.deleteZone(z, by: z.ownerName, device: z.ownerName == "alice" ? aliceDevice : "b"))
            case 2:
                guard let z = zones.filter({ $0.ownerName == "bob" }).randomElement(using: &g) else { continue }
                let on = !shared.contains(z)
                if on { shared.insert(z) } else { shared.remove(z) }
                result.append(.share(z, with: on))
            case 3, 4, 5, 6:
                // Alice writes into her zones and bob's shared ones; bob into his.
                let writer = Bool.random(using: &g) ? "alice" : "bob"
                let candidates = zones.filter { writer == "bob" ? $0.ownerName == "bob" : ($0.ownerName == "alice" || shared.contains($0)) }
                guard let z = candidates.randomElement(using: &g) else { continue }
                let name = "r\(Int.random(in: 0..<6, using: &g))"
                records[z, default: []].insert(name)
                result.append(
                    .save(
                        Build.id(name, in: z), type: Bool.random(using: &g) ? "Task" : "Note", open: Bool.random(using: &g), by: writer,
                        device: writer == "alice" ? aliceDevice : "b"))
            default:
                let writer = Bool.random(using: &g) ? "alice" : "bob"
                let candidates = zones.filter {
                    !(records[$0] ?? []).isEmpty && (writer == "bob" ? $0.ownerName == "bob" : ($0.ownerName == "alice" || shared.contains($0)))
                }
                guard let z = candidates.randomElement(using: &g), let name = records[z]?.randomElement(using: &g) else { continue }
                records[z]?.remove(name)
                result.append(.delete(Build.id(name, in: z), by: writer, device: writer == "alice" ? aliceDevice : "b"))
            }
        }
        return result
    }

    static func apply(_ step: Step, on fixture: StoreFixture) async throws {
        switch step {
        case .createZone(let z, let user, let device):
            try await fixture.store(as: user, deviceID: device).zoneOp(.recreate(RecordZone(zoneID: z)))
        case .deleteZone(let z, let user, let device):
            try await fixture.store(as: user, deviceID: device).zoneOp(.delete(z))
        case .share(let z, let on):
            try await fixture.store(as: "bob", deviceID: "b").zoneOp(
                .save(RecordZone(zoneID: z, participants: on ? [ShareParticipant(userRecordName: "alice", permission: .readWrite)] : [])))
        case .save(let id, let type, let open, let user, let device):
            let record = Build.record(id.recordName, in: id.zoneID, type: type, ["open": .boolean(open)])
            try await fixture.store(as: user, deviceID: device).save([record], policy: .allKeys)
        case .delete(let id, let user, let device):
            let result = try await fixture.store(as: user, deviceID: device).modifyRecords(
                saving: [], deleting: [RecordDeletion(recordID: id, changeTag: nil)], savePolicy: .allKeys, atomically: true)
            for r in result.deleteResults { try r.result.get() }
        }
    }

    static let subscriptions: [DatabaseScope: [Subscription]] = [
        .private: [
            Subscription(id: "db", kind: .database(.private)),
            Subscription(id: "db-own", kind: .database(.private), includeOwn: true),
            Subscription(id: "z0", kind: .zone(aliceZones[0])),
            Subscription(
                id: "open",
                kind: .query(
                    QuerySubscription(scope: .private, recordType: "Task", conditions: [FieldCondition(field: "open", test: .equals("true"))]))),
            Subscription(id: "gone", kind: .query(QuerySubscription(scope: .private, recordType: "Note", firesOn: [.deleted]))),
        ],
        .shared: [
            Subscription(id: "sdb", kind: .database(.shared)),
            Subscription(id: "sdb-own", kind: .database(.shared), includeOwn: true),
            Subscription(id: "b0", kind: .zone(bobZones[0])),
            Subscription(
                id: "stask", kind: .query(QuerySubscription(scope: .shared, recordType: "Task", zone: bobZones[1], firesOn: [.created, .updated]))),
        ],
    ]

    @Test(arguments: [1, 2, 3] as [UInt64])
    func bothStoresReportTheSameForEveryCursor(seed: UInt64) async throws {
        let steps = Self.history(seed: seed, steps: 40)
        let memory = try StoreFixture(.memory), git = try StoreFixture(.git)
        let viewers = [(memory, try memory.store(as: "alice", deviceID: "a2")), (git, try git.store(as: "alice", deviceID: "a2"))]
        // The cursors of both stores after each step, per scope.
        var cursors: [[DatabaseScope: ServerChangeToken]] = [[:], [:]]
        var tokens: [[[DatabaseScope: ServerChangeToken]]] = [[], []]
        for step in steps {
            for (i, (fixture, viewer)) in viewers.enumerated() {
                try await Self.apply(step, on: fixture)
                for scope in [DatabaseScope.private, .shared] { cursors[i][scope] = try await viewer.currentDatabaseToken(scope: scope) }
                tokens[i].append(cursors[i])
            }
        }
        for scope in [DatabaseScope.private, .shared] {
            let subscriptions = Self.subscriptions[scope] ?? []
            for k in [nil] + Array(0..<steps.count) {
                let memoryCheck = try await viewers[0].1.checkSubscriptions(subscriptions, scope: scope, since: k.flatMap { tokens[0][$0][scope] })
                let gitCheck = try await viewers[1].1.checkSubscriptions(subscriptions, scope: scope, since: k.flatMap { tokens[1][$0][scope] })
                #expect(memoryCheck.matches == gitCheck.matches, "seed \(seed), \(scope) since step \(k.map(String.init) ?? "nil")")
                #expect(memoryCheck.ownCommitsSkipped == gitCheck.ownCommitsSkipped)
            }
        }
    }

    /// What plain git may leave under `zones/`: entries `zones(at:)` reports and skips.
    static func oddEntry(_ n: Int, _ g: inout SeededRandom) -> (path: String, bytes: [UInt8]) {
        let garbage = Array("{not json \(n)".utf8)
        switch Int.random(in: 0..<7, using: &g) {
        case 0: return ("zones/alice/z\(Int.random(in: 0..<3, using: &g))/zone.json", garbage)  // a damaged zone.json
        case 1: return ("zones/bob/b\(Int.random(in: 0..<2, using: &g))/zone.json", garbage)
        case 2: return ("zones/alice/Cafe\u{301}/zone.json", garbage)  // not NFC
        case 3: return ("zones/alice/\(String(repeating: "x", count: 250))/records/00/a", garbage)  // too long a name
        case 4: return ("zones/alice/loose\(n % 2)", garbage)  // a file where a zone goes
        case 5: return ("zones/carol\(n % 2)", garbage)  // a file where an owner goes
        default: return ("zones/bob/b\(Int.random(in: 0..<2, using: &g))/records/00/odd\(n)", garbage)
        }
    }

    static func summary(_ changes: [ZoneChange]) -> [String] {
        func side(_ e: ZoneEntry?) -> String {
            guard let e else { return "-" }
            switch e.zone {
            case .success(let zone): return "\(e.contentID) \(zone.participants.map(\.userRecordName))"
            case .failure: return "\(e.contentID) unreadable"
            }
        }
        return changes.map { "\($0.zoneID) \(side($0.before)) -> \(side($0.after))" }.sorted()
    }

    @Test(arguments: [4, 5] as [UInt64])
    func zoneTreeDiffFindsWhatAFullListingFinds(seed: UInt64) async throws {
        var g = SeededRandom(seed: seed)
        let steps = Self.history(seed: seed, steps: 30)
        let fixture = try StoreFixture(.git)
        var commits: [String?] = [nil]
        func head() throws -> String {
            try GitCLI.run(["rev-parse", "refs/heads/main"], in: fixture.path).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        var odd: [String] = []
        for (n, step) in steps.enumerated() {
            // A step may fail on what plain git left (a damaged zone.json): any history will do.
            do { try await Self.apply(step, on: fixture) } catch {}
            if try head() != commits.last { commits.append(try head()) }
            if Int.random(in: 0..<4, using: &g) == 0 {
                // Plain git adds an odd entry, or takes one away.
                if !odd.isEmpty, Bool.random(using: &g) {
                    let gone = odd.remove(at: Int.random(in: 0..<odd.count, using: &g))
                    commits.append(try GitCLI.commitFiles([], removing: [gone], toStore: fixture.path))
                } else {
                    let entry = Self.oddEntry(n, &g)
                    if !odd.contains(entry.path) { odd.append(entry.path) }
                    commits.append(try GitCLI.commitFiles([entry], toStore: fixture.path))
                }
            }
        }
        let backend = try GitBackend(repository: GitRepository.open(at: fixture.path))
        var pairs = zip(commits, commits.dropFirst()).map { ($0, $1!) }
        for _ in 0..<30 {
            pairs.append((commits.randomElement(using: &g)!, commits.dropFirst().randomElement(using: &g)!!))
        }
        for (a, b) in pairs {
            for owner in [nil, "alice", "bob"] as [String?] {
                let diffed = try backend.zoneChanges(from: a, to: b, owner: owner)
                let listed = try backend.zoneChangesByListing(from: a, to: b, owner: owner)
                #expect(Self.summary(diffed.changes) == Self.summary(listed.changes), "seed \(seed), \(a ?? "nil") -> \(b), owner \(owner ?? "nil")")
            }
        }
    }
}
