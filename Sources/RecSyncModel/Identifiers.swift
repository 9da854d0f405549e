import Foundation

/// The database a request is made against, as seen by the acting user.
///
/// `private` holds the zones the user owns, `shared` the zones of other owners shared with
/// the user. `public` exists only so that it can be refused the way CloudKit refuses it.
public enum DatabaseScope: String, Sendable, Hashable, Codable, CaseIterable {
    case `private`
    case shared
    case `public`

    /// Throws `badDatabase` for the public scope, which recsync does not support.
    public func requireSupported(for operation: String) throws(RecSyncError) {
        if self == .public {
            throw .badDatabase(operation: operation)
        }
    }
}

/// The CloudKit name rules, each as a throwing check that names the rule it enforces.
///
/// On top of CloudKit's rules, every name must be one that every workspace can hold: zone
/// names are in Unicode NFC (so two names are equal exactly when their bytes are, and no two
/// canonically equivalent names can coexist) and fit a file name once escaped; user names
/// are safe in a commit signature.
public enum NameRules {
    public static let maxNameLength = 255
    public static let defaultZoneName = "_defaultZone"
    /// The most bytes a zone name may take once escaped for disk (`NameEscaping`): a file
    /// name holds 255 bytes, and `.recsync/` keeps per-zone files named `<escaped>.refetch`.
    public static let maxEscapedZoneNameLength = 255 - ".refetch".utf8.count

    /// A zone name typed by a person, in the form recsync keeps (Unicode NFC).
    public static func normalizedZoneName(_ name: String) -> String {
        isNFC(name) ? name : name.precomposedStringWithCanonicalMapping
    }

    /// Whether the name's bytes are already its NFC form (ASCII always is).
    public static func isNFC(_ name: String) -> Bool {
        name.utf8.allSatisfy { $0 < 0x80 } || Array(name.precomposedStringWithCanonicalMapping.utf8) == Array(name.utf8)
    }

    /// recordName: ASCII, 1–255 characters, not starting with `_`.
    public static func validateRecordName(_ name: String) throws(RecSyncError) {
        guard !name.isEmpty else { throw .invalidName("record name is empty; give every record a name of 1–255 ASCII characters") }
        guard name.utf8.count <= maxNameLength else {
            throw .invalidName("record name '\(name.prefix(40))…' is \(name.utf8.count) characters; the limit is 255")
        }
        guard name.utf8.allSatisfy({ $0 < 0x80 }) else {
            throw .invalidName("record name '\(name)' contains non-ASCII characters; record names must be ASCII")
        }
        guard !name.hasPrefix("_") else {
            throw .invalidName("record name '\(name)' starts with '_', which CloudKit reserves; rename it")
        }
    }

    /// Owner (user record) names: the record-name rules, in a character set that is safe in
    /// a commit signature and a file name.
    ///
    /// Allowed: printable ASCII (space to `~`) except `<` and `>`, no space and none of
    /// `.,:;"'\` at either end,
    /// 1–255 bytes, not starting with `_`, at most 255 bytes once escaped for disk. Git parses
    /// `name <email>` out of every commit, so a newline or angle bracket in a user name would
    /// make a commit nobody can read.
    public static func validateOwnerName(_ name: String) throws(RecSyncError) {
        do throws(RecSyncError) {
            try validateRecordName(name)
            try validateSignatureText(name, what: "it")
            guard NameEscaping.escape(name).utf8.count <= maxNameLength else {
                throw .invalidName(
                    "it is \(NameEscaping.escape(name).utf8.count) bytes once escaped for disk ('/' and '%' take 3 bytes each); the limit is 255")
            }
        } catch {
            throw .invalidName("owner name '\(printable(name))': " + error.message)
        }
    }

    /// The characters libgit2 trims from both ends of a signature's name and e-mail
    /// (`extract_trimmed` in its signature.c): a name that starts or ends with one would be
    /// written as another name (`'alice'` as `alice`), or as nothing at all (`.`).
    static let signatureTrimmed: Set<Character> = [" ", ".", ",", ":", ";", "\"", "'", "\\"]

