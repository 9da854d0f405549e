import Foundation
import RecSyncEngine
import RecSyncEngineFixtures
import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import RecSyncWorkspace
import Synchronization
import Testing

/// The zone's retry list (`RetryList`) under many records the store cannot read: someone
/// with plain git access filled a zone with entries that are not records. Costs are counted
/// (records fetched by ID, how the list file is written), never timed.
@Suite struct RetryListTests {
    static let bad = 50
    let notes = zone("notes")

    /// A workspace that has pulled the zone, then `bad` entries that are not records
    /// committed to it: pulled in pages of 10, through a store that counts fetches by ID.
    func planted(_ f: EngineFixture) async throws -> (engine: SyncEngine, store: FaultInjectingStore) {
        let laptop = try f.device("laptop")
        try laptop.write("notes", "a", #"{"v": 1}"#)
        _ = try await laptop.push()
        _ = try await laptop.pull()
        for i in 0..<Self.bad {
            f.storage.commitRawRecord(try RecordID(recordName: "bad\(i)", zoneID: notes), bytes: Array("not a record \(i)".utf8))
        }
        let counting = FaultInjectingStore(try f.store("alice", deviceID: try laptop.workspace.deviceID()))
        var engine = SyncEngine(workspace: laptop.workspace, store: counting)
        engine.pageSize = 10
        return (engine, counting)
    }

    func listed(_ engine: SyncEngine) throws -> Set<String> {
        Set(try RetryList.load(engine.workspace, zone: notes).entries.keys)
    }

    var allBad: Set<String> { Set((0..<Self.bad).map { "bad\($0)" }) }

    @Test func aRecordWhoseStoredCopyIsBadIsFetchedAgainOnlyOnceItChanges() async throws {
        let f = EngineFixture()
        let (laptop, store) = try await planted(f)
        let first = try await laptop.pull()
        #expect(first.warnings.filter { $0.contains("alice/notes/bad") }.count == Self.bad)
        #expect(try listed(laptop) == allBad)
        #expect(try await laptop.status().problems.count == Self.bad)

        // Nothing changed on the store: nothing is asked for by ID, nothing is said again.
        let before = await store.recordsFetchedByID
        let second = try await laptop.pull()
        #expect(await store.recordsFetchedByID - before == 0, "unchanged unreadable records were fetched by ID again")
        #expect(second.warnings.isEmpty, "\(second.warnings)")
        #expect(try await laptop.status().problems.count == Self.bad, "status still lists them")

        // One is fixed on the store: the zone's changes name it, it arrives and leaves the list.
        try await f.store("alice").save([Build.record("bad7", in: notes, ["v": .int64(7)])], policy: .allKeys)
        let third = try await laptop.pull()
        #expect(third.warnings.isEmpty, "\(third.warnings)")
        #expect(try laptop.fields("notes", "bad7") == ["v": .int64(7)])
        #expect(try listed(laptop) == allBad.subtracting(["bad7"]))
        #expect(await store.recordsFetchedByID - before == 0)

        // One is replaced by other bytes that do not read either: listed with the new reason.
        f.storage.commitRawRecord(try RecordID(recordName: "bad8", zoneID: notes), bytes: Array("[]".utf8))
        let fourth = try await laptop.pull()
        #expect(fourth.warnings.count == 1 && fourth.warnings[0].contains("alice/notes/bad8"), "\(fourth.warnings)")
        let problem = try await laptop.status().problems.first { $0.path.hasSuffix("/bad8.json") }
        #expect(problem?.message.contains("expected a JSON object") == true, "\(String(describing: problem))")
    }

    /// Each page's changes are appended to the list file; the file is not written over.
    @Test func aPageAppendsItsChangesToTheListWithoutRewritingIt() async throws {
        let f = EngineFixture()
        var laptop = try await planted(f).engine
        let path = laptop.workspace.retryPath(notes)
        let seen = Mutex<[(file: UInt64, bytes: [UInt8])]>([])
        laptop.checkpoint = { (reached: SyncEngine.Checkpoint) throws(RecSyncError) in
            guard case .afterBatchBeforeZoneToken = reached,
                let attributes = try? FileManager.default.attributesOfItem(atPath: path),
                let file = (attributes[.systemFileNumber] as? NSNumber)?.uint64Value,
                let bytes = FileManager.default.contents(atPath: path)
            else { return }
            seen.withLock { $0.append((file, Array(bytes))) }
        }
        _ = try await laptop.pull()
        let pages = seen.withLock { $0 }
        #expect(pages.count == Self.bad / 10)
        for (earlier, later) in zip(pages, pages.dropFirst()) {
            #expect(later.file == earlier.file, "the list was written over (a new file) by a page")
            #expect(later.bytes.starts(with: earlier.bytes), "a page rewrote what was in the list")
            #expect(later.bytes.filter { $0 == 10 }.count - earlier.bytes.filter { $0 == 10 }.count == 10, "one line per record of the page")
        }
        #expect(try listed(laptop) == allBad)
    }

    /// Killed at any point of the pull, no unreadable record is lost: whatever page token was
    /// saved, the next pull ends with every one listed, and asks for none of them by ID after.
    @Test func aKilledPullLosesNoUnreadableRecord() async throws {
        let pages = Self.bad / 10
        for kill in 1...(2 * pages) {
            let f = EngineFixture("aKilledPullLosesNoUnreadableRecord-\(kill)")
            let setup = try await planted(f)
            var laptop = setup.engine
            let store = setup.store
            let reached = Atomic<Int>(0)
            laptop.checkpoint = { (point: SyncEngine.Checkpoint) throws(RecSyncError) in
                switch point {
                case .beforeBatchWrite, .afterBatchBeforeZoneToken:
                    if reached.add(1, ordering: .relaxed).newValue == kill { throw .internalError("simulated kill at \(point)") }
                default: break
                }
            }
            #expect(await pullError(laptop) != nil, "kill \(kill) was not reached")
            laptop.checkpoint = nil
            var again = try f.reopen(laptop)
            again.pageSize = 10
            _ = try await again.pull()
            #expect(try listed(again) == allBad, "kill \(kill)")
            #expect(try await again.status().problems.count == Self.bad, "kill \(kill)")
            let before = await store.recordsFetchedByID
            _ = try await again.pull()
            #expect(await store.recordsFetchedByID - before == 0, "kill \(kill)")
        }
    }

    /// A list written by an earlier version (no change tags) is fetched by ID once; what is
    /// still unreadable then waits for a change like any other.
    @Test func aListFromAnEarlierVersionIsFetchedOnceThenWaits() async throws {
        let f = EngineFixture()
        let (laptop, store) = try await planted(f)
        _ = try await laptop.pull()
        let old = allBad.sorted().map { "\($0)\tnot a valid record\n" }.joined()
        try Data(old.utf8).write(to: URL(fileURLWithPath: laptop.workspace.retryPath(notes)))

        var before = await store.recordsFetchedByID
        _ = try await laptop.pull()
        #expect(await store.recordsFetchedByID - before == Self.bad)
        #expect(try listed(laptop) == allBad)
        before = await store.recordsFetchedByID
        _ = try await laptop.pull()
        #expect(await store.recordsFetchedByID - before == 0)
    }
}
