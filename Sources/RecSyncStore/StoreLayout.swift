import RecSyncModel

/// The store's tree layout (DESIGN §2): where zones, records and tombstones live.
///
/// ```
/// recsync.json
/// zones/<owner>/<zone>/zone.json
/// zones/<owner>/<zone>/records/<fanout>/<record>
/// zones/<owner>/<zone>/client-tokens/<user>/<device>
/// zones/<owner>/<zone>/assets/<fanout>/<record>/<field>   an asset's content (a blob)
/// tombstones/<owner>/<zone>.json
/// users/<user>/key.json            a user's public key (encrypted zones)
/// compaction.json                  after a compaction: old commit → new (`CompactionMarker`)
/// ```
/// Names are escaped into tree entry names by `escape`; the fan-out directory is two hex
/// digits of the FNV-1a hash of the record name.
public enum StoreLayout {
    public static let formatVersion = 1
    /// The format with a ref per zone (docs/zone-refs.md), being built: only a store opened
    /// with `acceptingZoneRefs` reads it, so released clients refuse it as too new.
    public static let zoneRefsFormat = 2
    /// In format 2, the zone's directory in a commit of its ref, and its tombstone beside it.
    public static let zoneRefDir = "zone"
    public static let zoneRefTombstone = "tombstone.json"
    public static let fanoutScheme = "fnv1a32-low8"
    public static let manifestPath = "recsync.json"
    public static let zonesDir = "zones"
    public static let tombstonesDir = "tombstones"
    public static let zoneFile = "zone.json"
    public static let recordsDir = "records"
    public static let clientTokensDir = "client-tokens"
    public static let assetsDir = "assets"
    public static let usersDir = "users"

    /// A name as a tree entry (see `NameEscaping`).
    public static func escape(_ name: String) -> String { NameEscaping.escape(name) }

    /// A tree entry back to a name; nil when recsync would not have written it so.
    public static func unescape(_ entry: String) -> String? { NameEscaping.unescape(entry) }

    /// The fan-out directory of a record name: low byte of FNV-1a 32 as two lowercase hex digits.
    public static func fanout(_ recordName: String) -> String {
        var hash: UInt32 = 0x811C_9DC5
        for b in recordName.utf8 {
            hash ^= UInt32(b)
            hash = hash &* 0x0100_0193
        }
        let low = UInt8(hash & 0xFF)
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        return String(decoding: [digits[Int(low >> 4)], digits[Int(low & 0xF)]], as: UTF8.self)
    }

    /// Whether a tree entry name is one `fanout` gives: two lowercase hex digits.
    public static func isFanout(_ name: String) -> Bool {
        name.utf8.count == 2 && name.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }
    }

    public static func ownerDir(_ owner: String) -> String { "\(zonesDir)/\(escape(owner))" }
    public static func zoneDir(_ zone: ZoneID) -> String { "\(ownerDir(zone.ownerName))/\(escape(zone.zoneName))" }
    public static func zoneFilePath(_ zone: ZoneID) -> String { "\(zoneDir(zone))/\(zoneFile)" }
    public static func recordsPath(_ zone: ZoneID) -> String { "\(zoneDir(zone))/\(recordsDir)" }
    /// The key of a record inside its zone's records directory: `<fanout>/<escaped name>`.
    public static func recordKey(_ recordName: String) -> String { "\(fanout(recordName))/\(escape(recordName))" }
    public static func recordPath(_ id: RecordID) -> String { "\(recordsPath(id.zoneID))/\(recordKey(id.recordName))" }
    /// Where a client's change token for a zone lives (`client` is `<user>/<device>`): one
    /// small blob per client in the zone's tree, so reading it costs one lookup, not a walk
    /// through history, and it goes away with the zone.
    public static func clientTokenPath(_ zone: ZoneID, client: String) -> String { "\(zoneDir(zone))/\(clientTokenKey(client))" }
    /// Where a client's change token lives inside its zone's directory.
    public static func clientTokenKey(_ client: String) -> String {
        "\(clientTokensDir)/" + client.split(separator: "/", omittingEmptySubsequences: false).map { escape(String($0)) }.joined(separator: "/")
    }
    /// Where a zone's assets live: beside `records/`, so the record change walk never visits
    /// them, and inside the zone, so they go with it (deleted, purged) and stay reachable
    /// from the head (`git gc` keeps them, a push sends them).
    public static func assetsPath(_ zone: ZoneID) -> String { "\(zoneDir(zone))/\(assetsDir)" }
    /// A record's asset directory: one blob per asset field, named by the field key.
    public static func assetDir(_ id: RecordID) -> String { "\(assetsPath(id.zoneID))/\(recordKey(id.recordName))" }
    public static func assetPath(_ id: RecordID, field: String) -> String { "\(assetDir(id))/\(escape(field))" }
    public static func userKeyPath(_ user: String) -> String { "\(usersDir)/\(escape(user))/key.json" }
    public static func tombstonePath(_ zone: ZoneID) -> String {
        "\(tombstonesDir)/\(escape(zone.ownerName))/\(escape(zone.zoneName)).json"
    }
}

