import Foundation
import RecSyncGit
import RecSyncModel

/// What `GitStore.doctor` found about one lock file in a store's repository.
public struct StoreLockFinding: Sendable, Hashable {
    public enum Verdict: String, Sendable, Hashable {
        /// Left by a writer that is gone; removed.
        case removed
        /// Left by a writer that is gone; not removed (only checking).
        case stale
        /// Recent, or open in a process: a write under way. Left alone.
        case inUse
    }

    /// The lock file's path.
    public let path: String
    /// Seconds since it was last written.
    public let age: TimeInterval
    public let verdict: Verdict
    /// What it is and what was (or is to be) done, for the user.
    public let message: String
}

extension GitStore {
    /// Checks the repository of the store at `path` (a local store, or a network store's
    /// mirror) for lock files that writers killed mid-write left behind, and removes those
    /// that are stale (`GitLockFile.isStale`) unless `removeStale` is false. A lock a live
    /// writer may hold is never removed.
    public static func doctor(at path: String, removeStale: Bool = true) throws(RecSyncError) -> [StoreLockFinding] {
        let repository: GitRepository
        do { repository = try GitRepository.open(at: path) } catch {
            throw .invalidArguments("'\(path)' is not a git repository (\(error.message)); give the path of a recsync store")
        }
        let now = Date()
        var findings: [StoreLockFinding] = []
        for lock in repository.lockFiles() {
            let age = lock.age(now: now)
            guard lock.isStale(now: now) else {
                let why = lock.heldOpen == true ? "a process has it open" : "it is only \(describe(age)) old"
                findings.append(
                    StoreLockFinding(
                        path: lock.path, age: age, verdict: .inUse,
                        message:
                            """
                            \(lock.path) belongs to a write under way (\(why)); left alone. If it is still there in a\
                             minute, check the store again
                            """
                    ))
                continue
            }
            if removeStale {
                do { _ = lock.isAbandoned(now: now) ? try lock.removeIfAbandoned(repositoryRoot: path) : try lock.remove() } catch {
                    throw .fileSystem(path: lock.path, message: "cannot be removed (\(error.message)); remove it by hand")
                }
                findings.append(
                    StoreLockFinding(
                        path: lock.path, age: age, verdict: .removed,
                        message: "removed \(lock.path): \(staleReason(lock, age: age))"))
            } else {
                findings.append(
                    StoreLockFinding(
                        path: lock.path, age: age, verdict: .stale,
                        message: "\(lock.path) is stale: \(staleReason(lock, age: age)); a check that repairs removes it"))
            }
        }
        return findings
    }

    /// Why a stale lock is safe to remove.
    static func staleReason(_ lock: GitLockFile, age: TimeInterval) -> String {
        let open = lock.heldOpen == false ? " and no process has it open" : ""
        return
            """
            it was left \(describe(age)) ago by a writer that is gone (a write holds it for\
             milliseconds\(open)); removing it is safe, since the reference it guards still names the last\
             commit that landed (an unfinished write never moves it)
            """
    }

    /// The error for a write blocked by a stale lock on the head: which file, why it is safe
    /// to remove, and how.
    static func staleLockError(_ lock: GitLockFile, store: String) -> RecSyncError {
        let age = lock.age()
        return .storeBusy(
            """
            the store is locked by \(lock.path): \(staleReason(lock, age: age)). Check the store, which removes\
             it (or remove the file), then try again; nothing was written
            """
        ).suggesting(.checkStore(path: store))
    }

    private static func describe(_ seconds: TimeInterval) -> String {
        let s = Int(seconds)
        if s < 120 { return "\(s) seconds" }
        if s < 7200 { return "\(s / 60) minutes" }
        if s < 172_800 { return "\(s / 3600) hours" }
        return "\(s / 86400) days"
    }
}
