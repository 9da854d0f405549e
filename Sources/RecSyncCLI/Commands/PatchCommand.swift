import ArgumentParser
import RecSyncModel
import RecSyncStore
import RecSyncSystem
import RecSyncWorkspace

/// `recsync patch RECORD… < patch.json`: a JSON merge patch of records' fields.
struct PatchCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "patch",
        abstract: "Change some fields of records: a JSON merge patch (RFC 7386), from stdin or --file.",
        discussion: """
            The patch is a JSON object of fields: each field it gives is set, a field given \
            as null is removed, and the fields it does not name stay as they are (an object \
            value is merged into an object field member by member, as RFC 7386 has it). \
            'recsync put' replaces the whole record instead. Several RECORDs all get the same \
            patch; every one is read and checked before any is written, and a record with no \
            file, or a result that is not a valid record, is an error naming it with nothing \
            written. 'recsync push' sends the changes. \(RecordReference.help)

            EXAMPLES
              echo '{"done": true}' | recsync patch todo/milk
              echo '{"note": null}' | recsync patch todo/milk todo/eggs
              recsync patch books/dune --file changes.json
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The records.", completion: Completions.records)
    var records: [String]

    @Option(help: "Read the patch from this file instead of stdin ('-' is stdin).", completion: .file(extensions: ["json"]))
    var file: String?

    func validate() throws {
        if records.isEmpty { throw ValidationError("give at least one RECORD") }
    }

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let ws = try context.workspace()
        let ids = try RecordReference.records(records, in: ws, from: context.directory)
        let bytes = try RecordReference.input(file: file, from: context.directory)
        let patch: JSONValue
        do { patch = try JSON.parse(bytes) } catch {
            throw .invalidArguments("the patch is not valid JSON: \(error.message)")
        }
        let changed = try ws.patch(ids, with: patch)
        context.console.document([
            "records": .array(
                zip(ids, changed).map { id, changed in
                    .object(SyncOutput.recordObject(id, workspace: ws).merging(["changed": .bool(changed)]) { a, _ in a })
                })
        ])
        for (id, changed) in zip(ids, changed) {
            context.console.info(changed ? "patched \(ws.relative(ws.recordPath(id)))" : "\(ws.relative(ws.recordPath(id))) unchanged")
        }
        if changed.contains(true) { context.console.hint("'recsync push' sends \(ids.count == 1 ? "it" : "them") to the store") }
        return ExitCodes.success
    }
}
