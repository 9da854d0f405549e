import Foundation

/// A subscription as a person asks for one (`recsync subscribe`): what to watch, named the way
/// they write it, turned into a `Subscription` with its default ID.
public struct SubscriptionRequest: Sendable, Hashable {
    /// `private` or `shared`: every change in that database (with `query`: where to match).
    public var database: String?
    /// A zone of the user's, or `OWNER/ZONE` for a shared one (with `query`: only there).
    public var zone: String?
    /// A record type: records of it created, updated or deleted.
    public var query: String?
    public var conditions: [FieldCondition]
    public var firesOn: Set<RecordChangeReason>
    /// The ID; nil: made from what it watches (`database-private`, `zone-alice-notes`, `query-Task-urgent`).
    public var id: String?
    public var includeOwn: Bool

    public init(
        database: String? = nil, zone: String? = nil, query: String? = nil, conditions: [FieldCondition] = [],
        firesOn: Set<RecordChangeReason> = Set(RecordChangeReason.allCases), id: String? = nil, includeOwn: Bool = false
    ) {
        self.database = database
        self.zone = zone
        self.query = query
        self.conditions = conditions
        self.firesOn = firesOn
        self.id = id
        self.includeOwn = includeOwn
    }

    /// The subscription for `user`. Without `query`, exactly one of `database` and `zone`.
    public func subscription(user: String) throws(RecSyncError) -> Subscription {
        func zoneID(_ text: String) throws(RecSyncError) -> ZoneID {
            let parts = text.split(separator: "/", maxSplits: 1).map(String.init)
            return parts.count == 2 ? try ZoneID(normalizing: parts[1], ownerName: parts[0]) : try ZoneID(normalizing: text, ownerName: user)
        }
        func scope(_ text: String) throws(RecSyncError) -> DatabaseScope {
            guard let scope = DatabaseScope(rawValue: text), scope != .public else {
                throw .badDatabase(operation: "subscribing to the '\(text)' database (private or shared)")
            }
            return scope
        }
        let kind: Subscription.Kind
        let name: String
        if let query {
            try NameRules.validateRecordType(query)
            var zone: ZoneID?
            var queryScope = DatabaseScope.private
            if let text = self.zone {
                let z = try zoneID(text)
                zone = z
                queryScope = z.ownerName == user ? .private : .shared
            } else if let database {
                queryScope = try scope(database)
            }
            kind = .query(QuerySubscription(scope: queryScope, recordType: query, zone: zone, conditions: conditions, firesOn: firesOn))
            name = "query-\(query)" + (queryScope == .shared ? "-shared" : "") + conditions.map { "-\($0.field)" }.joined()
        } else if let database, zone == nil {
            let s = try scope(database)
            kind = .database(s)
            name = "database-\(s.rawValue)"
        } else if let zone, database == nil {
            let z = try zoneID(zone)
            kind = .zone(z)
            name = "zone-\(z.ownerName)-\(z.zoneName)"
        } else {
            throw .invalidArguments("a subscription watches exactly one of a database, a zone or a query")
        }
        let subscription = Subscription(id: id ?? name, kind: kind, includeOwn: includeOwn)
        try Subscription.validateID(subscription.id)
        return subscription
    }
}

extension RecordChangeReason {
    /// The changes in a comma-separated list of `create`, `update`, `delete` (and their
    /// `-d`/`-ion` forms), at least one.
    public static func parseList(_ text: String) throws(RecSyncError) -> Set<RecordChangeReason> {
        var result = Set<RecordChangeReason>()
        for word in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces).lowercased() }) {
            switch word {
            case "create", "created", "creation": result.insert(.created)
            case "update", "updated": result.insert(.updated)
            case "delete", "deleted", "deletion": result.insert(.deleted)
            default: throw .invalidArguments("'\(word)' is not create, update or delete")
            }
        }
        guard !result.isEmpty else { throw .invalidArguments("needs one or more of create, update, delete") }
        return result
    }
}

extension Subscription {
    /// What the subscription watches, in words (`zone alice/notes`, `query Task in private
    /// where urgent = true on create`).
    public var summary: String {
        var text: String
        switch kind {
        case .database(let scope): text = "database \(scope.rawValue)"
        case .zone(let zone): text = "zone \(zone)"
        case .query(let q):
            text = "query \(q.recordType) in " + (q.zone.map { "zone \($0)" } ?? q.scope.rawValue)
            let conditions = q.conditions.map { c in
                switch c.test {
                case .equals(let v): "\(c.field) = \(v)"
                case .exists: "\(c.field) exists"
                }
            }
            if !conditions.isEmpty { text += " where " + conditions.joined(separator: " and ") }
            if q.firesOn.count < RecordChangeReason.allCases.count {
                text += " on " + q.firesOn.sorted().map { $0 == .created ? "create" : $0 == .updated ? "update" : "delete" }.joined(separator: ",")
            }
        }
        return text + (includeOwn ? " (including own changes)" : "")
    }
}
