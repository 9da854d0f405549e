import CRecSyncSys
import Dispatch
import Glibc
import RecSyncModel
import RecSyncSystem
import Synchronization

/// The directories a batch works in, each opened once: files are created and renamed
/// relative to them, so the kernel does not walk the whole path for each of thousands of files.
///
/// Under a workspace root each is opened without following links (`Confinement`), so nothing
/// lands outside the workspace; files are then created with `O_EXCL` or renamed over their
/// target, neither of which follows a link either. The owner calls `closeAll`.
struct BatchDirectories {
    private var open: [String: Int32] = [:]
    /// Directories found missing since the batch last made one: a page of a new zone looks
    /// for the pre-state of each of its sidecars in a `.system` not made yet, and each look
    /// walked from the workspace root again (four opens and three closes a record).
    private var missing: Set<String> = []

    /// The open directory at `path`, made if it is missing.
    mutating func directory(_ path: String) throws(RecSyncError) -> Int32 {
        if let fd = open[path] { return fd }
        // Making it may make its parents too: no earlier miss is known to hold after it.
        missing.removeAll()
        guard let opened = try FileIO.openDirectory(path, create: true) else {
            throw .fileSystem(path: path, message: "cannot create directory")
        }
        open[path] = opened.fd
        return opened.fd
    }

    /// The open directory at `path`, for removals; nil when it is not there.
    mutating func existingDirectory(_ path: String) throws(RecSyncError) -> Int32? {
        if let fd = open[path] { return fd }
        if missing.contains(path) { return nil }
        guard let opened = try FileIO.openDirectory(path, create: false) else {
            missing.insert(path)
            return nil
        }
        open[path] = opened.fd
        return opened.fd
    }

    /// Makes the entries of each of `paths` (opened before) durable.
    func sync(_ paths: Set<String>) throws(RecSyncError) {
        for path in paths {
            if let fd = open[path] { try Syscall.syncDirectory(fd, path: path) }
        }
    }

    /// Makes `files` (entries of directories opened here) durable.
    ///
    /// Up to `perFileLimit` files: an `fdatasync` of each, `syncWorkers` at a time, then an
    /// `fsync` of each directory one was created in. Not one `syncfs` for those: it flushes
    /// everything dirty on the file system, another process's large copy or build included,
    /// and a pull of 100 records waited for it. Several at a time because the file system
    /// commits the metadata of concurrent syncs together (ext4's journal does), where one
    /// after another each would wait for its own commit.
    ///
    /// Above that (a clone, a large pull) the batch's own writes are most of what is dirty:
    /// one `syncfs` costs less than a sync per file, loaded or not; where it fails, the files
    /// one by one as above.
    func syncFiles(_ files: [(directory: Int32, name: String, path: String)], createdIn created: Set<String>) throws(RecSyncError) {
        if files.count > Self.perFileLimit, let any = open.values.first, recsync_syncfs(any) == 0 { return }
        let workers = min(files.count, Self.syncWorkers)
        let next = Atomic<Int>(0)
        let failure = Mutex<RecSyncError?>(nil)
        DispatchQueue.concurrentPerform(iterations: workers) { _ in
            while true {
                let i = next.add(1, ordering: .relaxed).oldValue
                guard i < files.count, failure.withLock({ $0 == nil }) else { return }
                let file = files[i]
                do throws(RecSyncError) {
                    let fd = try Syscall.retrying("openat", path: file.path, "cannot open to sync") {
                        openat(file.directory, file.name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
                    }
                    defer { close(fd) }
                    try Syscall.retrying("fdatasync", path: file.path, "cannot sync") { fdatasync(fd) }
                } catch {
                    failure.withLock { if $0 == nil { $0 = error } }
                    return
                }
            }
        }
        if let error = failure.withLock({ $0 }) { throw error }
        try sync(created)
    }

    /// One `syncfs` of the file system that holds `path` (a directory, opened here); false
    /// where that cannot be done, for the caller to sync file by file.
    mutating func syncFileSystem(at path: String) throws(RecSyncError) -> Bool {
        guard let fd = try existingDirectory(path) else { return false }
        return recsync_syncfs(fd) == 0
    }

    /// How many files `syncFiles` syncs at once.
    static let syncWorkers = 16
    /// The most files `syncFiles` syncs one by one rather than with `syncfs`.
    static let perFileLimit = 1_000

    mutating func closeAll() {
        for fd in open.values { close(fd) }
        open.removeAll()
    }
}
