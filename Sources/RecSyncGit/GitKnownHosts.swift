import Crypto
import Foundation

/// What a set of known_hosts files says about a host key.
enum KnownHostsVerdict: Equatable {
    /// A line names this host with exactly this key.
    case match
    /// A line names this host with another key of the same type (`file`, 1-based `line`).
    case mismatch(file: String, line: Int)
    /// A `@revoked` line names this key.
    case revoked(file: String, line: Int)
    /// No line names this host with a key of this type.
    case unknown
}

/// OpenSSH known_hosts files, read the way `ssh` reads them (plain and hashed host names,
/// `[host]:port` for other ports than 22, `*`/`?` patterns, `!` negation, `@revoked`).
enum KnownHosts {
    /// The name a host is listed under: `host` on port 22, `[host]:port` otherwise.
    static func lookupName(host: String, port: Int) -> String {
        port == 22 ? host : "[\(host)]:\(port)"
    }

    static func check(files: [String], host: String, port: Int, key: [UInt8]) -> KnownHostsVerdict {
        let name = lookupName(host: host, port: port)
        guard let keyType = sshString(key) else { return .unknown }
        var mismatch: KnownHostsVerdict?
        for file in files {
            guard let data = FileManager.default.contents(atPath: file) else { continue }
            // A Swift Character holds "\r\n" whole: a file with Windows line endings (which ssh
            // reads as any other) is split on it too, and a "\r" left in a line is blank space.
            let lines = String(decoding: data, as: UTF8.self).split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
            for (index, raw) in lines.enumerated() {
                var fields = raw.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" }).map(String.init)
                guard let first = fields.first, !first.hasPrefix("#") else { continue }
                var marker: String?
                if first.hasPrefix("@") {
                    marker = first
                    fields.removeFirst()
                }
                guard fields.count >= 3, hostsMatch(fields[0], name),
                    let listed = Data(base64Encoded: fields[2]).map(Array.init)
                else { continue }
                switch marker {
                case "@revoked":
                    if listed == key { return .revoked(file: file, line: index + 1) }
                case nil:
                    if listed == key { return .match }
                    if fields[1] == keyType, mismatch == nil { mismatch = .mismatch(file: file, line: index + 1) }
                default:
                    continue  // @cert-authority: host certificates are not used here
                }
            }
        }
        return mismatch ?? .unknown
    }

    /// The first length-prefixed string of an ssh wire-format key: its type name.
    static func sshString(_ blob: [UInt8]) -> String? {
        guard blob.count >= 4 else { return nil }
        let length = Int(blob[0]) << 24 | Int(blob[1]) << 16 | Int(blob[2]) << 8 | Int(blob[3])
        guard length > 0, 4 + length <= blob.count else { return nil }
        return String(decoding: blob[4..<(4 + length)], as: UTF8.self)
    }

    /// Whether a host field (comma-separated patterns, or one hashed name) names `name`.
    static func hostsMatch(_ field: String, _ name: String) -> Bool {
        if field.hasPrefix("|1|") {
            let parts = field.split(separator: "|", omittingEmptySubsequences: true)
            guard parts.count == 3, let salt = Data(base64Encoded: String(parts[1])), let hash = Data(base64Encoded: String(parts[2])) else {
                return false
            }
            // OpenSSH's hashed name: HMAC-SHA1 of the name, keyed with the salt (SHA-1 is
            // what the format fixes, not a choice made here).
            return HMAC<Insecure.SHA1>.isValidAuthenticationCode(hash, authenticating: Data(name.utf8), using: SymmetricKey(data: salt))
        }
        var matched = false
        for pattern in field.split(separator: ",") {
            if pattern.hasPrefix("!") {
                if glob(Array(pattern.dropFirst().utf8), Array(name.utf8)) { return false }
            } else if glob(Array(pattern.utf8), Array(name.utf8)) {
                matched = true
            }
        }
        return matched
    }

    /// `*` and `?` wildcards, case-insensitively (host names are).
    static func glob(_ pattern: [UInt8], _ text: [UInt8]) -> Bool {
        func lower(_ c: UInt8) -> UInt8 { c >= 65 && c <= 90 ? c + 32 : c }
        var p = 0, t = 0
        var star = -1, mark = 0
        while t < text.count {
            if p < pattern.count && (pattern[p] == UInt8(ascii: "?") || lower(pattern[p]) == lower(text[t])) {
                p += 1
                t += 1
            } else if p < pattern.count && pattern[p] == UInt8(ascii: "*") {
                star = p
                mark = t
                p += 1
            } else if star >= 0 {
                p = star + 1
                mark += 1
                t = mark
            } else {
                return false
            }
        }
        while p < pattern.count && pattern[p] == UInt8(ascii: "*") { p += 1 }
        return p == pattern.count
    }
}
