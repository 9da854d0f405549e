import Glibc
import RecSyncModel
import Synchronization

/// Numbers the temp files of this process.
private let tempCounter = Atomic<Int>(0)

/// A file a batch writes beside its target under a temporary name (`.tmp-<pid>-<n>`) and then
/// renames over it: until the rename, a crash leaves the target as it was.
package struct TempFile {
    /// What every temp file's name contains: `Workspace.removeStaleTemporaryFiles` looks for it.
    package static let marker = ".tmp-"

    /// The open directory that holds both the temp file and its target.
    package let directory: Int32
    package let directoryPath: String
    /// The temporary name.
    package let name: String
    /// The target's name in the same directory.
    package let target: String

    package var path: String { "\(directoryPath)/\(name)" }

    package init(directory: Int32, directoryPath: String, name: String, target: String) {
        self.directory = directory
        self.directoryPath = directoryPath
        self.name = name
        self.target = target
    }

    /// Creates an empty temp file for `target` in `directory`: it and its open descriptor,
    /// which the caller closes.
    ///
    /// Names are short (a record's file name may already be near the 255-byte limit) and
    /// numbered process-wide (batches of different zones run at once and share directories).
    package static func create(in directory: Int32, at directoryPath: String, for target: String, mode: mode_t = 0o644) throws(RecSyncError) -> (
        file: TempFile, fd: Int32
    ) {
        // Created, never opened: a name someone else put there (the names are easy to guess)
        // is passed over, so nothing is ever written into a file another user made.
        var attempts = 0
        while true {
            let name = "\(marker)\(getpid())-\(tempCounter.add(1, ordering: .relaxed).newValue)"
            let file = TempFile(directory: directory, directoryPath: directoryPath, name: name, target: target)
            switch Syscall.attempt({ openat(directory, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode) }) {
            case .success(let fd):
                return (file, fd)
            case .failure(let failure) where failure.code == EEXIST && attempts < 100:
                attempts += 1
            case .failure(let failure):
                throw Syscall.error("openat", path: file.path, "cannot create", errno: failure.code)
            }
        }
    }

    /// Renames the file over its target; `targetPath` names the target in an error.
    package func renameIntoPlace(_ targetPath: String) throws(RecSyncError) {
        try Syscall.retrying("renameat", path: targetPath, "cannot rename into place") { renameat(directory, name, directory, target) }
    }

    /// Removes the file if it is still there (best effort: a leftover is what
    /// `Workspace.removeStaleTemporaryFiles` clears up).
    package func remove() {
        unlinkat(directory, name, 0)
    }
}

/// A file a batch creates at its target itself (`O_EXCL`: the create is its check that
/// nothing is there), listed in the batch's `CrashRegistry` so that a killed batch's can be
/// taken back.
package struct InPlaceFile {
    package let directory: Int32
    package let name: String
    package let path: String

    /// What creating a file in place found.
    package enum Outcome {
        /// Created; the descriptor is open for writing, and the caller closes it.
        case created(InPlaceFile, fd: Int32)
        /// Something is already at the path.
        case exists
    }

    /// Creates the file `name` in `directory` (`path` names it in an error).
    package static func create(in directory: Int32, _ name: String, path: String, mode: mode_t = 0o644) throws(RecSyncError) -> Outcome {
        switch Syscall.attempt({ openat(directory, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode) }) {
        case .success(let fd): return .created(InPlaceFile(directory: directory, name: name, path: path), fd: fd)
        case .failure(let failure) where failure.code == EEXIST: return .exists
        case .failure(let failure): throw Syscall.error("openat", path: path, "cannot create", errno: failure.code)
        }
    }

    /// Removes the file again (a batch that failed takes back what it created).
    package func remove() {
        unlinkat(directory, name, 0)
    }
}
