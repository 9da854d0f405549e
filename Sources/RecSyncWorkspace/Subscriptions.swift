import Foundation
import RecSyncModel

/// A standing request to be told when something in the store changes (CloudKit's
/// database, zone and query subscriptions), kept in `.recsync/subscriptions.json`.
public struct Subscription: Sendable, Hashable, Codable {
    public enum Kind: Sendable, Hashable, Codable {
        /// Any change in any zone of a scope.
        case database(DatabaseScope)
        /// Any change in one zone.
        case zone(ZoneID)
        /// A record of a type (optionally with a field equal to a value, as plain workspace
        /// JSON) created or changed in a scope.
        case query(scope: DatabaseScope, recordType: String, field: String?, equals: String?)
    }

    public var id: String
    public var kind: Kind

    public init(id: String, kind: Kind) {
        self.id = id
        self.kind = kind
    }
}

extension Workspace {
    var subscriptionsPath: String { "\(stateDir)/subscriptions.json" }

    public func subscriptions() throws(RecSyncError) -> [Subscription] {
        guard let bytes = try FileIO.read(subscriptionsPath) else { return [] }
        do { return try JSONDecoder().decode([Subscription].self, from: Data(bytes)) } catch {
            throw .fileSystem(path: subscriptionsPath, message: "is damaged (\(error)); delete it and subscribe again")
        }
    }

    public func saveSubscriptions(_ subscriptions: [Subscription]) throws(RecSyncError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = (try? encoder.encode(subscriptions)) ?? Data("[]".utf8)
        try FileIO.writeAtomically(subscriptionsPath, Array(data) + [10])
    }
}

/// Waits for a local store's branch to move, with inotify on its ref directories.
///
/// A ref update is a lock file renamed into place, so watching `refs/heads/` (and the store
/// directory, for `packed-refs`) sees every commit without polling.
public final class LocalStoreSignal: @unchecked Sendable {
    private let fd: Int32
    public let storePath: String

    public init(storePath: String) throws(RecSyncError) {
        self.storePath = storePath
        fd = recsync_inotify_init()
        if fd < 0 { throw FileIO.error(storePath, "cannot watch for changes (inotify)") }
        for dir in ["\(storePath)/refs/heads", storePath] {
            if recsync_inotify_watch_directory(fd, dir) < 0 {
                let e = FileIO.error(dir, "cannot watch")
                close(fd)
                throw e
            }
        }
    }

    deinit { close(fd) }

    /// Blocks until something changes or `timeout` seconds pass; true if something changed.
    public func wait(timeout: Double) -> Bool {
        recsync_inotify_wait(fd, Int32(max(0, timeout * 1000))) > 0
    }
}

import CRecSyncSys
#if canImport(Glibc)
import Glibc
#endif
