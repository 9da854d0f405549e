import ArgumentParser
import Foundation
import RecSyncModel
import RecSyncStore
import RecSyncWorkspace

/// `recsync put RECORD`: writes a record's fields into the workspace.
struct PutCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "put",
        abstract: "Write a record's fields (a JSON object, from stdin or --file) into the workspace.",
        discussion: """
            The fields are checked and written canonically to the record file; 'recsync push' \
            sends them. A new record gets the zone's default record type unless --type names \
            one. \(RecordReference.help)
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The record.", completion: .file(extensions: ["json"]))
    var record: String

    @Option(help: "The record type of a new record.")
    var type: String?

    @Option(help: "Read the fields from this file instead of stdin ('-' is stdin).", completion: .file(extensions: ["json"]))
    var file: String?

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let ws = try context.workspace()
        let id = try RecordReference.record(record, in: ws, from: context.directory)
        if let type { try NameRules.validateRecordType(type) }
        let bytes: [UInt8]
        if let file, file != "-" {
            let path = StoreLocation.absolute(file, relativeTo: context.directory)
            guard let read = try FileIO.read(path) else { throw .invalidArguments("--file \(file): no such file") }
            bytes = read
        } else {
            bytes = Array(FileHandle.standardInput.readDataToEndOfFile())
        }
        let fields: [String: FieldValue]
        do { fields = try WorkspaceEncoding.decodeFields(bytes) } catch {
            throw .invalidArguments("the fields of '\(record)' are not valid: \(error.message)")
        }
        let put = try ws.put(id, fields: fields, type: type)
        let state = switch put {
        case .new: "new record"
        case .modified: "modified"
        case .restored: "restored"
        }
        let recordPath = ws.recordPath(id)
        context.console.document(SyncOutput.recordObject(id, workspace: ws).merging(["kind": .string(put == .new ? "new" : put == .modified ? "modified" : "restored")]) { a, _ in a })
        context.console.info("wrote \(ws.relative(recordPath)) (\(state)\(type.map { ", type \($0)" } ?? ""))")
        context.console.hint("'recsync push' sends it to the store")
        return ExitCodes.success
    }
}
