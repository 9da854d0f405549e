/// A JSON value that keeps integers and floating-point numbers apart.
///
/// `int` holds an integer literal that fits in 64 bits; `double` any other number (always finite
/// once validated). Objects are unordered; serialization sorts their keys.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// How deeply a stored JSON value may nest arrays and objects. It leaves room for the
    /// envelope a value is stored in, so every valid value can be parsed back (see `JSON.maxDepth`).
    public static let maxNesting = 500

    /// Checks that every number is finite and that nesting stays within `maxNesting`.
    public func validate(context: String) throws(RecSyncError) {
        try validate(context: context, depth: 0)
    }

    private func validate(context: String, depth: Int) throws(RecSyncError) {
        switch self {
        case .double(let d):
            if !d.isFinite {
                throw .invalidValue("\(context) contains the number \(d); only finite numbers can be stored")
            }
        case .array(let items):
            guard depth < JSONValue.maxNesting else { throw tooDeep(context) }
            for item in items { try item.validate(context: context, depth: depth + 1) }
        case .object(let members):
            guard depth < JSONValue.maxNesting else { throw tooDeep(context) }
            for (_, v) in members { try v.validate(context: context, depth: depth + 1) }
        case .null, .bool, .int, .string:
            break
        }
    }

    private func tooDeep(_ context: String) -> RecSyncError {
        .invalidValue("\(context) nests arrays and objects more than \(JSONValue.maxNesting) levels deep")
    }
}

/// A strict RFC 8259 parser and a canonical serializer.
public enum JSON {
    /// The deepest nesting of arrays and objects the parser accepts.
    public static let maxDepth = 512

