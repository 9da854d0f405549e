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
        let recordPath = ws.recordPath(id), sidecarPath = ws.sidecarPath(id)
        let system = try ws.systemFields(id)
        // The checks a push makes (types, sizes), now rather than later.
        try Record(recordID: id, recordType: system?.recordType ?? type ?? "Record", fields: fields).validate()
        var batch = WriteBatch()
        if let system, let type, system.recordType != type {
            throw .invalidArguments("\(ws.relative(recordPath)) is a '\(system.recordType)' record; a record's type cannot change (rm it, push, then put it again with --type \(type))")
        }
        if system == nil {
            if let type {
                batch.write(sidecarPath, WorkspaceEncoding.encodeSystemFields(SystemFields(recordID: id, recordType: type, changeTag: nil, created: nil, modified: nil)))
            } else if Workspace.recordName(forFile: Workspace.fileName(for: id.recordName)) == nil {
                throw .invalidArguments("record name '\(id.recordName.prefix(40))…' is too long for a file name; give --type so its sidecar can hold the name")
            }
        }
        let existed = FileIO.stamp(recordPath) != nil
        batch.write(recordPath, WorkspaceEncoding.encodeFields(fields))
        try batch.commit()
        let state = system?.changeTag == nil ? "new record" : existed ? "modified" : "restored"
        context.console.document(SyncOutput.recordObject(id, workspace: ws).merging(["state": .string(state)]) { a, _ in a })
        context.console.info("wrote \(ws.relative(recordPath)) (\(state)\(type.map { ", type \($0)" } ?? ""))")
        context.console.hint("'recsync push' sends it to the store")
        return ExitCodes.success
    }
}
