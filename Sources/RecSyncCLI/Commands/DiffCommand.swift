import ArgumentParser
import RecSyncEngine
import RecSyncModel
import RecSyncWorkspace

/// `recsync diff [RECORD]`: field-level differences between record files and their synced versions.
struct DiffCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "diff",
        abstract: "Show field-level changes of records against their synced versions.",
        discussion: """
            Each changed field is shown as '-key: old' and '+key: new' (values as plain JSON). \
            A new record shows all its fields as added, a deleted one all as removed. For a \
            record in conflict, the fields each side changed since the common version are \
            shown as 'ours' (this file) and 'theirs' (the store).

            EXAMPLES
              recsync diff
              recsync diff todo/milk
              recsync diff --json | jq '.records[].fields'
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(
        help: ArgumentHelp("The record to compare (default: every changed record).", discussion: RecordReference.help),
        completion: Completions.records)
    var record: String?

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let engine = try context.engine()
        let ws = engine.workspace
        let records = try record.map { r throws(RecSyncError) in [try RecordReference.record(r, in: ws, from: context.directory)] }
        let diffs = try await engine.diff(records)
        let console = context.console
        console.document(["records": .array(diffs.map { json($0, ws) })])
        if !console.json { for d in diffs { print(d, console, ws) } }
        return ExitCodes.success
    }

    func note(_ note: RecordDiff.Note) -> String {
        switch note {
        case .deletedOnStore: "deleted on the store"
        case .deletedHere: "deleted here"
        case .syncedVersionGone: "the synced version is no longer in the store; pull to refresh it"
        }
    }

    func json(_ d: RecordDiff, _ ws: Workspace) -> JSONValue {
        var o = SyncOutput.recordObject(d.recordID, workspace: ws)
        o["kind"] = .string(d.state.rawValue)
        o["fields"] = .array(d.changes.map(\.json))
        if let theirs = d.theirs { o["theirs"] = .array(theirs.map(\.json)) }
        if let n = d.note { o["note"] = .string(note(n)) }
        return .object(o)
    }

    func print(_ d: RecordDiff, _ console: Console, _ ws: Workspace) {
        let path = ws.relative(ws.recordPath(d.recordID))
        console.out(console.paint("\(d.state.rawValue) \(path)", .bold))
        if let n = d.note { console.out("  (\(note(n)))") }
        if let theirs = d.theirs {
            for c in d.changes { console.out("  " + console.paint("ours  ", .green) + " " + line(c)) }
            for c in theirs { console.out("  " + console.paint("theirs", .cyan) + " " + line(c)) }
            return
        }
        for c in d.changes { c.lines(console).forEach(console.out) }
    }

    func line(_ c: FieldChange) -> String {
        "\(c.key): " + (c.new.map(FieldChange.text) ?? "(removed)")
    }
}
