import Glibc
import RecSyncModel
import RecSyncSystem

/// A set of file writes and removals made durable together.
///
/// `commit` writes every file beside its target (a `TempFile`) or, when it must not exist yet,
/// at its target (an `InPlaceFile`, listed in the batch's `CrashRegistry` first), makes them
/// durable (an `fdatasync` of each, or one `syncfs` for a large batch), renames them into place, removes what is to be
/// removed, then fsyncs every directory touched once. After `commit` returns, all of it
/// survives a crash; before, a crash leaves each target either old or new.
///
/// A machine-owned file that already exists (a sidecar) is overwritten in place instead, once
/// the batch's other files have landed, with its old bytes in the registry first: a crash
/// mid-write puts them back (`Workspace.removeStaleTemporaryFiles`). Replacing it by a rename
/// costs a new inode and frees the old one's block, and on some file systems that is most of
/// a push of 1,000 edits (ext4 without a journal scans past recently freed inodes on every
/// create, and discards each freed block at once).
package struct WriteBatch {
    /// What a write or removal expects to find at its path, checked just before it happens:
    /// a user editing a file while a sync runs must not lose the edit.
    package enum Expectation: Sendable, Hashable {
        case absent
        case unchanged(FileStamp)
    }

    struct Write {
        var path: String
        var bytes: [UInt8]
        var late: Bool
        var expect: Expectation?
        var group: String?
        /// The name of a file already written and synced beside the target (`place`).
        var prepared: String?
        /// Recsync's own file, which no user edits: it may be overwritten in place.
        var machineOwned = false

        /// What a skip is recorded under: the group, or the path itself.
        var key: String { group ?? path }
    }

    struct Removal {
        var path: String
        var expect: Expectation?
        var group: String?
    }

    private var writes: [Write] = []
    private var removals: [Removal] = []
    /// Where the batch keeps its `CrashRegistry` while it commits; none: nothing is created in
    /// place, and a killed batch's temp files are found only where the caller looks.
    let registry: String?

    /// The permission bits of the files users own that the batch creates (record files and
    /// assets; not sidecars): 0o444 in a zone shared read-only, so that an editor warns before
    /// an edit that could not be pushed.
    package var userFileMode: mode_t

    /// Where `commit` writes its redo log (`PageJournal`, named with `-` and its number of
    /// entries after this) before anything lands, when set: the
    /// files are then not synced one by one, and stay in the journal until
    /// `Workspace.retirePageJournals` makes them durable together. A batch that places prepared
    /// files (assets) is committed as usual, its files synced.
    package var journal: String?
    /// Whether this commit syncs its files itself (no journal).
    private var durable = true

    package init(registry: String? = nil, userFileMode: mode_t = 0o644) {
        self.registry = registry
        self.userFileMode = userFileMode
    }

    package var isEmpty: Bool { writes.isEmpty && removals.isEmpty }

    /// Writes a file. `late` writes are renamed into place only after every other write of the
    /// batch is durable in its directory (a sidecar never lands before its record file).
    /// With `expect`, the write is skipped when the path no longer holds what was expected;
    /// then every later operation of the same `group` is skipped too.
    /// `machineOwned` (a sidecar: no user edits it, so it needs no `expect`): when the file
    /// exists, it is overwritten in place after the batch's other writes have landed, its old
    /// bytes kept in the registry until it is durable.
    package mutating func write(
        _ path: String, _ bytes: [UInt8], late: Bool = false, expect: Expectation? = nil, group: String? = nil, machineOwned: Bool = false
    ) {
        writes.append(Write(path: path, bytes: bytes, late: late, expect: expect, group: group, machineOwned: machineOwned && expect == nil))
    }

    /// Renames a file already written and made durable beside its target (a pulled asset,
    /// streamed into `preparedPath` in the target's directory) into place with the batch.
    /// It lands before the batch's other writes, and only if the first write of its group
    /// (the record file) still finds what it expects; otherwise the group is skipped and the
    /// prepared file removed. A failed batch removes it too: it never lands half-written.
    /// With `expect`, it lands only if the target still holds what was expected (a file the
    /// user put there meanwhile is theirs); otherwise the group is skipped too.
    package mutating func place(_ preparedPath: String, at path: String, group: String? = nil, expect: Expectation? = nil) {
        let (dir, name) = FileIO.split(preparedPath)
        precondition(dir == FileIO.split(path).dir, "a prepared file must be beside its target")
        writes.append(Write(path: path, bytes: [], late: false, expect: expect, group: group, prepared: name))
    }

    package mutating func remove(_ path: String, expect: Expectation? = nil, group: String? = nil) {
        removals.append(Removal(path: path, expect: expect, group: group))
    }

    /// The stamps of the files the last `commit` wrote, taken from the written file itself
    /// (a rename keeps inode, size and mtime): what the index must record, since the path may
    /// already hold someone else's newer write by the time it could be stat'ed.
    package private(set) var writtenStamps: [String: FileStamp] = [:]
    /// The groups (or paths) the last `commit` skipped because a file changed under it.
    package private(set) var skipped: Set<String> = []

    /// Puts the batch down: registry, files, one sync, renames in two phases, removals,
    /// registry gone. Throws at the first failure, having taken back what it created.
    package mutating func commit() throws(RecSyncError) {
        writtenStamps.removeAll()
        skipped.removeAll()
        var directories = BatchDirectories()
        defer { directories.closeAll() }
        let journaled = journal != nil && !isEmpty && !writes.contains { $0.prepared != nil }
        durable = !journaled
        defer { durable = true }
        let inPlace = registry == nil && !journaled ? [Bool](repeating: false, count: writes.count) : Self.createdInPlace(writes)
        let previous =
            (registry == nil && !journaled) || writes.count < 2
            ? [:] : try previousContents(excluding: inPlace, reading: !journaled, in: &directories)
        let anyInPlace = inPlace.contains(true) || !previous.isEmpty
        var registered: CrashRegistry?
        if journaled, let journal {
            try writeJournal(at: journal, previous: Set(previous.keys), in: &directories)
        } else if let registry, !writes.isEmpty {
            let contents = CrashRegistry.Contents(
                directories: Set(writes.map { FileIO.split($0.path).dir }).sorted(),
                creations: writes.indices.filter { inPlace[$0] }.map {
                    CrashRegistry.Creation(path: writes[$0].path, hash: ContentHash.of(writes[$0].bytes), machineOwned: writes[$0].late)
                },
                restores: previous.keys.sorted().map { CrashRegistry.Restore(path: writes[$0].path, bytes: previous[$0]!) })
            registered = try CrashRegistry.register(contents, at: registry, durably: anyInPlace)
        }
        var created: [InPlaceFile] = []
        var temps: [(file: TempFile, write: Write)] = []
        var overwritten: [Int] = []
        var succeeded = false
        var keepRegistry = false
        // Defers run last-first: this batch's leftover files go before its registry.
        defer { if !succeeded && !keepRegistry { registered?.abandon() } }
        defer { if !succeeded { for file in created { file.remove() } } }
        defer { if !succeeded { for t in temps { t.file.remove() } } }
        // Files overwritten before a failure get their old bytes back; where that fails too,
        // the registry stays, for the next command to put them back. A journaled batch leaves
        // its journal instead, which the next command finishes the batch from.
        defer {
            if !succeeded && !journaled {
                for i in overwritten {
                    let (dir, name) = FileIO.split(writes[i].path)
                    do throws(RecSyncError) {
                        try Self.overwrite(in: directories.directory(dir), name, path: writes[i].path, with: previous[i]!, sync: true)
                    } catch {
                        keepRegistry = true
                    }
                }
            }
        }

        try put(inPlace, skipping: Set(previous.keys), in: &directories, created: &created, temps: &temps)
        if durable, temps.count + created.count > 1 {
            var files: [(directory: Int32, name: String, path: String)] =
                temps.map { ($0.file.directory, $0.file.name, $0.file.path) } + created.map { ($0.directory, $0.name, $0.path) }
            var createdIn = Set(created.map { FileIO.split($0.path).dir })
            if let registry, registered != nil, !anyInPlace {  // written unsynced: durable with the files
                let (dir, name) = FileIO.split(registry)
                files.append((try directories.directory(dir), name, registry))
                createdIn.insert(dir)
            }
            try directories.syncFiles(files, createdIn: createdIn)
        }
        // Prepared files (assets) first, as long as their group's first write would still go
        // ahead; the late writes' renames only after the others' are durable in their directories.
        let prepared = temps.filter { $0.write.prepared != nil }
        if !prepared.isEmpty {
            for t in temps where t.write.prepared == nil && !t.write.late {
                if !(try t.write.expect?.holds(in: t.file.directory, t.file.target) ?? true) { skipped.insert(t.write.key) }
            }
            try renameIntoPlace(prepared, directories: directories)
        }
        try renameIntoPlace(temps.filter { !$0.write.late && $0.write.prepared == nil }, directories: directories)
        try overwriteInPlace(previous.keys.sorted(), in: &directories, done: &overwritten)
        try renameIntoPlace(temps.filter { $0.write.late && $0.write.prepared == nil }, directories: directories)
        try removeFiles(in: &directories)

        succeeded = true
        writes.removeAll()
        removals.removeAll()
        for t in temps where skipped.contains(t.write.key) { t.file.remove() }
        try registered?.remove(durably: anyInPlace)
    }

    /// Which writes are created in place: a file that must not exist yet (`.absent`) is
    /// created at its target with `O_EXCL`, which is its check, instead of as a temp file
    /// renamed over its target: half the directory operations, for what a clone and most
    /// pulls write. A late write of the same group (a sidecar) follows in place. A single
    /// write is not worth the registry's own sync.
    static func createdInPlace(_ writes: [Write]) -> [Bool] {
        var inPlace = [Bool](repeating: false, count: writes.count)
        guard writes.count > 1 else { return inPlace }
        var groups = Set<String>(), notInPlace = Set<String>()
        for (i, w) in writes.enumerated() where !w.late && w.prepared == nil {
            if w.expect == .absent { inPlace[i] = true; groups.insert(w.key) } else { notInPlace.insert(w.key) }
        }
        for (i, w) in writes.enumerated() where w.late && w.expect == nil {
            if let g = w.group, groups.contains(g), !notInPlace.contains(g) { inPlace[i] = true }
        }
        return inPlace
    }

    /// Writes every file, in place or as a temp file; a single file is fsynced here, many
    /// are synced together by the caller. Writes go before late writes: a late write in
    /// place needs its group's file created first.
    private mutating func put(
        _ inPlace: [Bool], skipping overwrites: Set<Int>, in directories: inout BatchDirectories, created: inout [InPlaceFile],
        temps: inout [(file: TempFile, write: Write)]
    ) throws(RecSyncError) {
        let order = writes.indices.filter { !writes[$0].late } + writes.indices.filter { writes[$0].late }
        for i in order where !overwrites.contains(i) {
            let w = writes[i]
            if w.late && skipped.contains(w.key) { continue }
            let (dir, name) = FileIO.split(w.path)
            let dirFD = try directories.directory(dir)
            if let prepared = w.prepared {
                if userFileMode != 0o644 {
                    try Syscall.retrying("fchmodat", path: "\(dir)/\(prepared)", "cannot set the permissions of") {
                        fchmodat(dirFD, prepared, userFileMode, 0)
                    }
                }
                temps.append((TempFile(directory: dirFD, directoryPath: dir, name: prepared, target: name), w))
                if let info = try FileIO.info(in: dirFD, prepared) { writtenStamps[w.path] = info.stamp }
                continue
            }
            var opened: (fd: Int32, path: String)?
            let mode = w.late || w.machineOwned ? 0o644 : userFileMode
            if inPlace[i] {
                switch try InPlaceFile.create(in: dirFD, name, path: w.path, mode: mode) {
                case .created(let file, let fd):
                    created.append(file)
                    opened = (fd, w.path)
                case .exists where w.expect == .absent:
                    skipped.insert(w.key)  // someone made the file meanwhile: it is theirs
                    continue
                case .exists:
                    break  // a sidecar from before: replaced by a rename, as machine-owned
                }
            }
            if opened == nil {
                let (file, fd) = try TempFile.create(in: dirFD, at: dir, for: name, mode: mode)
                temps.append((file, w))
                opened = (fd, file.path)
            }
            guard let (fd, path) = opened else { continue }
            defer { close(fd) }
            try FileIO.writeAll(fd, w.bytes, path: path)
            if writes.count == 1 && durable {
                try Syscall.retrying("fsync", path: path, "cannot sync") { fsync(fd) }
            }
            var st = stat()
            if fstat(fd, &st) == 0 { writtenStamps[w.path] = FileInfo(st).stamp }
        }
    }

    /// The most bytes of a machine-owned file kept to put back: a sidecar is a few hundred.
    static let restoreLimit = 64 << 10

    /// The current bytes of each machine-owned file this batch may overwrite in place, by
    /// write index: those that exist as regular files of at most `restoreLimit` bytes. Any
    /// other (missing, larger, unreadable) is written beside its target and renamed, as usual.
    /// Not `reading`: the same files, with no bytes (a journaled batch needs none to put back).
    private func previousContents(excluding inPlace: [Bool], reading: Bool, in directories: inout BatchDirectories) throws(RecSyncError)
        -> [Int: [UInt8]]
    {
        var previous: [Int: [UInt8]] = [:]
        for (i, w) in writes.enumerated() where w.machineOwned && !inPlace[i] && w.prepared == nil {
            let (dir, name) = FileIO.split(w.path)
            guard let dirFD = try directories.existingDirectory(dir),
                let info = try FileIO.info(in: dirFD, name), info.isRegular, info.linkCount == 1, info.stamp.size <= Self.restoreLimit
            else { continue }
            if !reading {
                previous[i] = []
                continue
            }
            do throws(RecSyncError) {
                if let bytes = try FileIO.read(in: dirFD, name, path: w.path, limit: Self.restoreLimit) { previous[i] = bytes }
            } catch {
                continue  // not readable as a plain file: replaced by a rename, which reports what is wrong
            }
        }
        return previous
    }

    /// Overwrites the machine-owned files `indices` in place (those whose group went ahead),
    /// then makes them durable. `done` lists each as it is written, for a failed batch to
    /// put back.
    private mutating func overwriteInPlace(_ indices: [Int], in directories: inout BatchDirectories, done: inout [Int]) throws(RecSyncError) {
        var files: [(directory: Int32, name: String, path: String)] = []
        for i in indices where !skipped.contains(writes[i].key) {
            let w = writes[i]
            let (dir, name) = FileIO.split(w.path)
            let dirFD = try directories.directory(dir)
            done.append(i)
            writtenStamps[w.path] = try Self.overwrite(in: dirFD, name, path: w.path, with: w.bytes, sync: false)
            files.append((dirFD, name, w.path))
        }
        if durable && !files.isEmpty { try directories.syncFiles(files, createdIn: []) }
    }

    /// Writes `bytes` over the regular file `name` of an open directory, keeping its inode;
    /// returns its stamp as written. The file must exist, with no other name: nothing is
    /// created, and nothing is written through a hard link.
    @discardableResult
    static func overwrite(in directory: Int32, _ name: String, path: String, with bytes: [UInt8], sync: Bool) throws(RecSyncError) -> FileStamp {
        let confined = Confinement.locate(path) != nil
        guard let fd = try FileIO.openRegularFile(in: FileIO.OpenDirectory(fd: directory, confined: confined), name, path: path, flags: O_WRONLY)
        else {
            throw .fileSystem(path: path, message: "is gone: it was removed while recsync was writing it; run the command again")
        }
        defer { close(fd) }
        var st = stat()
        try Syscall.retrying("fstat", path: path, "cannot stat") { fstat(fd, &st) }
        guard st.st_nlink == 1 else {
            throw .fileSystem(
                path: path,
                message:
                    """
                    has another name (a hard link) now; recsync does not write through one. Remove the other name,\
                     or this file, and run the command again
                    """
            )
        }
        var done = 0
        while done < bytes.count {
            let n = try bytes.withUnsafeBytes { buf in Syscall.attempt { pwrite(fd, buf.baseAddress! + done, buf.count - done, off_t(done)) } }
                .get("pwrite", path: path, "cannot write")
            if n == 0 { throw Syscall.error("pwrite", path: path, "cannot write", errno: EIO) }
            done += n
        }
        try Syscall.retrying("ftruncate", path: path, "cannot write") { ftruncate(fd, off_t(bytes.count)) }
        if sync { try Syscall.retrying("fdatasync", path: path, "cannot sync") { fdatasync(fd) } }
        try Syscall.retrying("fstat", path: path, "cannot stat") { fstat(fd, &st) }
        return FileInfo(st).stamp
    }

    /// Writes the batch's `PageJournal` durably: every write and removal in the order `commit`
    /// applies them, each with what its path holds now (the expectation, or a `stat`).
    /// `previous`: the machine-owned files overwritten in place, which land between the
    /// writes and the late writes.
    private func writeJournal(at path: String, previous: Set<Int>, in directories: inout BatchDirectories) throws(RecSyncError) {
        func before(_ path: String, _ expect: Expectation?) throws(RecSyncError) -> FileStamp? {
            switch expect {
            case .absent: return nil
            case .unchanged(let stamp): return stamp
            case nil:
                let (dir, name) = FileIO.split(path)
                guard let fd = try directories.existingDirectory(dir) else { return nil }
                return try FileIO.info(in: fd, name)?.stamp
            }
        }
        let order =
            writes.indices.filter { !writes[$0].late && !previous.contains($0) } + previous.sorted()
            + writes.indices.filter { writes[$0].late && !previous.contains($0) }
        var entries: [PageJournal.Entry] = []
        for i in order {
            let w = writes[i]
            let mode = w.late || w.machineOwned ? 0o644 : userFileMode
            entries.append(
                PageJournal.Entry(
                    path: w.path, bytes: w.bytes, before: try before(w.path, w.expect), group: w.group, machineOwned: w.machineOwned || w.late,
                    mode: UInt32(mode)))
        }
        for r in removals {
            entries.append(
                PageJournal.Entry(path: r.path, bytes: nil, before: try before(r.path, r.expect), group: r.group, machineOwned: false, mode: 0))
        }
        // Named with its count: a pull's end can tell how many files it syncs without reading it.
        try FileIO.writeAtomically("\(path)-\(entries.count)", PageJournal(entries: entries).encoded())
    }

    /// Renames one phase's temp files over their targets, each only if its target still holds
    /// what was expected (else its group is skipped), then makes the renames durable.
    private mutating func renameIntoPlace(_ phase: [(file: TempFile, write: Write)], directories: BatchDirectories) throws(RecSyncError) {
        var touched = Set<String>()
        for (file, w) in phase {
            let holds = skipped.contains(w.key) ? false : try w.expect?.holds(in: file.directory, file.target) ?? true
            if !holds {
                skipped.insert(w.key)
                writtenStamps[w.path] = nil
                continue  // the temp file is removed after the commit
            }
            try file.renameIntoPlace(w.path)
            touched.insert(file.directoryPath)
        }
        if durable { try directories.sync(touched) }
    }

    /// Removes the files to be removed whose group went ahead and that still hold what was
    /// expected, then makes the removals durable.
    private mutating func removeFiles(in directories: inout BatchDirectories) throws(RecSyncError) {
        var touched = Set<String>()
        for r in removals {
            let key = r.group ?? r.path
            let (dir, name) = FileIO.split(r.path)
            if skipped.contains(key) { continue }
            guard let fd = try directories.existingDirectory(dir) else { continue }  // nothing there to remove
            if let expect = r.expect, try !expect.holds(in: fd, name) { skipped.insert(key); continue }
            try Syscall.retrying("unlinkat", path: r.path, "cannot remove", tolerating: [ENOENT]) { unlinkat(fd, name, 0) }
            touched.insert(dir)
        }
        if durable { try directories.sync(touched) }
    }
}

extension WriteBatch.Expectation {
    /// Whether the entry `name` of an open directory is as expected.
    func holds(in directory: Int32, _ name: String) throws(RecSyncError) -> Bool {
        let now = try FileIO.info(in: directory, name)
        switch self {
        case .absent: return now == nil
        case .unchanged(let stamp): return now?.stamp == stamp
        }
    }
}
