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
            Each record is one line: its fields, as a record file holds them (JSON lines) or \
            one column per field, the union of every record's field names, sorted (CSV: \
            strings as they are, other values as their JSON text, an absent field an empty \
            cell). With --system each record also carries recordName, zone, owner, \
            recordType, changeTag, created and modified (times in milliseconds since the \
            epoch; unknown ones null or empty). What the workspace holds is exported, local \
            edits included; a removed record is not. 'recsync import --system' reads the \
            output back.

            EXAMPLES
              recsync export todo > todo.jsonl
              recsync export books --format csv --system -o books.csv
              recsync export todo --system | jq -r .recordName
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The zone (a zone name, OWNER/ZONE, or its directory).", completion: Completions.zones)
    var zone: String

    @Option(help: "The output format (default: from -o's extension, else jsonl).")
    var format: RecordFileFormat?

    @Flag(help: "Add each record's name, zone, owner, type, change tag and dates.")
    var system = false

    @Option(name: .shortAndLong, help: "Write to this file instead of stdout (a regular file, replaced whole, atomically).", completion: .file())
    var output: String?

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let ws = try context.workspace()
        let zoneID = try RecordReference.zone(zone, in: ws, from: context.directory)
        let fileFormat = format ?? output.flatMap(RecordFileFormat.forFile) ?? .jsonl
        if let output {
            let path = StoreLocation.absolute(output, relativeTo: context.directory)
            try ws.exportRecords(of: zoneID, format: fileFormat, system: system, to: path)
            context.console.document([
                "zone": .string(zoneID.zoneName), "owner": .string(zoneID.ownerName),
                "path": .string(ws.relative(path)), "format": .string(fileFormat.rawValue),
            ])
            context.console.info("wrote \(ws.relative(path))")
        } else {
            // The records are the output, with --json too.
            let bytes = try ws.exportRecords(of: zoneID, format: fileFormat, system: system)
            if StandardStream.output.write(bytes) != nil {
                throw .fileSystem(path: "stdout", message: "could not write the records to standard output")
            }
        }
        return ExitCodes.success
    }
}
