import Foundation
import Testing

/// Runs a suite's tests on threads of their own instead of Swift's shared (cooperative) pool.
///
/// The shared pool has one thread per core: two on a two-core machine. A test that blocks a
/// thread (waiting for a `recsync` or `git` process it started, a server it runs) or computes
/// for minutes (the seeded simulation) holds one of them for as long, and every other test's
/// tasks (a watch loop's timers, an engine's fetch) wait behind it. A suite that does either
/// takes this trait: its tests' tasks run on `TestThreads.shared`, as many threads as cores,
/// so blocking and long work share the processor but never the pool's threads, and no more
/// of these tests run at once than before (each starts processes that need the processor).
///
/// Swift Testing calls a synchronous test from an asynchronous wrapper, so the preference
/// covers it too; child tasks (`async let`, task groups) inherit it; an unstructured task
/// takes it with `Task(executorPreference: TestThreads.current)`.
public struct OwnThreadsTrait: SuiteTrait, TestTrait, TestScoping {
    /// Whether each test gets threads no other test uses (`.dedicatedThreads`).
    let dedicated: Bool

    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        // The suite's scope too, for its initializer; a dedicated pool is made per test.
        let threads = dedicated && testCase != nil ? TestThreads(width: 2) : TestThreads.shared
        try await TestThreads.$current.withValue(threads) {
            try await withTaskExecutorPreference(threads) { try await Self.hop(function) }
        }
    }
}

extension OwnThreadsTrait {
    /// `@concurrent`: runs on the task's preferred executor (the caller may be on a thread
    /// of the shared pool; a plain closure would go on there until its first suspension).
    @concurrent static func hop(_ function: @Sendable () async throws -> Void) async throws {
        try await function()
    }
}

extension Trait where Self == OwnThreadsTrait {
    /// Runs the tests off Swift's shared pool, on `TestThreads.shared` (see `OwnThreadsTrait`).
    public static var ownThreads: Self { OwnThreadsTrait(dedicated: false) }

    /// Runs each test on two threads no other test uses: for a test that waits, with a
    /// deadline, for work it started in the background (a watch loop, a detached fetch).
    /// On a shared pool that work queues behind every other test's, so on a loaded machine
    /// the deadline could pass for a correct run; here only the processor is shared.
    public static var dedicatedThreads: Self { OwnThreadsTrait(dedicated: true) }
}

/// A task executor with threads of its own: `width` of them, and more only when the oldest
/// queued job has waited `patience`.
///
/// Tests on it mostly block (waiting for processes) rather than compute, but those processes
/// need the processor, so `width` bounds how many such tests run at once. A job that waits
/// `patience` (far longer than any test's own step) can only mean that every thread waits for
/// something that needs a thread of this executor: one more is started, up to `ceiling`, so
/// such a test is slow, never deadlocked. Idle threads end after a while.
public final class TestThreads: TaskExecutor, @unchecked Sendable {
    // @unchecked: every stored property is touched only under `condition`.
    public static let shared = TestThreads(width: max(2, ProcessInfo.processInfo.activeProcessorCount))

    /// The executor the running test's scope prefers (`OwnThreadsTrait`), for unstructured
    /// tasks it starts; nil outside such a scope (the shared pool).
    @TaskLocal public static var current: TestThreads?

    private let condition = NSCondition()
    private var jobs: [(job: UnownedJob, queued: ContinuousClock.Instant)] = []
    private var threads = 0
    private var idle = 0
    private var watching = false
    private var lastStarted = ContinuousClock.now
    private let width: Int
    private let ceiling: Int
    private let patience: Duration
    private let idleLifetime: TimeInterval = 10

    public init(width: Int, patience: Duration = .seconds(10)) {
        self.width = width
        self.ceiling = 4 * width
        self.patience = patience
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        defer { condition.unlock() }
        jobs.append((job, .now))
        if jobs.count <= idle {
            condition.signal()
        } else if threads < width {
            startThread()
        } else if !watching {
            watching = true
            let watcher = Thread { [self] in watch() }
            watcher.name = "test threads watcher"
            watcher.start()
        }
    }

    /// Called with `condition` held.
    private func startThread() {
        threads += 1
        lastStarted = .now
        let thread = Thread { [self] in work() }
        thread.name = "test thread"
        thread.stackSize = 8 << 20
        thread.start()
    }

    /// Whether the caller runs on a thread of a `TestThreads`.
    public static var isCurrentThread: Bool { Thread.current.threadDictionary[marker] != nil }
    private static let marker = "recsync.test-thread"

    private func work() {
        Thread.current.threadDictionary[Self.marker] = true
        condition.lock()
        while true {
            if !jobs.isEmpty {
                let next = jobs.removeFirst()
                condition.unlock()
                next.job.runSynchronously(on: asUnownedTaskExecutor())
                condition.lock()
                continue
            }
            idle += 1
            let woken = condition.wait(until: Date().addingTimeInterval(idleLifetime))
            idle -= 1
            if !woken && jobs.isEmpty { break }
        }
        threads -= 1
        condition.unlock()
    }

    /// While the executor is at its width, starts a thread when the oldest job has waited
    /// `patience` (up to `ceiling`); ends once nothing waits.
    private func watch() {
        condition.lock()
        while true {
            guard let oldest = jobs.first?.queued else {
                watching = false
                condition.unlock()
                return
            }
            // At most one more thread per `patience`: the next job waits behind the one the new
            // thread takes, and must not count as starved for that alone.
            if oldest.duration(to: .now) >= patience, lastStarted.duration(to: .now) >= patience, idle == 0, threads < ceiling {
                lastStarted = .now
                startThread()
            }
            condition.unlock()
            usleep(100_000)
            condition.lock()
        }
    }
}
