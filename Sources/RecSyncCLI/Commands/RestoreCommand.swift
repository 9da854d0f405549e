import ArgumentParser
import RecSyncEngine
import RecSyncModel

/// `recsync restore RECORD…`: undoes local edits and removals (like `git restore`).
struct RestoreCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Undo local edits or an 'rm' of records: back to the version last synced.",
        discussion: """
            Each record file is rewritten with the version its sidecar names (the one last \
            pulled or pushed), read from the store. Refused, with nothing written, when a \
            record is new (never pushed: there is nothing to go back to; 'recsync rm' deletes \
            it), in conflict ('recsync resolve' settles it), or its synced version is no \
            longer in the store (pull first). --all restores every edited or removed record \
            and leaves new records and conflicts alone.

            EXAMPLES
              recsync restore todo/milk
              recsync restore private/todo/milk.json private/todo/eggs.json
              recsync restore --all
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("The records to restore.", discussion: RecordReference.help), completion: Completions.records)
    var records: [String] = []

    @Flag(help: "Restore every record edited or removed here.")
    var all = false

    func validate() throws {
        if all == !records.isEmpty { throw ValidationError(all ? "give records or --all, not both" : "name the records to restore, or give --all") }
    }

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let engine = try context.engine()
        let ws = engine.workspace
        var ids: [RecordID]?
        if !all {
            ids = []
            for r in records { ids?.append(try RecordReference.record(r, in: ws, from: context.directory)) }
        }
        let outcomes = try await engine.restore(ids)
        let console = context.console
        let restored = outcomes.filter { $0.undone != nil }
        console.document([
            "restored": .array(
                restored.map { o in
                    var obj = SyncOutput.recordObject(o.recordID, workspace: ws)
                    obj["kind"] = .string(o.undone?.rawValue ?? "")
                    return .object(obj)
                }),
            "unchanged": .array(outcomes.filter { $0.undone == nil }.map { .object(SyncOutput.recordObject($0.recordID, workspace: ws)) }),
        ])
        for o in outcomes {
            let path = ws.relative(ws.recordPath(o.recordID))
            switch o.undone {
            case .deleted?: console.info("restored \(path) (its removal undone)")
            case .some: console.info("restored \(path)")
            case nil: console.info("\(path) already holds its synced version")
            }
        }
        if outcomes.isEmpty { console.info("nothing to restore") }
        return ExitCodes.success
    }
}
