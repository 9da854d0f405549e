import RecSyncModel

/// SplitMix64: a small, fast, seedable generator, so generated data is the same on every run.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Valid records with awkward contents, for property tests and benchmarks.
public enum RecordGenerator {
    /// Unwraps a throwing init for values the generator knows to be valid.
    static func valid<T>(_ make: () throws(RecSyncError) -> T) -> T {
        do {
            return try make()
        } catch {
            preconditionFailure("RecordGenerator built an invalid value: \(error.message)")
        }
    }

    static let awkwardStrings: [String] = [
        "", " ", "plain", "with \"quotes\"", "back\\slash", "\\\"", "line\nbreak", "tab\there", "cr\r\nlf",
        "\u{0}nul", "\u{1}\u{1F}\u{7F}", "\u{8}\u{C}", "slash / not escaped", "</script>",
        "emoji 😀", "non-BMP 𝄞 \u{10FFFF}", "accent é ü ß", "日本語", "\u{2028}\u{2029}", "$dollar",
        "{\"json\": [1, 2]}", "null", "true", "1e5", "-0", "  padded  ",
    ]

    static let nameCharacters: [UInt8] = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./% ~!'()*+,;=:@".utf8)

    /// A random ASCII record name (1–40 characters), including `/`, `%`, spaces and a leading `.`.
    public static func recordName<G: RandomNumberGenerator>(using g: inout G) -> String {
        switch Int.random(in: 0..<10, using: &g) {
        case 0: return [".", "..", ".hidden", "a/b/c", "100%", "with space", " ", "%2F", "~", "-"].randomElement(using: &g)!
        default:
            let n = Int.random(in: 1...40, using: &g)
            var bytes: [UInt8] = []
            for i in 0..<n {
                var c = nameCharacters.randomElement(using: &g)!
                if i == 0 && c == UInt8(ascii: "_") { c = UInt8(ascii: ".") }
                bytes.append(c)
            }
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    /// A random field key or record type (letter first, then letters, digits, `_`).
    public static func identifier<G: RandomNumberGenerator>(using g: inout G, maxLength: Int = 20) -> String {
        let letters = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)
        let rest = letters + Array("0123456789_".utf8)
        var bytes = [letters.randomElement(using: &g)!]
        for _ in 0..<Int.random(in: 0..<maxLength, using: &g) { bytes.append(rest.randomElement(using: &g)!) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A random string: a fixed awkward one, or random scalars from several ranges.
    public static func string<G: RandomNumberGenerator>(using g: inout G) -> String {
        if Bool.random(using: &g) { return awkwardStrings.randomElement(using: &g)! }
        var s = String.UnicodeScalarView()
        for _ in 0..<Int.random(in: 0...16, using: &g) {
            let v: UInt32
            switch Int.random(in: 0..<6, using: &g) {
            case 0: v = UInt32.random(in: 0..<0x20, using: &g)
            case 1, 2: v = UInt32.random(in: 0x20..<0x7F, using: &g)
            case 3: v = UInt32.random(in: 0xA0..<0x300, using: &g)
            case 4: v = UInt32.random(in: 0x4E00..<0x9FFF, using: &g)
            default: v = UInt32.random(in: 0x1F300..<0x1F650, using: &g)
            }
            s.append(Unicode.Scalar(v)!)
        }
        return String(s)
    }

    public static func double<G: RandomNumberGenerator>(using g: inout G) -> Double {
        switch Int.random(in: 0..<8, using: &g) {
        case 0:
            return [
                0.0, -0.0, 1.0, -1.0, 3.0, 1e16, -1e16, 1e15, 9007199254740992.0, 0.1, 1e-5, Double.leastNonzeroMagnitude,
                -Double.leastNonzeroMagnitude,
                2.2250738585072014e-308, 1.7976931348623157e308, -1.7976931348623157e308, 1e-300, 1e300, 123456789.0,
            ]
            .randomElement(using: &g)!
        case 1:
            return Double(Int64.random(in: -1_000_000...1_000_000, using: &g))
        case 2:
            return Double.random(in: -1000...1000, using: &g)
        case 3:
            return Double(
                sign: Bool.random(using: &g) ? .minus : .plus,
                exponent: Int.random(in: -1074...1023, using: &g),
                significand: Double.random(in: 1..<2, using: &g))
        default:
            while true {
                let d = Double(bitPattern: g.next())
                if d.isFinite { return d }
            }
        }
    }

    public static func int64<G: RandomNumberGenerator>(using g: inout G) -> Int64 {
        switch Int.random(in: 0..<4, using: &g) {
        case 0: return [Int64.min, Int64.max, 0, -1, 1, Int64.min + 1, Int64.max - 1, 9007199254740993].randomElement(using: &g)!
        case 1: return Int64.random(in: -1000...1000, using: &g)
        default: return Int64(bitPattern: g.next())
        }
    }

    public static func timestamp<G: RandomNumberGenerator>(using g: inout G) -> Int64 {
        switch Int.random(in: 0..<4, using: &g) {
        case 0: return [0, -1, 1, Timestamps.minMilliseconds, Timestamps.maxMilliseconds, 951_782_400_000, -86_400_000].randomElement(using: &g)!
        case 1: return Int64.random(in: -2_000_000_000_000...4_000_000_000_000, using: &g)
        default: return Int64.random(in: Timestamps.minMilliseconds...Timestamps.maxMilliseconds, using: &g)
        }
    }

    public static func bytes<G: RandomNumberGenerator>(using g: inout G) -> [UInt8] {
        (0..<Int.random(in: 0...40, using: &g)).map { _ in UInt8.random(in: 0...255, using: &g) }
    }

    /// A random scalar of the given type (not `.json`).
    public static func scalar<G: RandomNumberGenerator>(_ type: FieldType, using g: inout G) -> FieldValue {
        switch type {
        case .string: return .string(string(using: &g))
        case .int64: return .int64(int64(using: &g))
        case .double: return .double(double(using: &g))
        case .boolean: return .boolean(Bool.random(using: &g))
        case .timestamp: return .timestamp(timestamp(using: &g))
        case .bytes: return .bytes(bytes(using: &g))
        case .reference:
            let name = recordName(using: &g)
            let action: ReferenceAction = Bool.random(using: &g) ? .deleteSelf : .none
            return .reference(valid { () throws(RecSyncError) in try Reference(recordName: name, action: action) })
        case .location:
            let lat = Bool.random(using: &g) ? [90.0, -90.0, 0.0, -0.0].randomElement(using: &g)! : Double.random(in: -90...90, using: &g)
            let lon = Bool.random(using: &g) ? [180.0, -180.0, 0.0].randomElement(using: &g)! : Double.random(in: -180...180, using: &g)
            return .location(valid { () throws(RecSyncError) in try Location(latitude: lat, longitude: lon) })
        case .json: return .json(json(using: &g, depth: 3))
        case .asset:
            let hex: [Character] = Array("0123456789abcdef")
            let oid = String((0..<40).map { _ in hex.randomElement(using: &g)! })
            let sum = String((0..<64).map { _ in hex.randomElement(using: &g)! })
            let size = Int64.random(in: 0...AssetReference.defaultMaxBytes, using: &g)
            return .asset(valid { () throws(RecSyncError) in try AssetReference(oid: oid, size: size, sha256: sum) })
        case .encrypted: return .encrypted(bytes(using: &g))
        }
    }

    /// Random JSON, including objects with `$` keys and arrays that look like lists.
    public static func json<G: RandomNumberGenerator>(using g: inout G, depth: Int) -> JSONValue {
        let choice = Int.random(in: 0..<(depth > 0 ? 11 : 6), using: &g)
        switch choice {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &g))
        case 2: return .int(int64(using: &g))
        case 3: return .double(double(using: &g))
        case 4, 5: return .string(string(using: &g))
        case 6:
            // Looks like a list of strings, needs the $json wrapper.
            return .array((0..<Int.random(in: 0...3, using: &g)).map { _ in .string(string(using: &g)) })
        case 7:
            var o: [String: JSONValue] = [:]
            o["$" + identifier(using: &g, maxLength: 5)] = json(using: &g, depth: depth - 1)
            if Bool.random(using: &g) { o[string(using: &g)] = json(using: &g, depth: depth - 1) }
            return .object(o)
        case 8:
            return .array((0..<Int.random(in: 0...4, using: &g)).map { _ in json(using: &g, depth: depth - 1) })
        default:
            var o: [String: JSONValue] = [:]
            for _ in 0..<Int.random(in: 0...4, using: &g) { o[string(using: &g)] = json(using: &g, depth: depth - 1) }
            return .object(o)
        }
    }

    /// A random valid field value of any type, lists included; `depth` bounds nested JSON.
    /// Never an asset: an asset needs its content in the store (build those explicitly).
    public static func fieldValue<G: RandomNumberGenerator>(using g: inout G, depth: Int = 3) -> FieldValue {
        // Values a client writes: ciphertext is made only by an encrypted zone's client.
        let types = FieldType.allCases.filter { $0 != .asset && $0 != .encrypted }
        let pick = Int.random(in: 0..<(types.count + 3), using: &g)
        if pick < types.count {
            let t = types[pick]
            if t == .json { return .json(json(using: &g, depth: depth)) }
            return scalar(t, using: &g)
        }
        // A list: empty, or of one scalar type.
        if Int.random(in: 0..<5, using: &g) == 0 { return .list([]) }
        let scalarTypes = types.filter { $0 != .json }
        let t = scalarTypes.randomElement(using: &g)!
        return .list((0..<Int.random(in: 1...5, using: &g)).map { _ in scalar(t, using: &g) })
    }

    static func stamp<G: RandomNumberGenerator>(using g: inout G) -> ChangeStamp? {
        guard Bool.random(using: &g) else { return nil }
        let user = ["alice", "bob", "_defaultOwner", "carol.d", "user 42"].randomElement(using: &g)!
        return ChangeStamp(timestamp: timestamp(using: &g), userRecordName: user)
    }

    /// A random valid record in the zone: every field type, optional stamps and change tag.
    public static func record<G: RandomNumberGenerator>(using g: inout G, zoneID: ZoneID, name: String? = nil) -> Record {
        let recordName = name ?? self.recordName(using: &g)
        var fields: [String: FieldValue] = [:]
        for _ in 0..<Int.random(in: 0...8, using: &g) {
            fields[identifier(using: &g)] = fieldValue(using: &g)
        }
        let type = identifier(using: &g, maxLength: 12)
        let changeTag: String? = Bool.random(using: &g) ? String(g.next(), radix: 16) : nil
        let created = stamp(using: &g)
        let modified = stamp(using: &g)
        return valid { () throws(RecSyncError) in
            try Record(
                recordID: RecordID(recordName: recordName, zoneID: zoneID), recordType: type, fields: fields,
                changeTag: changeTag, created: created, modified: modified)
        }
    }

    /// A plain, deterministic record of about 300 bytes of workspace JSON (for 10 fields).
    public static func realisticRecord(index: Int, zoneID: ZoneID, fieldCount: Int = 10) -> Record {
        var g = SeededRandom(seed: UInt64(truncatingIfNeeded: index) &* 0x2545_F491_4F6C_DD1D &+ 1)
        let words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima"]
        func phrase(_ n: Int) -> String {
            (0..<n).map { _ in words.randomElement(using: &g)! }.joined(separator: " ")
        }
        var fields: [String: FieldValue] = [:]
        for i in 0..<fieldCount {
            let value: FieldValue
            let key: String
            switch i {
            case 0: key = "title"; value = .string(phrase(2))
            case 1: key = "body"; value = .string(phrase(4))
            case 2: key = "count"; value = .int64(Int64.random(in: 0...10_000, using: &g))
            case 3: key = "score"; value = .double(Double(Int.random(in: 0...100_000, using: &g)) / 100)
            case 4: key = "done"; value = .boolean(Bool.random(using: &g))
            case 5: key = "due"; value = .timestamp(1_700_000_000_000 + Int64.random(in: 0...100_000_000_000, using: &g))
            case 6: key = "tags"; value = .list((0..<Int.random(in: 1...3, using: &g)).map { _ in .string(words.randomElement(using: &g)!) })
            case 7:
                key = "parent"
                value = .reference(valid { () throws(RecSyncError) in try Reference(recordName: "note-\(index / 10)") })
            case 8:
                key = "place"
                let lat = Double(Int.random(in: -9000...9000, using: &g)) / 100
                let lon = Double(Int.random(in: -18000...18000, using: &g)) / 100
                value = .location(valid { () throws(RecSyncError) in try Location(latitude: lat, longitude: lon) })
            case 9: key = "priority"; value = .int64(Int64.random(in: 1...5, using: &g))
            default: key = "extra\(i)"; value = .string(phrase(2))
            }
            fields[key] = value
        }
        let name = "note-\(index)"
        return valid { () throws(RecSyncError) in
            try Record(recordID: RecordID(recordName: name, zoneID: zoneID), recordType: "Note", fields: fields)
        }
    }
}
