import Foundation
import Glibc
import RecSyncModel
import Synchronization

/// The workspace roots of this process: every `FileIO` path under one is opened from the root
/// down, one component at a time, without following symbolic links (DESIGN §11).
///
/// Why `Workspace` registers its root instead of `FileIO` taking a root parameter: every path
/// a workspace reads or writes is built from its `root` (zone directories, sidecars, tokens,
/// the index, the lock, conflicts) and reaches `FileIO` as a string from three modules. A
/// parameter would have to be threaded through every one of those calls, and one forgotten
/// call would follow links again without anyone noticing. Registered roots confine every path
/// under them, including those of code written later; a path under no workspace (a `--file`
/// argument, a temp directory) is opened as before. The root itself may be a link: where a
/// workspace lives is the user's choice; what lies inside it is recsync's.
package enum Confinement {
    /// Registered roots, counted: several `Workspace` values share a root (`withConfig`).
    private static let roots = Mutex<[String: Int]>([:])

    package static func register(_ root: String) {
        let key = normalized(root)
        guard !key.isEmpty else { return }
        roots.withLock { $0[key, default: 0] += 1 }
    }

    package static func unregister(_ root: String) {
        let key = normalized(root)
        roots.withLock { roots in
            guard let n = roots[key] else { return }
            roots[key] = n > 1 ? n - 1 : nil
        }
    }

    /// A root without its trailing slashes ("/" itself confines nothing).
    private static func normalized(_ root: String) -> String {
        var r = Substring(root)
        while r.hasSuffix("/") { r = r.dropLast() }
        return String(r)
    }

    /// The registered root a path lies under and the components below it; nil for a path under
    /// no workspace. Where workspaces nest, the outermost: a link inside the outer workspace is
    /// never followed, even where an inner root sits behind it.
    package static func locate(_ path: String) -> (root: String, below: [Substring])? {
        roots.withLock { roots -> (String, [Substring])? in
            guard !roots.isEmpty else { return nil }
            var slash = path.firstIndex(of: "/")
            while let s = slash {
                let candidate = String(path[..<s])
                if roots[candidate] != nil {
                    return (candidate, path[path.index(after: s)...].split(separator: "/").filter { $0 != "." })
                }
                slash = path[path.index(after: s)...].firstIndex(of: "/")
            }
            return roots[path] != nil ? (path, []) : nil
        }
    }

    /// The error for a path component that is a link.
    package static func linkRefused(_ path: String) -> RecSyncError {
        .fileSystem(
            path: path,
            message:
                """
                is a symbolic link; recsync refuses to read or write through links inside a workspace: remove\
                 it, or replace it with a real directory or file
                """
        )
    }
}

extension FileIO {
    /// Refuses a path that is a link: for a directory another library writes into by path
    /// (libgit2's mirror under `.recsync/`), where `FileIO` cannot open each file itself.
    package static func refuseLink(_ path: String) throws(RecSyncError) {
        if try info(path)?.isSymlink == true { throw Confinement.linkRefused(path) }
    }

    /// Refuses a directory tree that holds a link anywhere (the tree itself included): for a
    /// directory that libgit2 writes into by path, such as a network store's mirror, whose
    /// `objects/` or `refs/` could otherwise point outside the workspace. Visits every entry
    /// once without following links; a mirror holds a few hundred.
    /// `depth` bounds how deep it looks (1: the entries of `path` itself): a repository's
    /// `objects/xx/` hold files libgit2 only ever renames into place, which replaces a link.
    package static func refuseLinks(within path: String, depth: Int = .max) throws(RecSyncError) {
        try refuseLink(path)
        // Opened with the throwing call: a component above it that is a link (under a
        // workspace root) is refused, not taken for a tree that is not there.
        guard let opened = try openDirectory(path, create: false) else { return }
        let top = opened.fd
        // Each directory is opened once, relative to its parent's descriptor and without
        // following a link, and read once: `readdir`'s types spare a `stat` for every plain
        // file (a mirror's loose objects are most of its entries). Re-walking each entry's
        // path from the workspace root cost a push ~2,000 system calls on a small mirror,
        // more as loose objects pile up.
        var directories: [(fd: Int32, path: String, level: Int)] = [(top, path, 0)]
        defer { for d in directories { close(d.fd) } }
        while let (fd, dir, level) = directories.popLast() {
            defer { close(fd) }
            var notRegular = Set<String>()
            // Entries of types the file system did not tell (DT_UNKNOWN) are asked with `fstatat`;
            // a directory that cannot be read is an error, not a tree without links.
            for name in try readEntries(fd, path: dir, notRegular: &notRegular, unknownIsNotRegular: true) where notRegular.contains(name) {
                let entry = "\(dir)/\(name)"
                guard let found = try info(in: fd, name, path: entry) else { continue }
                if found.isSymlink { throw Confinement.linkRefused(entry) }
                guard found.isDirectory, level + 1 < depth else { continue }
                let child = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                if child < 0 {
                    if errno == ELOOP { throw Confinement.linkRefused(entry) }  // swapped for a link meanwhile
                    continue
                }
                directories.append((child, entry, level + 1))
            }
        }
    }