/// The store's manifest, `recsync.json`.
public struct StoreManifest: Sendable, Hashable {
    public var format: Int
    public var storeID: String
    public var created: Int64
    public var fanout: String
    /// The largest asset the store takes (`maxAssetBytes`; nil: `AssetReference.defaultMaxBytes`).
    public var maxAssetBytes: Int64?

    public init(
        format: Int = StoreLayout.formatVersion, storeID: String, created: Int64, fanout: String = StoreLayout.fanoutScheme,
        maxAssetBytes: Int64? = nil
    ) {
        self.format = format
        self.storeID = storeID
        self.created = created
        self.fanout = fanout
        self.maxAssetBytes = maxAssetBytes
    }

    /// The asset size limit in force.
    public var assetLimit: Int64 { maxAssetBytes ?? AssetReference.defaultMaxBytes }

    public func encoded() -> [UInt8] {
        var o: [String: JSONValue] = [
            "format": .int(Int64(format)), "storeID": .string(storeID),
            "created": .int(created), "fanout": .string(fanout),
        ]
        if let maxAssetBytes { o["maxAssetBytes"] = .int(maxAssetBytes) }
        return JSON.serialize(.object(o), pretty: true)
    }

    /// `acceptingZoneRefs`: format 2 (`StoreLayout.zoneRefsFormat`) is read too.
    public static func decode(_ bytes: [UInt8], acceptingZoneRefs: Bool = false) throws(RecSyncError) -> StoreManifest {
        let json: JSONValue
        do { json = try JSON.parse(bytes) } catch {
            throw .storeCorrupt("recsync.json is not valid JSON (\(error.message)); the store is damaged")
        }
        guard case .object(let o) = json, case .int(let format)? = o["format"], case .string(let id)? = o["storeID"] else {
            throw .storeCorrupt("recsync.json lacks 'format' or 'storeID'; the store is damaged")
        }
        let newest = acceptingZoneRefs ? StoreLayout.zoneRefsFormat : StoreLayout.formatVersion
        if format > Int64(newest) {
            throw .unsupportedStoreFormat(found: format, supported: StoreLayout.formatVersion)
        }
        guard format >= Int64(StoreLayout.formatVersion) else {
            throw .storeCorrupt("recsync.json says format \(format), which no recsync writes; the store is damaged")
        }
        var created: Int64 = 0
        if case .int(let c)? = o["created"] { created = c }
        var fanout = StoreLayout.fanoutScheme
        if case .string(let f)? = o["fanout"] { fanout = f }
        guard fanout == StoreLayout.fanoutScheme else {
            throw .storeCorrupt("the store uses fan-out '\(fanout)', which this recsync does not know")
        }
        var maxAssetBytes: Int64?
        switch o["maxAssetBytes"] {
        case nil: break
        case .int(let n)? where n > 0: maxAssetBytes = n
        default: throw .storeCorrupt("recsync.json: 'maxAssetBytes' must be a positive integer (bytes); fix it in the store")
        }
        return StoreManifest(format: Int(format), storeID: id, created: created, fanout: fanout, maxAssetBytes: maxAssetBytes)
    }
}

