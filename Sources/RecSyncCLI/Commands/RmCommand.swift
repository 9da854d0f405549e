import ArgumentParser
import RecSyncEngine
import RecSyncModel
import RecSyncWorkspace

/// `recsync rm RECORD...`: deletes record files; the next push deletes the records on the store.
struct RmCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "rm",
        abstract: "Delete records' files; 'recsync push' then deletes them from the store.",
        discussion: """
            All or nothing, like 'git rm': every RECORD is checked first, and one that names \
            no record file is an error naming it, with nothing removed. A new record (never \
            pushed) or one with edits not pushed is refused unless --force is given, since \
            nothing else holds what would be lost. \
            \(RecordReference.help)

            EXAMPLES
              recsync rm todo/milk todo/eggs
              recsync rm private/todo/milk.json
              recsync rm --force todo/draft
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The records.", completion: Completions.records)
    var records: [String]

    @Flag(name: .shortAndLong, help: "Remove new records and records with edits not pushed too (what they hold is lost).")
    var force = false

    func validate() throws {
        if records.isEmpty { throw ValidationError("give at least one RECORD") }
    }

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let ws = try context.workspace()
        let ids = try RecordReference.records(records, in: ws, from: context.directory)
        // The store is asked only for a record the stat index cannot vouch for; rm works
        // without it (such a record then counts as edited: --force removes it).
        let engine: SyncEngine?
        do { engine = try context.engine() } catch { engine = nil }
        let synced: [Bool]
        if let engine {
            synced = try await engine.remove(ids, force: force)
        } else {
            synced = try await SyncEngine.removeOffline(ids, force: force, workspace: ws)
        }
        context.console.document([
            "records": .array(
                zip(ids, synced).map { id, deletes in
                    .object(SyncOutput.recordObject(id, workspace: ws).merging(["pushDeletes": .bool(deletes)]) { a, _ in a })
                })
        ])
        for id in ids { context.console.info("removed \(ws.relative(ws.recordPath(id)))") }
        if synced.contains(true) { context.console.hint("'recsync push' deletes \(synced.count == 1 ? "it" : "them") from the store") }
        return ExitCodes.success
    }
}
