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
///
/// Two versions (docs/zone-refs.md, "Tokens"):
/// - **1** (`rsct1.`, what recsync issues today): `commit` and `target` are commits of `main`.
/// - **2** (`rsct2.`, for stores with one ref per zone): a zone token keeps the shape of
///   version 1, its commits being commits of the zone's ref; a database token carries no
///   commit but `heads`, the head of every zone ref its scope looked at, and `after` (a ref
///   suffix) mid-listing. Nothing issues version 2 yet.
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

    /// The version recsync issues (`init(storeID:kind:commit:target:after:)`).
    public static let currentVersion = 1
    /// The version of tokens of a store with one ref per zone (store format 2).
    public static let zoneRefsVersion = 2
    static let prefix = "rsct1."
    static let prefix2 = "rsct2."

    public var version: Int
    public var storeID: String
    public var kind: Kind
    /// Version 1: a commit of main. Version 2: a commit of the zone's ref for a zone token,
    /// empty for a database token (which has `heads` instead).
    public var commit: String
    public var target: String?
    public var after: String?
    /// A version 2 database token's zone ref heads, sorted by ref suffix; nil otherwise.
    public var heads: [ZoneRefHead]?

    /// A version 1 token.
    public init(storeID: String, kind: Kind, commit: String, target: String? = nil, after: String? = nil) {
        self.version = Self.currentVersion
        self.storeID = storeID
        self.kind = kind
        self.commit = commit
        self.target = target
        self.after = after
    }

    /// A version 2 database token: the heads of the zone refs the scope looked at (sorted
    /// here by ref suffix, the first of two entries for one suffix kept), and mid-listing the
    /// suffix of the last zone delivered.
    public init(storeID: String, scope: DatabaseScope, user: String, heads: [ZoneRefHead], after: String? = nil) {
        self.version = Self.zoneRefsVersion
        self.storeID = storeID
        self.kind = .database(scope: scope, user: user)
        self.commit = ""
        self.heads = ZoneRefHead.canonical(heads)
        self.after = after
    }

    /// A version 2 zone token: `commit` and `target` are commits of the zone's ref.
    public init(storeID: String, zone: ZoneID, incarnation: String, refCommit commit: String, target: String? = nil, after: String? = nil) {
        self.version = Self.zoneRefsVersion
        self.storeID = storeID
        self.kind = .zone(zone, incarnation: incarnation)
        self.commit = commit
        self.target = target
        self.after = after
    }

    /// Encodes to an opaque token: version 2 as `rsct2.` and base64url of the binary form
    /// (`TokenV2`; a database token's `commit` and `target` are not part of it); any other
    /// version as `rsct1.` and base64url of a canonical JSON document.
    ///
    /// Version 1 is written with the canonical JSON codec, in the layout `Codable` reads back
    /// (see `decode`), so there is no encoder failure to hide: before, a failed `JSONEncoder`
    /// run would have handed out an empty token.
    public var token: ServerChangeToken {
        if version == Self.zoneRefsVersion {
            return ServerChangeToken(rawValue: Self.prefix2 + Self.base64url(TokenV2.encode(self)))
        }
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
        return ServerChangeToken(rawValue: Self.prefix + Self.base64url(JSON.serialize(.object(members), pretty: false)))
    }

    /// Decodes a token without checking what it is bound to.
    public static func decode(_ token: ServerChangeToken) throws(RecSyncError) -> ChangeTokenContent {
        guard token.rawValue.hasPrefix("rsct") else { throw .badToken(.garbled) }
        if token.rawValue.hasPrefix(prefix2) {
            guard let bytes = unbase64url(token.rawValue.dropFirst(prefix2.count)), let content = TokenV2.decode(bytes) else {
                throw .badToken(.garbled)
            }
            return content
        }
        guard token.rawValue.hasPrefix(prefix) else {
            let v = token.rawValue.dropFirst(4).prefix(while: { $0.isNumber })
            throw .badToken(.unsupportedVersion(Int(v) ?? 0))
        }
        guard let bytes = unbase64url(token.rawValue.dropFirst(prefix.count)),
            let document = try? JSONDecoder().decode(Version1Document.self, from: Data(bytes))
        else { throw .badToken(.garbled) }
        var content = ChangeTokenContent(
            storeID: document.storeID, kind: document.kind, commit: document.commit, target: document.target, after: document.after)
        content.version = document.version
        guard content.version == currentVersion else { throw .badToken(.unsupportedVersion(content.version)) }
        // An empty commit means "from the beginning", which only a mid-batch token carries.
        guard !content.commit.isEmpty || content.target != nil else { throw .badToken(.garbled) }
        return content
    }

    /// The members of a version 1 token, read as `Codable` read them before version 2 (so a
    /// `heads` member in one is ignored, as any unknown member always was).
    private struct Version1Document: Decodable {
        var version: Int
        var storeID: String
        var kind: Kind
        var commit: String
        var target: String?
        var after: String?
    }

    static func base64url(_ bytes: [UInt8]) -> String {
        var text = Data(bytes).base64EncodedString()
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }

    static func unbase64url(_ encoded: Substring) -> [UInt8]? {
        var text = String(encoded)
        text = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text.append("=") }
        return Data(base64Encoded: text).map { Array($0) }
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