    /// A directory opened for `*at` calls, and whether paths below it are confined (opened
    /// without following links).
    package struct OpenDirectory {
        package let fd: Int32
        package let confined: Bool

        package init(fd: Int32, confined: Bool) {
            self.fd = fd
            self.confined = confined
        }
    }

    /// Opens a directory. Under a workspace root it is opened from the root component by
    /// component with `O_NOFOLLOW`, making missing ones with `create`; a component that is a
    /// link is refused with an error naming it. Nil when it does not exist (and `create` is
    /// false) or a component is not a directory.
    package static func openDirectory(_ path: String, create: Bool) throws(RecSyncError) -> OpenDirectory? {
        guard let (root, below) = Confinement.locate(path) else {
            if create { try makeDirectoriesFollowingLinks(path) }
            let fd = try Syscall.retrying("open", path: path, "cannot open directory", tolerating: [ENOENT, ENOTDIR]) {
                open(path.isEmpty ? "." : path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            }
            return fd.map { OpenDirectory(fd: $0, confined: false) }
        }
        if create { try makeDirectoriesFollowingLinks(root) }
        guard
            var fd = try Syscall.retrying(
                "open", path: root, "cannot open directory", tolerating: [ENOENT, ENOTDIR],
                {
                    open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                })
        else { return nil }
        var walked = root
        for component in below {
            let name = String(component)
            walked += "/" + name
            if name == ".." {
                close(fd)
                throw .fileSystem(path: path, message: "leaves the workspace through '..'; recsync opens only paths inside it")
            }
            let parent = fd
            let openNext = { Syscall.attempt { openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) } }
            var next = openNext()
            if case .failure(let failure) = next, failure.code == ENOENT, create {
                do {
                    try Syscall.retrying("mkdirat", path: walked, "cannot create directory", tolerating: [EEXIST]) { mkdirat(parent, name, 0o755) }
                    try Syscall.syncDirectory(parent, path: (walked as NSString).deletingLastPathComponent)
                } catch {
                    close(parent)
                    throw error
                }
                next = openNext()
            }
            switch next {
            case .success(let opened):
                close(parent)
                fd = opened
            case .failure(let failure):
                defer { close(parent) }
                if failure.code == ELOOP || failure.code == ENOTDIR {
                    if try info(in: parent, name, path: walked)?.isSymlink == true { throw Confinement.linkRefused(walked) }
                    if create { throw .fileSystem(path: walked, message: "is not a directory; move it away so recsync can create the directory") }
                    return nil
                }
                if failure.code == ENOENT { return nil }
                throw Syscall.error("openat", path: walked, "cannot open directory", errno: failure.code)
            }
        }
        return OpenDirectory(fd: fd, confined: true)
    }

    /// Opens the directory holding a path; nil when it does not exist (and `create` is false).
    /// The caller closes `directory.fd`.
    package static func openParent(_ path: String, create: Bool) throws(RecSyncError) -> (directory: OpenDirectory, name: String)? {
        let (dir, name) = split(path)
        if name.isEmpty || name == "." || name == ".." {
            throw .fileSystem(path: path, message: "does not name a file")
        }
        guard let directory = try openDirectory(dir, create: create) else { return nil }
        return (directory, name)
    }

    /// Opens a regular file in an open directory: never through a link when `confined`, and
    /// non-blocking, so a FIFO or device in place of a file is an error instead of a hang.
    /// Nil when there is no such file (and `O_CREAT` is not given).
    package static func openRegularFile(in directory: OpenDirectory, _ name: String, path: String, flags: Int32, mode: mode_t = 0o644)
        throws(RecSyncError) -> Int32?
    {
        let fd: Int32
        switch Syscall.attempt({ openat(directory.fd, name, flags | O_CLOEXEC | O_NONBLOCK | (directory.confined ? O_NOFOLLOW : 0), mode) }) {
        case .success(let opened): fd = opened
        case .failure(let failure) where failure.code == ENOENT || failure.code == ENOTDIR: return nil
        case .failure(let failure) where failure.code == ELOOP && directory.confined: throw Confinement.linkRefused(path)
        case .failure(let failure): throw Syscall.error("openat", path: path, "cannot open", errno: failure.code)
        }
        var st = stat()
        do {
            try Syscall.retrying("fstat", path: path, "cannot stat") { fstat(fd, &st) }
        } catch {
            close(fd)
            throw error
        }
        let kind = st.st_mode & S_IFMT
        if kind != S_IFREG {
            close(fd)
            if kind == S_IFDIR { throw .fileSystem(path: path, message: "is a directory, not a file") }
            throw .fileSystem(path: path, message: "is not a regular file (a FIFO, socket or device); recsync reads only plain files: remove it")
        }
        // Reads and writes of a regular file block as usual; only the open had to not wait.
        let flagsNow = fcntl(fd, F_GETFL)
        if flagsNow >= 0 { _ = fcntl(fd, F_SETFL, flagsNow & ~O_NONBLOCK) }
        return fd
    }

