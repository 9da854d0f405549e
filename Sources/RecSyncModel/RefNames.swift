import Crypto

/// Turning owner and zone names into git ref names and back: one ref per zone,
/// `refs/recsync/zones/<owner component>/<zone component>` (store format 2, docs/zone-refs.md).
///
/// A component is `NameEscaping.escape` of the name, with `%XX` also for what git refuses in
/// a ref name and a tree entry allows: space, `~`, `^`, `:`, `?`, `*`, `[`, `\`, `{` (which
/// covers `@{`), a `.` that ends the name, a `.` that follows a `.`, and the `.` of a final
/// `.lock`. (Control bytes, DEL, `/`, `%` and a leading `.` are escaped by `NameEscaping`.)
/// A component longer than `maxComponentBytes` is `%%` and the 64 hex digits of the SHA-256
/// of the name instead; the name is then read from the ref's `zone.json` or `tombstone.json`.
/// `%%` never comes out of the escaping (a `%` is always `%25`), so the forms cannot collide.
///
/// Names are not checked against the name rules here (`ZoneID` does that): every name maps
/// to a component git accepts, except the empty name, which no owner or zone has.
public enum RefNames {
    /// Where the zone refs live.
    public static let zonesPrefix = "refs/recsync/zones/"

    /// The longest component written as an escaped name: a loose ref is a file, and git
    /// writes `<name>.lock` beside it (255 − 5, with margin).
    public static let maxComponentBytes = 240

    /// What starts a hashed component.
    public static let hashedMarker = "%%"

    /// A component read back from a ref name.
    public enum Component: Sendable, Hashable, CustomStringConvertible {
        /// The name itself.
        case name(String)
        /// The SHA-256 (64 lowercase hex digits) of a name too long for a ref name: read the
        /// name from the ref's `zone.json` or `tombstone.json`, and check it with `matches`.
        case hashed(sha256: String)

        /// The component as it appears in the ref name.
        public var encoded: String {
            switch self {
            case .name(let name): RefNames.component(name)
            case .hashed(let digest): RefNames.hashedMarker + digest
            }
        }

        /// Whether `name` is the name this component stands for: for a hashed component,
        /// whether the name (read from the zone's documents) hashes to it.
        public func matches(_ name: String) -> Bool {
            switch self {
            case .name(let own): Array(own.utf8) == Array(name.utf8)
            case .hashed: RefNames.component(name) == encoded
            }
        }

        public var description: String {
            switch self {
            case .name(let name): name
            case .hashed(let digest): "(hashed \(digest.prefix(12))…)"
            }
        }
    }

    /// The owner and zone a zone ref stands for.
    public struct ZoneRefName: Sendable, Hashable {
        public var owner: Component
        public var zone: Component

        public init(owner: Component, zone: Component) {
            self.owner = owner
            self.zone = zone
        }

        /// `<owner component>/<zone component>`: the part after `zonesPrefix`.
        public var suffix: String { owner.encoded + "/" + zone.encoded }

        /// The full ref name.
        public var refName: String { RefNames.zonesPrefix + suffix }

        /// Whether this ref stands for `zone` (hashed components compared by their digest).
        public func matches(_ zone: ZoneID) -> Bool {
            owner.matches(zone.ownerName) && self.zone.matches(zone.zoneName)
        }
    }

    // MARK: Encoding

    /// The ref name component of an owner or zone name.
    public static func component(_ name: String) -> String {
        let escaped = Array(NameEscaping.escape(name).utf8)
        let lockDot = endsWithLock(escaped) ? escaped.count - 5 : nil
        var out = [UInt8]()
        out.reserveCapacity(escaped.count)
        var changed = false
        for (i, b) in escaped.enumerated() {
            let refused =
                switch b {
                case 0x20, 0x7E, 0x5E, 0x3A, 0x3F, 0x2A, 0x5B, 0x5C, 0x7B: true  // space ~ ^ : ? * [ \ {
                case 0x2E: i == escaped.count - 1 || (i > 0 && escaped[i - 1] == 0x2E) || i == lockDot
                default: false
                }
            if refused {
                out.append(0x25)
                out.append(hexDigit(b >> 4))
                out.append(hexDigit(b & 0xF))
                changed = true
            } else {
                out.append(b)
            }
        }
        guard out.count <= maxComponentBytes else { return hashedMarker + sha256Hex(name) }
        return changed ? String(decoding: out, as: UTF8.self) : String(decoding: escaped, as: UTF8.self)
    }

