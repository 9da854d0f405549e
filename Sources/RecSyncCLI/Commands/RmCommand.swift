import ArgumentParser
import RecSyncModel
import RecSyncWorkspace

/// `recsync rm RECORD`: deletes a record file; the next push deletes the record on the store.
struct RmCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "rm",
        abstract: "Delete a record's file; 'recsync push' then deletes it from the store.",
        discussion: RecordReference.help)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The record.", completion: .file(extensions: ["json"]))
    var record: String

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let ws = try context.workspace()
        let id = try RecordReference.record(record, in: ws, from: context.directory)
        let synced = try ws.removeRecord(id)
        let recordPath = ws.recordPath(id)
        context.console.document(SyncOutput.recordObject(id, workspace: ws).merging(["pushDeletes": .bool(synced)]) { a, _ in a })
        context.console.info("removed \(ws.relative(recordPath))")
        if synced { context.console.hint("'recsync push' deletes it from the store") }
        return ExitCodes.success
    }
}
