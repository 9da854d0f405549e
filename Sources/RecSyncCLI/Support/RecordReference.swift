import RecSyncModel
import RecSyncStore
import RecSyncSystem
import RecSyncWorkspace

/// How commands name records and zones on the command line (`Workspace.record(named:from:)`).
enum RecordReference {
    static let help = """
        A RECORD is ZONE/NAME (one of your zones), OWNER/ZONE/NAME (a zone OWNER shares with \
        you), or its file's path (private/ZONE/NAME.json, shared/OWNER/ZONE/NAME.json), \
        relative to the current directory or, when nothing is there, to the workspace root.
        """

    /// The record a command-line argument names.
    static func record(_ text: String, in ws: Workspace, from directory: String) throws(RecSyncError) -> RecordID {
        try ws.record(named: text, from: directory)
    }

    /// The records several arguments name, each once, in the order first named.
    static func records(_ texts: [String], in ws: Workspace, from directory: String) throws(RecSyncError) -> [RecordID] {
        var ids: [RecordID] = []
        for text in texts {
            let id = try record(text, in: ws, from: directory)
            if !ids.contains(id) { ids.append(id) }
        }
        return ids
    }

    /// The bytes a command reads from `--file FILE` (relative to `directory`), or from
    /// standard input when there is no file or it is '-'.
    static func input(file: String?, from directory: String) throws(RecSyncError) -> [UInt8] {
        guard let file, file != "-" else { return try StandardStream.input.readAll() }
        guard let read = try InputFile.read(StoreLocation.absolute(file, relativeTo: directory)) else {
            throw .notFound("--file \(file): no such file")
        }
        return read
    }

    /// The zone a command-line argument names: a zone name, or a zone directory's path.
    static func zone(_ text: String, in ws: Workspace, from directory: String) throws(RecSyncError) -> ZoneID {
        try ws.zone(named: text, from: directory)
    }

    /// Whether an argument names a zone rather than a record (for `log`).
    static func namesZone(_ text: String, in ws: Workspace, from directory: String) throws(RecSyncError) -> Bool {
        try ws.namesZone(text, from: directory)
    }
}
