import RecSyncEngine
import RecSyncEngineFixtures
import RecSyncModel
import RecSyncTestSupport
import RecSyncWorkspace
import Testing

/// `pushPlan` and `pullPlan` predict what `push` and `pull` then do.
@Suite struct DryRunPlanTests {
    @Test func plansPredictThePushAndThePull() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        let phone = try f.device("phone")
        try laptop.write("notes", "a", #"{"v": 1}"#)
        try laptop.write("notes", "b", #"{"v": 1}"#)
        _ = try await laptop.push()
        _ = try await phone.pull()
        try phone.write("notes", "a", #"{"v": 2}"#)
        try phone.write("notes", "c", #"{"v": 2}"#)
        _ = try await phone.push()
        try laptop.write("notes", "a", #"{"v": 3}"#)
        try laptop.write("notes", "d", #"{"v": 3}"#)

        let a = try RecordID(recordName: "a", zoneID: zone("notes")), c = try RecordID(recordName: "c", zoneID: zone("notes"))
        let d = try RecordID(recordName: "d", zoneID: zone("notes"))
        let push = try await laptop.pushPlan()
        #expect(push.changes.map(\.recordID) == [a, d])
        #expect(push.conflicts == [a])
        #expect(push.conflictsChecked && push.zonesToCreate.isEmpty)
        let pull = try await laptop.pullPlan()
        #expect(pull.recordsToWrite == [a, c])
        #expect(pull.conflicts == [a])
        // Nothing moved: the plans again say the same, and the real pull agrees.
        #expect(try await laptop.pullPlan() == pull)
        let pulled = try await laptop.pull()
        #expect(pulled.conflicts == [a])
        #expect(try laptop.fields("notes", "c") == ["v": .int64(2)])
    }

    /// A record already in conflict that changes on the store again is not planned as a
    /// write or a new conflict: the pull only keeps the newest store copy with the conflict.
    @Test func aPendingConflictIsNotPlannedAgain() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        let phone = try f.device("phone")
        try laptop.write("notes", "a", #"{"v": 1}"#)
        _ = try await laptop.push()
        _ = try await phone.pull()
        try phone.write("notes", "a", #"{"v": 2}"#)
        _ = try await phone.push()
        try laptop.write("notes", "a", #"{"v": 3}"#)
        let a = try RecordID(recordName: "a", zoneID: zone("notes"))
        #expect(try await laptop.pull().conflicts == [a])
        try phone.write("notes", "a", #"{"v": 4}"#)
        _ = try await phone.push()

        let plan = try await laptop.pullPlan()
        #expect(plan.zonesChanged == [zone("notes")])
        #expect(plan.recordsToWrite.isEmpty && plan.conflicts.isEmpty, "\(plan)")
        let pulled = try await laptop.pull()
        #expect(pulled.recordsWritten == 0 && pulled.conflicts.isEmpty)
        #expect(try laptop.workspace.allConflicts().first?.server == ["v": .int64(4)])
    }

    /// A push killed after the store took it: the dry runs settle it as the real runs do, so
    /// they plan neither a conflict nor a send for what it landed.
    @Test func plansAfterAPushKilledOnceItLandedMatchTheRuns() async throws {
        let f = EngineFixture()
        var laptop = try f.device("laptop")
        try laptop.write("notes", "a", #"{"v": 1}"#)
        _ = try await laptop.push()
        _ = try await laptop.pull()
        try laptop.write("notes", "a", #"{"v": 2}"#)
        #expect(await laptop.killed(at: .afterPushCommitBeforeSidecars, pushError) != nil)

        let push = try await laptop.pushPlan()
        #expect(push.changes.isEmpty && push.conflicts.isEmpty, "\(push)")
        let pull = try await laptop.pullPlan()
        #expect(pull.conflicts.isEmpty && pull.recordsToWrite.isEmpty, "\(pull)")
        #expect(try await laptop.pull().conflicts.isEmpty)
        #expect(try laptop.fields("notes", "a") == ["v": .int64(2)])
    }

    /// A zone the store reset for its encrypted data: the push plan uploads every record of it
    /// again, as the push then does; the pull plan names the reset, as the pull then does.
    @Test func plansForAZoneToUploadAgainMatchTheRuns() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        try laptop.write("notes", "a", #"{"v": 1}"#)
        try laptop.write("notes", "b", #"{"v": 2}"#)
        _ = try await laptop.push()
        _ = try await laptop.pull()
        try await f.store("alice").zoneOp(.markEncryptedDataReset(zone("notes")))

        let pullPlan = try await laptop.pullPlan()
        #expect(pullPlan.zonesRemoved.map(\.reason) == [.encryptedDataReset])
        #expect(try await laptop.pull().zonesRemoved == pullPlan.zonesRemoved)
        let plan = try await laptop.pushPlan()
        #expect(plan.zonesToCreate == [zone("notes")])
        #expect(plan.changes.map(\.recordID.recordName) == ["a", "b"] && plan.changes.allSatisfy { $0.kind == .new }, "\(plan.changes)")
        #expect(plan.conflicts.isEmpty)
        let pushed = try await laptop.push()
        #expect(Set(pushed.saved) == Set(plan.changes.map(\.recordID)))
    }
}
