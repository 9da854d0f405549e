import ArgumentParser
import RecSyncModel
import RecSyncStore
import RecSyncWorkspace

/// `recsync get RECORD...`: prints records' fields, or fetches an asset field (`--asset`).
struct GetCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Print records' fields (canonical plain JSON) from the workspace, or with --remote from the store.",
        discussion: """
            One record prints its fields as its record file holds them (pretty JSON). Several \
            print one compact JSON object of fields per line (JSON lines), in the order given. \
            With --json: {"records": [...]}, each record with recordName, zone, owner, path, \
            fields, recordType and changeTag. Every RECORD is looked up before anything is \
            printed: one that is not there is an error naming it, and nothing is printed. \
            \(RecordReference.help)

            With --asset FIELD, fetches that asset field of each RECORD from the store into \
            its place in the workspace (RECORD.assets/FIELD) if it is not there (pulled with \
            --no-assets), checked against its size and SHA-256, and prints where it is, one \
            path per line. With --json: {"assets": [...]}, each with recordName, zone, owner, \
            path, field, file, size, sha256 and downloaded.

            EXAMPLES
              recsync get todo/milk
              recsync get --asset photo photos/trip
              recsync get todo/milk todo/eggs --json
              recsync get alice/plans/trip --remote
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The records.", completion: Completions.records)
    var records: [String]

    @Flag(help: "Fetch the store's current versions instead of reading the workspace.")
    var remote = false

    @Option(
        name: .customLong("asset"),
        help: ArgumentHelp("Fetch this asset field of the records into the workspace and print where it is.", valueName: "FIELD"))
    var assetField: String?

    func validate() throws {
        if records.isEmpty { throw ValidationError("give at least one RECORD") }
        if assetField != nil && remote { throw ValidationError("--asset fetches into the workspace; it does not go with --remote") }
    }

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let ws = try context.workspace()
        var ids: [RecordID] = []
        for record in records { ids.append(try RecordReference.record(record, in: ws, from: context.directory)) }
        if let assetField { return try await fetchAssets(ids, field: assetField, workspace: ws, context: context) }
        var found: [(id: RecordID, fields: [String: FieldValue], system: SystemFields?)] = []
        if remote {
            let results = try await context.store(for: ws).fetchRecords(ids)
            for id in ids {
                guard let result = results.first(where: { $0.recordID == id }) else { throw .unknownItem(id) }
                let stored = try result.result.get()
                found.append((id, stored.fields, stored.systemFields))
            }
        } else {
            for id in ids {
                guard let local = try ws.recordFields(id) else {
                    throw .notFound("no record file at \(ws.relative(ws.recordPath(id))); pull first, or use --remote")
                }
                found.append((id, local, try ws.systemFields(id)))
            }
        }
        let console = context.console
        console.document([
            "records": .array(
                found.map { r in
                    var o = SyncOutput.recordObject(r.id, workspace: ws)
                    o["fields"] = .object(r.fields.mapValues(WorkspaceEncoding.json(from:)))
                    o["recordType"] = r.system.map { .string($0.recordType) } ?? .null
                    o["changeTag"] = r.system?.changeTag.map(JSONValue.string) ?? .null
                    return .object(o)
                })
        ])
        if found.count == 1 {
            console.out(bytes: WorkspaceEncoding.encodeFields(found[0].fields))
        } else {
            for r in found {
                console.out(bytes: JSON.serialize(.object(r.fields.mapValues(WorkspaceEncoding.json(from:))), pretty: false) + [10])
            }
        }
        return ExitCodes.success
    }

    /// `get --asset FIELD`: one library call, then where each file is.
    func fetchAssets(_ ids: [RecordID], field: String, workspace ws: Workspace, context: CommandContext) async throws(RecSyncError) -> Int32 {
        let fetched = try await context.engine().fetchAssets(ids, field: field)
        let console = context.console
        console.document([
            "assets": .array(
                fetched.map { a in
                    var o = SyncOutput.recordObject(a.recordID, workspace: ws)
                    o["field"] = .string(a.field)
                    o["file"] = .string(ws.relative(a.path))
                    o["size"] = .int(a.asset.size)
                    o["sha256"] = .string(a.asset.sha256)
                    o["downloaded"] = .bool(a.downloaded)
                    return .object(o)
                })
        ])
        for a in fetched {
            console.out(ws.relative(a.path))
            if !a.downloaded { console.info("\(ws.relative(a.path)) was already there") }
        }
        return ExitCodes.success
    }
}