/// Reading and writing `zone.json` and tombstones.
enum ZoneDocuments {
    static func encodeZone(_ zone: RecordZone) -> [UInt8] {
        var o: [String: JSONValue] = [
            "zoneName": .string(zone.zoneID.zoneName),
            "ownerName": .string(zone.zoneID.ownerName),
            "capabilities": .array([.string("atomic"), .string("fetchChanges")]),
        ]
        if let t = zone.defaultRecordType { o["defaultRecordType"] = .string(t) }
        if let c = zone.created { o["created"] = stamp(c) }
        if let i = zone.incarnation { o["incarnation"] = .string(i) }
        if let e = zone.encryption {
            var enc: [String: JSONValue] = [
                "keys": .array(
                    e.keys.map {
                        .object([
                            "generation": .int(Int64($0.generation)), "userRecordName": .string($0.userRecordName),
                            "ephemeralPublicKey": .string(Base64.encode($0.ephemeralPublicKey)), "sealedKey": .string(Base64.encode($0.sealedKey)),
                        ])
                    })
            ]
            if let f = e.fields { enc["fields"] = .array(f.map { .string($0) }) }
            if let signature = e.signature { enc["signature"] = .string(Base64.encode(signature)) }
            o["encryption"] = .object(enc)
        }
        if !zone.participants.isEmpty {
            o["share"] = .object([
                "participants": .array(
                    zone.participants.map {
                        .object(["userRecordName": .string($0.userRecordName), "permission": .string($0.permission.rawValue)])
                    })
            ])
        }
        return JSON.serialize(.object(o), pretty: true)
    }

    static func decodeZone(_ bytes: [UInt8], zoneID: ZoneID, path: String) throws(RecSyncError) -> RecordZone {
        let json: JSONValue
        do { json = try JSON.parse(bytes) } catch {
            throw .storeCorrupt("\(path) is not valid JSON: \(error.message); fix or remove it in the store")
        }
        guard case .object(let o) = json else { throw .storeCorrupt("\(path) is not a JSON object; fix it in the store") }
        var zone = RecordZone(zoneID: zoneID)
        if case .string(let t)? = o["defaultRecordType"] { zone.defaultRecordType = t }
        if let c = o["created"] { zone.created = decodeStamp(c) }
        if case .string(let i)? = o["incarnation"] { zone.incarnation = i }
        if let enc = o["encryption"] { zone.encryption = try decodeEncryption(enc, path: path) }
        if case .object(let share)? = o["share"], case .array(let list)? = share["participants"] {
            for item in list {
                guard case .object(let p) = item, case .string(let user)? = p["userRecordName"],
                    case .string(let perm)? = p["permission"], let permission = SharePermission(rawValue: perm)
                else { throw .storeCorrupt("\(path): a share participant is malformed; each needs userRecordName and permission readOnly|readWrite") }
                zone.participants.append(ShareParticipant(userRecordName: user, permission: permission))
            }
        }
        return zone
    }

    static func decodeEncryption(_ j: JSONValue, path: String) throws(RecSyncError) -> ZoneEncryption {
        let bad = RecSyncError.storeCorrupt(
            """
            \(path): 'encryption' is malformed; it needs 'keys' (generation, userRecordName, base64\
             ephemeralPublicKey and sealedKey) and optional 'fields' and base64 'signature'. Restore\
             zone.json from the store's history
            """
        )
        guard case .object(let o) = j, case .array(let list)? = o["keys"] else { throw bad }
        var e = ZoneEncryption()
        if let f = o["fields"] {
            guard case .array(let names) = f else { throw bad }
            e.fields = []
            for n in names {
                guard case .string(let s) = n else { throw bad }
                e.fields?.append(s)
            }
        }
        if let sig = o["signature"] {
            guard case .string(let text) = sig, let bytes = Base64.decode(text) else { throw bad }
            e.signature = bytes
        }
        for item in list {
            guard case .object(let k) = item, case .int(let g)? = k["generation"], g > 0, g < Int64(Int32.max),
                case .string(let user)? = k["userRecordName"],
                case .string(let eph)? = k["ephemeralPublicKey"], let ephBytes = Base64.decode(eph),
                case .string(let sealed)? = k["sealedKey"], let sealedBytes = Base64.decode(sealed)
            else { throw bad }
            e.keys.append(WrappedZoneKey(generation: Int(g), userRecordName: user, ephemeralPublicKey: ephBytes, sealedKey: sealedBytes))
        }
        return e
    }

