/// The typed record blob kept in the store, shaped like a CloudKit Web Services record dictionary:
///
/// ```json
/// {"created":{"timestamp":1,"userRecordName":"alice"},
///  "fields":{"title":{"type":"STRING","value":"x"}},
///  "modified":{"timestamp":2,"userRecordName":"bob"},
///  "recordName":"r1","recordType":"Note"}
/// ```
///
/// `created` and `modified` are left out when nil. The zone and change tag are not in the blob:
/// the store knows them from where and in which version it keeps the blob.
public enum StoreEncoding {
    /// The canonical (sorted keys, pretty) blob of a record.
    public static func encode(_ record: Record) -> [UInt8] {
        var w = JSONWriter(pretty: true, capacity: 512)
        w.beginObject()
        if let c = record.created {
            w.key("created")
            writeStamp(c, to: &w)
        }
        w.key("fields")
        writeFields(record.fields, to: &w)
        if let m = record.modified {
            w.key("modified")
            writeStamp(m, to: &w)
        }
        w.key("recordName")
        w.string(record.recordID.recordName)
        w.key("recordType")
        w.string(record.recordType)
        w.endObject()
        return w.finish()
    }

    /// Reads a blob back into a record of the given zone, enforcing every rule.
    public static func decode(_ bytes: [UInt8], zoneID: ZoneID, changeTag: String?) throws(RecSyncError) -> Record {
        let json = try JSON.parse(bytes)
        guard case .object(let top) = json else {
            throw .malformedInput("record blob: expected a JSON object, found \(kindName(json))")
        }
        for k in top.keys where !["created", "fields", "modified", "recordName", "recordType"].contains(k) {
            throw .malformedInput("record blob: unexpected key '\(k)'")
        }
        guard case .string(let name)? = top["recordName"] else {
            throw .malformedInput("record blob: 'recordName' must be a string")
        }
        guard case .string(let type)? = top["recordType"] else {
            throw .malformedInput("record blob of '\(name)': 'recordType' must be a string")
        }
        guard case .object(let fieldsJSON)? = top["fields"] else {
            throw .malformedInput("record blob of '\(name)': 'fields' must be an object")
        }
        var fields: [String: FieldValue] = [:]
        fields.reserveCapacity(fieldsJSON.count)
        for (key, value) in fieldsJSON {
            try NameRules.validateFieldKey(key)
            fields[key] = try decodeValue(value, key: key)
        }
        let created = try decodeStamp(top["created"], what: "created", of: name)
        let modified = try decodeStamp(top["modified"], what: "modified", of: name)
        let id = try RecordID(recordName: name, zoneID: zoneID)
        return try Record(recordID: id, recordType: type, fields: fields, changeTag: changeTag, created: created, modified: modified)
    }

    /// The size of a record's field data: the bytes of its compact `fields` object.
    public static func fieldDataSize(of record: Record) -> Int {
        var w = JSONWriter(pretty: false, capacity: 256)
        writeFields(record.fields, to: &w)
        return w.out.count
    }

    /// One field's `{"type": …, "value": …}` dictionary.
    public static func encodeValue(_ v: FieldValue) -> JSONValue {
        .object(["type": .string(typeName(v)), "value": rawValue(v)])
    }

