import Foundation

/// Why a record appears in a query notification (CloudKit's `CKQueryNotification.Reason`).
public enum RecordChangeReason: String, Sendable, Hashable, Codable, CaseIterable, Comparable {
    case created
    case updated
    case deleted

    var rank: Int {
        switch self {
        case .created: 0
        case .updated: 1
        case .deleted: 2
        }
    }

    public static func < (a: Self, b: Self) -> Bool { a.rank < b.rank }
}

/// One condition of a query subscription on a record's field.
public struct FieldCondition: Sendable, Hashable, Codable {
    public enum Test: Sendable, Hashable {
        /// The field holds this value, given as plain workspace JSON (`"text"`, `42`, `true`).
        case equals(String)
        /// The field is present.
        case exists
    }

    public var field: String
    public var test: Test

    public init(field: String, test: Test) {
        self.field = field
        self.test = test
    }

    /// Checks the field key and that an `equals` value is a field value recsync can hold.
    public static func validated(field: String, test: Test) throws(RecSyncError) -> FieldCondition {
        try NameRules.validateFieldKey(field)
        let condition = FieldCondition(field: field, test: test)
        _ = try condition.expectedValue()
        return condition
    }

    /// The value an `equals` test compares with; nil for `exists`.
    func expectedValue() throws(RecSyncError) -> FieldValue? {
        guard case .equals(let text) = test else { return nil }
        let json: JSONValue
        do { json = try JSON.parse(Array(text.utf8)) } catch {
            throw .invalidArguments("the value '\(text)' for field '\(field)' is not JSON; quote text as '\"text\"'")
        }
        guard let value = try WorkspaceEncoding.fieldValue(from: json, key: field) else {
            throw .invalidArguments("the value for field '\(field)' is null; use an exists condition to ask for a field's presence")
        }
        return value
    }

    enum CodingKeys: String, CodingKey { case field, equals, exists }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        field = try c.decode(String.self, forKey: .field)
        if let value = try c.decodeIfPresent(String.self, forKey: .equals) {
            test = .equals(value)
        } else if try c.decodeIfPresent(Bool.self, forKey: .exists) == true {
            test = .exists
        } else {
            throw DecodingError.dataCorruptedError(forKey: .field, in: c, debugDescription: "a condition needs 'equals' or 'exists'")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(field, forKey: .field)
        switch test {
        case .equals(let value): try c.encode(value, forKey: .equals)
        case .exists: try c.encode(true, forKey: .exists)
        }
    }
}

/// CloudKit's `CKQuerySubscription`: records of one type in a scope (optionally one zone)
/// that meet every condition, reported when created, updated or deleted (`firesOn`).
///
/// Created and updated records are matched as they are after the change, deleted ones as
/// they were before it (as CloudKit does, an update that makes a record stop matching is
/// not reported).
public struct QuerySubscription: Sendable, Hashable, Codable {
    public var scope: DatabaseScope
    public var recordType: String
    public var zone: ZoneID?
    public var conditions: [FieldCondition]
    public var firesOn: Set<RecordChangeReason>

    public init(
        scope: DatabaseScope, recordType: String, zone: ZoneID? = nil, conditions: [FieldCondition] = [],
        firesOn: Set<RecordChangeReason> = Set(RecordChangeReason.allCases)
    ) {
        self.scope = scope
        self.recordType = recordType
        self.zone = zone
        self.conditions = conditions
        self.firesOn = firesOn
    }

    /// A matcher with the condition values parsed once.
    public func matcher() throws(RecSyncError) -> Matcher {
        var parsed: [(String, FieldValue?)] = []
        for condition in conditions { parsed.append((condition.field, try condition.expectedValue())) }
        return Matcher(recordType: recordType, conditions: parsed)
    }

    public struct Matcher: Sendable {
        let recordType: String
        let conditions: [(String, FieldValue?)]

        public func matches(_ record: Record) -> Bool {
            guard record.recordType == recordType else { return false }
            for (field, expected) in conditions {
                guard let value = record.fields[field] else { return false }
                if let expected, value != expected { return false }
            }
            return true
        }
    }
}

/// A standing request to be told when something in the store changes (CloudKit's
/// database, zone and query subscriptions).
public struct Subscription: Sendable, Hashable, Codable {
    public enum Kind: Sendable, Hashable {
        /// Any change in any zone of a scope (`CKDatabaseSubscription`).
        case database(DatabaseScope)
        /// Any change in one zone (`CKRecordZoneSubscription`).
        case zone(ZoneID)
        /// Records of a type that meet conditions (`CKQuerySubscription`).
        case query(QuerySubscription)

