import CLibGit2
import Foundation
import Synchronization

/// Process-wide libgit2 set-up: initialise once, fsync the git dir, strict object creation.
/// Pack windows keep libgit2's defaults here (see `GitPackWindows`).
enum LibGit2 {
    static let ready: Bool = {
        git_libgit2_init()
        _ = recsync_git_enable_fsync_gitdir(1)
        _ = recsync_git_enable_strict_object_creation(1)
        // libgit2 caches only trees under 4 KiB; a zone's 256-way fan-out tree is ~7.5 KiB, so
        // every record looked up by path inflated it again (a 1,000-record save: ~11 % of its
        // time). Trees up to 64 KiB are cached now, within libgit2's 256 MiB cache as before.
        _ = recsync_git_set_cache_object_limit(GIT_OBJECT_TREE, 64 << 10)
        return true
    }()
}

/// How much of a store's packs libgit2 keeps mapped.
///
/// By default (1 GiB windows, 8 GiB mapped) reading a whole store maps its whole pack, which
/// counts as resident: a clone of a million records peaked at 755 MB, ~540 MB of it the
/// pack. Bounded windows (32 MiB, at most 128 MiB mapped) keep that down, but libgit2 1.5's
/// indexer fails ("unexpected data at the end of the pack") when windows of the pack it is
/// writing get closed to stay under the limit — measured: 1 MiB windows with a 4 MiB limit
/// fail on a 9 MB pack; either limit alone does not. So only a process that writes no pack
/// from then on (a clone or pull, after any fetch) bounds them.
///
/// Or nearly: a process that bounds them may still write packs later (a long `watch --pull`
/// fetches again, a push after a pull writes its commit's pack, an app embedding the engine
/// does both all day). Every pack write therefore runs inside `whileWritingPacks`, which puts
/// libgit2's defaults back while any write is under way and the bound again after the last.
public enum GitPackWindows {
    /// The bounded sizes: 4 MiB windows, at most 16 MiB mapped. Every page of a window read
    /// stays resident while it is mapped, and counts in the process's memory (a clone of
    /// 100,000 records mapped 86 MB of its pack with 128 MiB allowed).
    public static let readingWindowSize = 4 << 20
    public static let readingMappedLimit = 16 << 20
    /// The sizes while one large object (an asset) is inflated from a pack: 4 MiB windows, at
    /// most 16 MiB mapped. libgit2 1.5 reads a packed object whole, so the object itself is
    /// already in memory; the windows it was read through need not stay mapped beside it.
    public static let largeObjectWindowSize = 1 << 20
    public static let largeObjectMappedLimit = 4 << 20

    private struct State {
        /// The bound asked for (window size, mapped limit); nil: libgit2's defaults.
        var bound: (Int, Int)?
        /// libgit2's defaults, read before the first bound.
        var defaults: (Int, Int)?
        /// Pack writes under way.
        var writers = 0
        /// Large objects being read.
        var largeReads = 0

        /// What applies now: libgit2's defaults while a pack is written (see above), else the
        /// tightest asked for; nil while nothing was ever asked (the defaults are in place).
        var effective: (Int, Int)? {
            guard let defaults else { return nil }
            if writers > 0 { return defaults }
            if largeReads > 0 { return (largeObjectWindowSize, largeObjectMappedLimit) }
            return bound ?? defaults
        }

        mutating func readDefaults() {
            if defaults == nil { defaults = (Int(recsync_git_get_mwindow_size()), Int(recsync_git_get_mwindow_mapped_limit())) }
        }
    }

    private static let state = Mutex(State())

    /// Bounds the windows for the rest of the process, except while a pack is written.
    /// `windowSize` and `mappedLimit` are for tests; recsync uses the defaults.
    public static func boundForReading(windowSize: Int = readingWindowSize, mappedLimit: Int = readingMappedLimit) {
        _ = LibGit2.ready
        state.withLock { s in
            s.readDefaults()
            s.bound = (windowSize, mappedLimit)
            if let (size, limit) = s.effective { apply(size, limit) }
        }
    }

    /// Whether the process asked for bounded windows (they are lifted while packs are written).
    public static var isBoundForReading: Bool { state.withLock { $0.bound != nil } }

