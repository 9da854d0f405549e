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
        let recordPath = ws.recordPath(id), sidecarPath = ws.sidecarPath(id)
        guard FileIO.stamp(recordPath) != nil else {
            throw .invalidArguments("no record file at \(ws.relative(recordPath))")
        }
        var synced = false
        if let side = try FileIO.read(sidecarPath), let system = try? WorkspaceEncoding.decodeSystemFields(side) {
            synced = system.changeTag != nil
        }
        var batch = WriteBatch()
        batch.remove(recordPath)
        // A record never pushed leaves nothing behind: its type note goes too.
        if !synced { batch.remove(sidecarPath) }
        try batch.commit()
        context.console.document(SyncOutput.recordObject(id, workspace: ws).merging(["pushDeletes": .bool(synced)]) { a, _ in a })
        context.console.info("removed \(ws.relative(recordPath))")
        if synced { context.console.hint("'recsync push' deletes it from the store") }
        return ExitCodes.success
    }
}