    /// Reads one field's `{"type": …, "value": …}` dictionary; errors name the field key.
    public static func decodeValue(_ j: JSONValue, key: String) throws(RecSyncError) -> FieldValue {
        guard case .object(let dict) = j else {
            throw .malformedInput("field '\(key)': expected an object with 'type' and 'value', found \(kindName(j))")
        }
        for k in dict.keys where k != "type" && k != "value" {
            throw .malformedInput("field '\(key)': unexpected key '\(k)' beside 'type' and 'value'")
        }
        guard case .string(let type)? = dict["type"] else {
            throw .malformedInput("field '\(key)': 'type' must be a string")
        }
        guard let value = dict["value"] else {
            throw .malformedInput("field '\(key)': 'value' is missing")
        }
        let result: FieldValue
        if type == "LIST" {
            guard case .array(let items) = value, items.isEmpty else {
                throw .malformedInput("field '\(key)': type LIST is only for the empty list, so its value must be []")
            }
            result = .list([])
        } else if type.hasSuffix("_LIST") {
            let elementName = String(type.dropLast(5))
            guard let elementType = FieldType(rawValue: elementName), elementType != .json, elementType != .encrypted else {
                throw .malformedInput("field '\(key)': unknown type '\(type)'")
            }
            guard case .array(let items) = value else {
                throw .malformedInput("field '\(key)': a \(type) value must be an array, found \(kindName(value))")
            }
            var list: [FieldValue] = []
            list.reserveCapacity(items.count)
            for item in items { list.append(try decodeScalar(item, type: elementType, key: key)) }
            result = .list(list)
        } else {
            guard let scalarType = FieldType(rawValue: type) else {
                throw .malformedInput("field '\(key)': unknown type '\(type)'")
            }
            result = try decodeScalar(value, type: scalarType, key: key)
        }
        try result.validate(key: key)
        return result
    }

    // MARK: Encoding helpers

    static func typeName(_ v: FieldValue) -> String {
        switch v {
        case .list(let items):
            guard let first = items.first, let t = first.scalarType else { return "LIST" }
            return t.rawValue + "_LIST"
        default:
            return v.scalarType!.rawValue
        }
    }

    static func referenceActionName(_ a: ReferenceAction) -> String {
        switch a {
        case .none: "NONE"
        case .deleteSelf: "DELETE_SELF"
        }
    }

    /// The `value` part of a field's dictionary.
    static func rawValue(_ v: FieldValue) -> JSONValue {
        switch v {
        case .string(let s): .string(s)
        case .int64(let i): .int(i)
        case .double(let d): .double(d)
        case .boolean(let b): .bool(b)
        case .timestamp(let t): .int(t)
        case .bytes(let b): .string(Base64.encode(b))
        case .reference(let r): .object(["action": .string(referenceActionName(r.action)), "recordName": .string(r.recordName)])
        case .location(let l): .object(["latitude": .double(l.latitude), "longitude": .double(l.longitude)])
        case .json(let j): j
        case .asset(let a): .object(["fileChecksum": .string(a.sha256), "oid": .string(a.oid), "size": .int(a.size)])
        case .encrypted(let b): .string(Base64.encode(b))
        case .list(let items): .array(items.map(rawValue))
        }
    }

    static func writeStamp(_ s: ChangeStamp, to w: inout JSONWriter) {
        w.beginObject()
        w.key("timestamp")
        w.int(s.timestamp)
        w.key("userRecordName")
        w.string(s.userRecordName)
        w.endObject()
    }

    static func writeFields(_ fields: [String: FieldValue], to w: inout JSONWriter) {
        w.beginObject()
        for (k, v) in JSONWriter.sorted(fields) {
            w.key(k)
            w.beginObject()
            w.key("type")
            w.string(typeName(v))
            w.key("value")
            writeRaw(v, to: &w)
            w.endObject()
        }
        w.endObject()
    }

    /// Writes what `rawValue` returns, without building it.
    static func writeRaw(_ v: FieldValue, to w: inout JSONWriter) {
        switch v {
        case .string(let s): w.string(s)
        case .int64(let i): w.int(i)
        case .double(let d): w.double(d)
        case .boolean(let b): w.bool(b)
        case .timestamp(let t): w.int(t)
        case .bytes(let b), .encrypted(let b): w.string(Base64.encode(b))
        case .reference(let r):
            w.beginObject()
            w.key("action")
            w.string(referenceActionName(r.action))
            w.key("recordName")
            w.string(r.recordName)
            w.endObject()
        case .location(let l):
            w.beginObject()
            w.key("latitude")
            w.double(l.latitude)
            w.key("longitude")
            w.double(l.longitude)
            w.endObject()
        case .json(let j): w.value(j)
        case .asset(let a):
            w.beginObject()
            w.key("fileChecksum")
            w.string(a.sha256)
            w.key("oid")
            w.string(a.oid)
            w.key("size")
            w.int(a.size)
            w.endObject()
        case .list(let items):
            w.beginArray()
            for item in items {
                w.item()
                writeRaw(item, to: &w)
            }
            w.endArray()
        }
    }

