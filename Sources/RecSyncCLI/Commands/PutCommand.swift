import ArgumentParser
import Foundation
import RecSyncModel
import RecSyncStore
import RecSyncSystem
import RecSyncWorkspace

/// `recsync put RECORD...`: writes records' fields into the workspace.
struct PutCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "put",
        abstract: "Write a record's fields (a JSON object, from stdin or --file) into the workspace, replacing the whole record.",
        discussion: """
            The fields given replace the record's fields, all of them: a field the object does \
            not name is removed ('recsync patch' changes some fields and keeps the others). \
            The fields are checked and written canonically to the record file; 'recsync push' \
            sends them. A new record gets the zone's default record type unless --type names \
            one. Several RECORDs all get the same fields (one object, written to each); every \
            one is checked before any is written, and a bad one is an error naming it with \
            nothing written. To write many records with different fields, use \
            'recsync import'. \(RecordReference.help)

            EXAMPLES
              echo '{"title": "milk", "done": false}' | recsync put todo/milk
              recsync put todo/milk --type Item --file milk.json
              echo '{"done": true}' | recsync put todo/a todo/b
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The records.", completion: Completions.records)
    var records: [String]

    @Option(help: "The record type of a new record.")
    var type: String?

    @Option(help: "Read the fields from this file instead of stdin ('-' is stdin).", completion: .file(extensions: ["json"]))
    var file: String?

    func validate() throws {
        if records.isEmpty { throw ValidationError("give at least one RECORD") }
    }

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let ws = try context.workspace()
        let ids = try RecordReference.records(records, in: ws, from: context.directory)
        if let type { try NameRules.validateRecordType(type) }
        let bytes = try RecordReference.input(file: file, from: context.directory)
        let fields: [String: FieldValue]
        do { fields = try WorkspaceEncoding.decodeFields(bytes) } catch {
            let whose = records.count == 1 ? "the fields of '\(records[0])'" : "the fields given"
            throw .invalidArguments("\(whose) are not valid: \(error.message)")
        }
        let puts = try ws.put(ids, fields: fields, type: type)
        let states = puts.map { put in
            switch put {
            case .new: "new"
            case .modified: "modified"
            case .restored: "restored"
            }
        }
        context.console.document([
            "records": .array(
                zip(ids, states).map { id, state in
                    .object(SyncOutput.recordObject(id, workspace: ws).merging(["kind": .string(state)]) { a, _ in a })
                })
        ])
        for (id, state) in zip(ids, states) {
            context.console.info("wrote \(ws.relative(ws.recordPath(id))) (\(state)\(type.map { ", type \($0)" } ?? ""))")
        }
        context.console.hint("'recsync push' sends \(ids.count == 1 ? "it" : "them") to the store")
        return ExitCodes.success
    }
}
