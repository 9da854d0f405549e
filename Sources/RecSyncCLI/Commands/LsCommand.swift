import ArgumentParser
import Foundation
import RecSyncEngine
import RecSyncModel
import RecSyncWorkspace

/// `recsync ls [ZONE]`: the records of a zone (or of every zone) with their type and state.
struct LsCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "ls",
        abstract: "List records with their type and state, sorted by zone and record name.",
        discussion: """
            One line per record: its state (synced, new, modified, deleted, conflict — the \
            words of 'recsync status', and synced for a record with no local change), its \
            type ('-' for a new record that takes the zone's default type) and its path. \
            --long adds the change tag and the created and modified times (UTC). Without \
            ZONE, every zone of the workspace.

            EXAMPLES
              recsync ls
              recsync ls todo --long
              recsync ls bob/recipes --json | jq -r '.records[] | select(.state != "synced") | .path'
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The zone (a zone name, OWNER/ZONE, or its directory); default: every zone.", completion: Completions.zones)
    var zone: String?

    @Flag(name: .shortAndLong, help: "Add change tags and created/modified times.")
    var long = false

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let engine = try context.engine()
        let ws = engine.workspace
        let zones = try zone.map { z throws(RecSyncError) in [try RecordReference.zone(z, in: ws, from: context.directory)] }
        let listing = try await engine.list(zones)
        let console = context.console
        console.document([
            "records": .array(
                listing.map { r in
                    var o = SyncOutput.recordObject(r.recordID, workspace: ws)
                    o["recordType"] = r.recordType.map(JSONValue.string) ?? .null
                    o["state"] = .string(r.state.rawValue)
                    o["changeTag"] = r.changeTag.map(JSONValue.string) ?? .null
                    o["created"] = r.created.map(JSONValue.int) ?? .null
                    o["modified"] = r.modified.map(JSONValue.int) ?? .null
                    return .object(o)
                })
        ])
        for r in listing {
            var columns = [pad(r.state.rawValue, 8), pad(r.recordType ?? "-", 12)]
            if long { columns += [pad(r.changeTag ?? "-", 16), time(r.created), time(r.modified)] }
            columns.append(ws.relative(ws.recordPath(r.recordID)))
            console.out(columns.joined(separator: " "))
        }
        if listing.isEmpty { console.info("no records") }
        return ExitCodes.success
    }

    func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }

    /// A time as `2026-11-22T10:00:00Z`, or '-' padded to the same width.
    func time(_ ms: Int64?) -> String {
        guard let ms else { return pad("-", 20) }
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
    }
}
