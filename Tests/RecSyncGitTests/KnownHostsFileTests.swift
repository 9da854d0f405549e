import Foundation
import RecSyncTestSupport
import Testing

@testable import RecSyncGit

/// known_hosts files read line by line (`KnownHosts.check`), with keys made up here: which line
/// decides, and which lines are not read at all.
extension KnownHostsTests {
    /// A public key blob in ssh's wire format: its type name, then `body`.
    static func key(_ type: String, _ body: [UInt8]) -> [UInt8] {
        func string(_ bytes: [UInt8]) -> [UInt8] {
            let n = bytes.count
            return [UInt8(n >> 24 & 0xFF), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)] + bytes
        }
        return string(Array(type.utf8)) + string(body)
    }

    static func line(_ hosts: String, _ key: [UInt8], comment: String = "") -> String {
        let type = KnownHosts.sshString(key) ?? "?"
        return "\(hosts) \(type) \(Data(key).base64EncodedString())\(comment.isEmpty ? "" : " \(comment)")"
    }

    @Test func aKeyOfTheSameTypeDecidesAndTheFirstMatchWins() throws {
        let dir = TempDirectory("known-hosts-lines")
        let file = dir.file("known_hosts")
        let mine = Self.key("ssh-ed25519", [UInt8](repeating: 1, count: 32))
        let other = Self.key("ssh-ed25519", [UInt8](repeating: 2, count: 32))
        let rsa = Self.key("ssh-rsa", [UInt8](repeating: 3, count: 64))
        try [
            "# comment", "", Self.line("a.example", other), Self.line("a.example", mine, comment: "user@laptop"),
            Self.line("b.example", rsa), "\t" + Self.line("c.example", mine).replacingOccurrences(of: " ", with: "\t"), "",
        ].joined(separator: "\n").write(toFile: file, atomically: true, encoding: .utf8)
        // Another key of its type is on line 3, its own on line 4: the match counts.
        #expect(KnownHosts.check(files: [file], host: "a.example", port: 22, key: mine) == .match)
        #expect(KnownHosts.check(files: [file], host: "a.example", port: 22, key: Self.key("ssh-ed25519", [9])) == .mismatch(file: file, line: 3))
        // Only a key of another type listed: this one is not known, and none contradicts it.
        #expect(KnownHosts.check(files: [file], host: "b.example", port: 22, key: mine) == .unknown)
        #expect(KnownHosts.check(files: [file], host: "b.example", port: 22, key: rsa) == .match)
        // Tabs separate fields as spaces do.
        #expect(KnownHosts.check(files: [file], host: "c.example", port: 22, key: mine) == .match)
    }

    @Test func linesThatAreNotHostKeysAreSkipped() throws {
        let dir = TempDirectory("known-hosts-skipped")
        let file = dir.file("known_hosts")
        let key = Self.key("ssh-ed25519", [UInt8](repeating: 4, count: 32))
        let other = Self.key("ssh-ed25519", [UInt8](repeating: 5, count: 32))
        try [
            "@cert-authority *.example " + Self.line("", other).dropFirst(), "h.example ssh-ed25519", "h.example ssh-ed25519 !!!notbase64!!!",
            "#" + Self.line("h.example", other), Self.line("h.example", key),
        ].joined(separator: "\n").write(toFile: file, atomically: true, encoding: .utf8)
        #expect(KnownHosts.check(files: [file], host: "h.example", port: 22, key: key) == .match)
        #expect(KnownHosts.check(files: [file], host: "h.example", port: 22, key: other) == .mismatch(file: file, line: 5))
        // A blob too short to name its type is known nowhere.
        #expect(KnownHosts.check(files: [file], host: "h.example", port: 22, key: [0, 0, 0, 9, 1]) == .unknown)
        #expect(KnownHosts.check(files: [file], host: "h.example", port: 22, key: []) == .unknown)
    }

    /// A file with Windows line endings (one edited or copied there) reads as ssh reads it.
    @Test func aFileWithCRLFLineEndingsIsReadLikeAnyOther() throws {
        let dir = TempDirectory("known-hosts-crlf")
        let file = dir.file("known_hosts")
        let key = Self.key("ssh-ed25519", [UInt8](repeating: 6, count: 32))
        let other = Self.key("ssh-ed25519", [UInt8](repeating: 7, count: 32))
        try [Self.line("first.example", other), Self.line("second.example", key), ""].joined(separator: "\r\n")
            .write(toFile: file, atomically: true, encoding: .utf8)
        #expect(KnownHosts.check(files: [file], host: "first.example", port: 22, key: other) == .match)
        #expect(KnownHosts.check(files: [file], host: "second.example", port: 22, key: key) == .match)
        #expect(KnownHosts.check(files: [file], host: "second.example", port: 22, key: other) == .mismatch(file: file, line: 2))
    }
}
