import ArgumentParser
import RecSyncModel
import RecSyncStore
import RecSyncWorkspace

/// `recsync get RECORD`: prints a record's fields.
struct GetCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Print a record's fields (canonical plain JSON) from the workspace, or with --remote from the store.",
        discussion: RecordReference.help)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The record.", completion: .file(extensions: ["json"]))
    var record: String

    @Flag(help: "Fetch the store's current version instead of reading the workspace.")
    var remote = false

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let ws = try context.workspace()
        let id = try RecordReference.record(record, in: ws, from: context.directory)
        let fields: [String: FieldValue]
        var system: SystemFields?
        if remote {
            let results = try await context.store(for: ws).fetchRecords([id])
            guard let result = results.first else { throw .unknownItem(id) }
            let stored = try result.result.get()
            fields = stored.fields
            system = stored.systemFields
        } else {
            guard let local = try ws.recordFields(id) else {
                throw .invalidArguments("no record file at \(ws.relative(ws.recordPath(id))); pull first, or use --remote")
            }
            fields = local
            system = try ws.systemFields(id)
        }
        let console = context.console
        if console.json {
            var o = SyncOutput.recordObject(id, workspace: ws)
            o["fields"] = .object(fields.mapValues(WorkspaceEncoding.json(from:)))
            o["recordType"] = system.map { .string($0.recordType) } ?? .null
            o["changeTag"] = system?.changeTag.map(JSONValue.string) ?? .null
            console.document(o)
        } else {
            console.out(bytes: WorkspaceEncoding.encodeFields(fields))
        }
        return ExitCodes.success
    }
}
