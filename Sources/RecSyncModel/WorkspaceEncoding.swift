/// The plain JSON a user edits in a workspace: one object of fields per record, plus a sidecar
/// with the system fields.
///
/// Plain values map to field types by their JSON shape: string → STRING, integer → INT64,
/// number with a fraction or exponent → DOUBLE, true/false → BOOLEAN, an array of same-typed
/// scalars → a list. The other types use a tag object:
///
/// ```json
/// {"due": {"$date": "2026-11-22T10:00:00.000Z"},
///  "photo": {"$bytes": "AAEC"},
///  "parent": {"$ref": "r1", "action": "deleteSelf"},
///  "place": {"$location": {"lat": 52.5, "lon": 13.4}},
///  "meta": {"$json": ["a", "b"]},
///  "scan": {"$asset": "scan"}}
/// ```
///
/// An asset is a file beside its record (`<record>.assets/<field>`, see `AssetFiles`): the record
/// file names it, `{"$asset": "<field>"}`, and the workspace reads its content through an
/// `AssetResolver`. Where there is no file (conflict copies, `show`/`get` output) it is spelled
/// out: `{"$asset": {"oid": …, "sha256": …, "size": …}}`.
///
/// An object none of whose keys starts with `$` is a JSON field as it stands; so is an array
/// that is not a list. `null` deletes the field (CloudKit: setting a field to nil removes it):
/// a pending change until pushed, after which the file is rewritten without it.
public enum WorkspaceEncoding {
    /// Reads the asset a record file names (`{"$asset": file}`) for field `key`.
    public typealias AssetResolver = (_ key: String, _ file: String) throws(RecSyncError) -> AssetReference

    /// The canonical pretty object of a record's fields, ending with a newline. An asset is
    /// written as `{"$asset": "<key>"}`: its file is named after its field.
    public static func encodeFields(_ fields: [String: FieldValue]) -> [UInt8] {
        var w = JSONWriter(pretty: true, capacity: 512)
        w.beginObject()
        for (k, v) in JSONWriter.sorted(fields) {
            w.key(k)
            if case .asset = v {
                w.value(.object(["$asset": .string(k)]))
                continue
            }
            writePlain(v, to: &w)
        }
        w.endObject()
        return w.finish()
    }

    /// Reads a fields object; every key and value is checked. Fields set to `null` are left
    /// out (see `decodeFieldsAndDeletions` to learn which).
    public static func decodeFields(_ bytes: [UInt8]) throws(RecSyncError) -> [String: FieldValue] {
        try decodeFieldsAndDeletions(bytes).fields
    }

    /// Reads a fields object, and the keys set to `null`: field deletions, which a file
    /// without those keys would not spell (sorted).
    ///
    /// An asset named by file (`{"$asset": "scan"}`) is read through `assets`; without one it
    /// is refused.
    public static func decodeFieldsAndDeletions(_ bytes: [UInt8], assets: AssetResolver? = nil) throws(RecSyncError) -> (
        fields: [String: FieldValue], deleted: [String]
    ) {
        let json = try JSON.parse(bytes)
        guard case .object(let members) = json else {
            throw .malformedInput("the fields file must hold a JSON object of fields, found \(StoreEncoding.kindName(json))")
        }
        var fields: [String: FieldValue] = [:]
        var deleted: [String] = []
        fields.reserveCapacity(members.count)
        for (key, value) in members {
            try NameRules.validateFieldKey(key)
            if case .object(let o) = value, o.count == 1, case .string(let file)? = o["$asset"] {
                guard let assets else {
                    throw .malformedInput(
                        """
                        field '\(key)': '$asset' names the file '\(file)', which only a workspace record can read; give\
                         the asset as {\"$asset\": {\"oid\": …, \"sha256\": …, \"size\": …}} here
                        """
                    )
                }
                try validateAssetFileName(file, key: key)
                fields[key] = .asset(try assets(key, file))
                continue
            }
            if let v = try fieldValue(from: value, key: key) {
                fields[key] = v
            } else {
                deleted.append(key)
            }
        }
        return (fields, deleted.sorted())
    }

