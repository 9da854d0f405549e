import Glibc
import RecSyncModel

/// The one way recsync's file code makes a system call: a call a signal interrupted (`EINTR`)
/// is made again, and a failure becomes a `RecSyncError.fileSystem` that keeps the call's name
/// and its `errno` (swift-nio's `syscall(blocking:where:_:)` does the same).
///
/// `close` is not made through it: on Linux a `close` that returned `EINTR` has closed the
/// descriptor all the same, and a second one could close another thread's new file.
package enum Syscall {
    /// The `errno` a system call failed with.
    package struct Errno: Error, Hashable {
        package var code: Int32
    }

    /// Makes `body`, a call that returns -1 and sets `errno` when it fails, until a signal does
    /// not interrupt it: its result, or the `errno` it failed with.
    package static func attempt<T: SignedInteger>(_ body: () -> T) -> Result<T, Errno> {
        while true {
            let result = body()
            if result != -1 { return .success(result) }
            let code = errno
            if code != EINTR { return .failure(Errno(code: code)) }
        }
    }

    /// Makes `body` (see `attempt`); its result, or a failure that says what recsync was doing
    /// (`action`, such as "cannot create") to `path`, with the call's name and `errno`.
    @discardableResult
    package static func retrying<T: SignedInteger>(_ name: String, path: String, _ action: String, _ body: () -> T) throws(RecSyncError) -> T {
        try attempt(body).get(name, path: path, action)
    }

    /// `retrying`, where some failures are expected: nil when the call failed with one of
    /// `tolerated` (a file that is not there, a directory that cannot be synced).
    @discardableResult
    package static func retrying<T: SignedInteger>(_ name: String, path: String, _ action: String, tolerating tolerated: Set<Int32>, _ body: () -> T)
        throws(RecSyncError) -> T?
    {
        switch attempt(body) {
        case .success(let result): return result
        case .failure(let failure) where tolerated.contains(failure.code): return nil
        case .failure(let failure): throw error(name, path: path, action, errno: failure.code)
        }
    }

    /// The error for a failed call: `path: action: reason`, with the call and `errno` as its cause.
    package static func error(_ name: String, path: String, _ action: String, errno code: Int32) -> RecSyncError {
        .fileSystem(path: path, message: "\(action): \(String(cString: strerror(code)))", cause: SystemCallFailure(call: name, errno: code))
    }

    /// `fsync` of a directory; file systems that cannot sync a directory (`EINVAL`) are let be.
    package static func syncDirectory(_ fd: Int32, path: String) throws(RecSyncError) {
        try retrying("fsync", path: path, "cannot sync directory", tolerating: [EINVAL]) { fsync(fd) }
    }
}

package extension Result where Failure == Syscall.Errno {
    /// The call's result, or its failure as `Syscall.error(name, path:, action, errno:)`: for
    /// a call made inside a closure that cannot throw a typed error (`withUnsafeBytes`).
    func get(_ name: String, path: String, _ action: String) throws(RecSyncError) -> Success {
        switch self {
        case .success(let result): return result
        case .failure(let failure): throw Syscall.error(name, path: path, action, errno: failure.code)
        }
    }
}
