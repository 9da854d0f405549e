import Foundation
import ArgumentParser
import RecSyncModel
import RecSyncStore
import RecSyncWorkspace

/// `recsync changes`: the store's raw change feed as JSON lines; no workspace needed.
struct ChangesCommand: RecSyncSubcommand {
    enum Scope: String, ExpressibleByArgument, CaseIterable {
        case `private`, shared
        var database: DatabaseScope { self == .private ? .private : .shared }
    }

    static let configuration = CommandConfiguration(
        commandName: "changes",
        abstract: "Print a store's change feed from a token, as JSON lines.",
        discussion: """
            Without --zone, the database feed: one line per changed zone ("kind": "zone"), per \
            deleted zone ("zoneDeleted", with its reason), then a "token" line. With --zone, the \
            zone feed: one line per changed record ("record": recordName, recordType, changeTag, \
            fields as plain JSON), per deleted record ("recordDeleted"), then a "token" line. \
            Every line has "version": 1. Pass the token back with --since to get what changed \
            after it. Pages are followed to the end unless --limit is given; then the token line \
            says whether more is coming.
            """)

    @OptionGroup var global: GlobalOptions

    @Option(help: "The store: a path, a file:// URL, or a network URL.", completion: .directory)
    var store: String

    @Option(help: "Who asks (default: $RECSYNC_USER, else your login name).")
    var user: String?

    @Option(help: "The database: private (your zones) or shared (zones shared with you).")
    var scope: Scope = .private

    @Option(help: "A zone's record feed instead of the database feed (OWNER/ZONE for a shared zone).")
    var zone: String?

    @Option(help: "The token from an earlier run (default: from the beginning).")
    var since: String?

    @Option(help: "At most this many items, in one page.")
    var limit: Int?

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
    }

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let who = try context.user(user)
        return try await GitStore.withStore(at: self.store, relativeTo: context.directory, actor: StoreActor(userRecordName: who)) { store throws(RecSyncError) -> Int32 in
            let console = context.console
            var token = since.map(ServerChangeToken.init(rawValue:))
            if let zone {
                let id = try zoneID(zone, user: who)
                while true {
                    let page = try await store.recordZoneChanges(zone: id, since: token, resultsLimit: limit ?? 0, desiredKeys: nil)
                    for item in page.modifications {
                        switch item.result {
                        case .success(let r):
                            console.jsonLine([
                                "kind": .string("record"), "recordName": .string(r.recordID.recordName),
                                "recordType": .string(r.recordType), "changeTag": r.changeTag.map(JSONValue.string) ?? .null,
                                "fields": .object(r.fields.mapValues(WorkspaceEncoding.json(from:))),
                            ])
                        case .failure(let e):
                            console.jsonLine(["kind": .string("error"), "recordName": .string(item.recordID.recordName), "message": .string(e.message)])
                        }
                    }
                    for d in page.deletions {
                        console.jsonLine(["kind": .string("recordDeleted"), "recordName": .string(d.recordID.recordName), "recordType": .string(d.recordType)])
                    }
                    warnings(page.warnings, console)
                    token = page.changeToken
                    if !page.moreComing || limit != nil {
                        tokenLine(page.changeToken, moreComing: page.moreComing, console)
                        return ExitCodes.success
                    }
                }
            }
            while true {
                let page = try await store.databaseChanges(scope: scope.database, since: token, resultsLimit: limit ?? 0)
                for z in page.modifications {
                    console.jsonLine(["kind": .string("zone"), "zone": .string(z.zoneName), "owner": .string(z.ownerName)])
                }
                for d in page.deletions {
                    console.jsonLine(["kind": .string("zoneDeleted"), "zone": .string(d.zoneID.zoneName), "owner": .string(d.zoneID.ownerName), "reason": .string(d.reason.rawValue)])
                }
                warnings(page.warnings, console)
                token = page.changeToken
                if !page.moreComing || limit != nil {
                    tokenLine(page.changeToken, moreComing: page.moreComing, console)
                    return ExitCodes.success
                }
            }
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