/// One zone ref's head in a version 2 database token.
///
/// A zone the scope shows (`visible`) keeps its whole head: its `zone/` tree at that commit is
/// what the next call compares with. A zone it does not show (another owner's zone not shared
/// with the user) keeps only the first 16 hex digits of its head, enough to see that it moved.
public struct ZoneRefHead: Sendable, Hashable, Codable {
    /// `<owner component>/<zone component>`, as `RefNames.suffix(for:)` writes it.
    public var refSuffix: String
    /// The ref's head; for a zone not visible, its first `hiddenHeadDigits` hex digits (a
    /// head that is not a lowercase hex object ID, as in the memory store, is kept whole).
    public var head: String
    public var visible: Bool

    /// How much of a hidden zone's head a token keeps: 8 bytes.
    public static let hiddenHeadDigits = 16

    public init(refSuffix: String, head: String, visible: Bool) {
        self.refSuffix = refSuffix
        self.visible = visible
        self.head =
            !visible && head.utf8.count > Self.hiddenHeadDigits && Self.isLowercaseHex(head) ? String(head.prefix(Self.hiddenHeadDigits)) : head
    }

    /// Whether `commit`, the ref's head now, is the head this entry keeps (for a hidden zone,
    /// whether it starts with the kept prefix).
    public func isHead(_ commit: String) -> Bool {
        if commit.utf8.elementsEqual(head.utf8) { return true }
        return !visible && head.utf8.count == Self.hiddenHeadDigits && commit.utf8.count > head.utf8.count
            && Self.isLowercaseHex(commit) && commit.utf8.starts(with: head.utf8)
    }

    /// Sorted by ref suffix (bytewise, as git lists refs); of two entries for one suffix, the
    /// first given is kept.
    static func canonical(_ heads: [ZoneRefHead]) -> [ZoneRefHead] {
        let keyed = heads.enumerated().map { (key: Array($0.element.refSuffix.utf8), index: $0.offset, head: $0.element) }
            .sorted { $0.key == $1.key ? $0.index < $1.index : $0.key.lexicographicallyPrecedes($1.key) }
        var out: [ZoneRefHead] = []
        out.reserveCapacity(keyed.count)
        var last: [UInt8]?
        for entry in keyed where entry.key != last {
            out.append(entry.head)
            last = entry.key
        }
        return out
    }

