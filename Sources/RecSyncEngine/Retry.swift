import Foundation
import RecSyncModel

/// A pause that doubles after each failure, from `initial` up to `maximum`, each one varied
/// at random by up to `jitter` of itself either way, so that clients that lost the store
/// together do not all come back in step.
///
/// The watch loop and `RetryPolicy` (pull and push `--retry`, `--wait`) both wait with it.
public struct Backoff: Sendable, Hashable {
    public var initial: Double
    public var maximum: Double
    /// The fraction of a pause drawn at random: 0.2 gives 80 % to 120 % of it.
    public var jitter: Double
    /// The next pause, before jitter.
    public private(set) var base: Double

    public init(initial: Double = 0.5, maximum: Double = 30, jitter: Double = 0.2) {
        self.initial = initial
        self.maximum = maximum
        self.jitter = jitter
        base = initial
    }

    /// The pause to take now; the next one is twice as long (up to `maximum`).
    public mutating func next() -> Double {
        var random = SystemRandomNumberGenerator()
        return next(using: &random)
    }

    public mutating func next<G: RandomNumberGenerator>(using random: inout G) -> Double {
        let pause = base
        base = min(maximum, base * 2)
        guard jitter > 0 else { return pause }
        return max(0, pause * Double.random(in: (1 - jitter)...(1 + jitter), using: &random))
    }

    /// Back to `initial`, after a success.
    public mutating func reset() { base = initial }
}

/// How a pull or push treats a store it cannot reach: give up at once, try again a number of
/// times (`--retry N`), or until the store answers (`--wait`), pausing with a `Backoff`.
///
/// Only a store that could not be reached is tried again (`isRetryable`): a conflict, a
/// refused credential or a bad file would fail the same way every time.
public struct RetryPolicy: Sendable, Hashable {
    /// Tries after the first that may follow a failure to reach the store; nil: no limit.
    public var retries: Int?
    public var backoff: Backoff

    public init(retries: Int?, backoff: Backoff = Backoff()) {
        self.retries = retries
        self.backoff = backoff
    }

    /// One try, no waiting.
    public static let never = RetryPolicy(retries: 0)
    /// Until the store answers.
    public static let untilReachable = RetryPolicy(retries: nil)
    /// What a bare `--retry` means.
    public static let defaultRetries = 5

    /// Whether `error` means the store could not be reached now (rather than refused), so that
    /// trying again later may work.
    public static func isRetryable(_ error: RecSyncError) -> Bool {
        error.code == .networkUnavailable || error.code == .networkFailure
    }

    /// Runs `attempt`; while it fails because the store cannot be reached, tells `waiting`,
    /// pauses and runs it again, as often as `retries` allows. Any other error, the last
    /// one, or the last one before the task was cancelled, is thrown as it is.
    ///
    /// `attempt` must be safe to run again after it failed part-way: a pull or a push is (a
    /// pull resumes from its tokens, a push recognises what of it had landed).
    public func run<T>(
        _ attempt: () async throws(RecSyncError) -> T,
        waiting: (RetryWait) -> Void = { _ in }
    ) async throws(RecSyncError) -> T {
        var backoff = self.backoff
        var retry = 0
        while true {
            do {
                return try await attempt()
            } catch let failure where Self.isRetryable(failure) {
                if let retries, retry >= retries { throw failure }
                retry += 1
                let pause = backoff.next()
                waiting(RetryWait(error: failure, retry: retry, retries: retries, pause: pause))
                do { try await Task.sleep(nanoseconds: UInt64(pause * 1_000_000_000)) } catch { throw failure }
            }
        }
    }
}

/// A pause `RetryPolicy.run` is about to take.
public struct RetryWait: Sendable {
    /// Why the last try failed.
    public var error: RecSyncError
    /// The number of the try that follows the pause (1 is the first one after the first failure).
    public var retry: Int
    /// Of how many; nil: until the store answers.
    public var retries: Int?
    /// Seconds.
    public var pause: Double
}
