import Foundation
import RecSyncTestTraits
import Testing

/// The executor the blocking suites run on (`.ownThreads`): their tests are off Swift's shared
/// pool, and a job that blocks never keeps the others waiting for good.
@Suite struct TestThreadsTests {
    @Test(.ownThreads) func aSynchronousTestWithTheTraitRunsOnATestThread() {
        #expect(TestThreads.isCurrentThread)
    }

    @Test func withoutTheTraitATestRunsOnTheSharedPool() {
        #expect(!TestThreads.isCurrentThread)
    }

    /// One thread wide: a job that blocks until a second job has run can only finish when the
    /// executor starts a thread beyond its width for the waiting job.
    @Test func aBlockedJobDoesNotStarveTheNextOne() async throws {
        let executor = TestThreads(width: 1, patience: .milliseconds(200))
        let released = DispatchSemaphore(value: 0)
        let finished = try await withTaskExecutorPreference(executor) {
            try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask {
                    // Blocks its thread, as a test waiting for a process does (bounded).
                    released.wait(timeout: .now() + 30) == .success
                }
                group.addTask {
                    released.signal(); return true
                }
                return try await group.reduce(true) { $0 && $1 }
            }
        }
        #expect(finished, "the second job ran while the first blocked")
    }
}
