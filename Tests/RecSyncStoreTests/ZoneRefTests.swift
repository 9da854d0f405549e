import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import Testing

/// A store whose zones each have a ref of their own (docs/zone-refs.md), in memory: a zone's
/// records are decided and committed against its own head, so writers of other zones never
/// move it.
@Suite struct ZoneRefTests {
    let storage = MemoryStorage(refPerZone: true)
    let a = Build.zone("alpha")
    let b = Build.zone("beta")

    func store(as user: String = "alice") throws -> MemoryStore {
        MemoryStore(storage: storage, actor: try StoreActor(userRecordName: user, clock: { 1_767_225_600_000 }))
    }

    @Test func zonesCreatedInOneRequestGetACommitOnEachRef() async throws {
        let alice = try store()
        try await alice.createZones([a, b])
        #expect(storage.history(of: a).count == 1)
        #expect(storage.history(of: b).count == 1)
        #expect(storage.history(of: a).first?.contains("created \(a)") == true)
        #expect(storage.history(of: a).first?.contains("\(b)") == false)
        // The shared ref holds no zone: only the store's first commit.
        #expect(storage.history().count == 1)
    }

    @Test func writesToOneZoneDoNotMoveAnotherZonesToken() async throws {
        let alice = try store()
        try await alice.createZones([a, b])
        try await alice.save([Build.record("n1", in: a)])
        let before = try await alice.allZoneChanges(a, since: nil)
        for i in 0..<5 { try await alice.save([Build.record("m\(i)", in: b)]) }
        let page = try await alice.recordZoneChanges(zone: a, since: before.token, resultsLimit: 0, desiredKeys: nil)
        #expect(page.modifications.isEmpty && page.deletions.isEmpty)
        #expect(!page.moreComing)
        // Nothing happened to the zone, so its token is the one the client already has.
        #expect(page.changeToken == before.token)
        #expect(storage.history(of: a).count == 2)
        #expect(storage.history(of: b).count == 6)
    }

    @Test func oneRequestOverTwoZonesLandsOnEachZonesRef() async throws {
        let alice = try store()
        try await alice.createZones([a, b])
        let saved = try await alice.save([Build.record("x", in: a), Build.record("y", in: b), Build.record("z", in: a)])
        #expect(saved.allSatisfy { $0.changeTag != nil })
        #expect(storage.history(of: a).count == 2)
        #expect(storage.history(of: b).count == 2)
        #expect(names(try await alice.allZoneChanges(a, since: nil).records) == ["x", "z"])
        #expect(names(try await alice.allZoneChanges(b, since: nil).records) == ["y"])
    }

    @Test func aStaleSaveIsStillAConflictInItsZone() async throws {
        let alice = try store(), other = try store()
        try await alice.createZones([a, b])
        let first = try await alice.save([Build.record("n", in: a, ["v": .string("1")])])[0]
        var mine = first
        mine.fields["v"] = .string("2")
        _ = try await other.save([mine])
        var stale = first
        stale.fields["v"] = .string("3")
        // An atomic request over both zones: the conflicted zone lands nothing, the other lands.
        let result = try await alice.modifyRecords(
            saving: [stale, Build.record("fine", in: b)], deleting: [], savePolicy: .ifServerRecordUnchanged, atomically: true)
        #expect(result.saveResults[0].result.failureCode == .serverRecordChanged)
        #expect(result.saveResults[1].result.failureCode == nil)
        #expect(names(try await alice.allZoneChanges(b, since: nil).records) == ["fine"])
        #expect(try await alice.allZoneChanges(a, since: nil).records.first?.fields["v"] == .string("2"))
    }

    @Test func aZoneNeverCreatedHasNoRefAndIsNotFound() async throws {
        let alice = try store()
        let never = Build.zone("never")
        #expect(await caught { try await alice.recordZoneChanges(zone: never, since: nil, resultsLimit: 0, desiredKeys: nil) }?.code == .zoneNotFound)
        let result = try await alice.modifyRecords(
            saving: [Build.record("r", in: never)], deleting: [], savePolicy: .ifServerRecordUnchanged, atomically: false)
        #expect(result.saveResults[0].result.failureCode == .zoneNotFound)
        #expect(result.commit == nil)
        #expect(storage.history(of: never).isEmpty)
        #expect(try await alice.fetchRecords([Build.id("r", in: never)], desiredKeys: nil)[0].result.failureCode == .zoneNotFound)
    }

    @Test func aDeletedZoneIsATombstoneCommitOnItsRef() async throws {
        let alice = try store()
        try await alice.createZones([a, b])
        try await alice.save([Build.record("n", in: a)])
        try await alice.zoneOp(.delete(a))
        #expect(storage.history(of: a).count == 3)
        #expect(storage.history(of: b).count == 1)
        #expect(await caught { try await alice.recordZoneChanges(zone: a, since: nil, resultsLimit: 0, desiredKeys: nil) }?.code == .zoneNotFound)
        // A plain save does not bring it back; an explicit create does, empty.
        #expect(try await alice.modifyRecordZones([.save(RecordZone(zoneID: a))])[0].result.failureCode == .zoneNotFound)
        #expect(try await alice.fetchZoneDeletions([a]).map(\.reason) == [.deleted])
        try await alice.createZones([a])
        #expect(try await alice.allZoneChanges(a, since: nil).records.isEmpty)
    }

    @Test func concurrentWritersOfTwoZonesLoseNothing() async throws {
        let owner = try store()
        try await owner.createZones([a, b])
        let handles = try (0..<4).map { _ in try store() }
        let log = await withTaskGroup(of: (ZoneID, [WriteAttempt]).self) { group in
            for (i, handle) in handles.enumerated() {
                let zone = i % 2 == 0 ? a : b
                group.addTask {
                    (zone, await StressWriter.run(store: handle, zone: zone, writer: "w\(i)", iterations: 20, sharedRecords: 3, seed: UInt64(i + 1)))
                }
            }
            var all: [ZoneID: [WriteAttempt]] = [:]
            for await (zone, part) in group { all[zone, default: []] += part }
            return all
        }
        for zone in [a, b] {
            let attempts = log[zone] ?? []
            #expect(attempts.count == 40)
            #expect(attempts.filter { $0.outcome == .failed }.isEmpty, "\(attempts.filter { $0.outcome == .failed })")
            let all = try await owner.allZoneChanges(zone, since: nil)
            let tags = Dictionary(uniqueKeysWithValues: all.records.map { ($0.recordID.recordName, $0.changeTag ?? "") })
            let problems = StressWriter.verify(attempts, finalTags: tags)
            #expect(problems.isEmpty, "\(problems)")
            // Every saved write is one commit on its zone's ref, after the zone's creation.
            #expect(storage.history(of: zone).count == 1 + attempts.filter { $0.outcome == .saved }.count)
        }
    }
}