    // MARK: Decoding helpers

    /// What kind of JSON value `j` is, in words ("a string", "an array"), for messages.
    public static func kindName(_ j: JSONValue) -> String {
        switch j {
        case .null: "null"
        case .bool: "a boolean"
        case .int: "an integer"
        case .double: "a number with a fraction or exponent"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    static func decodeScalar(_ j: JSONValue, type: FieldType, key: String) throws(RecSyncError) -> FieldValue {
        func wrong(_ expected: String) -> RecSyncError {
            .malformedInput("field '\(key)': a \(type.rawValue) value must be \(expected), found \(kindName(j))")
        }
        switch type {
        case .string:
            guard case .string(let s) = j else { throw wrong("a string") }
            return .string(s)
        case .int64:
            guard case .int(let i) = j else { throw wrong("an integer") }
            return .int64(i)
        case .double:
            guard let d = number(j) else { throw wrong("a number") }
            guard d.isFinite else { throw .malformedInput("field '\(key)': \(d) is not a finite number") }
            return .double(d)
        case .boolean:
            guard case .bool(let b) = j else { throw wrong("true or false") }
            return .boolean(b)
        case .timestamp:
            guard case .int(let i) = j else { throw wrong("an integer count of milliseconds") }
            return .timestamp(i)
        case .bytes:
            guard case .string(let s) = j else { throw wrong("a base64 string") }
            guard let bytes = Base64.decode(s) else {
                throw .malformedInput("field '\(key)': the BYTES value is not valid base64 (standard alphabet, with '=' padding)")
            }
            return .bytes(bytes)
        case .reference:
            guard case .object(let o) = j else { throw wrong("an object with 'action' and 'recordName'") }
            for k in o.keys where k != "action" && k != "recordName" {
                throw .malformedInput("field '\(key)': unexpected key '\(k)' in a REFERENCE value")
            }
            guard case .string(let name)? = o["recordName"] else {
                throw .malformedInput("field '\(key)': a REFERENCE value needs a string 'recordName'")
            }
            let action: ReferenceAction
            switch o["action"] {
            case .string("NONE")?: action = .none
            case .string("DELETE_SELF")?: action = .deleteSelf
            default: throw .malformedInput("field '\(key)': a REFERENCE value needs 'action' \"NONE\" or \"DELETE_SELF\"")
            }
            do {
                return .reference(try Reference(recordName: name, action: action))
            } catch {
                throw .malformedInput("field '\(key)': " + error.message)
            }
        case .location:
            guard case .object(let o) = j else { throw wrong("an object with 'latitude' and 'longitude'") }
            for k in o.keys where k != "latitude" && k != "longitude" {
                throw .malformedInput("field '\(key)': unexpected key '\(k)' in a LOCATION value")
            }
            guard let lat = o["latitude"].flatMap(number), let lon = o["longitude"].flatMap(number) else {
                throw .malformedInput("field '\(key)': a LOCATION value needs numbers 'latitude' and 'longitude'")
            }
            do {
                return .location(try Location(latitude: lat, longitude: lon))
            } catch {
                throw .malformedInput("field '\(key)': " + error.message)
            }
        case .json:
            try j.validate(context: "field '\(key)'")
            return .json(j)
        case .asset:
            guard case .object(let o) = j else { throw wrong("an object with 'fileChecksum', 'oid' and 'size'") }
            for k in o.keys where !["fileChecksum", "oid", "size"].contains(k) {
                throw .malformedInput("field '\(key)': unexpected key '\(k)' in an ASSET value")
            }
            guard case .string(let sum)? = o["fileChecksum"], case .string(let oid)? = o["oid"], case .int(let size)? = o["size"] else {
                throw .malformedInput("field '\(key)': an ASSET value needs strings 'fileChecksum' and 'oid' and an integer 'size'")
            }
            do {
                return .asset(try AssetReference(oid: oid, size: size, sha256: sum))
            } catch {
                throw .malformedInput("field '\(key)': " + error.message)
            }
        case .encrypted:
            guard case .string(let s) = j, let bytes = Base64.decode(s) else {
                throw .malformedInput("field '\(key)': an ENCRYPTED value must be a base64 string (standard alphabet, with '=' padding)")
            }
            return .encrypted(bytes)
        }
    }

    static func number(_ j: JSONValue) -> Double? {
        switch j {
        case .double(let d): d
        case .int(let i): Double(i)
        default: nil
        }
    }

    static func decodeStamp(_ j: JSONValue?, what: String, of name: String) throws(RecSyncError) -> ChangeStamp? {
        guard let j else { return nil }
        guard case .object(let o) = j else {
            throw .malformedInput("record blob of '\(name)': '\(what)' must be an object with 'timestamp' and 'userRecordName'")
        }
        for k in o.keys where k != "timestamp" && k != "userRecordName" {
            throw .malformedInput("record blob of '\(name)': unexpected key '\(k)' in '\(what)'")
        }
        guard case .int(let t)? = o["timestamp"], case .string(let user)? = o["userRecordName"] else {
            throw .malformedInput("record blob of '\(name)': '\(what)' needs an integer 'timestamp' and a string 'userRecordName'")
        }
        return ChangeStamp(timestamp: t, userRecordName: user)
    }
}

/// Standard base64 (RFC 4648 alphabet, `=` padding), strict on decode.
public enum Base64 {
    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let inverse: [UInt8] = {
        var t = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in alphabet.enumerated() { t[Int(c)] = UInt8(i) }
        return t
    }()

    public static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        let n = bytes.count
        while i + 3 <= n {
            let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out.append(alphabet[Int(v >> 18)])
            out.append(alphabet[Int((v >> 12) & 0x3F)])
            out.append(alphabet[Int((v >> 6) & 0x3F)])
            out.append(alphabet[Int(v & 0x3F)])
            i += 3
        }
        let rest = n - i
        if rest == 1 {
            let v = UInt32(bytes[i]) << 16
            out.append(alphabet[Int(v >> 18)])
            out.append(alphabet[Int((v >> 12) & 0x3F)])
            out.append(UInt8(ascii: "="))
            out.append(UInt8(ascii: "="))
        } else if rest == 2 {
            let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
            out.append(alphabet[Int(v >> 18)])
            out.append(alphabet[Int((v >> 12) & 0x3F)])
            out.append(alphabet[Int((v >> 6) & 0x3F)])
            out.append(UInt8(ascii: "="))
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes canonical base64: length a multiple of 4, padding only at the end, unused bits zero.
    public static func decode(_ text: String) -> [UInt8]? {
        let s = Array(text.utf8)
        guard s.count % 4 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(s.count / 4 * 3)
        var i = 0
        while i < s.count {
            let last = i + 4 == s.count
            let c0 = inverse[Int(s[i])], c1 = inverse[Int(s[i + 1])]
            guard c0 != 0xFF, c1 != 0xFF else { return nil }
            let pad2 = last && s[i + 2] == UInt8(ascii: "=")
            let pad3 = last && s[i + 3] == UInt8(ascii: "=")
            if pad2 {
                guard pad3, c1 & 0x0F == 0 else { return nil }
                out.append(c0 << 2 | c1 >> 4)
            } else {
                let c2 = inverse[Int(s[i + 2])]
                guard c2 != 0xFF else { return nil }
                if pad3 {
                    guard c2 & 0x03 == 0 else { return nil }
                    out.append(c0 << 2 | c1 >> 4)
                    out.append(c1 << 4 | c2 >> 2)
                } else {
                    let c3 = inverse[Int(s[i + 3])]
                    guard c3 != 0xFF else { return nil }
                    out.append(c0 << 2 | c1 >> 4)
                    out.append(c1 << 4 | c2 >> 2)
                    out.append(c2 << 6 | c3)
                }
            }
            i += 4
        }
        return out
    }
}
