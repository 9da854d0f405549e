import CRecSyncSys
import Foundation
import Glibc
import RecSyncModel

/// A path's kind and stamp, from one `lstat`.
package struct FileInfo: Sendable {
    package var stamp: FileStamp
    package var isDirectory: Bool
    package var isSymlink: Bool
    /// A plain file: the only kind recsync reads as a record or sidecar.
    package var isRegular: Bool
    /// How many names the file has: recsync overwrites in place only a file with one (writing
    /// through a hard link would change a file outside the workspace too).
    package var linkCount: UInt64

    package init(_ st: stat) {
        stamp = FileStamp(
            size: Int64(st.st_size), mtimeNanos: Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec), inode: UInt64(st.st_ino))
        isDirectory = (st.st_mode & S_IFMT) == S_IFDIR
        isSymlink = (st.st_mode & S_IFMT) == S_IFLNK
        isRegular = (st.st_mode & S_IFMT) == S_IFREG
        linkCount = UInt64(st.st_nlink)
    }

    /// A plain file as an index entry recorded it.
    package init(stamp: FileStamp) {
        self.stamp = stamp
        isDirectory = false
        isSymlink = false
        isRegular = true
        linkCount = 1
    }
}

/// Durable file operations: every write goes temp file → fsync → rename → fsync directory.
package enum FileIO {
    /// The bytes of a file, or nil if it does not exist. Only a regular file is read: under
    /// a workspace root no link is followed (see `Confinement`), and a FIFO or device is an
    /// error, not a hang.
    /// `limit`: a larger file is refused with an error naming it, unread (a 30 GB file in a
    /// workspace must be a clear problem, not a failed allocation).
    package static func read(_ path: String, limit: Int = defaultReadLimit) throws(RecSyncError) -> [UInt8]? {
        guard let fd = try openRegularFile(path, flags: O_RDONLY) else { return nil }
        defer { close(fd) }
        return try readAll(fd, path: path, limit: limit)
    }

    /// The most bytes `read` takes from a file unless told otherwise: far above any state file
    /// recsync writes (the largest, a full fetch's name log at a million records, is ~20 MB).
    package static let defaultReadLimit = 512 << 20
    /// The most bytes read from a record file or sidecar: a record holds at most 1 MB of field
    /// data, which plain JSON never takes more than 16 MB to write (escapes are 6 bytes each).
    package static let recordFileReadLimit = 16 << 20

    /// The bytes of a file in an open directory (no path walk), or nil if it does not exist.
    package static func read(in directory: Int32, _ name: String, path: String, limit: Int = defaultReadLimit) throws(RecSyncError) -> [UInt8]? {
        let confined = Confinement.locate(path) != nil
        guard let fd = try openRegularFile(in: OpenDirectory(fd: directory, confined: confined), name, path: path, flags: O_RDONLY) else {
            return nil
        }
        defer { close(fd) }
        return try readAll(fd, path: path, limit: limit)
    }

    private static func readAll(_ fd: Int32, path: String, limit: Int) throws(RecSyncError) -> [UInt8] {
        var st = stat()
        try Syscall.retrying("fstat", path: path, "cannot stat") { fstat(fd, &st) }
        guard st.st_size <= limit else {
            throw .limitExceeded(
                """
                \(path): is \(st.st_size) bytes, more than recsync reads from such a file\
                 (\(limit >= 1 << 20 ? "\(limit >> 20) MB" : "\(limit >> 10) KB")); nothing was read. Shrink or\
                 remove it
                """
            )
        }
        var bytes = [UInt8](repeating: 0, count: Int(st.st_size))
        var done = 0
        while done < bytes.count {
            let n = try bytes.withUnsafeMutableBytes { buf in Syscall.attempt { Glibc.read(fd, buf.baseAddress! + done, buf.count - done) } }
                .get("read", path: path, "cannot read")
            if n == 0 { break }
            done += n
        }
        if done < bytes.count { bytes.removeLast(bytes.count - done) }
        return bytes
    }

    /// The stamp of a file, or nil if it does not exist (see ``info(_:)``).
    package static func stamp(_ path: String) throws(RecSyncError) -> FileStamp? {
        try info(path)?.stamp
    }

    /// What `lstat` says about a path, or nil if there is nothing there (or, under a
    /// workspace root, it lies behind a link). A path that cannot be looked at (no search
    /// permission on a directory, an I/O error) is an error naming it, not "nothing there":
    /// read as absent, a record file would read as deleted, and a push would delete it.
    package static func info(_ path: String) throws(RecSyncError) -> FileInfo? {
        guard Confinement.locate(path) != nil else {
            var st = stat()
            switch Syscall.attempt({ lstat(path, &st) }) {
            case .success: return FileInfo(st)
            case .failure(let failure) where failure.code == ENOENT || failure.code == ENOTDIR: return nil
            case .failure(let failure): throw Syscall.error("lstat", path: path, "cannot look at", errno: failure.code)
            }
        }
        let parent: (directory: OpenDirectory, name: String)?
        do { parent = try openParent(path, create: false) } catch {
            if case .fileSystem(let at, _, nil) = error.reason, error == Confinement.linkRefused(at) { return nil }
            throw error
        }
        guard let parent else { return nil }
        defer { close(parent.directory.fd) }
        return try info(in: parent.directory.fd, parent.name, path: path)
    }

    /// What `fstatat` says about an entry of an open directory (no path walk), or nil if there
    /// is no such entry; any other failure is an error naming `path` (the entry's path, for
    /// the message).
    package static func info(in directory: Int32, _ name: String, path: String? = nil) throws(RecSyncError) -> FileInfo? {
        var st = stat()
        switch Syscall.attempt({ fstatat(directory, name, &st, AT_SYMLINK_NOFOLLOW) }) {
        case .success: return FileInfo(st)
        case .failure(let failure) where failure.code == ENOENT || failure.code == ENOTDIR: return nil
        case .failure(let failure): throw Syscall.error("fstatat", path: path ?? name, "cannot look at", errno: failure.code)
        }
    }

    /// An entry looked at through a directory already open (`directory`; a negative one was
    /// not there, so neither is the entry), or by its path when no directory was opened.
    package static func info(in directory: Int32?, _ name: String, orAt path: String) throws(RecSyncError) -> FileInfo? {
        guard let directory else { return try info(path) }
        return directory >= 0 ? try info(in: directory, name, path: path) : nil
    }

    /// Opens a directory for `info(in:_:)` (under a workspace root, never through a link);
    /// -1 when it is not there or is a link under a workspace root. Any other failure (no
    /// permission, too many open files) is an error: read as "not there", the files in it
    /// would read as gone.
    package static func openDirectoryIfPresent(_ path: String) throws(RecSyncError) -> Int32 {
        do { return try openDirectory(path, create: false)?.fd ?? -1 } catch {
            if case .fileSystem(let at, _, nil) = error.reason, error == Confinement.linkRefused(at) { return -1 }
            throw error
        }
    }

    /// Opens a directory for `info(in:_:)` (under a workspace root, never through a link);
    /// -1 if it cannot be opened, for whatever reason (for a yes-or-no question such as
    /// `isDirectory`; see ``openDirectoryIfPresent(_:)``).
    package static func openDirectory(_ path: String) -> Int32 {
        ((try? openDirectory(path, create: false)) ?? nil)?.fd ?? -1
    }

    /// Whether a path is a directory (under a workspace root: reached and itself no link).
    package static func isDirectory(_ path: String) -> Bool {
        guard Confinement.locate(path) != nil else {
            var st = stat()
            return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
        }
        let fd = openDirectory(path)
        if fd >= 0 { close(fd) }
        return fd >= 0
    }

    package static func isSymlink(_ path: String) throws(RecSyncError) -> Bool {
        try info(path)?.isSymlink == true
    }

    /// Entries of a directory (not `.`/`..`), sorted; empty if it does not exist.
    package static func list(_ path: String) -> [String] {
        listUnsorted(path).sorted()
    }

    /// Entries of a directory (not `.`/`..`) in the order the file system gives them.
    package static func listUnsorted(_ path: String) -> [String] {
        let fd = openDirectory(path)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        return list(fd: fd)
    }

    /// Entries of a directory (not `.`/`..`) in the order the file system gives them, and
    /// those `readdir` says are not plain files; empty when there is no such directory. Any
    /// other failure (EACCES, EMFILE, EIO) is an error, not an empty listing: where a listing
    /// decides what was deleted, one that came back short would delete records.
    package static func entries(_ path: String, unknownIsNotRegular: Bool = false) throws(RecSyncError) -> (names: [String], notRegular: Set<String>)
    {
        guard let directory = try openDirectory(path, create: false) else { return ([], []) }
        defer { close(directory.fd) }
        var notRegular = Set<String>()
        let names = try readEntries(directory.fd, path: path, notRegular: &notRegular, unknownIsNotRegular: unknownIsNotRegular)
        return (names, notRegular)
    }

    /// Entries of a directory in the order the file system gives them, and those of them that
    /// `readdir` says are not plain files (see `list(fd:notRegular:)`).
    package static func listUnsortedNotingNonRegular(_ path: String) -> (names: [String], notRegular: Set<String>) {
        let fd = openDirectory(path)
        guard fd >= 0 else { return ([], []) }
        defer { close(fd) }
        var notRegular = Set<String>()
        let names = list(fd: fd, notRegular: &notRegular)
        return (names, notRegular)
    }

    /// The type byte (`DT_REG`, `DT_LNK`, …) of a `readdir` entry, read in place.
    package static func entryType(_ entry: UnsafeMutablePointer<dirent>) -> UInt8 {
        let offset = MemoryLayout<dirent>.offset(of: \dirent.d_type) ?? 18
        return UnsafeRawPointer(entry).load(fromByteOffset: offset, as: UInt8.self)
    }

    /// The name of a `readdir` entry, read in place: an entry is only as long as its name, so
    /// copying the whole `d_name` array could read past the end of the kernel's buffer.
    package static func entryName(_ entry: UnsafeMutablePointer<dirent>) -> String {
        let offset = MemoryLayout<dirent>.offset(of: \dirent.d_name) ?? 19
        return String(cString: (UnsafeRawPointer(entry) + offset).assumingMemoryBound(to: CChar.self))
    }

    /// Creates a directory and its parents, syncing each new directory's parent. Under a
    /// workspace root, a link on the way is refused rather than followed.
    package static func makeDirectories(_ path: String) throws(RecSyncError) {
        if let directory = try openDirectory(path, create: true) { close(directory.fd) }
    }

    /// `makeDirectories` for a path under no workspace root (or for the root itself).
    package static func makeDirectoriesFollowingLinks(_ path: String) throws(RecSyncError) {
        var st = stat()
        if stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR { return }
        let parent = (path as NSString).deletingLastPathComponent
        if !parent.isEmpty && parent != path { try makeDirectoriesFollowingLinks(parent) }
        try Syscall.retrying("mkdir", path: path, "cannot create directory", tolerating: [EEXIST]) { mkdir(path, 0o755) }
        try syncDirectory(parent.isEmpty ? "." : parent)
    }

    package static func syncDirectory(_ path: String) throws(RecSyncError) {
        guard let directory = try openDirectory(path, create: false) else {
            throw .fileSystem(path: path, message: "cannot open directory: no such directory")
        }
        defer { close(directory.fd) }
        try Syscall.syncDirectory(directory.fd, path: path)
    }

    /// Writes a file durably in one step (for single state files such as tokens).
    /// Temp file beside it, fsync, rename over it, fsync of the directory: a crash leaves the
    /// old file or the new one, and at worst a `.tmp-` file that `removeStaleTemporaryFiles`
    /// clears up. `mode` is the new file's (0o600 for a private key).
    package static func writeAtomically(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o644) throws(RecSyncError) {
        try placeDurably(path, bytes, mode: mode, replacing: true)
    }

    /// Writes a new file durably, refusing to replace one: the bytes go to a temp file
    /// beside it, which is hard-linked to the name (`EEXIST` when something is there) and
    /// then removed, so a failure at any step leaves no file, never a partial one, under the
    /// name. An existing file is a `fileSystem` error whose cause's `errno` is `EEXIST`.
    package static func createAtomically(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o644) throws(RecSyncError) {
        try placeDurably(path, bytes, mode: mode, replacing: false)
    }

    private static func placeDurably(_ path: String, _ bytes: [UInt8], mode: mode_t, replacing: Bool) throws(RecSyncError) {
        guard let (directory, name) = try openParent(path, create: true) else {
            throw .fileSystem(path: path, message: "cannot create: no such directory")
        }
        defer { close(directory.fd) }
        let dir = split(path).dir
        let (file, fd) = try TempFile.create(in: directory.fd, at: dir, for: name, mode: mode)
        var tempGone = false
        defer { if !tempGone { file.remove() } }
        do {
            defer { close(fd) }
            try writeAll(fd, bytes, path: file.path)
            try Syscall.retrying("fsync", path: file.path, "cannot sync") { fsync(fd) }
        }
        if replacing {
            try file.renameIntoPlace(path)
            tempGone = true
            try Syscall.syncDirectory(directory.fd, path: dir)
            return
        }
        switch Syscall.attempt({ linkat(directory.fd, file.name, directory.fd, name, 0) }) {
        case .success:
            // The name alone holds the file now; the temp name goes before the directory is
            // synced, so that no second name of it outlives a crash.
            file.remove()
            tempGone = true
        case .failure(let failure) where failure.code == EEXIST:
            throw exists(path, call: "linkat")
        case .failure(let failure) where [EPERM, ENOTSUP, EOPNOTSUPP].contains(failure.code):
            // No hard links here (vfat, exFAT): the file is created at its name instead, and
            // removed again if it cannot be written whole.
            file.remove()
            tempGone = true
            try createInPlace(in: directory.fd, name, path: path, bytes, mode: mode)
        case .failure(let failure):
            throw Syscall.error("linkat", path: path, "cannot create", errno: failure.code)
        }
        do { try Syscall.syncDirectory(directory.fd, path: dir) } catch {
            unlinkat(directory.fd, name, 0)
            throw error
        }
    }

    private static func createInPlace(in directory: Int32, _ name: String, path: String, _ bytes: [UInt8], mode: mode_t) throws(RecSyncError) {
        let fd: Int32
        switch Syscall.attempt({ openat(directory, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode) }) {
        case .success(let opened): fd = opened
        case .failure(let failure) where failure.code == EEXIST: throw exists(path, call: "openat")
        case .failure(let failure): throw Syscall.error("openat", path: path, "cannot create", errno: failure.code)
        }
        do {
            defer { close(fd) }
            try writeAll(fd, bytes, path: path)
            try Syscall.retrying("fsync", path: path, "cannot sync") { fsync(fd) }
        } catch {
            unlinkat(directory, name, 0)
            throw error
        }
    }

    private static func exists(_ path: String, call: String) -> RecSyncError {
        .fileSystem(path: path, message: "already exists", cause: SystemCallFailure(call: call, errno: EEXIST))
    }

    /// Appends lines to a file and makes them durable. A line a crash cut short is ended
    /// first, so it cannot run into the next one (readers drop a line they cannot parse).
    package static func appendDurably(_ path: String, _ bytes: [UInt8]) throws(RecSyncError) {
        guard let fd = try openRegularFile(path, flags: O_RDWR | O_CREAT | O_APPEND) else {
            throw .fileSystem(path: path, message: "cannot open: no such directory")
        }
        defer { close(fd) }
        var out = bytes
        var st = stat()
        try Syscall.retrying("fstat", path: path, "cannot stat") { fstat(fd, &st) }
        if st.st_size > 0 {
            var last: UInt8 = 0
            let n = try Syscall.retrying("pread", path: path, "cannot read") { pread(fd, &last, 1, st.st_size - 1) }
            if n == 1, last != 10 { out.insert(10, at: 0) }
        }
        try writeAll(fd, out, path: path)
        try Syscall.retrying("fdatasync", path: path, "cannot sync") { fdatasync(fd) }
    }

    package static func writeAll(_ fd: Int32, _ bytes: [UInt8], path: String) throws(RecSyncError) {
        if let failure = writeFully(fd, bytes) { throw Syscall.error("write", path: path, "cannot write", errno: failure) }
    }

    /// Writes all of `bytes` to `fd` with write(2), retrying EINTR; nil, or the errno that
    /// stopped it (the one loop behind files, stdout and the console).
    package static func writeFully(_ fd: Int32, _ bytes: [UInt8]) -> Int32? {
        var done = 0
        while done < bytes.count {
            switch bytes[done...].withUnsafeBytes({ buf in Syscall.attempt { write(fd, buf.baseAddress, buf.count) } }) {
            case .success(0): return EIO
            case .success(let n): done += n
            case .failure(let failure): return failure.code
            }
        }
        return nil
    }

    /// Writes a file in place without syncing it (a batch's registry, made durable with the
    /// batch); never through a link under a workspace root.
    package static func writeUnsynced(_ path: String, _ bytes: [UInt8]) throws(RecSyncError) {
        guard let fd = try openRegularFile(path, flags: O_WRONLY | O_CREAT | O_TRUNC) else {
            throw .fileSystem(path: path, message: "cannot create: no such directory")
        }
        defer { close(fd) }
        try writeAll(fd, bytes, path: path)
    }

    /// Removes a file or a whole directory tree; fine if it is not there. No link is
    /// followed: a link is removed, never what it points to.
    package static func remove(_ path: String) throws(RecSyncError) {
        guard let (directory, name) = try openParent(path, create: false) else { return }
        defer { close(directory.fd) }
        try removeEntry(in: directory.fd, name, path: path)
    }

    /// Removes one file (or link) if it is there, reporting nothing: for leftovers whose
    /// removal is best effort (temp files, a batch's registry).
    package static func unlinkIfPresent(_ path: String) {
        guard let (directory, name) = (try? openParent(path, create: false)) ?? nil else { return }
        defer { close(directory.fd) }
        unlinkat(directory.fd, name, 0)
    }

    /// Moves a file or directory, creating the destination's parent; `durably`: the move
    /// survives a crash once this returns.
    package static func move(_ from: String, to: String, durably: Bool = true) throws(RecSyncError) {
        guard let (source, fromName) = try openParent(from, create: false) else {
            throw .fileSystem(path: from, message: "cannot move to \(to): no such file or directory")
        }
        defer { close(source.fd) }
        guard let (target, toName) = try openParent(to, create: true) else {
            throw .fileSystem(path: to, message: "cannot create its directory")
        }
        defer { close(target.fd) }
        try Syscall.retrying("renameat", path: from, "cannot move to \(to)") { renameat(source.fd, fromName, target.fd, toName) }
        guard durably else { return }
        try Syscall.syncDirectory(source.fd, path: from)
        try Syscall.syncDirectory(target.fd, path: to)
    }

    /// A path's directory and last component (plain string work, no Foundation path rules).
    package static func split(_ path: String) -> (dir: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let dir = path[..<slash]
        return (dir.isEmpty ? "/" : String(dir), String(path[path.index(after: slash)...]))
    }
}