    /// Runs a pack write (a fetch, a push, a commit's pack) with libgit2's default windows.
    public static func whileWritingPacks<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        try adjusting({ $0.writers += 1 }, back: { $0.writers -= 1 }, body)
    }

    /// Runs the read of one large packed object with small windows (unless a pack is being
    /// written meanwhile): a pull of three 50 MB assets from a packed store peaked at 229 MB
    /// with the reading bound, two thirds of it mapped pack.
    public static func whileReadingLargeObject<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        _ = LibGit2.ready
        return try adjusting(
            { s in
                s.readDefaults(); s.largeReads += 1
            }, back: { $0.largeReads -= 1 }, body)
    }

    /// Runs `body` with the state changed by `change` (then by `back`), applying the windows that
    /// follow whenever they differ from those before.
    private static func adjusting<T, E: Error>(_ change: (inout State) -> Void, back: (inout State) -> Void, _ body: () throws(E) -> T) throws(E) -> T
    {
        state.withLock { s in
            let before = s.effective
            change(&s)
            if let now = s.effective, before.map({ $0 != now }) ?? true { apply(now.0, now.1) }
        }
        defer {
            state.withLock { s in
                let before = s.effective
                back(&s)
                if let now = s.effective, before.map({ $0 != now }) ?? true { apply(now.0, now.1) }
            }
        }
        return try body()
    }

    private static func apply(_ size: Int, _ limit: Int) {
        _ = recsync_git_set_mwindow_size(size)
        _ = recsync_git_set_mwindow_mapped_limit(limit)
    }

    /// The most bytes of packs libgit2 keeps mapped now (8 GiB by default on 64-bit systems).
    public static var mappedLimit: Int {
        _ = LibGit2.ready
        return Int(recsync_git_get_mwindow_mapped_limit())
    }
}

/// One entry of a git tree.
public struct GitTreeEntry: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        case blob, executable, tree, symlink, submodule, other
    }

    public let name: String
    public let oid: GitOID
    public let kind: Kind

    public init(name: String, oid: GitOID, kind: Kind) {
        self.name = name
        self.oid = oid
        self.kind = kind
    }

    /// Git's tree order: names compared bytewise, a tree's name as if it ended in '/'.
    public static func gitOrder(_ a: String, aIsTree: Bool, _ b: String, bIsTree: Bool) -> Int {
        var ai = a.utf8.makeIterator()
        var bi = b.utf8.makeIterator()
        while true {
            let x = ai.next()
            let y = bi.next()
            switch (x, y) {
            case let (x?, y?):
                if x != y { return x < y ? -1 : 1 }
            case (nil, nil):
                return 0
            case (nil, let y?):
                let x: UInt8 = aIsTree ? 47 : 0
                if aIsTree && y == 47 { return bi.next() == nil && !bIsTree ? 0 : -1 }
                return x < y ? -1 : 1
            case (let x?, nil):
                let y: UInt8 = bIsTree ? 47 : 0
                if bIsTree && x == 47 { return ai.next() == nil && !aIsTree ? 0 : 1 }
                return x < y ? -1 : 1
            }
        }
    }
}

/// One change to a tree for `GitRepository.updateTree`.
public enum GitTreeUpdate: Sendable, Hashable {
    case upsertBlob(path: String, oid: GitOID)
    case remove(path: String)
}

/// Who made a commit, and when.
public struct GitSignature: Sendable, Hashable {
    public var name: String
    public var email: String
    /// Seconds since the epoch.
    public var time: Int64

    public init(name: String, email: String, time: Int64) {
        self.name = name
        self.email = email
        self.time = time
    }
}

/// A commit as a plain value.
public struct GitCommit: Sendable, Hashable {
    public let oid: GitOID
    public let tree: GitOID
    public let parents: [GitOID]
    public let message: String
    public let authorName: String
    public let authorEmail: String
    public let time: Int64
}

/// An open git repository: the one type that owns libgit2 pointers.
///
/// Not thread-safe: keep one per actor, and free nothing from it after it is gone.
public final class GitRepository {
    let pointer: OpaquePointer
    private var mempack: OpaquePointer?
    /// Objects created in the in-memory pack since the last `writePack`.
    private var pendingObjects: [GitOID] = []
    private var privateConfig: String?
    public let path: String

    private init(pointer: OpaquePointer, path: String) {
        self.pointer = pointer
        self.path = path
    }

