import CLibGit2
import Foundation

extension GitRepository {
    /// Opens the repository whose work tree is exactly `path` (its own `.git`), or creates
    /// one there: a repository that merely encloses `path` is not used, so that a snapshot
    /// never lands in a repository of someone else's project.
    public static func openOrInitWorkTree(at path: String) throws(GitError) -> GitRepository {
        _ = LibGit2.ready
        var out: OpaquePointer?
        let found = git_repository_open_ext(&out, path, GIT_REPOSITORY_OPEN_NO_SEARCH.rawValue, nil)
        if found == 0, let out {
            let repository = GitRepository(adopting: out, path: path)
            let root = URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
            let top = repository.workTreeRoot.map { URL(fileURLWithPath: $0).standardizedFileURL.resolvingSymlinksInPath().path }
            guard top == root else {
                throw GitError(
                    function: "git_repository_open_ext", code: -1,
                    message:
                        """
                        \(path) is a git repository without a work tree at \(path) (its work tree: \(top ?? "none"));\
                         snapshots need an ordinary repository there
                        """
                )
            }
            return repository
        }
        if found != GIT_ENOTFOUND.rawValue { try check("git_repository_open_ext", found) }
        var options = git_repository_init_options()
        try check("git_repository_init_options_init", git_repository_init_options_init(&options, UInt32(GIT_REPOSITORY_INIT_OPTIONS_VERSION)))
        options.flags = GIT_REPOSITORY_INIT_MKPATH.rawValue
        let result = "main".withCString { branch -> Int32 in
            options.initial_head = branch
            return git_repository_init_ext(&out, path, &options)
        }
        try check("git_repository_init_ext", result)
        guard let out else { throw GitError(function: "git_repository_init_ext", code: -1, message: "no repository created at \(path)") }
        return GitRepository(adopting: out, path: path)
    }

    /// The value of a configuration key (`user.name`), nil if unset.
    public func configString(_ key: String) -> String? {
        var config: OpaquePointer?
        guard git_repository_config_snapshot(&config, pointer) == 0 else { return nil }
        defer { git_config_free(config) }
        var value: UnsafePointer<CChar>?
        guard git_config_get_string(&value, config, key) == 0, let value else { return nil }
        return String(cString: value)
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

    /// Stages every file under `paths` (relative to the work tree) as `git add -A -- paths`
    /// would, honouring .gitignore, and returns the tree to commit: HEAD's tree with those
    /// paths as staged. Whatever else is staged stays staged and out of the tree.
    public func stageOnly(_ paths: [String]) throws(GitError) -> GitOID {
        var index: OpaquePointer?
        try check("git_repository_index", git_repository_index(&index, pointer))
        defer { git_index_free(index) }
        try check("git_index_read", git_index_read(index, 1))
        var cStrings = paths.map { strdup($0) }
        defer { cStrings.forEach { free($0) } }
        try cStrings.withUnsafeMutableBufferPointer { buf throws(GitError) in
            var spec = git_strarray(strings: buf.baseAddress, count: buf.count)
            try check("git_index_add_all", git_index_add_all(index, &spec, GIT_INDEX_ADD_DEFAULT.rawValue, nil, nil))
            try check("git_index_update_all", git_index_update_all(index, &spec, nil, nil))
            try check("git_index_write", git_index_write(index))
        }
        // The tree: HEAD's, with the given paths replaced by their staged entries.
        var scratch: OpaquePointer?
        try check("git_index_new", git_index_new(&scratch))
        defer { git_index_free(scratch) }
        if let head = try headCommit() {
            var raw = try commit(head).tree.raw
            var tree: OpaquePointer?
            try check("git_tree_lookup", git_tree_lookup(&tree, pointer, &raw))
            defer { git_tree_free(tree) }
            try check("git_index_read_tree", git_index_read_tree(scratch, tree))
        }
        for path in paths {
            let removed = git_index_remove_directory(scratch, path, 0)
            if removed != GIT_ENOTFOUND.rawValue { try check("git_index_remove_directory", removed) }
        }
        for i in 0..<git_index_entrycount(index) {
            guard let entry = git_index_get_byindex(index, i), let name = entry.pointee.path else { continue }
            let entryPath = String(cString: name)
            guard paths.contains(where: { entryPath.hasPrefix($0 + "/") }) else { continue }
            try check("git_index_add", git_index_add(scratch, entry))
        }
        var oid = git_oid()
        try check("git_index_write_tree_to", git_index_write_tree_to(&oid, scratch, pointer))
        return GitOID(raw: oid)
    }

    /// Commits a tree on top of HEAD and moves HEAD's branch; nil when the tree equals HEAD's.
    public func commitOnHead(tree: GitOID, author: GitSignature, committer: GitSignature? = nil, message: String) throws(GitError) -> GitOID? {
        let parent = try headCommit()
        if let parent, try commit(parent).tree == tree { return nil }
        let commit = try createCommit(tree: tree, parents: parent.map { [$0] } ?? [], author: author, committer: committer, message: message)
        let branch = try headBranch()
        guard try updateReference(branch, to: commit, expected: parent, logMessage: "recsync: \(message.prefix(while: { $0 != "\n" }))") else {
            throw GitError(
                function: "git_reference_create_matching", code: GIT_EMODIFIED.rawValue,
                message: "\(branch) moved while recsync was committing; commit again")
        }
        return commit
    }

    /// The branch HEAD names (`refs/heads/main` on a fresh repository).
    func headBranch() throws(GitError) -> String {
        var ref: OpaquePointer?
        try check("git_reference_lookup", git_reference_lookup(&ref, pointer, "HEAD"))
        defer { git_reference_free(ref) }
        guard let target = git_reference_symbolic_target(ref) else {
            throw GitError(
                function: "git_reference_symbolic_target", code: -1, message: "HEAD is detached; check out a branch before committing snapshots")
        }
        return String(cString: target)
    }
}
