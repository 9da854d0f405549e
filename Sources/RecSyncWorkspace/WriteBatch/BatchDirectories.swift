import CRecSyncSys
import Glibc
import RecSyncModel

/// The directories a batch works in, each opened once: files are created and renamed
/// relative to them, so the kernel does not walk the whole path for each of thousands of files.
///
/// Under a workspace root each is opened without following links (`Confinement`), so nothing
/// lands outside the workspace; files are then created with `O_EXCL` or renamed over their
/// target, neither of which follows a link either. The owner calls `closeAll`.
struct BatchDirectories {
    private var open: [String: Int32] = [:]

    /// The open directory at `path`, made if it is missing.
    mutating func directory(_ path: String) throws(RecSyncError) -> Int32 {
        if let fd = open[path] { return fd }
        guard let opened = try FileIO.openDirectory(path, create: true) else {
            throw .fileSystem(path: path, message: "cannot create directory")
        }
        open[path] = opened.fd
        return opened.fd
    }

    /// The open directory at `path`, for removals; nil when it is not there.
    mutating func existingDirectory(_ path: String) throws(RecSyncError) -> Int32? {
        if let fd = open[path] { return fd }
        guard let opened = try FileIO.openDirectory(path, create: false) else { return nil }
        open[path] = opened.fd
        return opened.fd
    }

    /// Makes the entries of each of `paths` (opened before) durable.
    func sync(_ paths: Set<String>) throws(RecSyncError) {
        for path in paths {
            if let fd = open[path] { try Syscall.syncDirectory(fd, path: path) }
        }
    }

    /// Makes every file written in these directories durable: `syncfs` on the file system
    /// that holds them (one call instead of an fsync per file), or an fsync of each of
    /// `files` where that fails.
    func syncFileSystem(fallback files: [(directory: Int32, name: String, path: String)]) throws(RecSyncError) {
        guard let any = open.values.first else { return }
        if recsync_syncfs(any) == 0 { return }
        for file in files {
            let fd = try Syscall.retrying("openat", path: file.path, "cannot open to sync") { openat(file.directory, file.name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) }
            defer { close(fd) }
            try Syscall.retrying("fsync", path: file.path, "cannot sync") { fsync(fd) }
        }
    }

    mutating func closeAll() {
        for fd in open.values { close(fd) }
        open.removeAll()
    }
}
