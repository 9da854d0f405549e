import Foundation
import RecSyncModel
import RecSyncSystem

/// The file in which a running batch lists the directories it makes temp files in and the
/// files it creates in place, so that the leftovers of a batch killed half-way can be found
/// without listing every directory, and its in-place files taken back
/// (`Workspace.removeStaleTemporaryFiles`).
///
/// One line per directory, then `c` (a record file) or `s` (a machine-owned file: a sidecar),
/// a tab, the hash of the content the batch meant to write, a tab, and the path, per file
/// created in place; then `r`, a tab, the base64 of its bytes before, a tab, and the path, per
/// machine-owned file overwritten in place.
struct CrashRegistry {
    /// A file a batch creates in place.
    struct Creation: Hashable {
        var path: String
        /// `ContentHash` of what the batch writes: a file holding exactly that is the batch's.
        var hash: String
        /// A sidecar, not a record file a user may have edited since.
        var machineOwned: Bool
    }

    /// A machine-owned file a batch overwrites in place, and what it held before: a batch cut
    /// off half-way through it is put back to that.
    struct Restore: Hashable {
        var path: String
        var bytes: [UInt8]
    }

    /// What a registry lists.
    struct Contents: Hashable {
        var directories: [String]
        var creations: [Creation]
        var restores: [Restore] = []
    }

    /// Where the registry is.
    let path: String

    /// The registry's bytes.
    static func encode(_ contents: Contents) -> [UInt8] {
        var text = contents.directories.joined(separator: "\n") + "\n"
        for c in contents.creations {
            text += "\(c.machineOwned ? "s" : "c")\t\(c.hash)\t\(c.path)\n"
        }
        for r in contents.restores {
            text += "r\t\(Data(r.bytes).base64EncodedString())\t\(r.path)\n"
        }
        return Array(text.utf8)
    }

    /// What a registry lists; a line it cannot read as a creation is a directory.
    static func decode(_ bytes: [UInt8]) -> Contents {
        var contents = Contents(directories: [], creations: [])
        for line in bytes.split(separator: 10).map({ String(decoding: $0, as: UTF8.self) }) {
            let parts = line.split(separator: "\t", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
            if parts.count == 3, parts[0] == "c" || parts[0] == "s" {
                contents.creations.append(Creation(path: parts[2], hash: parts[1], machineOwned: parts[0] == "s"))
            } else if parts.count == 3, parts[0] == "r" {
                // A line cut off (the registry is written whole before any file is overwritten,
                // so only a damaged one) puts nothing back.
                if let bytes = Data(base64Encoded: parts[1]) { contents.restores.append(Restore(path: parts[2], bytes: Array(bytes))) }
            } else {
                contents.directories.append(line)
            }
        }
        return contents
    }

    /// Writes the registry before the batch puts down any file. `durably` when files are
    /// created in place: the registry must outlive a crash before the first of them exists.
    /// Otherwise it is not synced by itself: the batch syncs it with the temp files.
    static func register(_ contents: Contents, at path: String, durably: Bool) throws(RecSyncError) -> CrashRegistry {
        if durably {
            try FileIO.writeAtomically(path, encode(contents))
        } else {
            try FileIO.writeUnsynced(path, encode(contents))
        }
        return CrashRegistry(path: path)
    }

    /// Removes the registry once the batch is done. `durably` once in-place files may be
    /// indexed: a registry coming back after a crash would take them away again.
    func remove(durably: Bool) throws(RecSyncError) {
        FileIO.unlinkIfPresent(path)
        if durably { try FileIO.syncDirectory(FileIO.split(path).dir) }
    }

    /// Removes the registry of a batch that failed (best effort: what it lists is cleared up
    /// by the batch itself, or after a crash by `Workspace.removeStaleTemporaryFiles`).
    func abandon() {
        FileIO.unlinkIfPresent(path)
    }
}
