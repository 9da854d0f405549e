/// What a reference does when its target is deleted (CloudKit's `CKRecord.Reference.Action`).
public enum ReferenceAction: String, Sendable, Hashable, Codable {
    case none
    case deleteSelf
}

/// A reference to another record in the same zone.
public struct Reference: Sendable, Hashable {
    public var recordName: String
    public var action: ReferenceAction

    public init(recordName: String, action: ReferenceAction = .none) throws(RecSyncError) {
        try NameRules.validateRecordName(recordName)
        self.recordName = recordName
        self.action = action
    }
}

/// A point on the globe in degrees.
public struct Location: Sendable, Hashable {
    public var latitude: Double
    public var longitude: Double

    public init(latitude: Double, longitude: Double) throws(RecSyncError) {
        guard latitude.isFinite, longitude.isFinite, abs(latitude) <= 90, abs(longitude) <= 180 else {
            throw .invalidValue("location (\(latitude), \(longitude)) is out of range; latitude must be within ±90 and longitude within ±180")
        }
        self.latitude = latitude
        self.longitude = longitude
    }
}

/// A file kept beside a record (CloudKit's `CKAsset`): its content is its own blob in the
/// store, outside the record's 1 MB, named here by what identifies that content.
///
/// Two references are equal exactly when their content is: a record whose asset changed
/// has different field data, so its change tag changes too.
public struct AssetReference: Sendable, Hashable {
    /// The content's git blob ID (40 lowercase hex digits): where the store keeps it.
    public let oid: String
    /// The content's length in bytes.
    public let size: Int64
    /// The SHA-256 of the content (64 lowercase hex digits), checked when it is read back.
    public let sha256: String

    /// The largest asset a store takes unless its `recsync.json` says otherwise (50 MiB, CloudKit's limit).
    public static let defaultMaxBytes: Int64 = 52_428_800

    public init(oid: String, size: Int64, sha256: String) throws(RecSyncError) {
        guard Self.isHex(oid, count: 40) else {
            throw .invalidValue("asset object ID '\(oid.prefix(80))' is not 40 lowercase hex digits")
        }
        guard Self.isHex(sha256, count: 64) else {
            throw .invalidValue("asset checksum '\(sha256.prefix(80))' is not a SHA-256 (64 lowercase hex digits)")
        }
        guard size >= 0 else { throw .invalidValue("asset size \(size) is negative") }
        self.oid = oid
        self.size = size
        self.sha256 = sha256
    }

    static func isHex(_ s: String, count: Int) -> Bool {
        s.utf8.count == count && s.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}

/// The type tag of a field value, as spelled in the store encoding.
public enum FieldType: String, Sendable, Hashable, CaseIterable {
    case string = "STRING"
    case int64 = "INT64"
    case double = "DOUBLE"
    case boolean = "BOOLEAN"
    case timestamp = "TIMESTAMP"
    case bytes = "BYTES"
    case reference = "REFERENCE"
    case location = "LOCATION"
    case json = "JSON"
    /// A file (CloudKit Web Services spells it `ASSETID`).
    case asset = "ASSET"
    /// A value sealed by the client of an encrypted zone: the store sees only ciphertext.
    case encrypted = "ENCRYPTED"
}

/// One field's value.
///
/// Lists are homogeneous: every element has the same scalar type (not `json`, not a list).
/// An empty list carries no element type.
public indirect enum FieldValue: Sendable, Hashable {
    case string(String)
    case int64(Int64)
    case double(Double)
    case boolean(Bool)
    /// Milliseconds since 1970-01-01T00:00:00Z.
    case timestamp(Int64)
    case bytes([UInt8])
    case reference(Reference)
    case location(Location)
    /// Nested JSON (an extension CloudKit lacks).
    case json(JSONValue)
    /// A file kept as its own blob (see `AssetReference`).
    case asset(AssetReference)
    case list([FieldValue])
    /// A field of an encrypted zone as the store keeps it: an opaque sealed box whose
    /// plaintext is the field's typed store encoding (so its type is hidden too).
    case encrypted([UInt8])

    /// The scalar type of this value, or nil for a list.
    public var scalarType: FieldType? {
        switch self {
        case .string: .string
        case .int64: .int64
        case .double: .double
        case .boolean: .boolean
        case .timestamp: .timestamp
        case .bytes: .bytes
        case .reference: .reference
        case .location: .location
        case .json: .json
        case .asset: .asset
        case .encrypted: .encrypted
        case .list: nil
        }
    }

    /// The asset references among the values (a record's files).
    public var assets: [AssetReference] {
        switch self {
        case .asset(let a): [a]
        case .list(let items): items.flatMap(\.assets)
        default: []
        }
    }

    /// Checks the invariants the enum cannot express: finite doubles, homogeneous scalar lists.
    public func validate(key: String) throws(RecSyncError) {
        switch self {
        case .double(let d) where !d.isFinite:
            throw .invalidValue("field '\(key)' is \(d); only finite numbers can be stored")
        case .json(let j):
            try j.validate(context: "field '\(key)'")
        case .list(let items):
            guard let first = items.first else { return }
            guard let type = first.scalarType, type != .json, type != .encrypted else {
                throw .invalidValue("field '\(key)' is a list of lists or JSON values; lists hold scalar values only (use a JSON field instead)")
            }
            guard type != .asset else {
                throw .invalidValue("field '\(key)' is a list of assets; recsync keeps one file per field: use one ASSET field per file")
            }
            for item in items {
                guard item.scalarType == type else {
                    throw .invalidValue(
                        """
                        field '\(key)' is a list mixing \(type.rawValue) and \(item.scalarType?.rawValue ?? "LIST")\
                         values; lists must be homogeneous
                        """
                    )
                }
                try item.validate(key: key)
            }
        default:
            break
        }
    }
}
