import CLibGit2
import Foundation
import Glibc

/// One pack of a repository's object database.
public struct GitPackFile: Sendable, Hashable {
    /// The path without its extension (`…/objects/pack/pack-<hash>`): `.pack` and `.idx` follow.
    public let base: String
    /// The `.pack` file's size in bytes.
    public let size: Int

    public init(base: String, size: Int) {
        self.base = base
        self.size = size
    }
}

extension GitRepository {
    /// The directory of the object database's packs.
    var packDirectory: String {
        let root = String(cString: git_repository_path(pointer))  // ends in "/"
        return root + "objects/pack"
    }

    /// The packs with an index beside them (a pack still being written has none), but not
    /// those a `.keep` file protects.
    public func packFiles() throws(GitError) -> [GitPackFile] {
        let dir = packDirectory
        guard FileManager.default.fileExists(atPath: dir) else { return [] }
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: dir) } catch {
            throw GitError(function: "readdir", code: -1, message: "cannot list \(dir): \(error.localizedDescription)")
        }
        let present = Set(names)
        var packs: [GitPackFile] = []
        for name in names where name.hasSuffix(".pack") {
            let stem = String(name.dropLast(5))
            guard present.contains(stem + ".idx"), !present.contains(stem + ".keep") else { continue }
            var info = stat()
            guard lstat("\(dir)/\(name)", &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
            packs.append(GitPackFile(base: "\(dir)/\(stem)", size: Int(info.st_size)))
        }
        return packs
    }

    /// The packs a geometric repack merges: taken from the smallest up, every pack that is
    /// not more than twice the size of all the smaller ones together joins them, so that
    /// what stays apart afterwards grows at least by a factor of two from pack to pack. Packs
    /// larger than `largest` are left alone (a clone's pack: merging it would rewrite the
    /// whole store). Empty when fewer than two would merge.
    public static func packsToMerge(_ packs: [GitPackFile], largest: Int) -> [GitPackFile] {
        let sorted = packs.filter { $0.size <= largest }.sorted { ($0.size, $0.base) < ($1.size, $1.base) }
        var total = 0
        var split = 0
        for (i, pack) in sorted.enumerated() {
            if i > 0 && pack.size <= 2 * total { split = i + 1 }
            total += pack.size
        }
        return split >= 2 ? Array(sorted.prefix(split)) : []
    }

    /// Merges small packs into one when there are more than `limit`, as `git repack
    /// --geometric=2` does (see `packsToMerge`): every fetch and push leaves a pack, and each
    /// lookup of an object searches the packs' indexes one after another, so a workspace
    /// used for years would slow down with its mirror. Returns the packs merged (none when
    /// there were `limit` or fewer).
    ///
    /// Safe beside readers and writers of the same repository: the new pack is complete and
    /// durable before any old one goes, and libgit2, like git, looks again for an object
    /// whose pack vanished. Only objects of the merged packs are written, whole (no delta
    /// search; nothing is dropped, reachable or not).
    @discardableResult
    public func consolidatePacks(whenMoreThan limit: Int, largest: Int) throws(GitError) -> [GitPackFile] {
        let packs = try packFiles()
        guard packs.count > limit else { return [] }
        let merging = Self.packsToMerge(packs, largest: largest)
        guard !merging.isEmpty else { return [] }
        return try merge(merging)
    }

    /// Writes the objects of `merging` as one pack, then removes theirs; none (and nothing
    /// changed) when one of them vanished meanwhile.
    func merge(_ merging: [GitPackFile]) throws(GitError) -> [GitPackFile] {
        // A handle of its own, whose pack writer searches no deltas (`disableDeltaSearch`).
        let writer = try GitRepository.open(at: path, bulkWrites: true)
        var objects: [git_oid] = []
        for pack in merging {
            do {
                objects += try Self.objects(inPackIndex: pack.base + ".idx")
            } catch {
                // Another process sharing the mirror merged it first (its index is gone): the
                // packs are being merged already, and this open has nothing to do.
                if access(pack.base + ".idx", F_OK) != 0 && errno == ENOENT { return [] }
                throw error
            }
        }
        var builder: OpaquePointer?
        try check("git_packbuilder_new", git_packbuilder_new(&builder, writer.pointer))
        defer { git_packbuilder_free(builder) }
        for var oid in objects {
            try check("git_packbuilder_insert", git_packbuilder_insert(builder, &oid, nil))
        }
        let directory = packDirectory
        try GitPackWindows.whileWritingPacks { () throws(GitError) in
            try check("git_packbuilder_write", git_packbuilder_write(builder, directory, 0, nil, nil))
        }
        guard let name = git_packbuilder_name(builder).map({ String(cString: $0) }) else {
            throw GitError(function: "git_packbuilder_name", code: -1, message: "the merged pack has no name")
        }
        let kept = "\(directory)/pack-\(name)"
        for pack in merging where pack.base != kept {
            // The index first: a reader that has not loaded it no longer sees the pack at all.
            for suffix in [".idx", ".pack", ".rev"] where unlink(pack.base + suffix) != 0 && errno != ENOENT {
                throw GitError(
                    function: "unlink", code: -1,
                    message: "cannot remove \(pack.base)\(suffix) after merging it into \(kept).pack: \(String(cString: strerror(errno)))")
            }
        }
        let fd = Glibc.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0, fsync(fd) == 0 else {
            let reason = String(cString: strerror(errno))
            if fd >= 0 { close(fd) }
            throw GitError(function: "fsync", code: -1, message: "cannot make the removal of merged packs in \(directory) durable: \(reason)")
        }
        close(fd)
        return merging
    }

    /// The object IDs a pack's index lists.
    static func objects(inPackIndex index: String) throws(GitError) -> [git_oid] {
        var backend: UnsafeMutablePointer<git_odb_backend>?
        try check("git_odb_backend_one_pack", git_odb_backend_one_pack(&backend, index))
        guard let backend else { throw GitError(function: "git_odb_backend_one_pack", code: -1, message: "no backend for \(index)") }
        defer { backend.pointee.free(backend) }
        guard let foreach = backend.pointee.foreach else {
            throw GitError(function: "git_odb_backend.foreach", code: -1, message: "the pack backend cannot list \(index)")
        }
        let collected = CollectedOIDs()
        let result = withExtendedLifetime(collected) {
            foreach(
                backend,
                { oid, payload in
                    guard let oid, let payload else { return -1 }
                    Unmanaged<CollectedOIDs>.fromOpaque(payload).takeUnretainedValue().oids.append(oid.pointee)
                    return 0
                }, Unmanaged.passUnretained(collected).toOpaque())
        }
        try check("git_odb_backend.foreach", result)
        return collected.oids
    }
}

/// The object IDs a pack backend's `foreach` hands its callback (passed as the payload).
private final class CollectedOIDs {
    var oids: [git_oid] = []
}