    /// Parses one JSON document (UTF-8). Errors are `malformed`, with the line and column.
    public static func parse(_ bytes: [UInt8]) throws(RecSyncError) -> JSONValue {
        let result: Result<JSONValue, RecSyncError> = bytes.withUnsafeBufferPointer { buf in
            var parser = JSONParser(buf)
            do throws(RecSyncError) {
                return .success(try parser.parseDocument())
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Parses one JSON document.
    public static func parse(_ text: String) throws(RecSyncError) -> JSONValue {
        try parse(Array(text.utf8))
    }

    /// Serializes canonically: object keys sorted by their UTF-8 bytes.
    ///
    /// `pretty` indents by two spaces, writes `"key": value`, and ends with a newline; otherwise
    /// no whitespace at all. Empty arrays and objects are `[]` and `{}` either way. Doubles always
    /// carry a `.` or an exponent so they read back as doubles. (A non-finite double, which
    /// `validate` rejects, is written as `null`.)
    public static func serialize(_ value: JSONValue, pretty: Bool) -> [UInt8] {
        var w = JSONWriter(pretty: pretty)
        w.value(value)
        return w.finish()
    }
}

// MARK: - Writer

/// Appends canonical JSON to a byte buffer. Callers emit object keys in sorted order.
struct JSONWriter {
    private(set) var out: [UInt8] = []
    let pretty: Bool
    /// How many items each open container has so far.
    private var counts: [Int] = []

    init(pretty: Bool, capacity: Int = 256) {
        self.pretty = pretty
        out.reserveCapacity(capacity)
    }

    /// The bytes written, plus the final newline when pretty.
    mutating func finish() -> [UInt8] {
        if pretty { out.append(0x0A) }
        return out
    }

    // Containers

    mutating func beginObject() {
        out.append(UInt8(ascii: "{"))
        counts.append(0)
    }

    mutating func endObject() { end(UInt8(ascii: "}")) }

    mutating func beginArray() {
        out.append(UInt8(ascii: "["))
        counts.append(0)
    }

    mutating func endArray() { end(UInt8(ascii: "]")) }

    /// Starts an object member: separator, indentation, `"key":`.
    mutating func key(_ k: String) {
        item()
        string(k)
        out.append(UInt8(ascii: ":"))
        if pretty { out.append(0x20) }
    }

    /// Starts an array element: separator and indentation.
    mutating func item() {
        let n = counts[counts.count - 1]
        if n > 0 { out.append(UInt8(ascii: ",")) }
        counts[counts.count - 1] = n + 1
        if pretty { newline(depth: counts.count) }
    }

    private mutating func end(_ closer: UInt8) {
        let n = counts.removeLast()
        if n > 0 && pretty { newline(depth: counts.count) }
        out.append(closer)
    }

    private mutating func newline(depth: Int) {
        out.append(0x0A)
        out.append(contentsOf: repeatElement(0x20, count: depth * 2))
    }

    // Scalars

    mutating func null() { out.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C]) }

    mutating func bool(_ b: Bool) {
        if b { out.append(contentsOf: [0x74, 0x72, 0x75, 0x65]) } else { out.append(contentsOf: [0x66, 0x61, 0x6C, 0x73, 0x65]) }
    }

    mutating func int(_ i: Int64) {
        if i == 0 { out.append(0x30); return }
        var digits:
            (
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8
            ) =
                (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var n = i.magnitude
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buf in
            while n > 0 {
                buf[19 - count] = UInt8(truncatingIfNeeded: n % 10) + 0x30
                n /= 10
                count += 1
            }
            if i < 0 { out.append(UInt8(ascii: "-")) }
            out.append(contentsOf: buf[(20 - count)...])
        }
    }

    mutating func double(_ d: Double) {
        guard d.isFinite else { null(); return }
        let text = d.description
        var needsFraction = true
        for b in text.utf8 {
            out.append(b)
            if b == UInt8(ascii: ".") || b == UInt8(ascii: "e") || b == UInt8(ascii: "E") { needsFraction = false }
        }
        if needsFraction { out.append(contentsOf: [UInt8(ascii: "."), UInt8(ascii: "0")]) }
    }

    mutating func string(_ s: String) {
        if let done: Void = s.utf8.withContiguousStorageIfAvailable({ writeString($0) }) { return done }
        var s = s
        s.withUTF8 { writeString($0) }
    }

    private mutating func writeString(_ buf: UnsafeBufferPointer<UInt8>) {
        let n = buf.count
        var i = 0
        // Most strings need no escapes: find the first byte that does.
        while i < n {
            let b = buf[i]
            if b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") { break }
            i += 1
        }
        out.append(UInt8(ascii: "\""))
        if i == n {
            out.append(contentsOf: buf)
            out.append(UInt8(ascii: "\""))
            return
        }
        var runStart = 0
        while i < n {
            let b = buf[i]
            if b >= 0x20 && b != UInt8(ascii: "\"") && b != UInt8(ascii: "\\") {
                i += 1
                continue
            }
            if runStart < i { out.append(contentsOf: UnsafeBufferPointer(rebasing: buf[runStart..<i])) }
            switch b {
            case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x0A: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x09: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0x0D: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x08: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
            case 0x0C: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
            default:
                out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), 0x30, 0x30, hexDigit(b >> 4), hexDigit(b & 0xF)])
            }
            i += 1
            runStart = i
        }
        if runStart < n { out.append(contentsOf: UnsafeBufferPointer(rebasing: buf[runStart..<n])) }
        out.append(UInt8(ascii: "\""))
    }

    private func hexDigit(_ v: UInt8) -> UInt8 { v < 10 ? 0x30 + v : 0x61 + v - 10 }

    /// Writes any JSON value, sorting object keys.
    mutating func value(_ v: JSONValue) {
        switch v {
        case .null: null()
        case .bool(let b): bool(b)
        case .int(let i): int(i)
        case .double(let d): double(d)
        case .string(let s): string(s)
        case .array(let items):
            beginArray()
            for item in items {
                self.item()
                value(item)
            }
            endArray()
        case .object(let members):
            beginObject()
            for (k, v) in JSONWriter.sorted(members) {
                key(k)
                value(v)
            }
            endObject()
        }
    }

    /// Keys in canonical order: by their UTF-8 bytes.
    static func sorted<V>(_ dict: [String: V]) -> [(key: String, value: V)] {
        if dict.count < 2 { return Array(dict) }
        // Sort positions by key rather than the pairs, so values are not moved (retained) while sorting.
        let keys = Array(dict.keys)
        let values = Array(dict.values)
        var order = Array(0..<keys.count)
        keys.withUnsafeBufferPointer { k in
            order.sort { utf8Less(k[$0], k[$1]) }
        }
        return order.map { (keys[$0], values[$0]) }
    }

    /// Orders strings by their UTF-8 bytes (which is also Unicode scalar order).
    static func utf8Less(_ a: String, _ b: String) -> Bool {
        var a = a
        var b = b
        return a.withUTF8 { x in
            b.withUTF8 { y in
                let n = min(x.count, y.count)
                var i = 0
                while i < n {
                    if x[i] != y[i] { return x[i] < y[i] }
                    i += 1
                }
                return x.count < y.count
            }
        }
    }
}