    /// Takes ownership of an open `git_repository`.
    convenience init(adopting pointer: OpaquePointer, path: String) {
        self.init(pointer: pointer, path: path)
    }

    deinit {
        git_repository_free(pointer)
        if let privateConfig { try? FileManager.default.removeItem(atPath: privateConfig) }
    }

    /// Creates a bare repository whose HEAD names `refs/heads/<initialBranch>`.
    public static func initBare(at path: String, initialBranch: String = "main") throws(GitError) -> GitRepository {
        _ = LibGit2.ready
        var options = git_repository_init_options()
        try check("git_repository_init_options_init", git_repository_init_options_init(&options, UInt32(GIT_REPOSITORY_INIT_OPTIONS_VERSION)))
        options.flags = GIT_REPOSITORY_INIT_BARE.rawValue | GIT_REPOSITORY_INIT_MKPATH.rawValue | GIT_REPOSITORY_INIT_NO_REINIT.rawValue
        var out: OpaquePointer?
        let result = initialBranch.withCString { branch -> Int32 in
            options.initial_head = branch
            return git_repository_init_ext(&out, path, &options)
        }
        try check("git_repository_init_ext", result)
        return GitRepository(pointer: out!, path: path)
    }

    /// Opens an existing repository (bare or not) at exactly this path.
    ///
    /// With `bulkWrites`, new objects go to an in-memory pack until `writePack()` stores them
    /// as one pack file: far faster than loose objects for large imports.
    public static func open(at path: String, bulkWrites: Bool = false) throws(GitError) -> GitRepository {
        _ = LibGit2.ready
        var out: OpaquePointer?
        try check("git_repository_open_ext", git_repository_open_ext(&out, path, GIT_REPOSITORY_OPEN_NO_SEARCH.rawValue, nil))
        let repo = GitRepository(pointer: out!, path: path)
        if bulkWrites {
            var odb: OpaquePointer?
            try check("git_repository_odb", git_repository_odb(&odb, repo.pointer))
            defer { git_odb_free(odb) }
            var backend: UnsafeMutablePointer<git_odb_backend>?
            try check("git_mempack_new", git_mempack_new(&backend))
            let result = git_odb_add_backend(odb, backend, 999)
            if result < 0 {
                let error = GitError.last("git_odb_add_backend", result)
                backend?.pointee.free(backend)
                throw error
            }
            repo.mempack = OpaquePointer(backend)
            try repo.disableDeltaSearch()
        }
        return repo
    }