    /// An object ID as git writes it: an even number of lowercase hex digits.
    static func isLowercaseHex(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count % 2 == 0 && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}

/// The binary inside of a version 2 token.
///
/// Binary rather than JSON: a database token holds one entry per zone ref of its scope, and
/// the workspace rewrites it after every pull. An entry is its ref suffix (as the bytes it
/// shares with the previous suffix and the rest: a private scope's suffixes all start with
/// the owner), a flag byte, and the head as raw bytes (20 for a SHA-1 ID, 8 for a hidden
/// zone's prefix): about 35 bytes for a visible zone, against about 90 as JSON with hex.
///
/// ```
/// token    = string(storeID) (0x00 database | 0x01 zone)
/// database = scope(0 private, 1 shared, 2 public) string(user) varint(n) entry*n optional(string(after))
/// entry    = varint(shared prefix bytes) string(rest of suffix) flags varint(length) head bytes
/// zone     = string(owner) string(zone) string(incarnation) commit optional(commit target) optional(string(after))
/// commit   = flags varint(length) bytes
/// flags    = bit 0: visible (entries only); bit 1: the head is text, not hex decoded to bytes
/// string   = varint(length) UTF-8;  optional(x) = 0x00 | 0x01 x;  varint = unsigned LEB128
/// ```
///
/// Deterministic: one content has one encoding (heads sorted, no overlong varint), and
/// `decode` accepts only that one (it encodes what it read and compares), so a token that
/// decodes is exactly the token of its content. Any malformed input (truncated, a length past
/// the end, bad UTF-8, names that break the name rules, bytes left over) decodes to nil.
enum TokenV2 {
    static let visibleFlag: UInt8 = 1
    static let textFlag: UInt8 = 2
    static let scopes: [DatabaseScope] = [.private, .shared, .public]

    static func encode(_ content: ChangeTokenContent) -> [UInt8] {
        var w = Writer()
        w.string(content.storeID)
        switch content.kind {
        case .database(let scope, let user):
            w.bytes.append(0)
            w.bytes.append(UInt8(scopes.firstIndex(of: scope) ?? 0))
            w.string(user)
            let heads = ZoneRefHead.canonical(content.heads ?? [])
            w.varint(heads.count)
            var previous: [UInt8] = []
            for head in heads {
                let suffix = Array(head.refSuffix.utf8)
                let shared = zip(previous, suffix).prefix(while: { $0 == $1 }).count
                w.varint(shared)
                w.varint(suffix.count - shared)
                w.bytes += suffix[shared...]
                w.commit(head.head, flags: head.visible ? visibleFlag : 0)
                previous = suffix
            }
            w.optional(content.after) { w, after in w.string(after) }
        case .zone(let zone, let incarnation):
            w.bytes.append(1)
            w.string(zone.ownerName)
            w.string(zone.zoneName)
            w.string(incarnation)
            w.commit(content.commit, flags: 0)
            w.optional(content.target) { w, target in w.commit(target, flags: 0) }
            w.optional(content.after) { w, after in w.string(after) }
        }
        return w.bytes
    }

    static func decode(_ bytes: [UInt8]) -> ChangeTokenContent? {
        var r = Reader(bytes: bytes)
        guard let content = read(&r), r.atEnd, encode(content) == bytes else { return nil }
        return content
    }

    private static func read(_ r: inout Reader) -> ChangeTokenContent? {
        guard let storeID = r.string(), let kind = r.byte() else { return nil }
        switch kind {
        case 0:
            guard let s = r.byte(), Int(s) < scopes.count, let user = r.string(), let count = r.length() else { return nil }
            // Each entry takes at least 4 bytes: a count past what is left is garbage.
            guard count <= r.remaining / 4 else { return nil }
            var heads: [ZoneRefHead] = []
            heads.reserveCapacity(count)
            var previous: [UInt8] = []
            for _ in 0..<count {
                guard let shared = r.length(), shared <= previous.count, let rest = r.chunk() else { return nil }
                let suffixBytes = Array(previous[..<shared]) + rest
                guard let suffix = String(validating: suffixBytes, as: UTF8.self), let head = r.commit(allowing: visibleFlag) else { return nil }
                heads.append(ZoneRefHead(refSuffix: suffix, head: head.text, visible: head.flags & visibleFlag != 0))
                previous = suffixBytes
            }
            guard let after = r.optional({ r in r.string() }) else { return nil }
            return ChangeTokenContent(storeID: storeID, scope: scopes[Int(s)], user: user, heads: heads, after: after)
        case 1:
            guard let owner = r.string(), let zoneName = r.string(), let incarnation = r.string(),
                let commit = r.commit(allowing: 0)?.text,
                let target = r.optional({ r in r.commit(allowing: 0)?.text }),
                let after = r.optional({ r in r.string() }),
                let zone = try? ZoneID(zoneName: zoneName, ownerName: owner)
            else { return nil }
            // An empty commit means "from the beginning", which only a mid-batch token carries.
            guard !commit.isEmpty || target != nil else { return nil }
            return ChangeTokenContent(storeID: storeID, zone: zone, incarnation: incarnation, refCommit: commit, target: target, after: after)
        default:
            return nil
        }
    }