    static func encodeUserKey(_ key: UserPublicKey) -> [UInt8] {
        var o: [String: JSONValue] = [
            "userRecordName": .string(key.userRecordName), "algorithm": .string("X25519"),
            "publicKey": .string(Base64.encode(key.publicKey)), "created": .int(key.created),
        ]
        if let signing = key.signingPublicKey {
            o["signingAlgorithm"] = .string("Ed25519")
            o["signingPublicKey"] = .string(Base64.encode(signing))
        }
        return JSON.serialize(.object(o), pretty: true)
    }

    static func decodeUserKey(_ bytes: [UInt8], user: String) throws(RecSyncError) -> UserPublicKey {
        let path = StoreLayout.userKeyPath(user)
        let json: JSONValue
        do { json = try JSON.parse(bytes) } catch {
            throw .storeCorrupt(
                """
                \(path) is not valid JSON: \(error.message); \(user) can publish it again from a device\
                 holding their key, or reset their key if it is lost
                """
            ).suggesting(.askToPublishKey(user: user))
        }
        let remedy = "\(user) can publish it again from a device holding their key, or reset their key if it is lost"
        guard case .object(let o) = json, case .string("X25519")? = o["algorithm"], case .string(let name)? = o["userRecordName"], name == user,
            case .string(let text)? = o["publicKey"], let key = Base64.decode(text), key.count == 32
        else { throw .storeCorrupt("\(path) is not an X25519 public key of \(user); \(remedy)").suggesting(.askToPublishKey(user: user)) }
        var signing: [UInt8]?
        if let s = o["signingPublicKey"] {
            guard case .string(let text) = s, case .string("Ed25519")? = o["signingAlgorithm"], let bytes = Base64.decode(text), bytes.count == 32
            else {
                throw .storeCorrupt("\(path): 'signingPublicKey' is not a base64 Ed25519 public key; \(remedy)").suggesting(
                    .askToPublishKey(user: user))
            }
            signing = bytes
        }
        var created: Int64 = 0
        if case .int(let c)? = o["created"] { created = c }
        return UserPublicKey(userRecordName: user, publicKey: key, signingPublicKey: signing, created: created)
    }

    /// A tombstone: the reason, when and by whom, and (`zone`) the zone's names, by which a
    /// zone ref with a hashed name is known once the zone is gone (docs/zone-refs.md).
    static func encodeTombstone(reason: ZoneDeletionReason, stamp s: ChangeStamp, zone: ZoneID? = nil) -> [UInt8] {
        var o: [String: JSONValue] = ["reason": .string(reason.rawValue), "deleted": stamp(s)]
        if let zone {
            o["zoneName"] = .string(zone.zoneName)
            o["ownerName"] = .string(zone.ownerName)
        }
        return JSON.serialize(.object(o), pretty: true)
    }

    /// The reason recorded in a tombstone; `deleted` when it cannot be read.
    static func decodeTombstone(_ bytes: [UInt8]) -> ZoneDeletionReason {
        recordedReason(bytes) ?? .deleted
    }

    /// The reason a tombstone states, nil when it states none recsync knows.
    static func recordedReason(_ bytes: [UInt8]) -> ZoneDeletionReason? {
        let json: JSONValue
        do { json = try JSON.parse(bytes) } catch { return nil }
        guard case .object(let o) = json, case .string(let r)? = o["reason"] else { return nil }
        return ZoneDeletionReason(rawValue: r)
    }

    static func stamp(_ s: ChangeStamp) -> JSONValue {
        .object(["timestamp": .int(s.timestamp), "userRecordName": .string(s.userRecordName)])
    }

    static func decodeStamp(_ j: JSONValue) -> ChangeStamp? {
        guard case .object(let o) = j, case .int(let t)? = o["timestamp"], case .string(let u)? = o["userRecordName"] else { return nil }
        return ChangeStamp(timestamp: t, userRecordName: u)
    }
}
