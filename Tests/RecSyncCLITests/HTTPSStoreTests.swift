import Foundation
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

/// The command line over https to a git server on a private network: nginx with
/// git-http-backend on 127.0.0.1, a certificate for the IP address from a certificate
/// authority of the test's own, basic authentication.
@Suite(.ownThreads, .enabled(if: Machine.hasHTTPSGitServer, "needs nginx, fcgiwrap and openssl (apt-get install nginx fcgiwrap openssl)"))
struct HTTPSStoreTests {
    /// A store served over https, with the certificate authority the test made.
    struct Served {
        let f: CLIFixture
        let authority: TestCertificateAuthority
        let server: HTTPSGitServer
        /// The credentials, as recsync takes them from the environment.
        var credentials: [String: String] { ["RECSYNC_TOKEN": server.password, "RECSYNC_USERNAME": server.user] }

        init(_ name: String, subjectAltNames: [String] = ["IP:127.0.0.1"]) throws {
            f = try CLIFixture(name).withStore()
            authority = try TestCertificateAuthority(directory: f.directory.file("tls"))
            let (certificate, key) = try authority.issue("server", subjectAltNames: subjectAltNames)
            server = try HTTPSGitServer(
                projectRoot: f.directory.path, directory: f.directory.file("nginx"), certificate: certificate, key: key, user: "alice",
                password: "pw-\(UUID().uuidString.prefix(8))")
        }
    }

    @Test func twoDevicesSyncOverHTTPSWithAPrivateCertificateAuthority() throws {
        let s = try Served(#function)
        let f = s.f
        let url = s.server.url("store.git")
        let trusting = s.credentials.merging(["SSL_CERT_FILE": s.authority.certificate]) { $1 }
        try f.run(["clone", url, "laptop"], environment: trusting)
        // git's variable, and a directory of certificates, do as well.
        try f.run(["clone", url, "phone"], environment: s.credentials.merging(["GIT_SSL_CAINFO": s.authority.certificate]) { $1 })
        let directory = f.directory.file("authorities")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: s.authority.certificate, toPath: "\(directory)/ca.pem")
        try f.run(["clone", url, "tablet"], environment: s.credentials.merging(["SSL_CERT_DIR": directory]) { $1 })

        try f.run(["zone", "create", "notes"], in: "laptop", environment: trusting)
        try f.put("notes/r", #"{"title": "over https"}"#, in: "laptop")
        try f.run(["push"], in: "laptop", environment: trusting)
        try f.run(["pull"], in: "phone", environment: trusting)
        #expect(try f.fields("phone", "private/notes/r.json")?["title"] as? String == "over https")
        #expect(f.records("laptop") == f.records("phone"))
        try GitCLI.run(["fsck", "--no-dangling"], in: f.storePath)

        // The server checks the password: a wrong one is refused (exit 4), nothing changes.
        let before = f.records("tablet")
        let refused = try f.run(["pull"], in: "tablet", environment: trusting.merging(["RECSYNC_TOKEN": "wrong"]) { $1 }, expect: 4)
        #expect(refused.stderr.contains("refused the token in RECSYNC_TOKEN"), "\(refused)")
        #expect(f.records("tablet") == before)
    }

    @Test func aPrivateCertificateAuthorityNotGivenIsNotTrusted() throws {
        let s = try Served(#function)
        let failed = try s.f.run(["clone", s.server.url("store.git"), "laptop"], environment: s.credentials, expect: 4)
        #expect(failed.stderr.contains("is not trusted"), "\(failed)")
        #expect(failed.stderr.contains("SSL_CERT_FILE") && failed.stderr.contains("GIT_SSL_CAINFO"), "\(failed)")
        #expect(!FileManager.default.fileExists(atPath: s.f.ws("laptop")), "a failed clone leaves nothing")

        // Another authority's certificate, given, does not make this server trusted.
        let other = try TestCertificateAuthority(directory: s.f.directory.file("other-ca"), name: "another CA")
        let stranger = try s.f.run(
            ["clone", s.server.url("store.git"), "laptop"], environment: s.credentials.merging(["SSL_CERT_FILE": other.certificate]) { $1 },
            expect: 4)
        #expect(stranger.stderr.contains("is not trusted (trusting SSL_CERT_FILE="), "\(stranger)")

        // A variable that names no file says so.
        let missing = try s.f.run(
            ["clone", s.server.url("store.git"), "laptop"],
            environment: s.credentials.merging(["GIT_SSL_CAINFO": s.f.directory.file("no-such.pem")]) { $1 }, expect: 4)
        #expect(missing.stderr.contains("GIT_SSL_CAINFO='\(s.f.directory.file("no-such.pem"))' is not a file"), "\(missing)")
    }

    @Test func aCertificateForAnotherAddressOrNameFailsEvenWithItsAuthorityTrusted() throws {
        let s = try Served(#function, subjectAltNames: ["IP:127.0.0.2", "DNS:other.invalid"])
        let trusting = s.credentials.merging(["SSL_CERT_FILE": s.authority.certificate]) { $1 }
        let failed = try s.f.run(["clone", s.server.url("store.git"), "laptop"], environment: trusting, expect: 4)
        #expect(failed.stderr.contains("is not issued for 127.0.0.1"), "\(failed)")
        #expect(!FileManager.default.fileExists(atPath: s.f.ws("laptop")))
    }

    @Test func aCertificateForAnAddressDoesNotServeAName() throws {
        // The certificate names 127.0.0.1 only; the client connects by the name localhost.
        let s = try Served(#function)
        let trusting = s.credentials.merging(["SSL_CERT_FILE": s.authority.certificate]) { $1 }
        let failed = try s.f.run(["clone", s.server.url("store.git", host: "localhost"), "laptop"], environment: trusting, expect: 4)
        #expect(failed.stderr.contains("is not trusted"), "\(failed)")
    }
}
