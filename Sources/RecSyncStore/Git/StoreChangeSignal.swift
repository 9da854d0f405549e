import CRecSyncSys
import Foundation
import Glibc
import RecSyncModel
import Synchronization

/// Waits for a git store's branch to move: what `recsync watch` sleeps on between looks.
///
/// A local store is watched with inotify on its ref directories (`LocalStoreSignal`); a
/// network store is polled (ls-remote), less often the longer nothing happens (1 s up to
/// 5 s). A failed poll counts as "look now", so the look reports the outage and the watcher
/// backs off.
public final class StoreChangeSignal: Sendable {
    enum Source: Sendable {
        case local(LocalStoreSignal)
        case network(GitStore)
    }

    let source: Source
    private let poll = Mutex<(head: String?, interval: Double)>((nil, 1))

    /// The signal for a store: inotify on a local one, polling on a network one.
    init(store: GitStore) throws(RecSyncError) {
        source =
            store.remote == nil ? .local(try LocalStoreSignal(storePath: store.path, zoneRefs: store.zonesHaveOwnRefs)) : .network(store)
    }

    /// Blocks until the store may have moved (true), `timeout` seconds pass, or `shouldStop`
    /// says so (false); in short slices, so a stop request is noticed promptly.
    public func wait(timeout: Double, shouldStop: @escaping @Sendable () -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        switch source {
        case .local(let signal):
            while !shouldStop() {
                let slice = min(0.25, max(0, deadline.timeIntervalSinceNow))
                let changed = await withCheckedContinuation { continuation in
                    DispatchQueue.global().async { continuation.resume(returning: signal.wait(timeout: slice)) }
                }
                if changed { return true }
                if Date() >= deadline { return false }
            }
            return false
        case .network(let store):
            while !shouldStop() {
                let head: String
                do { head = try await store.remoteHead() } catch { return true }
                let moved = poll.withLock { s -> Bool in
                    defer { s.head = head }
                    if s.head != nil && s.head != head { s.interval = 1; return true }
                    s.interval = min(5, s.interval * 1.5)
                    return false
                }
                if moved { return true }
                let pause = min(poll.withLock { $0.interval }, deadline.timeIntervalSinceNow)
                if pause <= 0 { return false }
                let until = Date().addingTimeInterval(pause)
                while Date() < until, !shouldStop() {
                    do { try await Task.sleep(nanoseconds: 100_000_000) } catch { return false }
                }
                if Date() >= deadline { return false }
            }
            return false
        }
    }
}

/// Waits for a local store's branch to move, with inotify on its ref directories.
///
/// A ref update is a lock file renamed into place, so watching `refs/heads/` (and the store
/// directory, for `packed-refs`) sees every commit without polling.
///
/// With a ref per zone (`zoneRefs`), also `refs/recsync/zones/` and each owner's directory in
/// it (inotify does not watch a tree), looked for again at every wait so a new owner's is
/// watched too.
public final class LocalStoreSignal: @unchecked Sendable {
    private let fd: Int32
    public let storePath: String
    private let zoneRefs: Bool

    public init(storePath: String, zoneRefs: Bool = false) throws(RecSyncError) {
        self.storePath = storePath
        self.zoneRefs = zoneRefs
        fd = recsync_inotify_init()
        if fd < 0 { throw .fileSystem(path: storePath, message: "cannot watch for changes (inotify): \(String(cString: strerror(errno)))") }
        for dir in ["\(storePath)/refs/heads", storePath] {
            if recsync_inotify_watch_directory(fd, dir) < 0 {
                let e = RecSyncError.fileSystem(path: dir, message: "cannot watch: \(String(cString: strerror(errno)))")
                close(fd)
                throw e
            }
        }
        watchZoneRefs()
    }

    deinit { close(fd) }

    /// Blocks until something changes or `timeout` seconds pass; true if something changed.
    public func wait(timeout: Double) -> Bool {
        watchZoneRefs()
        return recsync_inotify_wait(fd, Int32(max(0, timeout * 1000))) > 0
    }

    /// With a ref per zone: watches the directories of zone refs that exist now. Those git has
    /// not made yet are watched once they exist (a zone ref's first write makes its owner's
    /// directory, which the watch on its parent reports); a directory that is not there is
    /// simply not watched yet.
    private func watchZoneRefs() {
        guard zoneRefs else { return }
        let zones = "\(storePath)/\(RefNames.zonesPrefix.dropLast())"
        var dirs = ["\(storePath)/refs", "\(storePath)/refs/recsync", zones]
        if let owners = try? FileManager.default.contentsOfDirectory(atPath: zones) { dirs += owners.map { "\(zones)/\($0)" } }
        for dir in dirs { _ = recsync_inotify_watch_directory(fd, dir) }
    }
}

extension GitStore {
    /// Inotify on a local store's refs, polling (ls-remote) of a network one.
    public nonisolated func changeSignal() throws(RecSyncError) -> StoreChangeSignal? {
        try StoreChangeSignal(store: self)
    }
}
