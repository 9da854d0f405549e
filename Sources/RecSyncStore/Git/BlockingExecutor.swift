import Foundation

/// Runs one actor's jobs, in order, on a thread of its own.
///
/// libgit2 calls block: a fetch or push over the network can take seconds, and even a local
/// commit waits on the disk. A `GitStore` on Swift's shared pool (one thread per core: two on
/// a two-core machine) would stall every other task of the process meanwhile (a `watch`
/// loop's timers, the workspace's scans). With this executor the store's work blocks its own
/// thread only. The thread ends when the store goes away (`stop()` from its deinit).
final class BlockingExecutor: SerialExecutor, @unchecked Sendable {
    // @unchecked: `jobs` and `stopping` are only touched under `condition`.
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var stopping = false
    private var ended = false
    private var thread: pthread_t?

    init(name: String) {
        let thread = Thread { [self] in run() }
        thread.name = name
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Lets the thread end once its queue is empty.
    func stop() {
        condition.lock()
        stopping = true
        condition.signal()
        condition.unlock()
    }

    /// Whether the thread has ended (after `stop()`, once its queue was empty).
    var hasEnded: Bool {
        condition.lock()
        defer { condition.unlock() }
        return ended
    }

    /// Whether the caller runs on this executor's thread.
    var isCurrentThread: Bool {
        condition.lock()
        defer { condition.unlock() }
        guard let thread else { return false }
        return pthread_equal(thread, pthread_self()) != 0
    }

    private func run() {
        condition.lock()
        thread = pthread_self()
        condition.unlock()
        while true {
            condition.lock()
            while jobs.isEmpty && !stopping { condition.wait() }
            if jobs.isEmpty {
                ended = true
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedSerialExecutor())
        }
    }
}
