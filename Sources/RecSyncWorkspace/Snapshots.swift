import Foundation
import RecSyncGit
import RecSyncModel

extension Workspace {
    /// Commits the workspace's records, sidecars and sync state (tokens, conflicts; not the
    /// machine-specific index or lock) into the git repository that holds the workspace,
    /// creating one at the workspace root if there is none. Returns the new commit, or nil
    /// when nothing changed since the last snapshot.
    ///
    /// A snapshot checked out later pulls forward correctly: its tokens match its records.
    public func commitSnapshot(message: String, time: Int64) throws(RecSyncError) -> String? {
        do {
            let repo = try GitRepository.openOrInitWorkTree(at: root)
            guard let top = repo.workTreeRoot else {
                throw RecSyncError.invalidArguments("the git repository at '\(root)' has no work tree; snapshots need an ordinary repository")
            }
            let prefix = root == top ? "" : String(root.dropFirst(top.count + 1)) + "/"
            let tree = try repo.stageAll(["private", "shared", Self.stateDirName].map { prefix + $0 })
            let author = GitSignature(name: user, email: "\(user)@recsync.invalid", time: time / 1000)
            return try repo.commitOnHead(tree: tree, author: author, message: message)?.hex
        } catch let error as RecSyncError {
            throw error
        } catch let error as GitError {
            throw .fileSystem(path: root, message: "cannot commit a snapshot: \(error.function): \(error.message)")
        } catch {
            throw .internalError("\(error)")
        }
    }
}
