import RecSyncEngine
import RecSyncEngineFixtures
import RecSyncModel
import RecSyncTestSupport

extension SyncEngine {
    /// Runs `operation` (a push or pull) killed at `point`, as a crash there would end it, and
    /// returns its error (nil when it never reached the point); the seam is cleared after.
    mutating func killed(at point: Checkpoint, _ operation: (SyncEngine) async -> RecSyncError?) async -> RecSyncError? {
        checkpoint = { (reached: Checkpoint) throws(RecSyncError) in
            if reached == point { throw .internalError("simulated kill at \(reached)") }
        }
        defer { checkpoint = nil }
        return await operation(self)
    }
}

extension EngineFixture {
    /// A laptop and a phone with a conflict on notes/r, found by the phone's pull: from
    /// title "t", body "b", the laptop pushed title "laptop" and the phone edited body "phone".
    func twoDevicesWithAConflict() async throws -> (laptop: SyncEngine, phone: SyncEngine) {
        let laptop = try device("laptop")
        let phone = try device("phone")
        try laptop.write("notes", "r", #"{"title": "t", "body": "b"}"#)
        _ = try await laptop.push()
        _ = try await phone.pull()
        try laptop.write("notes", "r", #"{"title": "laptop", "body": "b"}"#)
        _ = try await laptop.push()
        try phone.write("notes", "r", #"{"title": "t", "body": "phone"}"#)
        _ = try await phone.pull()
        return (laptop, phone)
    }
}
