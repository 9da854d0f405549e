import ArgumentParser
import Foundation
import RecSyncModel
import RecSyncStore
import RecSyncSystem
import RecSyncWorkspace

/// `recsync import ZONE FILE|-`: writes many records from JSON lines or CSV in one step.
struct ImportCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Write records from a JSON-lines or CSV file into a zone of the workspace.",
        discussion: """
            JSON lines: one object of fields per line, as a record file holds them (numbers, \
            booleans, lists, {"$date": ...} and the other tagged values keep their types). \
            CSV: a header row naming the fields, then one record per row; a cell that is JSON \
            text is that value (42, true, [1,2], "42" a string), any other cell the string it \
            holds (Dune, 007, a, b), and an empty cell is no field; --strings reads every cell \
            as a string. That is how 'recsync export' writes them, so an export imports back \
            into the same records. The format comes from --format, else the file's extension \
            (.jsonl, .ndjson, .json; .csv); standard input ('-') is JSON lines unless --format \
            says otherwise.

            A record is named by its "recordName" key or column, as 'recsync export' writes \
            it; --id FIELD names another key or column, and then every record must have it. \
            The name is not stored as a field. A record with no name is named by a hash of its \
            fields (the hash of its canonical record file), so importing the same file again \
            gives the same names and changes nothing. --system reads what 'recsync export \
            --system' wrote: recordName names the record, recordType types it, the other \
            system columns are left out.

            Every line is checked first; a bad line (not JSON, not an object, a bad key or \
            value, no name, a name used twice, a record too large) is reported with its line \
            number and nothing is written. Then all records are written in one batch, as \
            local edits (as 'recsync put' writes them): 'recsync push' sends them, and creates \
            the zone on the store if it is new. A record already there is overwritten. Each \
            file is written whole, but an import killed part-way leaves the records it wrote: \
            run it again before pushing, and it writes the rest (the ones already written are \
            unchanged). A record with a file field ({"$asset": ...}) names a file in its own \
            zone's directory: import it into the zone it was exported from.

            EXAMPLES
              recsync import books books.csv --id isbn --type Book
              recsync import todo items.jsonl
              jq -c '.[]' dump.json | recsync import todo - --id id
              recsync export todo | recsync import archive -
              recsync export todo --system | recsync import archive - --system
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The zone (a zone name, OWNER/ZONE, or its directory); a new one is created on push.", completion: Completions.zones)
    var zone: String

    @Argument(help: "The file to read ('-' is stdin).", completion: .file(extensions: ["jsonl", "ndjson", "json", "csv"]))
    var file: String

    @Option(help: "The input format (default: from the file's extension; stdin: jsonl).")
    var format: RecordFileFormat?

    @Option(name: .customLong("id"), help: ArgumentHelp("The key or column that names each record.", valueName: "field"))
    var idField: String?

    @Option(help: "The record type of the new records (default: the zone's default type).")
    var type: String?

    @Flag(help: "The input is 'recsync export --system' output (recordName, recordType, …).")
    var system = false

    @Flag(help: "CSV: read every cell as a string (by default JSON text is read as its value).")
    var strings = false

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let ws = try context.workspace()
        let zoneID = try RecordReference.zone(zone, in: ws, from: context.directory)
        let bytes: [UInt8]
        let source: String
        var fileFormat = format
        if file == "-" {
            bytes = try StandardStream.input.readAll(limit: Int.max)
            source = "stdin"
            fileFormat = fileFormat ?? .jsonl
        } else {
            let path = StoreLocation.absolute(file, relativeTo: context.directory)
            guard let read = try InputFile.read(path, limit: Int.max) else { throw .notFound("\(file): no such file") }
            bytes = read
            source = file
            if fileFormat == nil {
                fileFormat = RecordFileFormat.forFile(file)
                guard fileFormat != nil else {
                    throw .invalidArguments("\(file): cannot tell the format from the extension; give --format jsonl or --format csv")
                }
            }
        }
        let options = ImportOptions(format: fileFormat ?? .jsonl, idField: idField, recordType: type, systemColumns: system, plainStrings: strings)
        let report = try ws.importRecords(bytes, into: zoneID, options: options, source: source)
        let console = context.console
        let total = report.created.count + report.modified.count + report.unchanged.count + report.skipped.count
        console.document([
            "zone": .string(zoneID.zoneName), "owner": .string(zoneID.ownerName),
            "path": .string(ws.relative(ws.zoneDirectory(zoneID))),
            "total": .int(Int64(total)),
            "new": .int(Int64(report.created.count)),
            "modified": .int(Int64(report.modified.count)),
            "unchanged": .int(Int64(report.unchanged.count)),
            "skipped": .array(report.skipped.map { .object(SyncOutput.recordObject($0, workspace: ws)) }),
        ])
        for id in report.skipped {
            console.warning("\(ws.relative(ws.recordPath(id))) changed while the import wrote it; left as it is")
        }
        console.info(
            """
            \(ws.relative(ws.zoneDirectory(zoneID)))/: \(plural(total, "record")) imported\
             (\(report.created.count) new, \(report.modified.count) modified, \(report.unchanged.count)\
             unchanged)
            """
        )
        if report.created.count + report.modified.count > 0 { console.hint("'recsync push' sends them to the store") }
        return ExitCodes.success
    }
}

extension RecordFileFormat: ExpressibleByArgument {}
