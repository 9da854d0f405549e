import Foundation
import RecSyncModel
import RecSyncSystem

/// How people name records and zones of a workspace (on the command line).
///
/// A record is one of:
/// - the path of its file (`private/notes/r1.json`, `shared/bob/recipes/r2.json`; a sidecar
///   path works too), relative to `directory`, the directory the command runs in. A path
///   that starts with `private/` or `shared/` and names nothing there is read relative to
///   the workspace root instead, so a path saved from another directory keeps working;
/// - `ZONE/NAME` for a record in one of the user's own zones (NAME may itself contain `/`);
/// - `OWNER/ZONE/NAME` for a record of a zone OWNER shares with the user (its directory
///   `shared/OWNER/ZONE` is in the workspace). An own zone named OWNER wins: `ZONE/NAME`
///   is read first, and the path form always says which is meant.
///
/// A zone is its name (one of the user's own zones), `OWNER/ZONE`, or its directory's path.
extension Workspace {
    /// The record a name given by a person stands for (a command-line argument).
    package func record(named text: String, from directory: String) throws(RecSyncError) -> RecordID {
        let path = try resolvedPath(text, from: directory)
        if let components = components(of: path), try text.hasSuffix(".json") ? true : FileIO.stamp(path) != nil {
            return try recordFromPath(components, text: text)
        }
        let parts = text.split(separator: "/", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
        guard parts.count >= 2, !text.hasSuffix(".json") else {
            throw .invalidArguments(
                """
                '\(text)' does not name a record; give ZONE/NAME, OWNER/ZONE/NAME (a zone shared with you) or a\
                 record file path (private/ZONE/NAME.json)
                """
            )
        }
        if parts.count == 3, !FileIO.isDirectory("\(root)/private/\(NameEscaping.escape(parts[0]))"),
            let owner = try? ZoneID(normalizing: parts[1], ownerName: parts[0]), owner.ownerName != user,
            FileIO.isDirectory(zoneDirectory(owner))
        {
            return try RecordID(recordName: parts[2], zoneID: owner)
        }
        let zone = try ZoneID(normalizing: parts[0], ownerName: user)
        return try RecordID(recordName: parts.dropFirst().joined(separator: "/"), zoneID: zone)
    }

    /// The zone a name given by a person stands for: a zone name, `OWNER/ZONE`, or a zone
    /// directory's path.
    package func zone(named text: String, from directory: String) throws(RecSyncError) -> ZoneID {
        if text.contains("/") {
            let path = try resolvedPath(text, from: directory)
            if let c = components(of: path) {
                if c.count == 2, c[0] == "private", let z = NameEscaping.unescape(c[1]) {
                    return try ZoneID(normalizing: z, ownerName: user)
                }
                if c.count == 3, c[0] == "shared", let o = NameEscaping.unescape(c[1]), let z = NameEscaping.unescape(c[2]) {
                    return try ZoneID(normalizing: z, ownerName: o)
                }
            }
            let parts = text.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            if parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty, !FileIO.isDirectory(path) {
                try NameRules.validateOwnerName(parts[0])
                return try ZoneID(normalizing: parts[1], ownerName: parts[0])
            }
            throw .invalidArguments(
                "'\(text)' does not name a zone; give a zone name, OWNER/ZONE or a zone directory (private/ZONE, shared/OWNER/ZONE)")
        }
        return try ZoneID(normalizing: text, ownerName: user)
    }

    /// A path given by a person, made absolute against `directory`; one starting with
    /// `private/` or `shared/` that names nothing there (nor its parent) is taken from the root.
    func resolvedPath(_ text: String, from directory: String) throws(RecSyncError) -> String {
        let path = Self.absolute(text, relativeTo: directory)
        guard directory != root, text.hasPrefix("private/") || text.hasPrefix("shared/"),
            try FileIO.info(path) == nil, try FileIO.info(FileIO.split(path).dir) == nil
        else { return path }
        return Self.absolute(text, relativeTo: root)
    }

    /// Whether a name given by a person stands for a zone rather than a record (for `log`).
    package func namesZone(_ text: String, from directory: String) throws(RecSyncError) -> Bool {
        if !text.contains("/") {
            // A record file named from its zone's directory (`a.json`), there or removed.
            guard text.hasSuffix(".json") else { return true }
            if try FileIO.info(try resolvedPath(text, from: directory))?.isRegular == true { return false }
            guard let c = components(of: directory) else { return true }
            return !((c.count == 2 && c[0] == "private") || (c.count == 3 && c[0] == "shared"))
        }
        let path = try resolvedPath(text, from: directory)
        return FileIO.isDirectory(path) && components(of: path) != nil
    }

    /// The path components of `path` below the workspace root, nil when outside it.
    func components(of path: String) -> [String]? {
        guard path.hasPrefix(root + "/") else { return nil }
        return path.dropFirst(root.count + 1).split(separator: "/").map(String.init)
    }

    /// The record a record file's (or sidecar's) path below the root stands for.
    func recordFromPath(_ components: [String], text: String) throws(RecSyncError) -> RecordID {
        var c = components
        if c.count >= 2, c[c.count - 2] == ".system" { c.remove(at: c.count - 2) }
        let zone: ZoneID
        if c.count == 3, c[0] == "private", let z = NameEscaping.unescape(c[1]) {
            zone = try ZoneID(normalizing: z, ownerName: user)
        } else if c.count == 4, c[0] == "shared", let o = NameEscaping.unescape(c[1]), let z = NameEscaping.unescape(c[2]) {
            zone = try ZoneID(normalizing: z, ownerName: o)
        } else {
            throw .invalidArguments(
                "'\(text)' is not a record file of this workspace; record files are private/ZONE/NAME.json or shared/OWNER/ZONE/NAME.json")
        }
        let file = c[c.count - 1]
        // A hashed (long) name is only in the sidecar.
        let sidecar = "\(zoneDirectory(zone))/.system/\(file)"
        if let bytes = try FileIO.read(sidecar), let system = try? WorkspaceEncoding.decodeSystemFields(bytes) {
            return system.recordID
        }
        guard let name = Workspace.recordName(forFile: file) else {
            throw .invalidArguments("'\(text)': the file name is not a record name (NAME.json, with '/' written as %2F and '%' as %25)")
        }
        return try RecordID(recordName: name, zoneID: zone)
    }

    /// `path` made absolute against `base`, with `.` and `..` resolved (as `StoreLocation.absolute`).
    static func absolute(_ path: String, relativeTo base: String) -> String {
        let full = path.hasPrefix("/") ? path : "\(base)/\(path)"
        return URL(fileURLWithPath: full).standardizedFileURL.path
    }
}
