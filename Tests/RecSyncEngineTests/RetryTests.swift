import Foundation
import RecSyncEngine
import RecSyncModel
import RecSyncTestSupport
import RecSyncTestTraits
import Synchronization
import Testing

/// The error `body` throws, nil if none.
private func caught(_ body: () async throws(RecSyncError) -> Void) async -> RecSyncError? {
    do throws(RecSyncError) {
        try await body()
        return nil
    } catch {
        return error
    }
}

/// `Backoff` (the watch loop's and `--retry`'s pauses) and `RetryPolicy`, without a network:
/// the end-to-end cases against real servers are in NetworkCLITests.
@Suite(.dedicatedThreads) struct RetryTests {
    @Test func backoffDoublesUpToItsMaximumWithJitterAndResets() {
        var plain = Backoff(initial: 0.5, maximum: 4, jitter: 0)
        #expect((0..<6).map { _ in plain.next() } == [0.5, 1, 2, 4, 4, 4])
        plain.reset()
        #expect(plain.next() == 0.5)

        var random = SeededRandom(seed: 13)
        var jittered = Backoff(initial: 0.5, maximum: 30, jitter: 0.2)
        var pauses: [Double] = []
        for _ in 0..<10 { pauses.append(jittered.next(using: &random)) }
        let bases = [0.5, 1, 2, 4, 8, 16, 30, 30, 30, 30]
        for (pause, base) in zip(pauses, bases) {
            #expect(pause >= base * 0.8 && pause <= base * 1.2, "\(pause) for \(base)")
        }
        #expect(Set(zip(pauses, bases).map { $0 / $1 }).count > 1, "the pauses are not all in step: \(pauses)")
    }

    /// Fails with each error in turn, then returns the number of tries.
    final class Script: Sendable {
        let failures: Mutex<[RecSyncError]>
        let tries = Atomic<Int>(0)
        init(_ failures: [RecSyncError]) { self.failures = Mutex(failures) }

        func attempt() throws(RecSyncError) -> Int {
            let n = tries.add(1, ordering: .relaxed).newValue
            if let next = failures.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { throw next }
            return n
        }
    }

    let fast = Backoff(initial: 0.001, maximum: 0.004, jitter: 0.2)
    let down = RecSyncError.networkUnavailable("cannot reach git://127.0.0.1:1/store.git")
    let cut = RecSyncError.networkFailure("the connection to git://127.0.0.1:1/store.git failed while pushing")

    @Test func aStoreThatCannotBeReachedIsTriedAgainAsOftenAsAsked() async throws {
        // Two retries: three tries in all, two waits, then the last error as it was.
        let script = Script([down, cut, down, down])
        let waits = Mutex<[RetryWait]>([])
        let error = await caught { () async throws(RecSyncError) in
            _ = try await RetryPolicy(retries: 2, backoff: fast).run(
                { () throws(RecSyncError) in try script.attempt() }, waiting: { w in waits.withLock { $0.append(w) } })
        }
        #expect(error == down)
        #expect(script.tries.load(ordering: .relaxed) == 3)
        #expect(waits.withLock { $0.map(\.retry) } == [1, 2])
        #expect(waits.withLock { $0.map(\.retries) } == [2, 2])
        #expect(waits.withLock { $0.map(\.error) } == [down, cut])

        // No retry: one try, no wait.
        let once = Script([down])
        #expect(
            await caught { () async throws(RecSyncError) in
                _ = try await RetryPolicy.never.run({ () throws(RecSyncError) in try once.attempt() }, waiting: { _ in Issue.record("waited") })
            } == down)
        #expect(once.tries.load(ordering: .relaxed) == 1)
    }

    @Test func untilReachableKeepsTryingUntilTheStoreAnswers() async throws {
        let script = Script(Array(repeating: down, count: 7))
        var policy = RetryPolicy.untilReachable
        policy.backoff = fast
        let waits = Mutex<[RetryWait]>([])
        let tries = try await policy.run({ () throws(RecSyncError) in try script.attempt() }, waiting: { w in waits.withLock { $0.append(w) } })
        #expect(tries == 8)
        #expect(waits.withLock { $0.map(\.retry) } == Array(1...7))
        #expect(waits.withLock { $0.allSatisfy { $0.retries == nil && $0.pause <= 0.004 * 1.2 } })
    }

    @Test func onlyAnUnreachableStoreIsTriedAgain() async throws {
        let refusals: [RecSyncError] = [
            .notAuthenticated("refused the ssh keys"), .invalidArguments("bad"), .notAStore("no store"),
            .permissionFailure("refused the push"), .invalidFiles([FileProblem(path: "a.json", message: "bad")]), .workspaceLocked("pid 1"),
            .storeBusy("moved"),
        ]
        for refusal in refusals {
            #expect(!RetryPolicy.isRetryable(refusal))
            let script = Script([refusal])
            let error = await caught { () async throws(RecSyncError) in
                _ = try await RetryPolicy.untilReachable.run(
                    { () throws(RecSyncError) in try script.attempt() }, waiting: { _ in Issue.record("waited on \(refusal)") })
            }
            #expect(error == refusal)
            #expect(script.tries.load(ordering: .relaxed) == 1)
        }
        #expect(RetryPolicy.isRetryable(down) && RetryPolicy.isRetryable(cut))
    }

    @Test func aCancelledWaitEndsWithTheLastError() async throws {
        let script = Script(Array(repeating: down, count: 100))
        let policy = RetryPolicy(retries: nil, backoff: Backoff(initial: 30, maximum: 30, jitter: 0))
        let task = Task(executorPreference: TestThreads.current) {
            await caught { () async throws(RecSyncError) in _ = try await policy.run({ () throws(RecSyncError) in try script.attempt() }) }
        }
        try await Task.sleep(nanoseconds: 100_000_000)
        task.cancel()
        #expect(await task.value == down)
        #expect(script.tries.load(ordering: .relaxed) == 1)
    }
}