        /// `database`, `zone` or `query`.
        public var name: String {
            switch self {
            case .database: "database"
            case .zone: "zone"
            case .query: "query"
            }
        }
    }

    public var id: String
    public var kind: Kind
    /// Report changes this client made itself too (CloudKit leaves out the device a change
    /// came from; so does recsync unless this is set).
    public var includeOwn: Bool

    public init(id: String, kind: Kind, includeOwn: Bool = false) {
        self.id = id
        self.kind = kind
        self.includeOwn = includeOwn
    }

    /// The scope the subscription looks at, for a user: a zone of someone else's is shared.
    public func scope(forUser user: String) -> DatabaseScope {
        switch kind {
        case .database(let scope): scope
        case .zone(let zone): zone.ownerName == user ? .private : .shared
        case .query(let query): query.scope
        }
    }

    /// Subscription IDs name files in `.recsync/subscriptions/` (escaped, as zone names
    /// are): 1–100 bytes, at most 200 once escaped, no control characters.
    public static func validateID(_ id: String) throws(RecSyncError) {
        guard !id.isEmpty, id.utf8.count <= 100, NameEscaping.escape(id).utf8.count <= 200,
            !id.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }),
            id.trimmingCharacters(in: .whitespaces) == id
        else {
            throw .invalidName(
                """
                the subscription ID '\(id.prefix(100))' is not 1–100 bytes (200 once '/', '%' and a leading '.'\
                 are escaped) without control characters or surrounding spaces; choose another
                """
            )
        }
    }

    // The file form: {"id", "type": database|zone|query, ...}. Workspaces made by the first
    // release hold the synthesized form {"id", "kind": {"database": {"_0": …}}}; it still reads.
    enum CodingKeys: String, CodingKey { case id, type, scope, zone, recordType, conditions, firesOn, includeOwn, kind }

    private enum LegacyKind: Decodable {
        case database(DatabaseScope)
        case zone(ZoneID)
        case query(scope: DatabaseScope, recordType: String, field: String?, equals: String?)
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        includeOwn = try c.decodeIfPresent(Bool.self, forKey: .includeOwn) ?? false
        if let legacy = try c.decodeIfPresent(LegacyKind.self, forKey: .kind) {
            switch legacy {
            case .database(let scope): kind = .database(scope)
            case .zone(let zone): kind = .zone(zone)
            case .query(let scope, let type, let field, let equals):
                let conditions = field.map { [FieldCondition(field: $0, test: equals.map { .equals($0) } ?? .exists)] } ?? []
                kind = .query(QuerySubscription(scope: scope, recordType: type, conditions: conditions, firesOn: [.created, .updated]))
            }
            return
        }
        switch try c.decode(String.self, forKey: .type) {
        case "database": kind = .database(try c.decode(DatabaseScope.self, forKey: .scope))
        case "zone": kind = .zone(try c.decode(ZoneID.self, forKey: .zone))
        case "query":
            kind = .query(
                QuerySubscription(
                    scope: try c.decode(DatabaseScope.self, forKey: .scope),
                    recordType: try c.decode(String.self, forKey: .recordType),
                    zone: try c.decodeIfPresent(ZoneID.self, forKey: .zone),
                    conditions: try c.decodeIfPresent([FieldCondition].self, forKey: .conditions) ?? [],
                    firesOn: Set(try c.decodeIfPresent([RecordChangeReason].self, forKey: .firesOn) ?? RecordChangeReason.allCases)))
        case let other:
            throw DecodingError.dataCorruptedError(forKey: .type, in: c, debugDescription: "unknown subscription type '\(other)'")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(kind.name, forKey: .type)
        if includeOwn { try c.encode(true, forKey: .includeOwn) }
        switch kind {
        case .database(let scope): try c.encode(scope, forKey: .scope)
        case .zone(let zone): try c.encode(zone, forKey: .zone)
        case .query(let q):
            try c.encode(q.scope, forKey: .scope)
            try c.encode(q.recordType, forKey: .recordType)
            try c.encodeIfPresent(q.zone, forKey: .zone)
            if !q.conditions.isEmpty { try c.encode(q.conditions, forKey: .conditions) }
            try c.encode(q.firesOn.sorted(), forKey: .firesOn)
        }
    }
}
