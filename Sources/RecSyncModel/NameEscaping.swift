/// Turning names into path components and back, for the store's tree and the workspace.
///
/// Percent-encodes what a tree entry, a file system or a shell would trip over: `/`, `%`,
/// control bytes, and a leading `.` (so no name is `.`, `..`, `.git` or hidden).
public enum NameEscaping {
    public static func escape(_ name: String) -> String {
        var out = [UInt8]()
        out.reserveCapacity(name.utf8.count)
        var first = true
        var changed = false
        for b in name.utf8 {
            if b == 0x2F || b == 0x25 || b < 0x20 || b == 0x7F || (first && b == 0x2E) {
                out.append(0x25)
                out.append(hexDigit(b >> 4))
                out.append(hexDigit(b & 0xF))
                changed = true
            } else {
                out.append(b)
            }
            first = false
        }
        return changed ? String(decoding: out, as: UTF8.self) : name
    }

    /// Reverses `escape`; nil when the text is not in escaped form (so it would not round-trip).
    public static func unescape(_ entry: String) -> String? {
        guard entry.utf8.contains(0x25) else {
            return escape(entry) == entry ? entry : nil
        }
        var out = [UInt8]()
        var bytes = entry.utf8.makeIterator()
        while let b = bytes.next() {
            if b == 0x25 {
                guard let h = bytes.next().flatMap(hexValue), let l = bytes.next().flatMap(hexValue) else { return nil }
                out.append(h << 4 | l)
            } else {
                out.append(b)
            }
        }
        guard let name = String(validating: out, as: UTF8.self), escape(name) == entry else { return nil }
        return name
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

/// A 128-bit content hash (two FNV-style 64-bit lanes) as hex: for caches and in-memory
/// change tags, not for security.
public enum ContentHash {
    public static func of(_ bytes: [UInt8]) -> String {
        var h1: UInt64 = 0xCBF2_9CE4_8422_2325
        var h2: UInt64 = 0x8422_2325_CBF2_9CE4
        for b in bytes {
            h1 = (h1 ^ UInt64(b)) &* 0x0000_0100_0000_01B3
            h2 = (h2 &+ UInt64(b)) &* 0x9E37_79B9_7F4A_7C15
            h2 ^= h2 >> 29
        }
        func hex(_ v: UInt64) -> String {
            let s = String(v, radix: 16)
            return String(repeating: "0", count: 16 - s.count) + s
        }
        return hex(h1) + hex(h2) + String(bytes.count, radix: 16)
    }
}
