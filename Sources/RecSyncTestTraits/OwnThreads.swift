import Foundation
import Testing

/// Runs a suite's tests on threads of their own instead of Swift's shared (cooperative) pool.
///
/// The shared pool has one thread per core: two on a two-core machine. A test that blocks a
/// thread (waiting for a `recsync` or `git` process it started, a server it runs) or computes
/// for minutes (the seeded simulation) holds one of them for as long, and every other test's
/// tasks (a watch loop's timers, an engine's fetch) wait behind it. A suite that does either
/// takes this trait: its tests' tasks run on `TestThreads.shared`, so blocking and long work
/// share the processor but never the pool's few threads.
///
/// Swift Testing calls a synchronous test from an asynchronous wrapper, so the preference
/// covers it too; child tasks (`async let`, task groups) inherit it, unstructured `Task {}`
/// does not and runs on the shared pool as before.
public struct OwnThreadsTrait: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        try await withTaskExecutorPreference(TestThreads.shared) { try await Self.hop(function) }
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
    public static var ownThreads: Self { OwnThreadsTrait() }
}

/// A task executor with a few threads of its own, more when its jobs wait.
///
/// It starts a thread for a job when none is idle, up to `width`. Beyond that it starts
/// another only when the oldest queued job has waited `patience` seconds, which can only mean
/// that every thread is blocked (a test waiting for a process): so a test whose child task must
/// run while it blocks never deadlocks, and a burst of tests does not start a thread each.
/// Idle threads end after a while.
public final class TestThreads: TaskExecutor, @unchecked Sendable {
    // @unchecked: every stored property is touched only under `condition`.
    public static let shared = TestThreads(width: max(2, ProcessInfo.processInfo.activeProcessorCount))

    private let condition = NSCondition()
    private var jobs: [(job: UnownedJob, queued: ContinuousClock.Instant)] = []
    private var threads = 0
    private var idle = 0
    private var watching = false
    private let width: Int
    private let patience: Duration = .milliseconds(500)
    private let idleLifetime: TimeInterval = 10

    public init(width: Int) {
        self.width = width
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

    /// While the pool is at its width, starts a thread whenever the oldest job has waited too
    /// long; ends once nothing waits.
    private func watch() {
        condition.lock()
        while true {
            guard let oldest = jobs.first?.queued else {
                watching = false
                condition.unlock()
                return
            }
            if oldest.duration(to: .now) >= patience, idle == 0 {
                startThread()
            }
            condition.unlock()
            usleep(100_000)
            condition.lock()
        }
    }
}
