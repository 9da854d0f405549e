import CRecSyncSys
import Foundation
import RecSyncModel
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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

    init(_ st: stat) {
        stamp = FileStamp(size: Int64(st.st_size), mtimeNanos: Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec), inode: UInt64(st.st_ino))
        isDirectory = (st.st_mode & S_IFMT) == S_IFDIR
        isSymlink = (st.st_mode & S_IFMT) == S_IFLNK
    }

    /// A plain file as an index entry recorded it.
    init(stamp: FileStamp) {
        self.stamp = stamp
        isDirectory = false
        isSymlink = false
    }
}

/// Durable file operations: every write goes temp file → fsync → rename → fsync directory.
public enum FileIO {
    static func error(_ path: String, _ what: String) -> RecSyncError {
        .fileSystem(path: path, message: "\(what): \(String(cString: strerror(errno)))")
    }

    /// The bytes of a file, or nil if it does not exist.
    public static func read(_ path: String) throws(RecSyncError) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw error(path, "cannot open")
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw error(path, "cannot stat") }
        if (st.st_mode & S_IFMT) == S_IFDIR { throw .fileSystem(path: path, message: "is a directory, not a file") }
        var bytes = [UInt8](repeating: 0, count: Int(st.st_size))
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeMutableBytes { buf in Glibc.read(fd, buf.baseAddress! + done, buf.count - done) }
            if n < 0 { if errno == EINTR { continue }; throw error(path, "cannot read") }
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

    /// What `lstat` says about a path, or nil if there is nothing there.
    public static func info(_ path: String) -> FileInfo? {
        var st = stat()
        guard lstat(path, &st) == 0 else { return nil }
        return FileInfo(st)
    }

    /// What `fstatat` says about an entry of an open directory (no path walk), or nil.
    public static func info(in directory: Int32, _ name: String) -> FileInfo? {
        var st = stat()
        guard fstatat(directory, name, &st, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
        return FileInfo(st)
    }

    /// Opens a directory for `info(in:_:)`; -1 if it cannot be opened.
    public static func openDirectory(_ path: String) -> Int32 {
        open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    }

    public static func isDirectory(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
    }

    public static func isSymlink(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFLNK
    }

    /// Entries of a directory (not `.`/`..`), sorted; empty if it does not exist.
    public static func list(_ path: String) -> [String] {
        listUnsorted(path).sorted()
    }

    /// Entries of a directory (not `.`/`..`) in the order the file system gives them.
    public static func listUnsorted(_ path: String) -> [String] {
        guard let dir = opendir(path) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = entryName(entry)
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// The name of a `readdir` entry, read in place: an entry is only as long as its name, so
    /// copying the whole `d_name` array could read past the end of the kernel's buffer.
    public static func entryName(_ entry: UnsafeMutablePointer<dirent>) -> String {
        let offset = MemoryLayout<dirent>.offset(of: \dirent.d_name) ?? 19
        return String(cString: (UnsafeRawPointer(entry) + offset).assumingMemoryBound(to: CChar.self))
    }

    /// Creates a directory and its parents, syncing each new directory's parent.
    public static func makeDirectories(_ path: String) throws(RecSyncError) {
        if isDirectory(path) { return }
        let parent = (path as NSString).deletingLastPathComponent
        if !parent.isEmpty && parent != path { try makeDirectories(parent) }
        if mkdir(path, 0o755) != 0 && errno != EEXIST { throw error(path, "cannot create directory") }
        try syncDirectory(parent.isEmpty ? "." : parent)
    }

    public static func syncDirectory(_ path: String) throws(RecSyncError) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd < 0 { throw error(path, "cannot open directory") }
        defer { close(fd) }
        if fsync(fd) != 0 && errno != EINVAL { throw error(path, "cannot sync directory") }
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
        let fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        if fd < 0 { throw error(path, "cannot open") }
        defer { close(fd) }
        var out = bytes
        var st = stat()
        if fstat(fd, &st) == 0, st.st_size > 0 {
            var last: UInt8 = 0
            if pread(fd, &last, 1, st.st_size - 1) == 1, last != 10 { out.insert(10, at: 0) }
        }
        var done = 0
        while done < out.count {
            let n = out.withUnsafeBytes { buf in write(fd, buf.baseAddress! + done, buf.count - done) }
            if n < 0 { if errno == EINTR { continue }; throw error(path, "cannot write") }
            done += n
        }
        if fdatasync(fd) != 0 { throw error(path, "cannot sync") }
    }

    /// Removes a file or a whole directory tree; fine if it is not there.
    public static func remove(_ path: String) throws(RecSyncError) {
        do {
            if FileManager.default.fileExists(atPath: path) || isSymlink(path) {
                try FileManager.default.removeItem(atPath: path)
            }
        } catch {
            throw .fileSystem(path: path, message: "cannot remove: \(error.localizedDescription)")
        }
    }

    /// Moves a file or directory, creating the destination's parent.
    public static func move(_ from: String, to: String) throws(RecSyncError) {
        try makeDirectories((to as NSString).deletingLastPathComponent)
        if rename(from, to) != 0 { throw error(from, "cannot move to \(to)") }
        try syncDirectory((from as NSString).deletingLastPathComponent)
        try syncDirectory((to as NSString).deletingLastPathComponent)
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
        var dirFDs: [String: Int32] = [:]
        defer { for fd in dirFDs.values { close(fd) } }
        func directory(_ dir: String) throws(RecSyncError) -> Int32 {
            if let fd = dirFDs[dir] { return fd }
            try FileIO.makeDirectories(dir)
            let fd = FileIO.openDirectory(dir)
            if fd < 0 { throw FileIO.error(dir, "cannot open directory") }
            dirFDs[dir] = fd
            return fd
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
                _ = FileManager.default.createFile(atPath: registry, contents: Data(list.utf8))
            }
            registered = registry
        }
        var created: [(dir: Int32, name: String)] = []
        var succeeded = false
        // Defers run last-first: this batch's leftover files go before its registry entry.
        defer {
            if let registered {
                unlink(registered)
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
                fd = openat(dirFD, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
                if fd < 0 && errno == EEXIST && w.expect == .absent {
                    skipped.insert(key)  // someone made the file meanwhile: it is theirs
                    continue
                }
                if fd < 0 && errno != EEXIST { throw FileIO.error(w.path, "cannot create") }
                if fd >= 0 { created.append((dirFD, name)) }
            }
            if fd < 0 {
                target = prefix + String(tempCounter.add(1, ordering: .relaxed).newValue)
                fd = openat(dirFD, target, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
                if fd < 0 { throw FileIO.error("\(dir)/\(target)", "cannot create") }
                temps.append((dirFD, dir, target, name, w))
            }
            var done = 0
            while done < w.bytes.count {
                let n = w.bytes.withUnsafeBytes { buf in Glibc.write(fd, buf.baseAddress! + done, buf.count - done) }
                if n < 0 {
                    if errno == EINTR { continue }
                    close(fd)
                    throw FileIO.error("\(dir)/\(target)", "cannot write")
                }
                done += n
            }
            // One file: fsync it. Many: one syncfs below flushes them all at once.
            if writes.count == 1 && fsync(fd) != 0 {
                close(fd)
                throw FileIO.error("\(dir)/\(target)", "cannot sync")
            }
            var st = stat()
            if fstat(fd, &st) == 0 { writtenStamps[w.path] = FileInfo(st).stamp }
            close(fd)
        }
        if temps.count + created.count > 1, let dir = dirFDs.keys.first {
            try Self.syncFileSystem(containing: dir, fallback: temps.map { "\($0.dirPath)/\($0.temp)" } + writes.indices.filter { inPlace[$0] }.map { writes[$0].path })
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
                if renameat(t.dir, t.temp, t.dir, t.name) != 0 { throw FileIO.error(t.write.path, "cannot rename into place") }
                phaseDirs.insert(t.dirPath)
            }
            // Make this phase's renames durable before the next phase's.
            for dir in phaseDirs {
                if let fd = dirFDs[dir], fsync(fd) != 0 && errno != EINVAL { throw FileIO.error(dir, "cannot sync directory") }
            }
        }
        temps.removeAll { !skipped.contains($0.write.group ?? $0.write.path) }
        for r in removals {
            let key = r.group ?? r.path
            let (dir, name) = Self.split(r.path)
            if skipped.contains(key) { continue }
            if let expect = r.expect {
                let fd = FileIO.openDirectory(dir)
                let ok = fd < 0 ? true : holds(fd, name, expect)
                if fd >= 0 { close(fd) }
                if !ok { skipped.insert(key); continue }
            }
            if unlink(r.path) != 0 && errno != ENOENT { throw FileIO.error(r.path, "cannot remove") }
            removalDirs.insert(dir)
        }
        for dir in removalDirs {
            if let fd = dirFDs[dir] {
                if fsync(fd) != 0 && errno != EINVAL { throw FileIO.error(dir, "cannot sync directory") }
            } else if FileIO.isDirectory(dir) {
                try FileIO.syncDirectory(dir)
            }
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
    static func syncFileSystem(containing dir: String, fallback files: [String]) throws(RecSyncError) {
        let fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 {
            defer { close(fd) }
            if recsync_syncfs(fd) == 0 { return }
        }
        for file in files {
            let f = open(file, O_RDONLY | O_CLOEXEC)
            if f < 0 { throw FileIO.error(file, "cannot open to sync") }
            defer { close(f) }
            if fsync(f) != 0 { throw FileIO.error(file, "cannot sync") }
        }
    }
}
