import ArgumentParser
import RecSyncModel
import RecSyncStore
import RecSyncSystem
import RecSyncWorkspace

/// `recsync zone list`: the zones on the store visible to you.
struct ZoneListCommand: RecSyncSubcommand {
    static var commandPath: String { "zone " + (configuration.commandName ?? "") }
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the zones on the store: yours (private) and those shared with you.",
        discussion:
            "A partial workspace (see 'recsync zone track') marks the zones it does not hold 'not tracked'.\n\nEXAMPLES\n  recsync zone list\n  recsync zone list --json | jq -r '.zones[].zone'",
        aliases: ["ls"])

    @OptionGroup var global: GlobalOptions

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let ws = try context.workspace()
        let store = try context.store(for: ws)
        var rows: [(scope: DatabaseScope, zone: RecordZone)] = []
        for scope in [DatabaseScope.private, .shared] {
            rows += try await store.fetchAllRecordZones(scope: scope).sorted { $0.zoneID < $1.zoneID }.map { (scope, $0) }
        }
        let console = context.console
        console.document([
            "zones": .array(
                rows.map { row in
                    .object([
                        "scope": .string(row.scope.rawValue), "zone": .string(row.zone.zoneID.zoneName),
                        "owner": .string(row.zone.zoneID.ownerName), "path": .string(ws.relative(ws.zoneDirectory(row.zone.zoneID))),
                        "defaultRecordType": row.zone.defaultRecordType.map(JSONValue.string) ?? .null,
                        "permission": .string(row.zone.access(for: ws.user).rawValue),
                        "participants": .array(
                            row.zone.participants.map {
                                .object(["user": .string($0.userRecordName), "permission": .string($0.permission.rawValue)])
                            }),
                        "tracked": .bool(ws.tracks(row.zone.zoneID)),
                        "encrypted": row.zone.encryption.map { e in e.fields.map { .array($0.map(JSONValue.string)) } ?? .bool(true) }
                            ?? .bool(false),
                    ])
                })
        ])
        // The column names on a terminal only: piped, every line is a zone.
        if !rows.isEmpty && StandardStream.output.isTerminal { console.out("SCOPE\tZONE\tOWNER\tPERMISSION\tDETAILS") }
        for row in rows {
            let name = row.scope == .private ? row.zone.zoneID.zoneName : "\(row.zone.zoneID.ownerName)/\(row.zone.zoneID.zoneName)"
            var line = "\(row.scope.rawValue)\t\(name)\towner \(row.zone.zoneID.ownerName)\t\(row.zone.access(for: ws.user).rawValue)"
            if !row.zone.participants.isEmpty {
                line += "\tshared with " + row.zone.participants.map { "\($0.userRecordName) (\($0.permission.rawValue))" }.joined(separator: ", ")
            }
            if let type = row.zone.defaultRecordType { line += "\tdefault type \(type)" }
            if let e = row.zone.encryption { line += "\tencrypted" + (e.fields.map { " (\($0.joined(separator: ", ")))" } ?? "") }
            if !ws.tracks(row.zone.zoneID) { line += "\tnot tracked" }
            console.out(line)
        }
        if rows.isEmpty { console.info("no zones yet; create one with 'recsync zone create NAME'") }
        return ExitCodes.success
    }
}