    /// `<owner component>/<zone component>`: the zone's ref name after `zonesPrefix`, which
    /// is also how a database token names the ref.
    public static func suffix(for zone: ZoneID) -> String {
        component(zone.ownerName) + "/" + component(zone.zoneName)
    }

    /// The zone's ref: `refs/recsync/zones/<owner component>/<zone component>`.
    public static func refName(for zone: ZoneID) -> String {
        zonesPrefix + suffix(for: zone)
    }

    /// The directory of one owner's zone refs, with its trailing `/` (what the private scope
    /// lists).
    public static func ownerPrefix(_ owner: String) -> String {
        zonesPrefix + component(owner) + "/"
    }

    // MARK: Decoding

    /// The name a component stands for; nil when the text is not a component this encoding
    /// writes (it would not round-trip), like `NameEscaping.unescape`.
    public static func decodeComponent(_ component: String) -> Component? {
        let bytes = Array(component.utf8)
        let marker = Array(hashedMarker.utf8)
        if bytes.starts(with: marker) {
            let digest = bytes.dropFirst(marker.count)
            guard digest.count == 64, digest.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else { return nil }
            return .hashed(sha256: String(decoding: digest, as: UTF8.self))
        }
        guard !bytes.isEmpty, bytes.count <= maxComponentBytes else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(bytes.count)
        var i = 0
        while i < bytes.count {
            if bytes[i] == 0x25 {
                guard i + 2 < bytes.count, let h = hexValue(bytes[i + 1]), let l = hexValue(bytes[i + 2]) else { return nil }
                out.append(h << 4 | l)
                i += 3
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        guard let name = String(validating: out, as: UTF8.self), Array(self.component(name).utf8) == bytes else { return nil }
        return .name(name)
    }

    /// The owner and zone of a zone ref (`refs/recsync/zones/<owner>/<zone>`); nil for any
    /// other ref, or one whose components do not round-trip.
    public static func parseRefName(_ refName: String) -> ZoneRefName? {
        let bytes = Array(refName.utf8)
        let prefix = Array(zonesPrefix.utf8)
        guard bytes.starts(with: prefix) else { return nil }
        return parseSuffix(String(decoding: bytes[prefix.count...], as: UTF8.self))
    }

    /// The owner and zone of a ref suffix (`<owner>/<zone>`, as `suffix(for:)` writes it).
    public static func parseSuffix(_ suffix: String) -> ZoneRefName? {
        let parts = suffix.utf8.split(separator: 0x2F, omittingEmptySubsequences: false)
        guard parts.count == 2,
            let owner = decodeComponent(String(decoding: parts[0], as: UTF8.self)),
            let zone = decodeComponent(String(decoding: parts[1], as: UTF8.self))
        else { return nil }
        return ZoneRefName(owner: owner, zone: zone)
    }

    // MARK: Helpers

    /// The SHA-256 of the name's UTF-8 bytes, as 64 lowercase hex digits.
    static func sha256Hex(_ name: String) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(64)
        for b in SHA256.hash(data: Array(name.utf8)) {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func endsWithLock(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 5 && bytes.suffix(5).elementsEqual(".lock".utf8)
    }

    private static func hexDigit(_ v: UInt8) -> UInt8 { v < 10 ? 48 + v : 55 + v }
    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case 48...57: c - 48
        case 65...70: c - 55
        default: nil
        }
    }
}