    /// Makes this handle's pack writer store objects whole instead of searching for deltas.
    ///
    /// libgit2's pack builder always tries deltas against a window of 10 objects; for 100k
    /// small records that is most of the import time (measured 9.3 s of 12 s). Objects larger
    /// than the big-file threshold are never delta candidates, so this handle gets a private
    /// config level with the threshold at 1 byte. libgit2 1.5 reads that threshold from
    /// `pack.deltaCacheSize` (a bug in `packbuilder_config`), so both keys are set. The store's
    /// own config is not touched, and a later `git gc` on the store still packs with deltas.
    private func disableDeltaSearch() throws(GitError) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("recsync-pack-\(UUID().uuidString).config").path
        guard FileManager.default.createFile(atPath: file, contents: Data("[pack]\n\tbigFileThreshold = 1\n\tdeltaCacheSize = 1\n".utf8)) else {
            throw GitError(function: "createFile", code: -1, message: "cannot write \(file)")
        }
        privateConfig = file
        var config: OpaquePointer?
        try check("git_repository_config", git_repository_config(&config, pointer))
        defer { git_config_free(config) }
        try check("git_config_add_file_ondisk", git_config_add_file_ondisk(config, file, GIT_CONFIG_LEVEL_APP, pointer, 1))
    }

    /// Writes the objects this handle created into one pack file (with index), then empties
    /// the in-memory store.
    ///
    /// Only the new objects are packed: `git_mempack_dump` would pack every object reachable
    /// from the new commit, i.e. the whole store again.
    public func writePack() throws(GitError) {
        guard let mempack else { return }
        let backend = UnsafeMutablePointer<git_odb_backend>(mempack)
        defer { pendingObjects.removeAll() }
        var builder: OpaquePointer?
        try check("git_packbuilder_new", git_packbuilder_new(&builder, pointer))
        defer { git_packbuilder_free(builder) }
        for oid in pendingObjects {
            var raw = oid.raw
            try check("git_packbuilder_insert", git_packbuilder_insert(builder, &raw, nil))
        }
        var buffer = git_buf()
        defer { git_buf_dispose(&buffer) }
        try check("git_packbuilder_write_buf", git_packbuilder_write_buf(&buffer, builder))
        var odb: OpaquePointer?
        try check("git_repository_odb", git_repository_odb(&odb, pointer))
        defer { git_odb_free(odb) }
        try GitPackWindows.whileWritingPacks { () throws(GitError) in
            var writepack: UnsafeMutablePointer<git_odb_writepack>?
            try check("git_odb_write_pack", git_odb_write_pack(&writepack, odb, nil, nil))
            defer { recsync_odb_writepack_free(writepack) }
            var stats = git_indexer_progress()
            try check("git_odb_writepack.append", recsync_odb_writepack_append(writepack, buffer.ptr, buffer.size, &stats))
            try check("git_odb_writepack.commit", recsync_odb_writepack_commit(writepack, &stats))
        }
        try check("git_mempack_reset", git_mempack_reset(backend))
    }

    /// Remembers trees that `updateTree` created (those whose OID differs from the base's at
    /// the same path), for `writePack`.
    private func recordNewTrees(base: GitOID?, new: GitOID) throws(GitError) {
        guard base != new else { return }
        pendingObjects.append(new)
        var old: [String: GitOID] = [:]
        if let base {
            for e in try treeEntries(base) where e.kind == .tree { old[e.name] = e.oid }
        }
        for e in try treeEntries(new) where e.kind == .tree && old[e.name] != e.oid {
            try recordNewTrees(base: old[e.name], new: e.oid)
        }
    }

    // MARK: References

    /// The object a reference points at, or nil if the reference does not exist.
    public func referenceTarget(_ name: String) throws(GitError) -> GitOID? {
        var oid = git_oid()
        let result = git_reference_name_to_id(&oid, pointer, name)
        if result == GIT_ENOTFOUND.rawValue { return nil }
        try check("git_reference_name_to_id", result)
        return GitOID(raw: oid)
    }

    /// The references whose names start with `prefix` (e.g. `refs/recsync/zones/`), with the
    /// objects they point at, sorted by name; symbolic references are left out.
    public func references(under prefix: String) throws(GitError) -> [(name: String, target: GitOID)] {
        var iterator: OpaquePointer?
        try check("git_reference_iterator_glob_new", git_reference_iterator_glob_new(&iterator, pointer, prefix + "*"))
        defer { git_reference_iterator_free(iterator) }
        var found: [(name: String, target: GitOID)] = []
        while true {
            var reference: OpaquePointer?
            let result = git_reference_next(&reference, iterator)
            if result == GIT_ITEROVER.rawValue { break }
            try check("git_reference_next", result)
            defer { git_reference_free(reference) }
            guard let target = git_reference_target(reference), let name = git_reference_name(reference) else { continue }
            found.append((String(cString: name), GitOID(raw: target.pointee)))
        }
        return found.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
    }

    /// Moves a reference by compare-and-swap; false when it no longer holds `expected` or is
    /// locked by another writer.
    ///
    /// `expected == nil` means the reference must not exist yet.
    public func updateReference(_ name: String, to target: GitOID, expected: GitOID?, logMessage: String) throws(GitError) -> Bool {
        var new = target.raw
        var out: OpaquePointer?
        let result: Int32
        if let expected {
            var old = expected.raw
            result = git_reference_create_matching(&out, pointer, name, &new, 1, &old, logMessage)
        } else {
            result = git_reference_create(&out, pointer, name, &new, 0, logMessage)
        }
        // Moved since `expected`, or another writer holds the ref's lock right now: either way
        // the caller lost the race and must look again.
        if result == GIT_EMODIFIED.rawValue || result == GIT_EEXISTS.rawValue || result == GIT_ELOCKED.rawValue { return false }
        try check("git_reference_create_matching", result)
        git_reference_free(out)
        return true
    }

    // MARK: Objects

    /// Whether the object database holds this object.
    public func contains(_ oid: GitOID) throws(GitError) -> Bool {
        var odb: OpaquePointer?
        try check("git_repository_odb", git_repository_odb(&odb, pointer))
        defer { git_odb_free(odb) }
        var raw = oid.raw
        return git_odb_exists(odb, &raw) == 1
    }

    /// The size of an object, read from its header (a packed object is not inflated).
    public func objectSize(_ oid: GitOID) throws(GitError) -> Int {
        var odb: OpaquePointer?
        try check("git_repository_odb", git_repository_odb(&odb, pointer))
        defer { git_odb_free(odb) }
        var raw = oid.raw
        var size = 0
        var type = GIT_OBJECT_ANY
        try check("git_odb_read_header", git_odb_read_header(&size, &type, odb, &raw))
        return size
    }

    /// The bytes of a blob.
    public func blob(_ oid: GitOID) throws(GitError) -> [UInt8] {
        var raw = oid.raw
        var blob: OpaquePointer?
        try check("git_blob_lookup", git_blob_lookup(&blob, pointer, &raw))
        defer { git_blob_free(blob) }
        let size = Int(git_blob_rawsize(blob))
        guard size > 0, let content = git_blob_rawcontent(blob) else { return [] }
        return Array(UnsafeRawBufferPointer(start: content, count: size))
    }

    /// Stores bytes as a blob.
    public func createBlob(_ bytes: [UInt8]) throws(GitError) -> GitOID {
        var oid = git_oid()
        if let mempack {
            // Bulk: hash, then write into the in-memory pack directly. Going through the
            // object database would first look for the object in every backend, re-reading
            // the pack directory on each miss.
            let backend = UnsafeMutablePointer<git_odb_backend>(mempack)
            let result = bytes.withUnsafeBytes { buf -> Int32 in
                let hashed = git_odb_hash(&oid, buf.baseAddress, buf.count, GIT_OBJECT_BLOB)
                guard hashed == 0 else { return hashed }
                return recsync_odb_backend_write(backend, &oid, buf.baseAddress, buf.count, GIT_OBJECT_BLOB)
            }
            try check("git_odb_backend.write", result)
            let blob = GitOID(raw: oid)
            pendingObjects.append(blob)
            return blob
        }
        let result = bytes.withUnsafeBytes { buf in
            git_blob_create_from_buffer(&oid, pointer, buf.baseAddress, buf.count)
        }
        try check("git_blob_create_from_buffer", result)
        return GitOID(raw: oid)
    }

    /// The entries of a tree, in git's order.
    public func treeEntries(_ oid: GitOID) throws(GitError) -> [GitTreeEntry] {
        var raw = oid.raw
        var tree: OpaquePointer?
        try check("git_tree_lookup", git_tree_lookup(&tree, pointer, &raw))
        defer { git_tree_free(tree) }
        let count = git_tree_entrycount(tree)
        var entries: [GitTreeEntry] = []
        entries.reserveCapacity(count)
        for i in 0..<count {
            guard let entry = git_tree_entry_byindex(tree, i) else { continue }
            entries.append(Self.makeEntry(entry))
        }
        return entries
    }

    /// How many entries a tree has, without reading them.
    public func treeEntryCount(_ oid: GitOID) throws(GitError) -> Int {
        var raw = oid.raw
        var tree: OpaquePointer?
        try check("git_tree_lookup", git_tree_lookup(&tree, pointer, &raw))
        defer { git_tree_free(tree) }
        return git_tree_entrycount(tree)
    }

    /// The entry at a slash-separated path below a tree, or nil if there is none.
    public func entry(atPath path: String, inTree oid: GitOID) throws(GitError) -> GitTreeEntry? {
        var raw = oid.raw
        var tree: OpaquePointer?
        try check("git_tree_lookup", git_tree_lookup(&tree, pointer, &raw))
        defer { git_tree_free(tree) }
        var entry: OpaquePointer?
        let result = git_tree_entry_bypath(&entry, tree, path)
        if result == GIT_ENOTFOUND.rawValue { return nil }
        try check("git_tree_entry_bypath", result)
        defer { git_tree_entry_free(entry) }
        return Self.makeEntry(entry!)
    }

    private static func makeEntry(_ entry: OpaquePointer) -> GitTreeEntry {
        let name = String(cString: git_tree_entry_name(entry))
        let oid = GitOID(git_tree_entry_id(entry))
        let kind: GitTreeEntry.Kind
        switch git_tree_entry_filemode_raw(entry).rawValue {
        case GIT_FILEMODE_BLOB.rawValue: kind = .blob
        case GIT_FILEMODE_BLOB_EXECUTABLE.rawValue: kind = .executable
        case GIT_FILEMODE_TREE.rawValue: kind = .tree
        case GIT_FILEMODE_LINK.rawValue: kind = .symlink
        case GIT_FILEMODE_COMMIT.rawValue: kind = .submodule
        default: kind = .other
        }
        return GitTreeEntry(name: name, oid: oid, kind: kind)
    }

    /// Applies updates to a tree (nil = empty tree) and returns the new tree's OID.
    ///
    /// Intermediate trees are created and removed as needed; one call handles many updates.
    public func updateTree(base: GitOID?, updates: [GitTreeUpdate]) throws(GitError) -> GitOID {
        var baseline: OpaquePointer?
        if let base {
            var raw = base.raw
            try check("git_tree_lookup", git_tree_lookup(&baseline, pointer, &raw))
        }
        defer { if baseline != nil { git_tree_free(baseline) } }
        if updates.isEmpty {
            if let base { return base }
            var builder: OpaquePointer?
            try check("git_treebuilder_new", git_treebuilder_new(&builder, pointer, nil))
            defer { git_treebuilder_free(builder) }
            var oid = git_oid()
            try check("git_treebuilder_write", git_treebuilder_write(&oid, builder))
            return GitOID(raw: oid)
        }
        var paths: [UnsafeMutablePointer<CChar>] = []
        paths.reserveCapacity(updates.count)
        defer { paths.forEach { free($0) } }
        var cUpdates: [git_tree_update] = []
        cUpdates.reserveCapacity(updates.count)
        for update in updates {
            var u = git_tree_update()
            switch update {
            case .upsertBlob(let path, let oid):
                let p = strdup(path)!
                paths.append(p)
                u.action = GIT_TREE_UPDATE_UPSERT
                u.id = oid.raw
                u.filemode = GIT_FILEMODE_BLOB
                u.path = UnsafePointer(p)
            case .remove(let path):
                let p = strdup(path)!
                paths.append(p)
                u.action = GIT_TREE_UPDATE_REMOVE
                u.filemode = GIT_FILEMODE_BLOB
                u.path = UnsafePointer(p)
            }
            cUpdates.append(u)
        }
        var out = git_oid()
        try check("git_tree_create_updated", git_tree_create_updated(&out, pointer, baseline, cUpdates.count, cUpdates))
        let tree = GitOID(raw: out)
        if mempack != nil { try recordNewTrees(base: base, new: tree) }
        return tree
    }

    /// Writes a tree of exactly these entries (blobs and trees that already exist), without
    /// reading or copying what they point at: in bulk mode only the new tree itself goes to
    /// the pack (`updateTree` would also note every tree below an entry it places).
    public func createTree(_ entries: [(name: String, oid: GitOID, kind: GitTreeEntry.Kind)]) throws(GitError) -> GitOID {
        var builder: OpaquePointer?
        try check("git_treebuilder_new", git_treebuilder_new(&builder, pointer, nil))
        defer { git_treebuilder_free(builder) }
        for entry in entries {
            let mode: git_filemode_t
            switch entry.kind {
            case .tree: mode = GIT_FILEMODE_TREE
            case .executable: mode = GIT_FILEMODE_BLOB_EXECUTABLE
            case .blob: mode = GIT_FILEMODE_BLOB
            case .symlink, .submodule, .other:
                throw GitError(function: "createTree", code: -1, message: "'\(entry.name)' is not a blob or a tree")
            }
            var raw = entry.oid.raw
            try check("git_treebuilder_insert", git_treebuilder_insert(nil, builder, entry.name, &raw, mode))
        }
        var oid = git_oid()
        try check("git_treebuilder_write", git_treebuilder_write(&oid, builder))
        let tree = GitOID(raw: oid)
        if mempack != nil { pendingObjects.append(tree) }
        return tree
    }

    // MARK: Commits

    /// Reads a commit.
    public func commit(_ oid: GitOID) throws(GitError) -> GitCommit {
        var raw = oid.raw
        var commit: OpaquePointer?
        try check("git_commit_lookup", git_commit_lookup(&commit, pointer, &raw))
        defer { git_commit_free(commit) }
        let tree = GitOID(git_commit_tree_id(commit))
        var parents: [GitOID] = []
        for i in 0..<git_commit_parentcount(commit) {
            if let p = git_commit_parent_id(commit, i) { parents.append(GitOID(p)) }
        }
        let message = git_commit_message(commit).map { String(cString: $0) } ?? ""
        let author = git_commit_author(commit)
        let name = author?.pointee.name.map { String(cString: $0) } ?? ""
        let email = author?.pointee.email.map { String(cString: $0) } ?? ""
        return GitCommit(
            oid: oid, tree: tree, parents: parents, message: message, authorName: name, authorEmail: email, time: Int64(git_commit_time(commit)))
    }

    /// Writes a commit object without moving any reference.
    public func createCommit(tree: GitOID, parents: [GitOID], author: GitSignature, committer: GitSignature? = nil, message: String) throws(GitError)
        -> GitOID
    {
        var signature: UnsafeMutablePointer<git_signature>?
        try check("git_signature_new", git_signature_new(&signature, author.name, author.email, git_time_t(author.time), 0))
        defer { git_signature_free(signature) }
        var committerSignature = signature
        if let committer {
            try check("git_signature_new", git_signature_new(&committerSignature, committer.name, committer.email, git_time_t(committer.time), 0))
        }
        defer { if committer != nil { git_signature_free(committerSignature) } }
        return try writeCommit(tree: tree, parents: parents) { (out, tree, count, parents) in
            git_commit_create(out, pointer, nil, signature, committerSignature, "UTF-8", message, tree, count, parents)
        }
    }

    /// Writes a copy of a commit with another tree and other parents, keeping its author,
    /// committer (names, e-mails, times and time zones), message and message encoding: the
    /// step of replaying history onto a new base. `message` replaces the message when given.
    public func copyCommit(_ oid: GitOID, tree: GitOID, parents: [GitOID], message: String? = nil) throws(GitError) -> GitOID {
        var raw = oid.raw
        var original: OpaquePointer?
        try check("git_commit_lookup", git_commit_lookup(&original, pointer, &raw))
        defer { git_commit_free(original) }
        let text = message ?? git_commit_message_raw(original).map { String(cString: $0) } ?? ""
        return try writeCommit(tree: tree, parents: parents) { (out, tree, count, parents) in
            git_commit_create(
                out, pointer, nil, git_commit_author(original), git_commit_committer(original),
                git_commit_message_encoding(original), text, tree, count, parents)
        }
    }

    /// Looks up the tree and parents of a commit to write, runs `create` (a `git_commit_create` call) with
    /// them, and returns the new commit (noted for `writePack` in bulk mode).
    private func writeCommit(
        tree: GitOID, parents: [GitOID],
        _ create: (UnsafeMutablePointer<git_oid>, OpaquePointer?, Int, UnsafeMutablePointer<OpaquePointer?>?) -> Int32
    ) throws(GitError) -> GitOID {
        var treeRaw = tree.raw
        var treeObject: OpaquePointer?
        try check("git_tree_lookup", git_tree_lookup(&treeObject, pointer, &treeRaw))
        defer { git_tree_free(treeObject) }
        var parentObjects: [OpaquePointer?] = []
        defer { parentObjects.forEach { git_commit_free($0) } }
        for parent in parents {
            var raw = parent.raw
            var commit: OpaquePointer?
            try check("git_commit_lookup", git_commit_lookup(&commit, pointer, &raw))
            parentObjects.append(commit)
        }
        var out = git_oid()
        let result = parentObjects.withUnsafeMutableBufferPointer { buf in create(&out, treeObject, buf.count, buf.baseAddress) }
        try check("git_commit_create", result)
        let commit = GitOID(raw: out)
        if mempack != nil { pendingObjects.append(commit) }
        return commit
    }

    /// Whether `commit` is `ancestor` or one of its descendants.
    public func isDescendantOrEqual(_ commit: GitOID, of ancestor: GitOID) throws(GitError) -> Bool {
        if commit == ancestor { return true }
        var c = commit.raw
        var a = ancestor.raw
        let result = git_graph_descendant_of(pointer, &c, &a)
        try check("git_graph_descendant_of", result)
        return result == 1
    }
}
