import ArgumentParser
import Foundation
import RecSyncModel
import RecSyncWorkspace

/// `recsync subscribe`: asks to be told about changes (see `recsync watch`).
struct SubscribeCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "subscribe",
        abstract: "Subscribe to changes in a database, a zone, or records of a type.",
        discussion: "Subscriptions are kept in .recsync/subscriptions.json; 'recsync watch' reports each change that matches one.")

    @OptionGroup var global: GlobalOptions
    @Option(help: "Every change in a database: private or shared.") var database: String?
    @Option(help: "Every change in one of your zones (or OWNER/ZONE for a shared one).") var zone: String?
    @Option(help: "Records of this type created or changed.") var query: String?
    @Option(help: "With --query: only records whose FIELD equals --equals.") var field: String?
    @Option(help: "With --field: the value, as plain JSON (\"text\", 42, true).") var equals: String?
    @Option(help: "The subscription's ID (default: made from what it watches).") var id: String?

    func validate() throws {
        let kinds = [database, zone, query].compactMap { $0 }.count
        guard kinds == 1 else { throw ValidationError("give exactly one of --database, --zone, --query") }
        if field != nil, query == nil { throw ValidationError("--field goes with --query") }
        if (field == nil) != (equals == nil) { throw ValidationError("--field and --equals go together") }
    }

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let ws = try context.workspace()
        let kind: Subscription.Kind
        var name: String
        if let database {
            guard let scope = DatabaseScope(rawValue: database), scope != .public else {
                throw .badDatabase(operation: "subscribing to the '\(database)' database")
            }
            kind = .database(scope)
            name = "database-\(scope.rawValue)"
        } else if let zone {
            let parts = zone.split(separator: "/", maxSplits: 1).map(String.init)
            let zoneID = parts.count == 2 ? try ZoneID(normalizing: parts[1], ownerName: parts[0]) : try ZoneID(normalizing: zone, ownerName: ws.user)
            kind = .zone(zoneID)
            name = "zone-\(zoneID.ownerName)-\(zoneID.zoneName)"
        } else {
            let type = query ?? ""
            try NameRules.validateRecordType(type)
            if let field { try NameRules.validateFieldKey(field) }
            if let equals {
                guard (try? JSON.parse(equals)) != nil else {
                    throw .invalidArguments("--equals \(equals): not a JSON value; quote text as '\"text\"'")
                }
            }
            kind = .query(scope: .private, recordType: type, field: field, equals: equals)
            name = "query-\(type)" + (field.map { "-\($0)" } ?? "")
        }
        var subscriptions = try ws.subscriptions()
        name = id ?? name
        guard !subscriptions.contains(where: { $0.id == name }) else {
            throw .invalidArguments("a subscription '\(name)' exists already; pass --id to name this one, or unsubscribe first")
        }
        subscriptions.append(Subscription(id: name, kind: kind))
        try ws.saveSubscriptions(subscriptions)
        context.console.document(["command": .string("subscribe"), "id": .string(name)])
        context.console.info("subscribed: \(name)")
        context.console.hint("run 'recsync watch' to be told about matching changes")
        return ExitCodes.success
    }
}

/// `recsync subscriptions`: lists the workspace's subscriptions.
struct SubscriptionsCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(commandName: "subscriptions", abstract: "List this workspace's subscriptions.")

    @OptionGroup var global: GlobalOptions

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let subscriptions = try context.workspace().subscriptions()
        context.console.document(["subscriptions": .array(subscriptions.map { .object(["id": .string($0.id), "watches": .string(Self.describe($0.kind))]) })])
        for s in subscriptions { context.console.out("\(s.id)\t\(Self.describe(s.kind))") }
        if subscriptions.isEmpty { context.console.info("no subscriptions; add one with 'recsync subscribe'") }
        return ExitCodes.success
    }

    static func describe(_ kind: Subscription.Kind) -> String {
        switch kind {
        case .database(let scope): "database \(scope.rawValue)"
        case .zone(let zone): "zone \(zone)"
        case .query(let scope, let type, let field, let equals):
            "query \(type) in \(scope.rawValue)" + (field.map { " where \($0) = \(equals ?? "")" } ?? "")
        }
    }
}

/// `recsync unsubscribe ID`: removes a subscription.
struct UnsubscribeCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(commandName: "unsubscribe", abstract: "Remove a subscription.")

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The subscription's ID (see 'recsync subscriptions').") var id: String

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let ws = try context.workspace()
        var subscriptions = try ws.subscriptions()
        guard subscriptions.contains(where: { $0.id == id }) else {
            throw .invalidArguments("no subscription '\(id)'; 'recsync subscriptions' lists them")
        }
        subscriptions.removeAll { $0.id == id }
        try ws.saveSubscriptions(subscriptions)
        context.console.document(["command": .string("unsubscribe"), "id": .string(id)])
        context.console.info("unsubscribed: \(id)")
        return ExitCodes.success
    }
}