    /// Checks text that goes into a commit signature (a name or an e-mail address): no
    /// control characters, no `<` or `>`, and none of the characters git trims at either end.
    public static func validateSignatureText(_ text: String, what: String) throws(RecSyncError) {
        guard !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw .invalidName("\(what) contains control characters (such as a newline); use printable characters only")
        }
        guard !text.contains("<") && !text.contains(">") else {
            throw .invalidName("\(what) contains '<' or '>', which git reserves for the e-mail address of a commit signature")
        }
        if let end = [text.first, text.last].compactMap({ $0 }).first(where: { signatureTrimmed.contains($0) }) {
            throw .invalidName(
                "\(what) starts or ends with '\(end)', which git drops from a commit signature (so the commit would name someone else); remove it")
        }
    }

    /// A name as it can be shown in a one-line message or on a terminal: control characters
    /// (C0, DEL, C1, which start terminal escape sequences) escaped.
    public static func printable(_ name: String) -> String {
        var out = ""
        for scalar in name.unicodeScalars {
            if scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) {
                out += "\\u{\(String(scalar.value, radix: 16))}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// zoneName: 1–255 characters, no `/`, not `.` or `..`, `_defaultZone` reserved.
    public static func validateZoneName(_ name: String) throws(RecSyncError) {
        guard !name.isEmpty else { throw .invalidName("zone name is empty; give the zone a name of 1–255 characters") }
        guard name.utf8.count <= maxNameLength else {
            throw .invalidName("zone name '\(name.prefix(40))…' is longer than 255 bytes")
        }
        guard !name.contains("/") else { throw .invalidName("zone name '\(name)' contains '/', which zone names may not") }
        guard name != "." && name != ".." else { throw .invalidName("zone name '\(name)' is not allowed") }
        guard name != defaultZoneName else {
            throw .invalidName("zone name '\(defaultZoneName)' is reserved for CloudKit's default zone; choose another name")
        }
        guard !name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw .invalidName("zone name '\(name)' contains control characters")
        }
        guard isNFC(name) else {
            throw .invalidName(
                """
                zone name '\(name)' is not in Unicode NFC (composed form); recsync keeps zone names in NFC, so\
                 rename it to '\(name.precomposedStringWithCanonicalMapping)'
                """
            )
        }
        let escaped = NameEscaping.escape(name).utf8.count
        guard escaped <= maxEscapedZoneNameLength else {
            throw .invalidName(
                """
                zone name '\(name.prefix(40))…' takes \(escaped) bytes once escaped for disk ('%', '/', control\
                 characters and a leading '.' take 3 bytes each); the limit is \(maxEscapedZoneNameLength), so\
                 shorten it
                """
            )
        }
    }

    /// Field keys: an ASCII letter, then ASCII letters, digits or `_`; at most 255.
    public static func validateFieldKey(_ key: String) throws(RecSyncError) {
        let bytes = Array(key.utf8)
        guard let first = bytes.first else { throw .invalidName("a field key is empty") }
        guard bytes.count <= maxNameLength else { throw .invalidName("field key '\(key.prefix(40))…' is longer than 255 characters") }
        func isLetter(_ b: UInt8) -> Bool { (b >= 65 && b <= 90) || (b >= 97 && b <= 122) }
        guard isLetter(first) else {
            throw .invalidName("field key '\(key)' must start with an ASCII letter")
        }
        guard bytes.allSatisfy({ isLetter($0) || ($0 >= 48 && $0 <= 57) || $0 == 95 }) else {
            throw .invalidName("field key '\(key)' may contain only ASCII letters, digits and '_'")
        }
    }

    /// recordType: same shape as a field key (CloudKit record type names).
    public static func validateRecordType(_ type: String) throws(RecSyncError) {
        do { try validateFieldKey(type) } catch {
            throw .invalidName("record type '\(type)' must start with an ASCII letter and contain only letters, digits and '_'")
        }
    }
}

/// A zone's identity: its name and the user who owns it.
public struct ZoneID: Sendable, Hashable, Codable, Comparable, CustomStringConvertible {
    public let zoneName: String
    public let ownerName: String

    /// Creates a zone ID, enforcing CloudKit's zone and owner name rules.
    public init(zoneName: String, ownerName: String) throws(RecSyncError) {
        try NameRules.validateZoneName(zoneName)
        try NameRules.validateOwnerName(ownerName)
        self.zoneName = zoneName
        self.ownerName = ownerName
    }

    /// Creates a zone ID from a zone name a person typed: normalised to NFC first.
    public init(normalizing zoneName: String, ownerName: String) throws(RecSyncError) {
        try self.init(zoneName: NameRules.normalizedZoneName(zoneName), ownerName: ownerName)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let zone = try container.decode(String.self, forKey: .zoneName)
        let owner = try container.decode(String.self, forKey: .ownerName)
        try self.init(zoneName: zone, ownerName: owner)
    }

    public static func < (lhs: ZoneID, rhs: ZoneID) -> Bool {
        (lhs.ownerName, lhs.zoneName) < (rhs.ownerName, rhs.zoneName)
    }

    public var description: String { "\(ownerName)/\(zoneName)" }
}

/// A record's identity: its name within a zone.
public struct RecordID: Sendable, Hashable, Codable, Comparable, CustomStringConvertible {
    public let recordName: String
    public let zoneID: ZoneID

    /// Creates a record ID, enforcing CloudKit's record name rules.
    public init(recordName: String, zoneID: ZoneID) throws(RecSyncError) {
        try NameRules.validateRecordName(recordName)
        self.recordName = recordName
        self.zoneID = zoneID
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try self.init(
            recordName: container.decode(String.self, forKey: .recordName),
            zoneID: container.decode(ZoneID.self, forKey: .zoneID))
    }

    public static func < (lhs: RecordID, rhs: RecordID) -> Bool {
        (lhs.zoneID, lhs.recordName) < (rhs.zoneID, rhs.recordName)
    }

    public var description: String { "\(zoneID)/\(recordName)" }
}