    /// Opens a regular file by path (see `openRegularFile(in:_:path:flags:mode:)`); with
    /// `O_CREAT`, missing directories are made.
    package static func openRegularFile(_ path: String, flags: Int32, mode: mode_t = 0o644) throws(RecSyncError) -> Int32? {
        guard let (directory, name) = try openParent(path, create: flags & O_CREAT != 0) else { return nil }
        defer { close(directory.fd) }
        return try openRegularFile(in: directory, name, path: path, flags: flags, mode: mode)
    }

    /// Removes a directory entry and, for a directory, everything in it, without following
    /// any link: a link is removed, never what it points to.
    package static func removeEntry(in parent: Int32, _ name: String, path: String) throws(RecSyncError) {
        var st = stat()
        guard
            try Syscall.retrying("fstatat", path: path, "cannot remove", tolerating: [ENOENT], { fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) })
                != nil
        else { return }
        if (st.st_mode & S_IFMT) == S_IFDIR {
            let fd = try Syscall.retrying("openat", path: path, "cannot open directory to remove it") {
                openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            }
            defer { close(fd) }
            for entry in list(fd: fd) { try removeEntry(in: fd, entry, path: "\(path)/\(entry)") }
            try Syscall.retrying("unlinkat", path: path, "cannot remove", tolerating: [ENOENT]) { unlinkat(parent, name, AT_REMOVEDIR) }
        } else {
            try Syscall.retrying("unlinkat", path: path, "cannot remove", tolerating: [ENOENT]) { unlinkat(parent, name, 0) }
        }
    }

    /// The entries of an open directory (not `.`/`..`); the descriptor stays open.
    package static func list(fd: Int32) -> [String] {
        var ignored = Set<String>()
        return list(fd: fd, notRegular: &ignored)
    }

    /// The entries of an open directory (see `list(fd:notRegular:unknownIsNotRegular:)`); a
    /// directory that cannot be read to its end is an error naming `path`.
    package static func readEntries(_ fd: Int32, path: String, notRegular: inout Set<String>, unknownIsNotRegular: Bool = false) throws(RecSyncError)
        -> [String]
    {
        let copy = try Syscall.retrying("dup", path: path, "cannot list directory") { dup(fd) }
        guard let dir = fdopendir(copy) else {
            let code = errno
            close(copy)
            throw Syscall.error("fdopendir", path: path, "cannot list directory", errno: code)
        }
        defer { closedir(dir) }
        rewinddir(dir)  // the copy shares the original's position
        var names: [String] = []
        while true {
            errno = 0
            guard let entry = readdir(dir) else {
                if errno != 0 { throw Syscall.error("readdir", path: path, "cannot list directory", errno: errno) }
                return names
            }
            let name = entryName(entry)
            guard name != "." && name != ".." else { continue }
            names.append(name)
            let type = entryType(entry)
            if type != UInt8(DT_REG) && (unknownIsNotRegular || type != UInt8(DT_UNKNOWN)) { notRegular.insert(name) }
        }
    }

    /// The entries of an open directory, noting in `notRegular` those `readdir` says are not
    /// plain files (links, directories, FIFOs…). A file system that does not tell types
    /// (DT_UNKNOWN) notes nothing, unless `unknownIsNotRegular`: a caller that must know
    /// still has to `stat` those.
    package static func list(fd: Int32, notRegular: inout Set<String>, unknownIsNotRegular: Bool = false) -> [String] {
        let copy = dup(fd)
        guard copy >= 0, let dir = fdopendir(copy) else {
            if copy >= 0 { close(copy) }
            return []
        }
        defer { closedir(dir) }
        rewinddir(dir)  // the copy shares the original's position
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = entryName(entry)
            guard name != "." && name != ".." else { continue }
            names.append(name)
            let type = entryType(entry)
            if type != UInt8(DT_REG) && (unknownIsNotRegular || type != UInt8(DT_UNKNOWN)) { notRegular.insert(name) }
        }
        return names
    }
}
