import RecSyncModel
import RecSyncStore
import RecSyncWorkspace

/// How commands name records and zones on the command line.
///
/// A record is either the path of its file in the workspace (`private/notes/r1.json`,
/// `shared/bob/recipes/r2.json`, relative to the current directory; a sidecar path works too)
/// or `ZONE/NAME` for a record in one of your own zones (NAME may itself contain `/`).
/// A zone is its name (one of your own zones) or the path of its directory.
enum RecordReference {
    static let help = "A record file path (private/ZONE/NAME.json) or ZONE/NAME for your own zones."

    /// The record a command-line argument names.
    static func record(_ text: String, in ws: Workspace, from directory: String) throws(RecSyncError) -> RecordID {
        let path = StoreLocation.absolute(text, relativeTo: directory)
        if let components = components(of: path, in: ws), text.hasSuffix(".json") || FileIO.stamp(path) != nil {
            return try recordFromPath(components, text: text, in: ws)
        }
        guard let slash = text.firstIndex(of: "/"), !text.hasSuffix(".json") else {
            throw .invalidArguments("'\(text)' does not name a record; give a record file path (private/ZONE/NAME.json) or ZONE/NAME")
        }
        let zone = try ZoneID(normalizing: String(text[..<slash]), ownerName: ws.user)
        return try RecordID(recordName: String(text[text.index(after: slash)...]), zoneID: zone)
    }

    /// The zone a command-line argument names: a zone name, or a zone directory's path.
    static func zone(_ text: String, in ws: Workspace, from directory: String) throws(RecSyncError) -> ZoneID {
        if text.contains("/") {
            let path = StoreLocation.absolute(text, relativeTo: directory)
            if let c = components(of: path, in: ws) {
                if c.count == 2, c[0] == "private", let z = NameEscaping.unescape(c[1]) {
                    return try ZoneID(normalizing: z, ownerName: ws.user)
                }
                if c.count == 3, c[0] == "shared", let o = NameEscaping.unescape(c[1]), let z = NameEscaping.unescape(c[2]) {
                    return try ZoneID(normalizing: z, ownerName: o)
                }
            }
            throw .invalidArguments("'\(text)' does not name a zone; give a zone name or a zone directory (private/ZONE, shared/OWNER/ZONE)")
        }
        return try ZoneID(normalizing: text, ownerName: ws.user)
    }

    /// Whether an argument names a zone rather than a record (for `log`).
    static func namesZone(_ text: String, in ws: Workspace, from directory: String) -> Bool {
        if !text.contains("/") { return true }
        let path = StoreLocation.absolute(text, relativeTo: directory)
        return FileIO.isDirectory(path) && components(of: path, in: ws) != nil
    }

    /// The path components of `path` below the workspace root, nil when outside it.
    static func components(of path: String, in ws: Workspace) -> [String]? {
        guard path.hasPrefix(ws.root + "/") else { return nil }
        return path.dropFirst(ws.root.count + 1).split(separator: "/").map(String.init)
    }

    static func recordFromPath(_ components: [String], text: String, in ws: Workspace) throws(RecSyncError) -> RecordID {
        var c = components
        if c.count >= 2, c[c.count - 2] == ".system" { c.remove(at: c.count - 2) }
        let zone: ZoneID
        if c.count == 3, c[0] == "private", let z = NameEscaping.unescape(c[1]) {
            zone = try ZoneID(normalizing: z, ownerName: ws.user)
        } else if c.count == 4, c[0] == "shared", let o = NameEscaping.unescape(c[1]), let z = NameEscaping.unescape(c[2]) {
            zone = try ZoneID(normalizing: z, ownerName: o)
        } else {
            throw .invalidArguments("'\(text)' is not a record file of this workspace; record files are private/ZONE/NAME.json or shared/OWNER/ZONE/NAME.json")
        }
        let file = c[c.count - 1]
        // A hashed (long) name is only in the sidecar.
        let sidecar = "\(ws.zoneDirectory(zone))/.system/\(file)"
        if let bytes = try FileIO.read(sidecar), let system = try? WorkspaceEncoding.decodeSystemFields(bytes) {
            return system.recordID
        }
        guard let name = Workspace.recordName(forFile: file) else {
            throw .invalidArguments("'\(text)': the file name is not a record name (NAME.json, with '/' written as %2F and '%' as %25)")
        }
        return try RecordID(recordName: name, zoneID: zone)
    }
}
