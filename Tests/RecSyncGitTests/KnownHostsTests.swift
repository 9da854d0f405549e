import Foundation
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

@testable import RecSyncGit

/// known_hosts as `ssh` reads it: hashed names (HMAC-SHA1, from swift-crypto), patterns,
/// ports, `@revoked`, checked against what OpenSSH's own `ssh-keygen` writes.
@Suite(.ownThreads) struct KnownHostsTests {
    /// A hashed name field for `name`, keyed with `salt`: `|1|base64(salt)|base64(HMAC-SHA1)`.
    func hashed(salt: [UInt8], mac: String) -> String {
        var bytes: [UInt8] = []
        var hex = Substring(mac)
        while !hex.isEmpty {
            bytes.append(UInt8(hex.prefix(2), radix: 16) ?? 0)
            hex = hex.dropFirst(2)
        }
        return "|1|\(Data(salt).base64EncodedString())|\(Data(bytes).base64EncodedString())"
    }

    @Test func aHashedNameMatchesKnownAnswers() {
        // Written by `ssh-keygen -H` for "example.com".
        let openSSH = "|1|9ujsAClLJG63oTt6oqmUBj2Y/8Y=|H5YQdCGLkMf4bCxNU2g1rPtb9vc="
        #expect(KnownHosts.hostsMatch(openSSH, "example.com"))
        #expect(!KnownHosts.hostsMatch(openSSH, "example.org"))
        #expect(!KnownHosts.hostsMatch(openSSH, "[example.com]:2222"))
        // RFC 2202's HMAC-SHA1 test cases 1 and 2, as hashed names.
        #expect(KnownHosts.hostsMatch(hashed(salt: [UInt8](repeating: 0x0B, count: 20), mac: "b617318655057264e28bc0b6fb378c8ef146be00"), "Hi There"))
        #expect(
            KnownHosts.hostsMatch(hashed(salt: Array("Jefe".utf8), mac: "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79"), "what do ya want for nothing?"))
        #expect(
            !KnownHosts.hostsMatch(hashed(salt: Array("Jefe".utf8), mac: "effcdf6ae5eb2fa2d27416d5f184df9c259a7c78"), "what do ya want for nothing?"))
        // Damaged fields match nothing.
        for bad in [
            "|1|", "|1|!!!|H5YQdCGLkMf4bCxNU2g1rPtb9vc=", "|1|9ujsAClLJG63oTt6oqmUBj2Y/8Y=",
            "|2|9ujsAClLJG63oTt6oqmUBj2Y/8Y=|H5YQdCGLkMf4bCxNU2g1rPtb9vc=",
        ] {
            #expect(!KnownHosts.hostsMatch(bad, "example.com"), "\(bad)")
        }
    }

    @Test func patternsNegationAndPorts() {
        #expect(KnownHosts.hostsMatch("*.example.com,!bad.example.com", "git.Example.COM"))
        #expect(!KnownHosts.hostsMatch("*.example.com,!bad.example.com", "bad.example.com"))
        #expect(KnownHosts.hostsMatch("host?", "host1") && !KnownHosts.hostsMatch("host?", "host12"))
        #expect(KnownHosts.lookupName(host: "h", port: 22) == "h")
        #expect(KnownHosts.lookupName(host: "127.0.0.1", port: 2222) == "[127.0.0.1]:2222")
        #expect(KnownHosts.hostsMatch("[127.0.0.1]:2222", KnownHosts.lookupName(host: "127.0.0.1", port: 2222)))
        #expect(!KnownHosts.hostsMatch("127.0.0.1", KnownHosts.lookupName(host: "127.0.0.1", port: 2222)))
    }

    /// A key pair made by ssh-keygen: its public line (`type base64`) and wire-format blob.
    func makeKey(_ dir: TempDirectory, _ name: String) throws -> (line: String, blob: [UInt8]) {
        _ = try Subprocess.run("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", name, "-f", dir.file(name)], in: dir.path)
        let fields = try String(contentsOfFile: dir.file(name + ".pub"), encoding: .utf8).split(separator: " ")
        let blob = try #require(Data(base64Encoded: String(fields[1])))
        return ("\(fields[0]) \(fields[1])", Array(blob))
    }

    @Test(.enabled(if: Machine.hasSSHKeygen, "needs /usr/bin/ssh-keygen (apt-get install openssh-client)"))
    func linesHashedByOpenSSHAreFoundForTheirHostAndPortOnly() throws {
        let dir = TempDirectory("known-hosts")
        let (host, other, revoked) = (try makeKey(dir, "host"), try makeKey(dir, "other"), try makeKey(dir, "revoked"))
        let file = dir.file("known_hosts")
        try """
        # a comment
        [127.0.0.1]:2222 \(host.line)
        git.example.com \(host.line)
        @revoked * \(revoked.line)

        """.write(toFile: file, atomically: true, encoding: .utf8)
        _ = try Subprocess.run("/usr/bin/ssh-keygen", ["-q", "-H", "-f", file], in: dir.path)
        let written = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n").filter { !$0.hasPrefix("#") }
        #expect(written.count == 3 && written[0].hasPrefix("|1|") && written[1].hasPrefix("|1|"), "\(written)")
        #expect(!written.joined().contains("git.example.com") && !written.joined().contains("127.0.0.1"))

        #expect(KnownHosts.check(files: [file], host: "127.0.0.1", port: 2222, key: host.blob) == .match)
        #expect(KnownHosts.check(files: [file], host: "git.example.com", port: 22, key: host.blob) == .match)
        // The same host on another port, or another host: not known.
        #expect(KnownHosts.check(files: [file], host: "127.0.0.1", port: 22, key: host.blob) == .unknown)
        #expect(KnownHosts.check(files: [file], host: "git.example.org", port: 22, key: host.blob) == .unknown)
        // Another key of the same type for a known host: a mismatch, named by line.
        #expect(KnownHosts.check(files: [file], host: "git.example.com", port: 22, key: other.blob) == .mismatch(file: file, line: 3))
        #expect(KnownHosts.check(files: [file], host: "anything", port: 22, key: revoked.blob) == .revoked(file: file, line: 4))
        #expect(KnownHosts.check(files: [dir.file("missing"), file], host: "127.0.0.1", port: 2222, key: host.blob) == .match)
    }
}
