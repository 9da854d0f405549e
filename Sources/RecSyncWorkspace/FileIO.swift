import CRecSyncSys
import Foundation
import RecSyncModel
import Synchronization

import Glibc

/// What `stat` says about a file, enough to tell that it has not changed since it was indexed.
public struct FileStamp: Sendable, Hashable, Codable {
    public var size: Int64
    public var mtimeNanos: Int64
    public var inode: UInt64

    public init(size: Int64, mtimeNanos: Int64, inode: UInt64) {
        self.size = size
        self.mtimeNanos = mtimeNanos
        self.inode = inode
    }
}

/// A path's kind and stamp, from one `lstat`.
public struct FileInfo: Sendable {
    public var stamp: FileStamp
    public var isDirectory: Bool
    public var isSymlink: Bool
    /// A plain file: the only kind recsync reads as a record or sidecar.
    public var isRegular: Bool

    init(_ st: stat) {
        stamp = FileStamp(size: Int64(st.st_size), mtimeNanos: Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec), inode: UInt64(st.st_ino))
        isDirectory = (st.st_mode & S_IFMT) == S_IFDIR
        isSymlink = (st.st_mode & S_IFMT) == S_IFLNK
        isRegular = (st.st_mode & S_IFMT) == S_IFREG
    }

    /// A plain file as an index entry recorded it.
    init(stamp: FileStamp) {
        self.stamp = stamp
        isDirectory = false
        isSymlink = false
        isRegular = true
    }
}

/// Durable file operations: every write goes temp file → fsync → rename → fsync directory.
public enum FileIO {
    /// The bytes of a file, or nil if it does not exist. Only a regular file is read: under
    /// a workspace root no link is followed (see `Confinement`), and a FIFO or device is an
    /// error, not a hang.
    /// `limit`: a larger file is refused with an error naming it, unread (a 30 GB file in a
    /// workspace must be a clear problem, not a failed allocation).
    public static func read(_ path: String, limit: Int = defaultReadLimit) throws(RecSyncError) -> [UInt8]? {
        guard let fd = try openRegularFile(path, flags: O_RDONLY) else { return nil }
        defer { close(fd) }
        return try readAll(fd, path: path, limit: limit)
    }

    /// The most bytes `read` takes from a file unless told otherwise: far above any state file
    /// recsync writes (the largest, a full fetch's name log at a million records, is ~20 MB).
    public static let defaultReadLimit = 512 << 20
    /// The most bytes read from a record file or sidecar: a record holds at most 1 MB of field
    /// data, which plain JSON never takes more than 16 MB to write (escapes are 6 bytes each).
    public static let recordFileReadLimit = 16 << 20

    /// The bytes of a file in an open directory (no path walk), or nil if it does not exist.
    public static func read(in directory: Int32, _ name: String, path: String, limit: Int = defaultReadLimit) throws(RecSyncError) -> [UInt8]? {
        let confined = Confinement.locate(path) != nil
        guard let fd = try openRegularFile(in: OpenDirectory(fd: directory, confined: confined), name, path: path, flags: O_RDONLY) else { return nil }
        defer { close(fd) }
        return try readAll(fd, path: path, limit: limit)
    }

