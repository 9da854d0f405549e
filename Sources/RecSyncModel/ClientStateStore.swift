import Synchronization

/// Where a client of a store keeps small named state between runs, whole values read and
/// replaced at once (a store decorator's pins, say). A workspace keeps it in `.recsync/`; an
/// app passes a directory of its own (`DirectoryClientState`) or memory.
///
/// A write is durable when it returns, and a reader sees the last value written whole, never
/// part of one.
public protocol ClientStateStore: Sendable {
    /// The value stored under `name`; nil when none was.
    func readState(_ name: String) throws(RecSyncError) -> [UInt8]?
    /// Replaces the value stored under `name`.
    func writeState(_ name: String, _ bytes: [UInt8]) throws(RecSyncError)
    /// Where the value of `name` is, as a message tells the user to look at it (a path).
    func describeState(_ name: String) -> String
}

extension ClientStateStore {
    public func describeState(_ name: String) -> String { "'\(name)' in the client's state" }
}

/// Client state in memory, for tests and for apps that keep none between runs.
public final class MemoryClientState: ClientStateStore {
    private let values = Mutex<[String: [UInt8]]>([:])

    public init() {}

    public func readState(_ name: String) throws(RecSyncError) -> [UInt8]? {
        values.withLock { $0[name] }
    }

    public func writeState(_ name: String, _ bytes: [UInt8]) throws(RecSyncError) {
        values.withLock { $0[name] = bytes }
    }
}