    struct Writer {
        var bytes: [UInt8] = []

        mutating func varint(_ value: Int) {
            var v = UInt64(value)
            while v >= 0x80 {
                bytes.append(UInt8(v & 0x7F) | 0x80)
                v >>= 7
            }
            bytes.append(UInt8(v))
        }

        mutating func string(_ text: String) {
            varint(text.utf8.count)
            bytes += text.utf8
        }

        /// A commit ID: lowercase hex as its bytes, anything else as text.
        mutating func commit(_ id: String, flags: UInt8) {
            if ZoneRefHead.isLowercaseHex(id) {
                bytes.append(flags)
                let digits = Array(id.utf8)
                varint(digits.count / 2)
                for i in stride(from: 0, to: digits.count, by: 2) {
                    bytes.append(Reader.nibble(digits[i]) << 4 | Reader.nibble(digits[i + 1]))
                }
            } else {
                bytes.append(flags | TokenV2.textFlag)
                string(id)
            }
        }

        mutating func optional<T>(_ value: T?, _ write: (inout Writer, T) -> Void) {
            guard let value else {
                bytes.append(0)
                return
            }
            bytes.append(1)
            write(&self, value)
        }
    }

    /// Reads the binary form; every read returns nil at the end of the input or on a value
    /// that cannot be, and never reads or allocates past what the input holds.
    struct Reader {
        let bytes: [UInt8]
        var at = 0

        var remaining: Int { bytes.count - at }
        var atEnd: Bool { at == bytes.count }

        mutating func byte() -> UInt8? {
            guard at < bytes.count else { return nil }
            defer { at += 1 }
            return bytes[at]
        }

        /// An unsigned LEB128 number that fits in the input's length (so at most 9 bytes long).
        mutating func length() -> Int? {
            var value = 0
            var shift = 0
            while let b = byte() {
                guard shift <= 56 else { return nil }
                value |= Int(b & 0x7F) << shift
                if b & 0x80 == 0 { return value <= bytes.count ? value : nil }
                shift += 7
            }
            return nil
        }

        mutating func chunk() -> [UInt8]? {
            guard let n = length(), n <= remaining else { return nil }
            defer { at += n }
            return Array(bytes[at..<at + n])
        }

        mutating func string() -> String? {
            chunk().flatMap { String(validating: $0, as: UTF8.self) }
        }

        /// A commit ID and its flags, refusing flags other than the text flag and `allowing`.
        mutating func commit(allowing extra: UInt8) -> (text: String, flags: UInt8)? {
            guard let flags = byte(), flags & ~(TokenV2.textFlag | extra) == 0, let raw = chunk() else { return nil }
            if flags & TokenV2.textFlag != 0 {
                return String(validating: raw, as: UTF8.self).map { ($0, flags) }
            }
            let digits = Array("0123456789abcdef".utf8)
            var hex: [UInt8] = []
            hex.reserveCapacity(raw.count * 2)
            for b in raw {
                hex.append(digits[Int(b >> 4)])
                hex.append(digits[Int(b & 0xF)])
            }
            return (String(decoding: hex, as: UTF8.self), flags)
        }

        /// `0x00` (nil, returned as `.some(nil)`) or `0x01` and a value; nil when malformed.
        mutating func optional<T>(_ read: (inout Reader) -> T?) -> T?? {
            switch byte() {
            case 0: return .some(nil)
            case 1: return read(&self).map { .some($0) }
            default: return nil
            }
        }

        static func nibble(_ digit: UInt8) -> UInt8 { digit <= 0x39 ? digit - 0x30 : digit - 0x61 + 10 }
    }
}