    /// The plain JSON of one field value.
    public static func json(from value: FieldValue) -> JSONValue {
        switch value {
        case .string(let s): return .string(s)
        case .int64(let i): return .int(i)
        case .double(let d): return .double(d)
        case .boolean(let b): return .bool(b)
        case .timestamp(let t): return .object(["$date": dateValue(t)])
        case .bytes(let b): return .object(["$bytes": .string(Base64.encode(b))])
        case .reference(let r):
            var o: [String: JSONValue] = ["$ref": .string(r.recordName)]
            if r.action == .deleteSelf { o["action"] = .string("deleteSelf") }
            return .object(o)
        case .location(let l):
            return .object(["$location": .object(["lat": .double(l.latitude), "lon": .double(l.longitude)])])
        case .json(let j):
            return jsonNeedsWrapper(j) ? .object(["$json": j]) : j
        case .asset(let a):
            return .object(["$asset": .object(["oid": .string(a.oid), "sha256": .string(a.sha256), "size": .int(a.size)])])
        case .list(let items):
            return .array(items.map(json(from:)))
        case .encrypted(let b):
            // Never written by a client that holds the zone key (it opens the value first);
            // shown tagged so it cannot pass for data.
            return .object(["$encrypted": .string(Base64.encode(b))])
        }
    }

    /// The field value of plain JSON; nil for `null` (the field is absent). Errors name the key.
    public static func fieldValue(from json: JSONValue, key: String) throws(RecSyncError) -> FieldValue? {
        let v: FieldValue
        switch json {
        case .null: return nil
        case .bool(let b): v = .boolean(b)
        case .int(let i): v = .int64(i)
        case .double(let d): v = .double(d)
        case .string(let s): v = .string(s)
        case .object(let o):
            v = try taggedValue(o, key: key) ?? .json(json)
        case .array(let items):
            v = try arrayValue(items, key: key)
        }
        try v.validate(key: key)
        return v
    }

    /// The canonical pretty sidecar of a record's system fields.
    public static func encodeSystemFields(_ s: SystemFields) -> [UInt8] {
        var o: [String: JSONValue] = [
            "recordName": .string(s.recordID.recordName),
            "recordType": .string(s.recordType),
            "zone": .object([
                "ownerName": .string(s.recordID.zoneID.ownerName),
                "zoneName": .string(s.recordID.zoneID.zoneName),
            ]),
        ]
        if let tag = s.changeTag { o["changeTag"] = .string(tag) }
        if let c = s.created { o["created"] = stampJSON(c) }
        if let m = s.modified { o["modified"] = stampJSON(m) }
        return JSON.serialize(.object(o), pretty: true)
    }

    /// Reads a sidecar, enforcing the zone, owner, record name and record type rules.
    public static func decodeSystemFields(_ bytes: [UInt8]) throws(RecSyncError) -> SystemFields {
        let json = try JSON.parse(bytes)
        guard case .object(let o) = json else {
            throw .malformedInput("system fields: expected a JSON object, found \(StoreEncoding.kindName(json))")
        }
        let known = ["changeTag", "created", "modified", "recordName", "recordType", "zone"]
        for k in o.keys where !known.contains(k) {
            throw .malformedInput("system fields: unexpected key '\(k)'")
        }
        guard case .string(let name)? = o["recordName"] else {
            throw .malformedInput("system fields: 'recordName' must be a string")
        }
        guard case .string(let type)? = o["recordType"] else {
            throw .malformedInput("system fields: 'recordType' must be a string")
        }
        guard case .object(let zone)? = o["zone"] else {
            throw .malformedInput("system fields: 'zone' must be an object with 'ownerName' and 'zoneName'")
        }
        for k in zone.keys where k != "ownerName" && k != "zoneName" {
            throw .malformedInput("system fields: unexpected key '\(k)' in 'zone'")
        }
        guard case .string(let zoneName)? = zone["zoneName"], case .string(let ownerName)? = zone["ownerName"] else {
            throw .malformedInput("system fields: 'zone' needs strings 'ownerName' and 'zoneName'")
        }
        var changeTag: String?
        switch o["changeTag"] {
        case nil, .null?: changeTag = nil
        case .string(let t)?: changeTag = t
        default: throw .malformedInput("system fields: 'changeTag' must be a string")
        }
        let created = try stamp(o["created"], what: "created")
        let modified = try stamp(o["modified"], what: "modified")
        let zoneID = try ZoneID(zoneName: zoneName, ownerName: ownerName)
        let recordID = try RecordID(recordName: name, zoneID: zoneID)
        try NameRules.validateRecordType(type)
        return SystemFields(recordID: recordID, recordType: type, changeTag: changeTag, created: created, modified: modified)
    }

