import Foundation

/// An opaque cursor into a store's history (CloudKit's `CKServerChangeToken`).
///
/// Clients keep it and hand it back; only the store that issued it reads what is inside.
public struct ServerChangeToken: Sendable, Hashable, Codable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(rawValue)
    }

    public var description: String { rawValue }
}

/// What a change token stands for: the decoded inside of a `ServerChangeToken`.
///
/// A token is bound to one store and one kind: a database token to a scope as seen by one
/// user, a zone token to one zone (and the incarnation of that zone, so a zone deleted and
/// created again does not continue an old history). It names a `commit` all changes up to
/// which have been delivered; a token handed out in the middle of a batch also carries the
/// `target` commit the batch is computed against and the key of the last item delivered.
public struct ChangeTokenContent: Sendable, Hashable, Codable {
    public enum Kind: Sendable, Hashable, Codable {
        case database(scope: DatabaseScope, user: String)
        case zone(ZoneID, incarnation: String)

        var kindName: String {
            switch self {
            case .database: "database"
            case .zone: "zone"
            }
        }
    }

    public static let currentVersion = 1
    static let prefix = "rsct1."

    public var version: Int
    public var storeID: String
    public var kind: Kind
    public var commit: String
    public var target: String?
    public var after: String?

    public init(storeID: String, kind: Kind, commit: String, target: String? = nil, after: String? = nil) {
        self.version = Self.currentVersion
        self.storeID = storeID
        self.kind = kind
        self.commit = commit
        self.target = target
        self.after = after
    }

    /// Encodes to an opaque token (base64url of a canonical JSON document).
    ///
    /// Written with the canonical JSON codec, in the layout `Codable` reads back (see
    /// `decode`), so there is no encoder failure to hide: before, a failed `JSONEncoder` run
    /// would have handed out an empty token.
    public var token: ServerChangeToken {
        let kindValue: JSONValue =
            switch kind {
            case .database(let scope, let user):
                .object(["database": .object(["scope": .string(scope.rawValue), "user": .string(user)])])
            case .zone(let zone, let incarnation):
                .object([
                    "zone": .object([
                        "_0": .object(["zoneName": .string(zone.zoneName), "ownerName": .string(zone.ownerName)]),
                        "incarnation": .string(incarnation),
                    ])
                ])
            }
        var members: [String: JSONValue] = [
            "version": .int(Int64(version)), "storeID": .string(storeID), "kind": kindValue, "commit": .string(commit),
        ]
        if let target { members["target"] = .string(target) }
        if let after { members["after"] = .string(after) }
        var text = Data(JSON.serialize(.object(members), pretty: false)).base64EncodedString()
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.hasSuffix("=") { text.removeLast() }
        return ServerChangeToken(rawValue: Self.prefix + text)
    }

    /// Decodes a token without checking what it is bound to.
    public static func decode(_ token: ServerChangeToken) throws(RecSyncError) -> ChangeTokenContent {
        guard token.rawValue.hasPrefix("rsct") else { throw .badToken(.garbled) }
        guard token.rawValue.hasPrefix(prefix) else {
            let v = token.rawValue.dropFirst(4).prefix(while: { $0.isNumber })
            throw .badToken(.unsupportedVersion(Int(v) ?? 0))
        }
        var text = String(token.rawValue.dropFirst(prefix.count))
        text = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text.append("=") }
        guard let data = Data(base64Encoded: text),
            let content = try? JSONDecoder().decode(ChangeTokenContent.self, from: data)
        else { throw .badToken(.garbled) }
        guard content.version == currentVersion else { throw .badToken(.unsupportedVersion(content.version)) }
        // An empty commit means "from the beginning", which only a mid-batch token carries.
        guard !content.commit.isEmpty || content.target != nil else { throw .badToken(.garbled) }
        return content
    }

    /// Decodes a database token and checks it belongs to this store, scope and user.
    public static func decodeDatabaseToken(
        _ token: ServerChangeToken, storeID: String, scope: DatabaseScope, user: String
    ) throws(RecSyncError) -> ChangeTokenContent {
        let content = try decode(token)
        try content.checkStore(storeID)
        guard case .database(let s, let u) = content.kind else {
            throw .badToken(.wrongKind(expected: "database", found: content.kind.kindName))
        }
        guard s == scope, u == user else {
            throw .badToken(.wrongScope(expected: "\(user)'s \(scope.rawValue) database", found: "\(u)'s \(s.rawValue) database"))
        }
        return content
    }

    /// Decodes a zone token and checks it belongs to this store and zone.
    public static func decodeZoneToken(_ token: ServerChangeToken, storeID: String, zoneID: ZoneID) throws(RecSyncError) -> ChangeTokenContent {
        let content = try decode(token)
        try content.checkStore(storeID)
        guard case .zone(let z, _) = content.kind else {
            throw .badToken(.wrongKind(expected: "zone", found: content.kind.kindName))
        }
        guard z == zoneID else { throw .badToken(.wrongZone(expected: zoneID, found: z)) }
        return content
    }

    private func checkStore(_ storeID: String) throws(RecSyncError) {
        guard self.storeID == storeID else { throw .badToken(.wrongStore(expected: storeID, found: self.storeID)) }
    }
}