    private static func readAll(_ fd: Int32, path: String, limit: Int) throws(RecSyncError) -> [UInt8] {
        var st = stat()
        try Syscall.retrying("fstat", path: path, "cannot stat") { fstat(fd, &st) }
        guard st.st_size <= limit else {
            throw .limitExceeded("\(path): is \(st.st_size) bytes, more than recsync reads from such a file (\(limit >= 1 << 20 ? "\(limit >> 20) MB" : "\(limit >> 10) KB")); nothing was read. Shrink or remove it")
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

    /// The stamp of a file, or nil if it does not exist.
    public static func stamp(_ path: String) -> FileStamp? {
        info(path)?.stamp
    }

    /// What `lstat` says about a path, or nil if there is nothing there (or, under a
    /// workspace root, it lies behind a link).
    public static func info(_ path: String) -> FileInfo? {
        guard Confinement.locate(path) != nil else {
            var st = stat()
            guard lstat(path, &st) == 0 else { return nil }
            return FileInfo(st)
        }
        guard let parent = try? openParent(path, create: false) else { return nil }
        defer { close(parent.directory.fd) }
        return info(in: parent.directory.fd, parent.name)
    }

    /// What `fstatat` says about an entry of an open directory (no path walk), or nil.
    public static func info(in directory: Int32, _ name: String) -> FileInfo? {
        var st = stat()
        guard fstatat(directory, name, &st, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
        return FileInfo(st)
    }

    /// Opens a directory for `info(in:_:)` (under a workspace root, never through a link);
    /// -1 if it cannot be opened.
    public static func openDirectory(_ path: String) -> Int32 {
        ((try? openDirectory(path, create: false)) ?? nil)?.fd ?? -1
    }

    /// Whether a path is a directory (under a workspace root: reached and itself no link).
    public static func isDirectory(_ path: String) -> Bool {
        guard Confinement.locate(path) != nil else {
            var st = stat()
            return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
        }
        let fd = openDirectory(path)
        if fd >= 0 { close(fd) }
        return fd >= 0
    }

    public static func isSymlink(_ path: String) -> Bool {
        info(path)?.isSymlink == true
    }

    /// Entries of a directory (not `.`/`..`), sorted; empty if it does not exist.
    public static func list(_ path: String) -> [String] {
        listUnsorted(path).sorted()
    }

    /// Entries of a directory (not `.`/`..`) in the order the file system gives them.
    public static func listUnsorted(_ path: String) -> [String] {
        let fd = openDirectory(path)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        return list(fd: fd)
    }

    /// The name of a `readdir` entry, read in place: an entry is only as long as its name, so
    /// copying the whole `d_name` array could read past the end of the kernel's buffer.
    public static func entryName(_ entry: UnsafeMutablePointer<dirent>) -> String {
        let offset = MemoryLayout<dirent>.offset(of: \dirent.d_name) ?? 19
        return String(cString: (UnsafeRawPointer(entry) + offset).assumingMemoryBound(to: CChar.self))
    }

    /// Creates a directory and its parents, syncing each new directory's parent. Under a
    /// workspace root, a link on the way is refused rather than followed.
    public static func makeDirectories(_ path: String) throws(RecSyncError) {
        if let directory = try openDirectory(path, create: true) { close(directory.fd) }
    }

    /// `makeDirectories` for a path under no workspace root (or for the root itself).
    static func makeDirectoriesFollowingLinks(_ path: String) throws(RecSyncError) {
        var st = stat()
        if stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR { return }
        let parent = (path as NSString).deletingLastPathComponent
        if !parent.isEmpty && parent != path { try makeDirectoriesFollowingLinks(parent) }
        try Syscall.retrying("mkdir", path: path, "cannot create directory", tolerating: [EEXIST]) { mkdir(path, 0o755) }
        try syncDirectory(parent.isEmpty ? "." : parent)
    }

    public static func syncDirectory(_ path: String) throws(RecSyncError) {
        guard let directory = try openDirectory(path, create: false) else {
            throw .fileSystem(path: path, message: "cannot open directory: no such directory")
        }
        defer { close(directory.fd) }
        try Syscall.syncDirectory(directory.fd, path: path)
    }

    /// Writes a file durably in one step (for single state files such as tokens).
    public static func writeAtomically(_ path: String, _ bytes: [UInt8]) throws(RecSyncError) {
        var batch = WriteBatch()
        batch.write(path, bytes)
        try batch.commit()
    }

    /// Appends lines to a file and makes them durable. A line a crash cut short is ended
    /// first, so it cannot run into the next one (readers drop a line they cannot parse).
    public static func appendDurably(_ path: String, _ bytes: [UInt8]) throws(RecSyncError) {
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

    static func writeAll(_ fd: Int32, _ bytes: [UInt8], path: String) throws(RecSyncError) {
        if let failure = writeFully(fd, bytes) { throw Syscall.error("write", path: path, "cannot write", errno: failure) }
    }

    /// Writes all of `bytes` to `fd` with write(2), retrying EINTR; nil, or the errno that
    /// stopped it (the one loop behind files, stdout and the console).
    public static func writeFully(_ fd: Int32, _ bytes: [UInt8]) -> Int32? {
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
    static func writeUnsynced(_ path: String, _ bytes: [UInt8]) throws(RecSyncError) {
        guard let fd = try openRegularFile(path, flags: O_WRONLY | O_CREAT | O_TRUNC) else {
            throw .fileSystem(path: path, message: "cannot create: no such directory")
        }
        defer { close(fd) }
        try writeAll(fd, bytes, path: path)
    }

    /// Removes a file or a whole directory tree; fine if it is not there. No link is
    /// followed: a link is removed, never what it points to.
    public static func remove(_ path: String) throws(RecSyncError) {
        guard let (directory, name) = try openParent(path, create: false) else { return }
        defer { close(directory.fd) }
        try removeEntry(in: directory.fd, name, path: path)
    }

    /// Removes one file (or link) if it is there, reporting nothing: for leftovers whose
    /// removal is best effort (temp files, a batch's registry).
    public static func unlinkIfPresent(_ path: String) {
        guard let (directory, name) = (try? openParent(path, create: false)) ?? nil else { return }
        defer { close(directory.fd) }
        unlinkat(directory.fd, name, 0)
    }

    /// Moves a file or directory, creating the destination's parent.
    public static func move(_ from: String, to: String) throws(RecSyncError) {
        guard let (source, fromName) = try openParent(from, create: false) else {
            throw .fileSystem(path: from, message: "cannot move to \(to): no such file or directory")
        }
        defer { close(source.fd) }
        guard let (target, toName) = try openParent(to, create: true) else {
            throw .fileSystem(path: to, message: "cannot create its directory")
        }
        defer { close(target.fd) }
        try Syscall.retrying("renameat", path: from, "cannot move to \(to)") { renameat(source.fd, fromName, target.fd, toName) }
        try Syscall.syncDirectory(source.fd, path: from)
        try Syscall.syncDirectory(target.fd, path: to)
    }
}

/// Numbers the temp files of this process.
private let tempCounter = Atomic<Int>(0)

/// A set of file writes and removals made durable together.
///
/// `commit` writes every file beside its target, makes them durable (one `syncfs` for the
/// batch), renames them into place, removes what is to be removed, then fsyncs every
/// directory touched once. After `commit` returns,
/// all of it survives a crash; before, a crash leaves each target either old or new.
public struct WriteBatch {
    /// What a write or removal expects to find at its path, checked just before it happens:
    /// a user editing a file while a sync runs must not lose the edit.
    public enum Expectation: Sendable, Hashable {
        case absent
        case unchanged(FileStamp)
    }

    struct Write {
        var path: String
        var bytes: [UInt8]
        var late: Bool
        var expect: Expectation?
        var group: String?
    }

    private var writes: [Write] = []
    private var removals: [(path: String, expect: Expectation?, group: String?)] = []
    /// A file that lists the directories this batch creates temp files in while it runs, so
    /// that a sync killed half-way can find its leftovers without listing every directory.
    let registry: String?

    public init(registry: String? = nil) {
        self.registry = registry
    }

    public var isEmpty: Bool { writes.isEmpty && removals.isEmpty }

    /// Writes a file. `late` writes are renamed into place only after every other write of the
    /// batch is durable in its directory (a sidecar never lands before its record file).
    /// With `expect`, the write is skipped when the path no longer holds what was expected;
    /// then every later operation of the same `group` is skipped too.
    public mutating func write(_ path: String, _ bytes: [UInt8], late: Bool = false, expect: Expectation? = nil, group: String? = nil) {
        writes.append(Write(path: path, bytes: bytes, late: late, expect: expect, group: group))
    }

    public mutating func remove(_ path: String, expect: Expectation? = nil, group: String? = nil) {
        removals.append((path, expect, group))
    }

    /// The stamps of the files the last `commit` wrote, taken from the written file itself
    /// (a rename keeps inode, size and mtime): what the index must record, since the path may
    /// already hold someone else's newer write by the time it could be stat'ed.
    public private(set) var writtenStamps: [String: FileStamp] = [:]
    /// The groups (or paths) the last `commit` skipped because a file changed under it.
    public private(set) var skipped: Set<String> = []

    public mutating func commit() throws(RecSyncError) {
        writtenStamps.removeAll()
        skipped.removeAll()
        // Every directory is opened once; files are created and renamed relative to it, so
        // the kernel does not walk the whole path for each of thousands of files.
        // Under a workspace root each is opened without following links (`Confinement`), so
        // nothing lands outside the workspace; files are then created with O_EXCL or renamed
        // over their target, neither of which follows a link either.
        var dirFDs: [String: Int32] = [:]
        defer { for fd in dirFDs.values { close(fd) } }
        func directory(_ dir: String) throws(RecSyncError) -> Int32 {
            if let fd = dirFDs[dir] { return fd }
            guard let opened = try FileIO.openDirectory(dir, create: true) else {
                throw .fileSystem(path: dir, message: "cannot create directory")
            }
            dirFDs[dir] = opened.fd
            return opened.fd
        }
        /// An existing directory, for removals; nil when it is not there.
        func existingDirectory(_ dir: String) throws(RecSyncError) -> Int32? {
            if let fd = dirFDs[dir] { return fd }
            guard let opened = try FileIO.openDirectory(dir, create: false) else { return nil }
            dirFDs[dir] = opened.fd
            return opened.fd
        }
        // A file that must not exist yet (`.absent`) is created in place with O_EXCL, which is
        // its check, instead of as a temp file renamed over its target: half the directory
        // operations, for what a clone and most pulls write. So that a killed batch can take
        // such files back, the registry names each with the hash of its content, and is durable
        // before the first is created. A late write of the same group (a sidecar) follows in place.
        let createsInPlace = registry != nil && writes.count > 1
        var inPlace = [Bool](repeating: false, count: writes.count)
        if createsInPlace {
            var groups = Set<String>(), notInPlace = Set<String>()
            for (i, w) in writes.enumerated() where !w.late {
                let key = w.group ?? w.path
                if w.expect == .absent { inPlace[i] = true; groups.insert(key) } else { notInPlace.insert(key) }
            }
            for (i, w) in writes.enumerated() where w.late && w.expect == nil {
                if let g = w.group, groups.contains(g), !notInPlace.contains(g) { inPlace[i] = true }
            }
        }
        let anyInPlace = inPlace.contains(true)
        var registered: String?
        if let registry, !writes.isEmpty {
            var list = Set(writes.map { Self.split($0.path).dir }).sorted().joined(separator: "\n") + "\n"
            for (i, w) in writes.enumerated() where inPlace[i] {
                list += "\(w.late ? "s" : "c")\t\(ContentHash.of(w.bytes))\t\(w.path)\n"
            }
            if anyInPlace {
                try FileIO.writeAtomically(registry, Array(list.utf8))
            } else {
                // Not synced by itself: the batch's syncfs makes it durable with the temp files.
                try FileIO.writeUnsynced(registry, Array(list.utf8))
            }
            registered = registry
        }
        var created: [(dir: Int32, name: String, path: String)] = []
        var succeeded = false
        // Defers run last-first: this batch's leftover files go before its registry entry.
        defer {
            if let registered {
                FileIO.unlinkIfPresent(registered)
                // Once in-place files may be indexed, a registry coming back after a crash would
                // take them away again: its removal is durable first.
                if anyInPlace && succeeded { try? FileIO.syncDirectory(Self.split(registered).dir) }
            }
        }
        defer { if !succeeded { for c in created { unlinkat(c.dir, c.name, 0) } } }
        var temps: [(dir: Int32, dirPath: String, temp: String, name: String, write: Write)] = []
        defer { for t in temps { unlinkat(t.dir, t.temp, 0) } }
        // Short temp names: a record's file name may already be near the 255-byte limit.
        // Numbered process-wide: batches of different zones run at once and share directories.
        let prefix = ".tmp-\(getpid())-"
        // Writes before late writes: a late write in place needs its group's file created first.
        let order = writes.indices.filter { !writes[$0].late } + writes.indices.filter { writes[$0].late }
        for i in order {
            let w = writes[i]
            let key = w.group ?? w.path
            if w.late && skipped.contains(key) { continue }
            let (dir, name) = Self.split(w.path)
            let dirFD = try directory(dir)
            var fd: Int32 = -1
            var target = name
            if inPlace[i] {
                switch Syscall.attempt({ openat(dirFD, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644) }) {
                case .success(let opened):
                    fd = opened
                    created.append((dirFD, name, w.path))
                case .failure(let failure) where failure.code == EEXIST:
                    if w.expect == .absent {
                        skipped.insert(key)  // someone made the file meanwhile: it is theirs
                        continue
                    }
                case .failure(let failure):
                    throw Syscall.error("openat", path: w.path, "cannot create", errno: failure.code)
                }
            }
            if fd < 0 {
                target = prefix + String(tempCounter.add(1, ordering: .relaxed).newValue)
                fd = try Syscall.retrying("openat", path: "\(dir)/\(target)", "cannot create") {
                    openat(dirFD, target, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o644)
                }
                temps.append((dirFD, dir, target, name, w))
            }
            defer { close(fd) }
            try FileIO.writeAll(fd, w.bytes, path: "\(dir)/\(target)")
            // One file: fsync it. Many: one syncfs below flushes them all at once.
            if writes.count == 1 {
                try Syscall.retrying("fsync", path: "\(dir)/\(target)", "cannot sync") { fsync(fd) }
            }
            var st = stat()
            if fstat(fd, &st) == 0 { writtenStamps[w.path] = FileInfo(st).stamp }
        }
        if temps.count + created.count > 1, let dir = dirFDs.values.first {
            try Self.syncFileSystem(containing: dir, fallback: temps.map { ($0.dir, $0.temp, "\($0.dirPath)/\($0.temp)") } + created.map { ($0.dir, $0.name, $0.path) })
        }
        func holds(_ dirFD: Int32, _ name: String, _ expect: Expectation?) -> Bool {
            guard let expect else { return true }
            let now = FileIO.info(in: dirFD, name)
            switch expect {
            case .absent: return now == nil
            case .unchanged(let stamp): return now?.stamp == stamp
            }
        }
        var removalDirs = Set<String>()
        for late in [false, true] {
            var phaseDirs = Set<String>()
            for t in temps where t.write.late == late {
                let key = t.write.group ?? t.write.path
                if skipped.contains(key) || !holds(t.dir, t.name, t.write.expect) {
                    skipped.insert(key)
                    writtenStamps[t.write.path] = nil
                    continue  // the deferred cleanup removes the temp file
                }
                try Syscall.retrying("renameat", path: t.write.path, "cannot rename into place") { renameat(t.dir, t.temp, t.dir, t.name) }
                phaseDirs.insert(t.dirPath)
            }
            // Make this phase's renames durable before the next phase's.
            for dir in phaseDirs {
                if let fd = dirFDs[dir] { try Syscall.syncDirectory(fd, path: dir) }
            }
        }
        temps.removeAll { !skipped.contains($0.write.group ?? $0.write.path) }
        for r in removals {
            let key = r.group ?? r.path
            let (dir, name) = Self.split(r.path)
            if skipped.contains(key) { continue }
            guard let fd = try existingDirectory(dir) else { continue }  // nothing there to remove
            if let expect = r.expect, !holds(fd, name, expect) { skipped.insert(key); continue }
            try Syscall.retrying("unlinkat", path: r.path, "cannot remove", tolerating: [ENOENT]) { unlinkat(fd, name, 0) }
            removalDirs.insert(dir)
        }
        for dir in removalDirs {
            if let fd = dirFDs[dir] { try Syscall.syncDirectory(fd, path: dir) }
        }
        succeeded = true
        writes.removeAll()
        removals.removeAll()
    }

    /// A path's directory and last component (plain string work, no Foundation path rules).
    static func split(_ path: String) -> (dir: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let dir = path[..<slash]
        return (dir.isEmpty ? "/" : String(dir), String(path[path.index(after: slash)...]))
    }

    /// Makes every written temp file durable: `syncfs` on the file system that holds them
    /// (one call instead of an fsync per file), or an fsync per file where that fails.
    static func syncFileSystem(containing dir: Int32, fallback files: [(dir: Int32, name: String, path: String)]) throws(RecSyncError) {
        if recsync_syncfs(dir) == 0 { return }
        for (dirFD, name, file) in files {
            let f = try Syscall.retrying("openat", path: file, "cannot open to sync") { openat(dirFD, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) }
            defer { close(f) }
            try Syscall.retrying("fsync", path: file, "cannot sync") { fsync(f) }
        }
    }
}
