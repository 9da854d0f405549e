import CLibGit2
import Foundation

extension GitRepository {
    /// Opens the repository whose work tree contains `path`, or creates one rooted at `path`.
    public static func openOrInitWorkTree(at path: String) throws(GitError) -> GitRepository {
        _ = LibGit2.ready
        var out: OpaquePointer?
        let found = git_repository_open_ext(&out, path, 0, nil)
        if found == 0, let out { return GitRepository(adopting: out, path: path) }
        if found != GIT_ENOTFOUND.rawValue { try check("git_repository_open_ext", found) }
        var options = git_repository_init_options()
        try check("git_repository_init_options_init", git_repository_init_options_init(&options, UInt32(GIT_REPOSITORY_INIT_OPTIONS_VERSION)))
        options.flags = GIT_REPOSITORY_INIT_MKPATH.rawValue
        let result = "main".withCString { branch -> Int32 in
            options.initial_head = branch
            return git_repository_init_ext(&out, path, &options)
        }
        try check("git_repository_init_ext", result)
        return GitRepository(adopting: out!, path: path)
    }

    /// The root of the work tree (nil for a bare repository).
    public var workTreeRoot: String? {
        guard let dir = git_repository_workdir(pointer) else { return nil }
        var root = String(cString: dir)
        while root.count > 1 && root.hasSuffix("/") { root.removeLast() }
        return root
    }

    /// The commit HEAD points at, nil on an unborn branch.
    public func headCommit() throws(GitError) -> GitOID? {
        var ref: OpaquePointer?
        let result = git_repository_head(&ref, pointer)
        if result == GIT_EUNBORNBRANCH.rawValue || result == GIT_ENOTFOUND.rawValue { return nil }
        try check("git_repository_head", result)
        defer { git_reference_free(ref) }
        guard let target = git_reference_target(ref) else { return nil }
        return GitOID(target)
    }

    /// Stages every file under the given paths (relative to the work tree) as `git add -A`
    /// would, honouring .gitignore, and returns the tree of the staged index.
    public func stageAll(_ paths: [String]) throws(GitError) -> GitOID {
        var index: OpaquePointer?
        try check("git_repository_index", git_repository_index(&index, pointer))
        defer { git_index_free(index) }
        try check("git_index_read", git_index_read(index, 1))
        var cStrings = paths.map { strdup($0) }
        defer { cStrings.forEach { free($0) } }
        let tree = try cStrings.withUnsafeMutableBufferPointer { buf throws(GitError) -> GitOID in
            var spec = git_strarray(strings: buf.baseAddress, count: buf.count)
            try check("git_index_add_all", git_index_add_all(index, &spec, GIT_INDEX_ADD_DEFAULT.rawValue, nil, nil))
            try check("git_index_update_all", git_index_update_all(index, &spec, nil, nil))
            try check("git_index_write", git_index_write(index))
            var oid = git_oid()
            try check("git_index_write_tree", git_index_write_tree(&oid, index))
            return GitOID(raw: oid)
        }
        return tree
    }

    /// Commits a tree on top of HEAD and moves HEAD's branch; nil when the tree equals HEAD's.
    public func commitOnHead(tree: GitOID, author: GitSignature, message: String) throws(GitError) -> GitOID? {
        let parent = try headCommit()
        if let parent, try commit(parent).tree == tree { return nil }
        let commit = try createCommit(tree: tree, parents: parent.map { [$0] } ?? [], author: author, message: message)
        let branch = try headBranch()
        guard try updateReference(branch, to: commit, expected: parent, logMessage: "recsync: \(message.prefix(while: { $0 != "\n" }))") else {
            throw GitError(function: "git_reference_create_matching", code: GIT_EMODIFIED.rawValue, message: "\(branch) moved while recsync was committing; commit again")
        }
        return commit
    }

    /// The branch HEAD names (`refs/heads/main` on a fresh repository).
    func headBranch() throws(GitError) -> String {
        var ref: OpaquePointer?
        try check("git_reference_lookup", git_reference_lookup(&ref, pointer, "HEAD"))
        defer { git_reference_free(ref) }
        guard let target = git_reference_symbolic_target(ref) else {
            throw GitError(function: "git_reference_symbolic_target", code: -1, message: "HEAD is detached; check out a branch before committing snapshots")
        }
        return String(cString: target)
    }
}
