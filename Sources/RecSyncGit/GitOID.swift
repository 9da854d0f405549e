import CLibGit2

/// A git object ID (SHA-1), as a plain value.
public struct GitOID: Hashable, Sendable, Comparable, CustomStringConvertible {
    let bytes: (UInt64, UInt64, UInt32)

    public static let zero = GitOID(raw: git_oid())

    init(raw: git_oid) {
        var copy = raw
        bytes = withUnsafeBytes(of: &copy.id) { buf in
            (
                buf.loadUnaligned(fromByteOffset: 0, as: UInt64.self),
                buf.loadUnaligned(fromByteOffset: 8, as: UInt64.self),
                buf.loadUnaligned(fromByteOffset: 16, as: UInt32.self)
            )
        }
    }

    init(_ pointer: UnsafePointer<git_oid>) {
        self.init(raw: pointer.pointee)
    }

    /// Parses 40 hex digits; nil if the text is not an object ID.
    public init?(hex: String) {
        guard hex.utf8.count == 40, hex.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) || ($0 >= 65 && $0 <= 70) }) else {
            return nil
        }
        var raw = git_oid()
        guard git_oid_fromstr(&raw, hex) == 0 else { return nil }
        self.init(raw: raw)
    }

    /// The ID git gives `bytes` as a blob (`git hash-object`), without a repository.
    public static func blob(of bytes: [UInt8]) throws(GitError) -> GitOID {
        var oid = git_oid()
        let result = bytes.withUnsafeBytes { buf in git_odb_hash(&oid, buf.baseAddress, buf.count, GIT_OBJECT_BLOB) }
        try check("git_odb_hash", result)
        return GitOID(raw: oid)
    }

    var raw: git_oid {
        var out = git_oid()
        var b = bytes
        withUnsafeMutableBytes(of: &out.id) { dst in
            withUnsafeBytes(of: &b) { src in
                dst.baseAddress!.copyMemory(from: src.baseAddress!, byteCount: 20)
            }
        }
        return out
    }

    public var isZero: Bool { bytes == (0, 0, 0) }

    public var hex: String {
        var r = raw
        var buffer = [CChar](repeating: 0, count: 41)
        git_oid_tostr(&buffer, 41, &r)
        return String(decoding: buffer.prefix(40).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public var description: String { hex }

    public static func == (lhs: GitOID, rhs: GitOID) -> Bool {
        lhs.bytes.0 == rhs.bytes.0 && lhs.bytes.1 == rhs.bytes.1 && lhs.bytes.2 == rhs.bytes.2
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(bytes.0)
        hasher.combine(bytes.1)
        hasher.combine(bytes.2)
    }

    public static func < (lhs: GitOID, rhs: GitOID) -> Bool { lhs.hex < rhs.hex }
}
