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
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("The record to compare (default: every changed record).", discussion: RecordReference.help), completion: .file(extensions: ["json"]))
    var record: String?

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let engine = try context.engine()
        let ws = engine.workspace
        let conflicts = try ws.allConflicts()
        var targets: [RecordID]
        if let record {
            targets = [try RecordReference.record(record, in: ws, from: context.directory)]
        } else {
            targets = try await engine.status().changes.map(\.recordID)
            targets += conflicts.map(\.recordID).filter { !targets.contains($0) }
        }
        var documents: [JSONValue] = []
        for id in targets.sorted() {
            let entry = try await diff(id, engine: engine, conflict: conflicts.first { $0.recordID == id })
            if context.console.json { documents.append(entry.json(ws)) } else { entry.print(context.console, ws) }
        }
        context.console.document(["records": .array(documents)])
        return ExitCodes.success
    }

    struct RecordDiff {
        var id: RecordID
        /// new, modified, deleted, unchanged or conflict.
        var state: String
        var changes: [FieldChange]
        /// For a conflict: what the store changed since the common version.
        var theirs: [FieldChange]?
        var note: String?

        func json(_ ws: Workspace) -> JSONValue {
            var o = SyncOutput.recordObject(id, workspace: ws)
            o["state"] = .string(state)
            o["fields"] = .array(changes.map(\.json))
            if let theirs { o["theirs"] = .array(theirs.map(\.json)) }
            if let note { o["note"] = .string(note) }
            return .object(o)
        }

        func print(_ console: Console, _ ws: Workspace) {
            let path = ws.relative(ws.recordPath(id))
            console.out(console.paint("\(state) \(path)", .bold))
            if let note { console.out("  (\(note))") }
            if let theirs {
                for c in changes { console.out("  " + console.paint("ours  ", .green) + " " + line(c)) }
                for c in theirs { console.out("  " + console.paint("theirs", .cyan) + " " + line(c)) }
                return
            }
            for c in changes {
                if let old = c.old { console.out(console.paint("-  \(c.key): \(FieldChange.text(old))", .red)) }
                if let new = c.new { console.out(console.paint("+  \(c.key): \(FieldChange.text(new))", .green)) }
            }
        }

        func line(_ c: FieldChange) -> String {
            "\(c.key): " + (c.new.map(FieldChange.text) ?? "(removed)")
        }
    }

    /// Compares one record's file with the version its sidecar names (or, in a conflict, both sides with their ancestor).
    func diff(_ id: RecordID, engine: SyncEngine, conflict: Conflict?) async throws(RecSyncError) -> RecordDiff {
        let ws = engine.workspace
        let path = ws.recordPath(id)
        let local = try ws.recordFields(id)
        if let conflict {
            return RecordDiff(id: id, state: "conflict", changes: FieldChange.between(conflict.ancestor, local),
                              theirs: FieldChange.between(conflict.ancestor, conflict.server),
                              note: conflict.server == nil ? "deleted on the store" : local == nil ? "deleted here" : nil)
        }
        guard let tag = try ws.systemFields(id)?.changeTag else {
            guard local != nil else { throw .invalidArguments("no record file at \(ws.relative(path))") }
            return RecordDiff(id: id, state: "new", changes: FieldChange.between(nil, local))
        }
        guard let synced = try await engine.store.fetchRecordVersion(id, changeTag: tag) else {
            return RecordDiff(id: id, state: local == nil ? "deleted" : "modified", changes: [],
                              note: "the synced version is no longer in the store; pull to refresh it")
        }
        let changes = FieldChange.between(synced.fields, local)
        let state = local == nil ? "deleted" : changes.isEmpty ? "unchanged" : "modified"
        return RecordDiff(id: id, state: state, changes: changes)
    }
}
