import RecSyncModel
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

    /// The zone a command-line argument names: a zone name, or a zone directory's path.
    static func zone(_ text: String, in ws: Workspace, from directory: String) throws(RecSyncError) -> ZoneID {
        try ws.zone(named: text, from: directory)
    }

    /// Whether an argument names a zone rather than a record (for `log`).
    static func namesZone(_ text: String, in ws: Workspace, from directory: String) throws(RecSyncError) -> Bool {
        try ws.namesZone(text, from: directory)
    }
}