// MARK: - Parser

private struct JSONParser {
    let buf: UnsafeBufferPointer<UInt8>
    var pos = 0
    /// Reused for strings with escapes.
    var scratch: [UInt8] = []

    init(_ buf: UnsafeBufferPointer<UInt8>) { self.buf = buf }

    mutating func parseDocument() throws(RecSyncError) -> JSONValue {
        skipWhitespace()
        let v = try parseValue()
        skipWhitespace()
        if pos < buf.count {
            throw fail("expected the end of the document after the JSON value, found \(describe(pos))")
        }
        return v
    }

    // Errors

    /// Line and column (1-based, counting characters) of a byte offset.
    func position(_ offset: Int) -> (line: Int, column: Int) {
        var line = 1
        var column = 1
        var i = 0
        let end = min(offset, buf.count)
        while i < end {
            let b = buf[i]
            if b == 0x0A {
                line += 1
                column = 1
            } else if b & 0xC0 != 0x80 {
                column += 1
            }
            i += 1
        }
        return (line, column)
    }

    func fail(_ what: String, at offset: Int? = nil) -> RecSyncError {
        let (l, c) = position(offset ?? pos)
        return .malformed(MalformedInput(line: l, column: c, detail: what))
    }

    func describe(_ offset: Int) -> String {
        guard offset < buf.count else { return "the end of the input" }
        let b = buf[offset]
        if b >= 0x21 && b < 0x7F { return "'\(Character(Unicode.Scalar(b)))'" }
        switch b {
        case 0x20: return "a space"
        case 0x0A: return "a line break"
        case 0x09: return "a tab"
        case 0x0D: return "a carriage return"
        default: return byteName(b)
        }
    }

    private func byteName(_ b: UInt8) -> String {
        let hex = String(b, radix: 16, uppercase: true)
        return "byte 0x" + (hex.count < 2 ? "0" + hex : hex)
    }

    // Structure

    @inline(__always)
    mutating func skipWhitespace() {
        while pos < buf.count {
            let b = buf[pos]
            if b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 { pos += 1 } else { break }
        }
    }

    /// An array or object being parsed. The parser keeps these on its own stack rather than
    /// recursing, so deep nesting cannot overflow a thread's stack. The elements and keys of all
    /// open containers wait on two shared stacks; a frame remembers where its own begin.
    struct Frame {
        var isArray: Bool
        var valueStart: Int
        var keyStart: Int
    }

