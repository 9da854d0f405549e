import Foundation
import Glibc
import Synchronization

/// Runs `work` on its own; if it has not finished after `seconds`, unblocks it by opening each
/// FIFO for writing (a reader stuck opening one then sees end of file) until it finishes.
/// Returns the result and whether it had to (a reader held a FIFO open after `seconds`): a test expects `hung == false`, so a hang on a
/// FIFO fails the test instead of blocking the suite for ever.
public func runUnblockingFIFOs<T: Sendable>(_ fifos: [String], after seconds: Double = 10, _ work: @escaping @Sendable () async -> T) async -> (
    value: T, hung: Bool
) {
    let done = Flag(), hung = Flag(), stopped = Flag()
    // A thread of its own: work stuck in `open` holds a thread of the shared pool, and tests
    // running side by side can hold all of them.
    Thread.detachNewThread {
        let start = ContinuousClock.now
        while !done.isSet {
            if ContinuousClock.now - start > .seconds(seconds) {
                // Opening for writing without blocking succeeds only while a reader has the
                // FIFO open: then the work was stuck on it, not merely slow.
                for fifo in fifos {
                    let fd = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
                    if fd >= 0 {
                        hung.set()
                        close(fd)
                    }
                }
            }
            usleep(50_000)
        }
        stopped.set()
    }
    let value = await Task.detached { await work() }.value
    done.set()
    while !stopped.isSet { try? await Task.sleep(for: .milliseconds(10)) }
    return (value, hung.isSet)
}

/// Makes a FIFO (a named pipe) at `path`.
public func makeFIFO(_ path: String) throws {
    try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    if mkfifo(path, 0o644) != 0 {
        throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path, NSLocalizedDescriptionKey: String(cString: strerror(errno))])
    }
}

private final class Flag: Sendable {
    private let value = Mutex(false)
    var isSet: Bool { value.withLock { $0 } }
    func set() { value.withLock { $0 = true } }
}