    // MARK: Encoding helpers

    static func dateValue(_ ms: Int64) -> JSONValue {
        if ms >= Timestamps.minMilliseconds && ms <= Timestamps.maxMilliseconds {
            return .string(Timestamps.iso8601(ms))
        }
        // Outside the years ISO 8601 text covers here: keep the milliseconds.
        return .int(ms)
    }

    /// Whether `.json(j)` must be written as `{"$json": j}` because its plain form reads back as
    /// something else (a scalar, a list, a tag object, or an error).
    static func jsonNeedsWrapper(_ j: JSONValue) -> Bool {
        switch j {
        case .object(let o):
            return o.keys.contains(where: isTagKey)
        case .array:
            guard let plain = try? fieldValue(from: j, key: "json") else { return true }
            return plain != .json(j)
        case .null, .bool, .int, .double, .string:
            return true
        }
    }

    static func isTagKey(_ k: String) -> Bool { k.utf8.first == UInt8(ascii: "$") }

    static func stampJSON(_ s: ChangeStamp) -> JSONValue {
        .object(["timestamp": .int(s.timestamp), "userRecordName": .string(s.userRecordName)])
    }

    /// Writes what `json(from:)` returns, without building it where that is easy.
    static func writePlain(_ v: FieldValue, to w: inout JSONWriter) {
        switch v {
        case .string(let s): w.string(s)
        case .int64(let i): w.int(i)
        case .double(let d): w.double(d)
        case .boolean(let b): w.bool(b)
        case .list(let items):
            w.beginArray()
            for item in items {
                w.item()
                writePlain(item, to: &w)
            }
            w.endArray()
        case .json(let j) where !jsonNeedsWrapper(j):
            w.value(j)
        default:
            w.value(json(from: v))
        }
    }

    // MARK: Decoding helpers

    static func taggedValue(_ o: [String: JSONValue], key: String) throws(RecSyncError) -> FieldValue? {
        let tags = o.keys.filter(isTagKey).sorted()
        guard let tag = tags.first else { return nil }
        if tags.count > 1 {
            throw .malformedInput("field '\(key)': an object may hold only one '$' tag, found '\(tags[0])' and '\(tags[1])'")
        }
        let allowedExtra: Set<String> = tag == "$ref" ? ["action"] : []
        for k in o.keys where k != tag && !allowedExtra.contains(k) {
            throw .malformedInput("field '\(key)': unexpected key '\(k)' beside '\(tag)'")
        }
        let value = o[tag]!
        switch tag {
        case "$date":
            switch value {
            case .string(let s):
                guard let ms = Timestamps.parseISO8601(s) else {
                    throw .malformedInput("field '\(key)': '\(s)' is not a timestamp like 2026-11-22T10:00:00.000Z (years 0001–9999, 'Z' or ±HH:MM)")
                }
                return .timestamp(ms)
            case .int(let ms):
                return .timestamp(ms)
            default:
                throw .malformedInput("field '\(key)': '$date' must be an ISO 8601 string, found \(StoreEncoding.kindName(value))")
            }
        case "$bytes":
            guard case .string(let s) = value else {
                throw .malformedInput("field '\(key)': '$bytes' must be a base64 string, found \(StoreEncoding.kindName(value))")
            }
            guard let bytes = Base64.decode(s) else {
                throw .malformedInput("field '\(key)': '$bytes' is not valid base64 (standard alphabet, with '=' padding)")
            }
            return .bytes(bytes)
        case "$ref":
            guard case .string(let name) = value else {
                throw .malformedInput("field '\(key)': '$ref' must be a record name string, found \(StoreEncoding.kindName(value))")
            }
            let action: ReferenceAction
            switch o["action"] {
            case nil, .string("none")?: action = .none
            case .string("deleteSelf")?: action = .deleteSelf
            default: throw .malformedInput("field '\(key)': 'action' of a '$ref' must be \"none\" or \"deleteSelf\"")
            }
            do {
                return .reference(try Reference(recordName: name, action: action))
            } catch {
                throw .malformedInput("field '\(key)': " + error.message)
            }
        case "$location":
            guard case .object(let l) = value else {
                throw .malformedInput("field '\(key)': '$location' must be an object with 'lat' and 'lon', found \(StoreEncoding.kindName(value))")
            }
            for k in l.keys where k != "lat" && k != "lon" {
                throw .malformedInput("field '\(key)': unexpected key '\(k)' in '$location' (expected 'lat' and 'lon')")
            }
            guard let lat = l["lat"].flatMap(StoreEncoding.number) else {
                throw .malformedInput("field '\(key)': '$location' needs a number 'lat'")
            }
            guard let lon = l["lon"].flatMap(StoreEncoding.number) else {
                throw .malformedInput("field '\(key)': '$location' needs a number 'lon'")
            }
            do {
                return .location(try Location(latitude: lat, longitude: lon))
            } catch {
                throw .malformedInput("field '\(key)': " + error.message)
            }
        case "$json":
            return .json(value)
        case "$asset":
            switch value {
            case .object(let a):
                for k in a.keys where !["oid", "sha256", "size"].contains(k) {
                    throw .malformedInput("field '\(key)': unexpected key '\(k)' in '$asset' (expected 'oid', 'sha256' and 'size')")
                }
                guard case .string(let oid)? = a["oid"], case .string(let sum)? = a["sha256"], case .int(let size)? = a["size"] else {
                    throw .malformedInput("field '\(key)': '$asset' needs strings 'oid' and 'sha256' and an integer 'size'")
                }
                do {
                    return .asset(try AssetReference(oid: oid, size: size, sha256: sum))
                } catch {
                    throw .malformedInput("field '\(key)': " + error.message)
                }
            case .string:
                throw .malformedInput("field '\(key)': an asset file can be named only by a field of its own, not inside a list or JSON value")
            default:
                throw .malformedInput("field '\(key)': '$asset' must name the asset's file, found \(StoreEncoding.kindName(value))")
            }
        default:
            throw .malformedInput(
                """
                field '\(key)': unknown tag '\(tag)'; the tags are $date, $bytes, $ref, $location, $json and\
                 $asset (other objects must not have keys starting with '$')
                """
            )
        }
    }