    /// Parses one value (with everything nested in it) starting at `pos`.
    mutating func parseValue() throws(RecSyncError) -> JSONValue {
        var frames: [Frame] = []
        var values: [JSONValue] = []
        var keys: [(name: String, offset: Int)] = []
        var current: JSONValue
        parsing: while true {
            // Read the start of a value; containers push a frame and go on to their first element.
            guard pos < buf.count else { throw fail("expected a value, found the end of the input") }
            switch buf[pos] {
            case UInt8(ascii: "{"):
                try enter(frames.count)
                pos += 1
                skipWhitespace()
                if pos < buf.count && buf[pos] == UInt8(ascii: "}") {
                    pos += 1
                    current = .object([:])
                } else {
                    frames.append(Frame(isArray: false, valueStart: values.count, keyStart: keys.count))
                    keys.append(try readKey())
                    continue parsing
                }
            case UInt8(ascii: "["):
                try enter(frames.count)
                pos += 1
                skipWhitespace()
                if pos < buf.count && buf[pos] == UInt8(ascii: "]") {
                    pos += 1
                    current = .array([])
                } else {
                    frames.append(Frame(isArray: true, valueStart: values.count, keyStart: keys.count))
                    continue parsing
                }
            case UInt8(ascii: "\""): current = .string(try parseString())
            case UInt8(ascii: "t"): try literal("true"); current = .bool(true)
            case UInt8(ascii: "f"): try literal("false"); current = .bool(false)
            case UInt8(ascii: "n"): try literal("null"); current = .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): current = try parseNumber()
            default:
                throw fail("expected a value (object, array, string, number, true, false or null), found \(describe(pos))")
            }
            // A value is complete: add it to the open containers, closing those that end here.
            while let frame = frames.last {
                values.append(current)
                skipWhitespace()
                guard pos < buf.count else {
                    throw fail(
                        frame.isArray
                            ? "expected ',' or ']' in an array, found the end of the input"
                            : "expected ',' or '}' in an object, found the end of the input")
                }
                if buf[pos] == UInt8(ascii: ",") {
                    pos += 1
                    skipWhitespace()
                    if !frame.isArray { keys.append(try readKey()) }
                    continue parsing
                }
                if frame.isArray {
                    guard buf[pos] == UInt8(ascii: "]") else { throw fail("expected ',' or ']' in an array, found \(describe(pos))") }
                    pos += 1
                    current = .array(Array(values[frame.valueStart...]))
                } else {
                    guard buf[pos] == UInt8(ascii: "}") else { throw fail("expected ',' or '}' in an object, found \(describe(pos))") }
                    pos += 1
                    let count = values.count - frame.valueStart
                    var members = [String: JSONValue](minimumCapacity: count)
                    for i in 0..<count {
                        let key = keys[frame.keyStart + i]
                        if members.updateValue(values[frame.valueStart + i], forKey: key.name) != nil {
                            throw fail("duplicate key \"\(key.name)\" in one object", at: key.offset)
                        }
                    }
                    keys.removeSubrange(frame.keyStart...)
                    current = .object(members)
                }
                values.removeSubrange(frame.valueStart...)
                frames.removeLast()
            }
            return current
        }
    }

    /// Reads `"key" :` and leaves `pos` at the member's value.
    mutating func readKey() throws(RecSyncError) -> (name: String, offset: Int) {
        guard pos < buf.count, buf[pos] == UInt8(ascii: "\"") else {
            throw fail("expected a string key in double quotes, found \(describe(pos))")
        }
        let offset = pos
        let key = try parseString()
        skipWhitespace()
        guard pos < buf.count, buf[pos] == UInt8(ascii: ":") else {
            throw fail("expected ':' after the key \"\(key)\", found \(describe(pos))")
        }
        pos += 1
        skipWhitespace()
        return (key, offset)
    }

    mutating func literal(_ word: StaticString) throws(RecSyncError) {
        let n = word.utf8CodeUnitCount
        let p = word.utf8Start
        for i in 0..<n {
            guard pos + i < buf.count, buf[pos + i] == p[i] else {
                throw fail("expected a value; did you mean '\(word)'?")
            }
        }
        pos += n
    }

    func enter(_ open: Int) throws(RecSyncError) {
        if open + 1 > JSON.maxDepth {
            throw fail("arrays and objects are nested more than \(JSON.maxDepth) levels deep")
        }
    }

    // Strings

    /// Parses a string starting at the opening quote.
    mutating func parseString() throws(RecSyncError) -> String {
        let open = pos
        pos += 1
        let start = pos
        var high: UInt8 = 0
        while pos < buf.count {
            let b = buf[pos]
            if b == UInt8(ascii: "\"") {
                let bytes = UnsafeBufferPointer(rebasing: buf[start..<pos])
                guard high < 0x80 || JSONParser.isValidUTF8(bytes) else {
                    throw fail("the string contains bytes that are not valid UTF-8", at: open)
                }
                pos += 1
                return String(decoding: bytes, as: UTF8.self)
            }
            high |= b
            if b == UInt8(ascii: "\\") { break }
            if b < 0x20 { throw fail("a control character must be escaped inside a string (write \\u\(hex4(UInt16(b))))") }
            pos += 1
        }
        guard pos < buf.count else { throw fail("expected '\"' to close the string that starts at column \(position(open).column)") }
        // Slow path: escapes.
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: buf[start..<pos])
        while pos < buf.count {
            let b = buf[pos]
            if b == UInt8(ascii: "\"") {
                let s: String? = scratch.withUnsafeBufferPointer { bytes in
                    JSONParser.isValidUTF8(bytes) ? String(decoding: bytes, as: UTF8.self) : nil
                }
                guard let s else { throw fail("the string contains bytes that are not valid UTF-8", at: open) }
                pos += 1
                return s
            }
            if b < 0x20 { throw fail("a control character must be escaped inside a string (write \\u\(hex4(UInt16(b))))") }
            if b != UInt8(ascii: "\\") {
                scratch.append(b)
                pos += 1
                continue
            }
            let escapeStart = pos
            pos += 1
            guard pos < buf.count else { break }
            let e = buf[pos]
            pos += 1
            switch e {
            case UInt8(ascii: "\""): scratch.append(UInt8(ascii: "\""))
            case UInt8(ascii: "\\"): scratch.append(UInt8(ascii: "\\"))
            case UInt8(ascii: "/"): scratch.append(UInt8(ascii: "/"))
            case UInt8(ascii: "b"): scratch.append(0x08)
            case UInt8(ascii: "f"): scratch.append(0x0C)
            case UInt8(ascii: "n"): scratch.append(0x0A)
            case UInt8(ascii: "r"): scratch.append(0x0D)
            case UInt8(ascii: "t"): scratch.append(0x09)
            case UInt8(ascii: "u"):
                let unit = try hexQuad()
                var scalar: UInt32
                if unit >= 0xD800 && unit <= 0xDBFF {
                    guard pos + 1 < buf.count, buf[pos] == UInt8(ascii: "\\"), buf[pos + 1] == UInt8(ascii: "u") else {
                        throw fail(
                            "\\u\(hex4(unit)) is a lone high surrogate; it must be followed by a \\uDC00–\\uDFFF low surrogate", at: escapeStart)
                    }
                    pos += 2
                    let low = try hexQuad()
                    guard low >= 0xDC00 && low <= 0xDFFF else {
                        throw fail(
                            "\\u\(hex4(unit)) is a lone high surrogate; it must be followed by a \\uDC00–\\uDFFF low surrogate", at: escapeStart)
                    }
                    scalar = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
                } else if unit >= 0xDC00 && unit <= 0xDFFF {
                    throw fail("\\u\(hex4(unit)) is a lone low surrogate", at: escapeStart)
                } else {
                    scalar = UInt32(unit)
                }
                appendUTF8(scalar)
            default:
                throw fail(
                    "invalid escape '\\\(describeEscape(e))' in a string; valid escapes are \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX",
                    at: escapeStart)
            }
        }
        throw fail("expected '\"' to close the string that starts at column \(position(open).column)")
    }

    /// Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF.
    static func isValidUTF8(_ b: UnsafeBufferPointer<UInt8>) -> Bool {
        var i = 0
        let n = b.count
        @inline(__always) func continuation(_ k: Int) -> Bool { k < n && b[k] & 0xC0 == 0x80 }
        while i < n {
            let c = b[i]
            if c < 0x80 {
                i += 1
            } else if c < 0xC2 {
                return false
            } else if c < 0xE0 {
                guard continuation(i + 1) else { return false }
                i += 2
            } else if c < 0xF0 {
                guard i + 1 < n else { return false }
                let c1 = b[i + 1]
                let low: UInt8 = c == 0xE0 ? 0xA0 : 0x80
                let high: UInt8 = c == 0xED ? 0x9F : 0xBF
                guard c1 >= low, c1 <= high, continuation(i + 2) else { return false }
                i += 3
            } else if c < 0xF5 {
                guard i + 1 < n else { return false }
                let c1 = b[i + 1]
                let low: UInt8 = c == 0xF0 ? 0x90 : 0x80
                let high: UInt8 = c == 0xF4 ? 0x8F : 0xBF
                guard c1 >= low, c1 <= high, continuation(i + 2), continuation(i + 3) else { return false }
                i += 4
            } else {
                return false
            }
        }
        return true
    }

    func describeEscape(_ b: UInt8) -> String {
        b >= 0x21 && b < 0x7F ? String(Character(Unicode.Scalar(b))) : "\\u" + hex4(UInt16(b))
    }

    func hex4(_ v: UInt16) -> String {
        let h = String(v, radix: 16, uppercase: true)
        return String(repeating: "0", count: 4 - h.count) + h
    }

    mutating func hexQuad() throws(RecSyncError) -> UInt16 {
        var v: UInt16 = 0
        for _ in 0..<4 {
            guard pos < buf.count else { throw fail("expected four hex digits after \\u, found the end of the input") }
            let b = buf[pos]
            let d: UInt8
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = b - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = b - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = b - UInt8(ascii: "A") + 10
            default: throw fail("expected four hex digits after \\u, found \(describe(pos))")
            }
            v = v << 4 | UInt16(d)
            pos += 1
        }
        return v
    }

    mutating func appendUTF8(_ s: UInt32) {
        switch s {
        case 0..<0x80:
            scratch.append(UInt8(s))
        case 0x80..<0x800:
            scratch.append(UInt8(0xC0 | (s >> 6)))
            scratch.append(UInt8(0x80 | (s & 0x3F)))
        case 0x800..<0x10000:
            scratch.append(UInt8(0xE0 | (s >> 12)))
            scratch.append(UInt8(0x80 | ((s >> 6) & 0x3F)))
            scratch.append(UInt8(0x80 | (s & 0x3F)))
        default:
            scratch.append(UInt8(0xF0 | (s >> 18)))
            scratch.append(UInt8(0x80 | ((s >> 12) & 0x3F)))
            scratch.append(UInt8(0x80 | ((s >> 6) & 0x3F)))
            scratch.append(UInt8(0x80 | (s & 0x3F)))
        }
    }

    // Numbers

    @inline(__always)
    func isDigit(_ i: Int) -> Bool {
        i < buf.count && buf[i] >= UInt8(ascii: "0") && buf[i] <= UInt8(ascii: "9")
    }

    mutating func parseNumber() throws(RecSyncError) -> JSONValue {
        let start = pos
        let negative = buf[pos] == UInt8(ascii: "-")
        if negative { pos += 1 }
        guard isDigit(pos) else { throw fail("expected a digit after '-', found \(describe(pos))") }
        let intStart = pos
        if buf[pos] == UInt8(ascii: "0") {
            pos += 1
            if isDigit(pos) { throw fail("a number may not have a leading zero", at: intStart) }
        } else {
            while isDigit(pos) { pos += 1 }
        }
        let intEnd = pos
        var isInteger = true
        if pos < buf.count && buf[pos] == UInt8(ascii: ".") {
            isInteger = false
            pos += 1
            guard isDigit(pos) else { throw fail("expected a digit after the decimal point, found \(describe(pos))") }
            while isDigit(pos) { pos += 1 }
        }
        if pos < buf.count && (buf[pos] == UInt8(ascii: "e") || buf[pos] == UInt8(ascii: "E")) {
            isInteger = false
            pos += 1
            if pos < buf.count && (buf[pos] == UInt8(ascii: "+") || buf[pos] == UInt8(ascii: "-")) { pos += 1 }
            guard isDigit(pos) else { throw fail("expected a digit in the exponent, found \(describe(pos))") }
            while isDigit(pos) { pos += 1 }
        }
        if isInteger {
            var value: Int64 = 0
            var overflow = false
            for i in intStart..<intEnd {
                let d = Int64(buf[i] - UInt8(ascii: "0"))
                let (m, o1) = value.multipliedReportingOverflow(by: 10)
                let (r, o2) = negative ? m.subtractingReportingOverflow(d) : m.addingReportingOverflow(d)
                if o1 || o2 { overflow = true; break }
                value = r
            }
            if overflow {
                let text = String(decoding: UnsafeBufferPointer(rebasing: buf[start..<pos]), as: UTF8.self)
                throw fail("integer \(text) does not fit in 64 bits; write it as a string or a number with a decimal point", at: start)
            }
            return .int(value)
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: buf[start..<pos]), as: UTF8.self)
        guard let d = Double(text), d.isFinite else {
            throw fail("the number \(text) is too large to be represented", at: start)
        }
        return .double(d)
    }
}
