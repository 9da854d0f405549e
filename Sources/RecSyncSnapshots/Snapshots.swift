import Foundation
import RecSyncGit
import RecSyncModel
import RecSyncSystem
import RecSyncWorkspace

extension Workspace {
    /// Commits the workspace's records, sidecars and sync state (tokens, conflicts; not the
    /// machine-specific index or lock) into the workspace's own git repository (`<root>/.git`),
    /// creating one if there is none, even inside another repository. Returns the new commit,
    /// or nil when nothing changed since the last snapshot.
    ///
    /// Only the workspace's paths go into the commit: whatever else the user staged stays
    /// staged. The author and committer are git's usual identity (`GIT_AUTHOR_NAME`,
    /// `GIT_AUTHOR_EMAIL`, `GIT_COMMITTER_NAME`, `GIT_COMMITTER_EMAIL`, else the repository's
    /// `user.name` / `user.email`), else the workspace's user. A snapshot checked out later
    /// pulls forward correctly: its tokens match its records.
    public func commitSnapshot(message: String, time: Int64, environment: [String: String] = ProcessInfo.processInfo.environment) throws(RecSyncError)
        -> String?
    {
        // libgit2 opens the repository by path: a `.git` that is a link or a `gitdir:` file
        // would send the snapshot into a repository outside the workspace.
        if let git = try FileIO.info("\(root)/.git"), git.isSymlink || !git.isDirectory {
            throw .fileSystem(
                path: "\(root)/.git",
                message:
                    """
                    is a link or a file, not the workspace's own repository; snapshots are committed only into a\
                     real .git directory at the workspace root: move it away, or commit without --commit
                    """
            )
        }
        // Nor through a link inside it (`objects/`, `refs/heads/`, `index`), which libgit2
        // would also follow.
        if try FileIO.info("\(root)/.git") != nil { try FileIO.refuseLinks(within: "\(root)/.git", depth: 2) }
        // A workspace made by an earlier version may lack newer machine-specific entries.
        try ensureStateIgnored()
        func failed(_ error: GitError) -> RecSyncError {
            .fileSystem(path: root, message: "cannot commit a snapshot: \(error.function): \(error.message)")
        }
        let repo: GitRepository
        do throws(GitError) { repo = try GitRepository.openOrInitWorkTree(at: root) } catch { throw failed(error) }
        let author = try snapshotIdentity("AUTHOR", repo: repo, environment: environment, time: time)
        let committer = try snapshotIdentity("COMMITTER", repo: repo, environment: environment, time: time)
        do throws(GitError) {
            let tree = try repo.stageOnly(["private", "shared", Self.stateDirName])
            return try repo.commitOnHead(tree: tree, author: author, committer: committer, message: message)?.hex
        } catch { throw failed(error) }
    }

    /// The signature of a snapshot's author or committer (`role`), as git would pick it.
    private func snapshotIdentity(_ role: String, repo: GitRepository, environment: [String: String], time: Int64) throws(RecSyncError)
        -> GitSignature
    {
        func given(_ variable: String, config: String) throws(RecSyncError) -> String? {
            if let value = environment[variable], !value.isEmpty {
                guard !value.contains(where: { "<>\n\r\0".contains($0) }) else {
                    throw .invalidArguments("\(variable) holds '<', '>' or a line break, which a commit signature cannot; fix it")
                }
                return value
            }
            guard let value = repo.configString(config), !value.isEmpty, !value.contains(where: { "<>\n\r\0".contains($0) }) else { return nil }
            return value
        }
        let name = try given("GIT_\(role)_NAME", config: "user.name") ?? user
        let email = try given("GIT_\(role)_EMAIL", config: "user.email") ?? "\(user)@recsync.invalid"
        return GitSignature(name: name, email: email, time: time / 1000)
    }
}
