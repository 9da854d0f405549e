import ArgumentParser
import RecSyncModel
import RecSyncWorkspace

/// `recsync rm RECORD...`: deletes record files; the next push deletes the records on the store.
struct RmCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "rm",
        abstract: "Delete records' files; 'recsync push' then deletes them from the store.",
        discussion: """
            All or nothing, like 'git rm': every RECORD is checked first, and one that names \
            no record file is an error naming it, with nothing removed. \
            \(RecordReference.help)

            EXAMPLES
              recsync rm todo/milk todo/eggs
              recsync rm private/todo/milk.json
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The records.", completion: Completions.records)
    var records: [String]

    func validate() throws {
        if records.isEmpty { throw ValidationError("give at least one RECORD") }
    }

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let ws = try context.workspace()
        var ids: [RecordID] = []
        for record in records {
            let id = try RecordReference.record(record, in: ws, from: context.directory)
            if !ids.contains(id) { ids.append(id) }
        }
        let synced = try ws.removeRecords(ids)
        context.console.document(["records": .array(zip(ids, synced).map { id, deletes in
            .object(SyncOutput.recordObject(id, workspace: ws).merging(["pushDeletes": .bool(deletes)]) { a, _ in a })
        })])
        for id in ids { context.console.info("removed \(ws.relative(ws.recordPath(id)))") }
        if synced.contains(true) { context.console.hint("'recsync push' deletes \(synced.count == 1 ? "it" : "them") from the store") }
        return ExitCodes.success
    }
}
