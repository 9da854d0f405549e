import ArgumentParser
import Foundation
import RecSyncModel
import RecSyncWorkspace

/// `recsync subscribe`: asks to be told about changes (see `recsync watch`).
struct SubscribeCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "subscribe",
        abstract: "Subscribe to changes in a database, a zone, or records of a type.",
        discussion: """
            Subscriptions are kept in .recsync/subscriptions.json, each with a cursor in \
            .recsync/subscriptions/: 'recsync watch' and 'recsync notifications' report what \
            changed since the cursor, even while nothing was running. A new subscription starts \
            now (--since-beginning: with everything already in the store). Changes this \
            workspace pushed itself are left out unless --include-own.

            A query subscription (--query TYPE) matches records of TYPE in one database, as \
            CloudKit's does: your own zones with --database private, zones shared with you with \
            --database shared, or one zone with --zone; one of them is required. \
            Conditions: --field F --equals V (repeatable; the Nth --equals goes with the Nth \
            --field) and --exists F (repeatable); a record must meet all of them. Created and \
            updated records are matched as they are afterwards, deleted ones as they were.

            EXAMPLES
              recsync subscribe --zone todo
              recsync subscribe --query Task --database private --field done --equals false --fires-on create,update
              recsync subscribe --database shared --since-beginning
            """)

    @OptionGroup var global: GlobalOptions
    @Option(
        help: "Every change in a database: private or shared (with --query: the database to match in).", completion: .list(["private", "shared"]))
    var database: String?
    @Option(help: "Every change in one of your zones (or OWNER/ZONE for a shared one); with --query, only that zone.", completion: Completions.zones)
    var zone: String?
    @Option(help: "Records of this type created, updated or deleted.") var query: String?
    @Option(help: "With --query: a field that must equal the --equals at the same position (repeatable).") var field: [String] = []
    @Option(help: "With --field: the value, as plain JSON (\"text\", 42, true).") var equals: [String] = []
    @Option(help: "With --query: a field that must be present (repeatable).") var exists: [String] = []
    @Option(
        name: .customLong("fires-on"), help: "With --query: which changes fire it, from create,update,delete (default: all three).",
        completion: .list(["create", "update", "delete", "create,update", "update,delete", "create,update,delete"])) var firesOn: String?
    @Option(help: "The subscription's ID (default: made from what it watches).") var id: String?
    @Flag(help: "Report everything already in the store once, instead of starting now.") var sinceBeginning = false
    @Flag(help: "Report changes this workspace pushed itself too.") var includeOwn = false

    func validate() throws {
        if query == nil {
            guard [database, zone].compactMap({ $0 }).count == 1 else { throw ValidationError("give exactly one of --database, --zone, --query") }
            if !field.isEmpty || !exists.isEmpty || firesOn != nil { throw ValidationError("--field, --exists and --fires-on go with --query") }
        } else if database != nil && zone != nil {
            throw ValidationError("with --query, give --database or --zone, not both")
        }
        if field.count != equals.count { throw ValidationError("give one --equals for each --field (use --exists FIELD to ask only for presence)") }
        // The words and values of the query's options are checked here, so a bad one is a
        // usage error (exit 64) like any other bad argument.
        do throws(RecSyncError) {
            if let query {
                do { try NameRules.validateRecordType(query) } catch { throw .invalidArguments("--query \(query): \(error.message)") }
            }
            _ = try conditions()
            _ = try firesOnReasons()
            if let id { try Subscription.validateID(id) }
            if let database, DatabaseScope(rawValue: database) == nil || database == DatabaseScope.public.rawValue {
                throw .invalidArguments("--database \(database): give private or shared")
            }
        } catch {
            throw ValidationError(error.message)
        }
        // A query subscription matches in one database, as CloudKit's does: the user says which.
        if query != nil && database == nil && zone == nil {
            throw ValidationError("--query matches in one database: give --database private (your zones), --database shared, or --zone ZONE")
        }
    }

    /// The query's conditions: --field/--equals pairs, then --exists, each naming its option when bad.
    func conditions() throws(RecSyncError) -> [FieldCondition] {
        var result: [FieldCondition] = []
        for (f, v) in zip(field, equals) {
            do { result.append(try FieldCondition.validated(field: f, test: .equals(v))) } catch {
                throw .invalidArguments("--field \(f) --equals \(v): \(error.message)")
            }
        }
        for f in exists {
            do { result.append(try FieldCondition.validated(field: f, test: .exists)) } catch {
                throw .invalidArguments("--exists \(f): \(error.message)")
            }
        }
        return result
    }

    /// The changes the query fires on (--fires-on; default: all three).
    func firesOnReasons() throws(RecSyncError) -> Set<RecordChangeReason> {
        guard let firesOn else { return Set(RecordChangeReason.allCases) }
        do { return try RecordChangeReason.parseList(firesOn) } catch {
            throw .invalidArguments(error.message.hasPrefix("needs") ? "--fires-on \(error.message)" : "--fires-on \(firesOn): \(error.message)")
        }
    }

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let engine = try context.engine()
        let request = SubscriptionRequest(
            database: database, zone: zone, query: query, conditions: try conditions(), firesOn: try firesOnReasons(), id: id, includeOwn: includeOwn)
        let subscription = try request.subscription(user: engine.workspace.user)
        try await engine.subscribe(subscription, from: sinceBeginning ? .beginning : .now)
        context.console.document(["id": .string(subscription.id), "watches": .string(subscription.summary)])
        context.console.info("subscribed: \(subscription.id) (\(subscription.summary))")
        context.console.hint(
            sinceBeginning
                ? "'recsync notifications' shows what it matches already"
                : "run 'recsync watch' (or 'recsync watch --once') to be told about matching changes")
        return ExitCodes.success
    }
}

/// `recsync subscriptions`: lists the workspace's subscriptions.
struct SubscriptionsCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "subscriptions", abstract: "List this workspace's subscriptions.",
        discussion: "EXAMPLES\n  recsync subscriptions\n  recsync subscriptions --json")

    @OptionGroup var global: GlobalOptions

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let subscriptions = try context.workspace().subscriptions()
        context.console.document(["subscriptions": .array(subscriptions.map { .object(["id": .string($0.id), "watches": .string($0.summary)]) })])
        for s in subscriptions { context.console.out("\(NameRules.printable(s.id))\t\(NameRules.printable(s.summary))") }
        if subscriptions.isEmpty { context.console.info("no subscriptions; add one with 'recsync subscribe'") }
        return ExitCodes.success
    }
}

/// `recsync unsubscribe ID`: removes a subscription.
struct UnsubscribeCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "unsubscribe", abstract: "Remove a subscription.",
        discussion: "EXAMPLES\n  recsync subscriptions\n  recsync unsubscribe zone-alice-todo")

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The subscription's ID (see 'recsync subscriptions').", completion: Completions.subscriptionIDs) var id: String

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        try context.workspace().removeSubscription(id)
        context.console.document(["id": .string(id)])
        context.console.info("unsubscribed: \(id)")
        return ExitCodes.success
    }
}
