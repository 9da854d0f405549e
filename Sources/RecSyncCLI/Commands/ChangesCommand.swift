import ArgumentParser
import Foundation
import RecSyncEngine
import RecSyncModel
import RecSyncStore
import RecSyncWorkspace

/// `recsync changes`: the store's raw change feed as JSON lines (the workspace's store, or `--store`).
struct ChangesCommand: RecSyncSubcommand {
    enum Scope: String, ExpressibleByArgument, CaseIterable {
        case `private`, shared
        var database: DatabaseScope { self == .private ? .private : .shared }
    }

    static let configuration = CommandConfiguration(
        commandName: "changes",
        abstract: "Print a store's change feed from a token, as JSON lines.",
        discussion: """
            Inside a workspace, the feed of its store as its user; elsewhere, give --store (and \
            --user, default $RECSYNC_USER, else your login name). Every line is a JSON object \
            with "version": 1, "command": "changes" and a "kind":

              zone           a changed zone (database feed): zone, owner
              zoneDeleted    a removed zone (database feed): zone, owner, reason
              record         a changed record (zone feed): recordName, zone, owner, recordType,
                             changeTag, fields (plain JSON; only --desired-keys when given)
              recordDeleted  a deleted record (zone feed): recordName, zone, owner, recordType
              error          a record the store could not deliver: recordName, zone, owner, message
              warning        something in the store no workspace can hold: path, message
              token          after every page: token, moreComing

            Without --zone, the database feed; with --zone, the zone's record feed. Pass a \
            token back with --since to get what changed after it: a consumer that stops \
            half-way resumes from the last token line it read. Pages are followed to the end \
            unless --limit is given; then one page, and its token line says whether more is \
            coming.

            EXAMPLES
              recsync changes
              recsync changes --zone todo --desired-keys title,done
              recsync changes --zone todo --since "$(recsync changes --zone todo | tail -1 | jq -r .token)"
              recsync changes --store /srv/stores/team.git --user bob --scope shared
            """)

    @OptionGroup var global: GlobalOptions

    @Option(help: "The store: a path, a file:// URL, or a network URL (default: the workspace's).", completion: .directory)
    var store: String?

    @Option(help: "Who asks (default: the workspace's user; outside one, $RECSYNC_USER, else your login name).")
    var user: String?

    @Option(help: "The database: private (your zones) or shared (zones shared with you).")
    var scope: Scope = .private

    @Option(help: "A zone's record feed instead of the database feed (OWNER/ZONE for a shared zone).")
    var zone: String?

    @Option(help: "The token from an earlier run (default: from the beginning).")
    var since: String?

    @Option(help: "At most this many items, in one page.")
    var limit: Int?

    @Option(help: ArgumentHelp("Only these fields in record lines, comma-separated (CloudKit's desiredKeys).", valueName: "keys"))
    var desiredKeys: String?

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
        if let desiredKeys,
            desiredKeys.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces).isEmpty }) || desiredKeys.isEmpty
        {
            throw ValidationError("--desired-keys takes field names separated by commas, such as title,done")
        }
        if desiredKeys != nil && zone == nil { throw ValidationError("--desired-keys needs --zone: only record lines have fields") }
    }

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let location: String, base: String, who: String
        if let store {
            (location, base, who) = (store, context.directory, try context.user(user))
        } else {
            let ws: Workspace
            do { ws = try context.workspace() } catch {
                guard case .notAWorkspace = error.reason else { throw error }
                throw .invalidArguments("not inside a workspace; give the store with --store PATH")
            }
            guard !ws.config.remote.isEmpty else {
                throw .noRemote()
            }
            (location, base, who) = (ws.config.remote, ws.root, try user.map { u throws(RecSyncError) in try context.user(u) } ?? ws.user)
        }
        let keys = desiredKeys.map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
        return try await StoreLocation.withStore(at: location, relativeTo: base, actor: StoreActor(userRecordName: who)) {
            store throws(RecSyncError) -> Int32 in
            let console = context.console
            let token = since.map(ServerChangeToken.init(rawValue:))
            if let zone {
                let id = try zoneID(zone, user: who)
                let place: [String: JSONValue] = ["zone": .string(id.zoneName), "owner": .string(id.ownerName)]
                try await ZoneChangeFeed.read(id, in: store, since: token, desiredKeys: keys, limit: limit) { page in
                    for item in page.modifications {
                        switch item.result {
                        case .success(let r):
                            console.jsonLine(
                                place.merging([
                                    "kind": .string("record"), "recordName": .string(r.recordID.recordName),
                                    "recordType": .string(r.recordType), "changeTag": r.changeTag.map(JSONValue.string) ?? .null,
                                    "fields": .object(r.fields.mapValues(WorkspaceEncoding.json(from:))),
                                ]) { $1 })
                        case .failure(let e):
                            console.jsonLine(
                                place.merging([
                                    "kind": .string("error"), "recordName": .string(item.recordID.recordName), "message": .string(e.message),
                                ]) { $1 })
                        }
                    }
                    for d in page.deletions {
                        console.jsonLine(
                            place.merging([
                                "kind": .string("recordDeleted"), "recordName": .string(d.recordID.recordName), "recordType": .string(d.recordType),
                            ]) { $1 })
                    }
                    warnings(page.warnings, console)
                    tokenLine(page.changeToken, moreComing: page.moreComing, console)
                }
                return ExitCodes.success
            }
            try await DatabaseChangeFeed.read(scope.database, in: store, since: token, limit: limit) { page in
                for z in page.modifications {
                    console.jsonLine(["kind": .string("zone"), "zone": .string(z.zoneName), "owner": .string(z.ownerName)])
                }
                for d in page.deletions {
                    console.jsonLine([
                        "kind": .string("zoneDeleted"), "zone": .string(d.zoneID.zoneName), "owner": .string(d.zoneID.ownerName),
                        "reason": .string(d.reason.rawValue),
                    ])
                }
                warnings(page.warnings, console)
                tokenLine(page.changeToken, moreComing: page.moreComing, console)
            }
            return ExitCodes.success
        }
    }

    func zoneID(_ text: String, user: String) throws(RecSyncError) -> ZoneID {
        if let slash = text.firstIndex(of: "/") {
            return try ZoneID(normalizing: String(text[text.index(after: slash)...]), ownerName: String(text[..<slash]))
        }
        guard scope == .private else {
            throw .invalidArguments("--scope shared needs --zone OWNER/ZONE")
        }
        return try ZoneID(normalizing: text, ownerName: user)
    }

    func warnings(_ list: [StoreWarning], _ console: Console) {
        for w in list { console.jsonLine(["kind": .string("warning"), "path": .string(w.path), "message": .string(w.message)]) }
    }

    func tokenLine(_ token: ServerChangeToken, moreComing: Bool, _ console: Console) {
        console.jsonLine(["kind": .string("token"), "token": .string(token.rawValue), "moreComing": .bool(moreComing)])
    }
}
