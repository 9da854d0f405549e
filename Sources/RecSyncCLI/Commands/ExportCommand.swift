import ArgumentParser
import Foundation
import RecSyncModel
import RecSyncStore
import RecSyncSystem
import RecSyncWorkspace

/// `recsync export ZONE`: prints a zone's records as JSON lines or CSV.
struct ExportCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Print a zone's records as JSON lines or CSV, sorted by record name.",
        discussion: """
            Each record is one line: its name under the key "recordName" (or the key --id \
            gives; --no-names leaves it out) and its fields, as a record file holds them (JSON \
            lines), or the name column and one column per field, the union of every record's \
            field names, sorted (CSV). A CSV cell holds a string as it is, other values as \
            their JSON text (42, true, [1,2], {"$date": ...}), a string that would read as \
            JSON as a JSON string ("42", "true", "") and an absent field as an empty cell. With \
            --system each record also carries recordName, zone, owner, recordType, changeTag, \
            created and modified (times in milliseconds since the epoch; unknown ones null or \
            empty). What the workspace holds is exported, local edits included; a removed \
            record is not.

            'recsync import' reads the output back into the same records, with the same names \
            and fields ('recsync import ZONE FILE --id KEY' for names under another key, \
            --system for --system output).

            EXAMPLES
              recsync export todo > todo.jsonl
              recsync export todo | recsync import archive -
              recsync export books --id isbn -o books.csv
              recsync export todo --system | jq -r .recordName
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The zone (a zone name, OWNER/ZONE, or its directory).", completion: Completions.zones)
    var zone: String

    @Option(help: "The output format (default: from -o's extension, else jsonl).")
    var format: RecordFileFormat?

    @Option(name: .customLong("id"), help: ArgumentHelp("The key or column that names each record.", valueName: "key"))
    var idKey = "recordName"

    @Flag(help: "Leave the record names out.")
    var noNames = false

    @Flag(help: "Add each record's name, zone, owner, type, change tag and dates (recordName names it).")
    var system = false

    @Option(name: .shortAndLong, help: "Write to this file instead of stdout (a regular file, replaced whole, atomically).", completion: .file())
    var output: String?

    func validate() throws {
        if idKey.isEmpty { throw ValidationError("--id needs a key name") }
        if noNames && idKey != "recordName" { throw ValidationError("--no-names leaves names out; --id names the key to put them under: give one") }
        if system && (noNames || idKey != "recordName") {
            throw ValidationError("--system names each record by recordName; leave out --id and --no-names")
        }
    }

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let ws = try context.workspace()
        let zoneID = try RecordReference.zone(zone, in: ws, from: context.directory)
        let fileFormat = format ?? output.flatMap(RecordFileFormat.forFile) ?? .jsonl
        let options = ExportOptions(format: fileFormat, nameKey: noNames ? nil : idKey, system: system)
        if let output {
            let path = StoreLocation.absolute(output, relativeTo: context.directory)
            try ws.exportRecords(of: zoneID, options: options, to: path)
            context.console.document([
                "zone": .string(zoneID.zoneName), "owner": .string(zoneID.ownerName),
                "path": .string(ws.relative(path)), "format": .string(fileFormat.rawValue),
            ])
            context.console.info("wrote \(ws.relative(path))")
        } else {
            // The records are the output, with --json too.
            let bytes = try ws.exportRecords(of: zoneID, options: options)
            if StandardStream.output.write(bytes) != nil {
                throw .fileSystem(path: "stdout", message: "could not write the records to standard output")
            }
        }
        return ExitCodes.success
    }
}