    /// Checks that an asset's file name is one plain name inside the record's asset directory.
    public static func validateAssetFileName(_ file: String, key: String) throws(RecSyncError) {
        guard file == key else {
            throw .malformedInput(
                """
                field '\(key)': '$asset' names '\(file)', but an asset's file is named after its field: write\
                 {\"$asset\": \"\(key)\"} and keep the file as '\(key)' in the record's .assets directory
                """
            )
        }
    }

    static func arrayValue(_ items: [JSONValue], key: String) throws(RecSyncError) -> FieldValue {
        if items.isEmpty { return .list([]) }
        var elements: [FieldValue] = []
        elements.reserveCapacity(items.count)
        var type: FieldType?
        var mixedNumbers = false
        for item in items {
            let element: FieldValue
            switch item {
            case .null, .array: return .json(.array(items))
            case .bool(let b): element = .boolean(b)
            case .int(let i): element = .int64(i)
            case .double(let d): element = .double(d)
            case .string(let s): element = .string(s)
            case .object(let o):
                guard let tagged = try taggedValue(o, key: key), tagged.scalarType != .json else {
                    return .json(.array(items))
                }
                element = tagged
            }
            let t = element.scalarType!
            if let current = type, current != t {
                if (current == .int64 || current == .double) && (t == .int64 || t == .double) {
                    mixedNumbers = true
                } else {
                    return .json(.array(items))
                }
            } else if type == nil {
                type = t
            }
            elements.append(element)
        }
        if mixedNumbers {
            return .list(
                elements.map { e in
                    if case .int64(let i) = e { return .double(Double(i)) }
                    return e
                })
        }
        return .list(elements)
    }

    static func stamp(_ j: JSONValue?, what: String) throws(RecSyncError) -> ChangeStamp? {
        guard let j, j != .null else { return nil }
        guard case .object(let o) = j else {
            throw .malformedInput("system fields: '\(what)' must be an object with 'timestamp' and 'userRecordName'")
        }
        for k in o.keys where k != "timestamp" && k != "userRecordName" {
            throw .malformedInput("system fields: unexpected key '\(k)' in '\(what)'")
        }
        guard case .int(let t)? = o["timestamp"], case .string(let user)? = o["userRecordName"] else {
            throw .malformedInput("system fields: '\(what)' needs an integer 'timestamp' and a string 'userRecordName'")
        }
        return ChangeStamp(timestamp: t, userRecordName: user)
    }
}
