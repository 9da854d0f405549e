import Foundation
import RecSyncTestSupport
import Testing

@testable import RecSyncGit

/// Which certificate authorities the environment names, and the check of a certificate for
/// an IP address that libgit2 cannot make.
@Suite struct GitCertificateAuthoritiesTests {
    @Test func gitsVariablesComeBeforeOpenSSLsAndEmptyOnesCountAsUnset() throws {
        let dir = TempDirectory("ca-env")
        let file = dir.file("ca.pem"), other = dir.file("other.pem")
        try Data().write(to: URL(fileURLWithPath: file))
        try Data().write(to: URL(fileURLWithPath: other))
        #expect(GitCertificateAuthorities.fromEnvironment([:]) == (nil, nil))
        #expect(GitCertificateAuthorities.fromEnvironment(["SSL_CERT_FILE": "", "GIT_SSL_CAPATH": ""]) == (nil, nil))

        let openssl = GitCertificateAuthorities.fromEnvironment(["SSL_CERT_FILE": file, "SSL_CERT_DIR": dir.path])
        #expect(
            openssl.authorities
                == GitCertificateAuthorities(file: file, directory: dir.path, origin: "SSL_CERT_FILE=\(file) and SSL_CERT_DIR=\(dir.path)"))
        #expect(openssl.problem == nil)

        let git = GitCertificateAuthorities.fromEnvironment(["SSL_CERT_FILE": other, "GIT_SSL_CAINFO": file, "GIT_SSL_CAPATH": ""])
        #expect(git.authorities == GitCertificateAuthorities(file: file, directory: nil, origin: "GIT_SSL_CAINFO=\(file)"))
    }

    @Test func aVariableNamingNothingUsableIsAProblemNamingIt() {
        let dir = TempDirectory("ca-env-bad")
        let notAFile = GitCertificateAuthorities.fromEnvironment(["GIT_SSL_CAINFO": dir.path])
        #expect(notAFile.problem?.contains("GIT_SSL_CAINFO='\(dir.path)' is not a file of certificates") == true, "\(notAFile)")
        let notADirectory = GitCertificateAuthorities.fromEnvironment(["SSL_CERT_DIR": dir.file("missing")])
        #expect(notADirectory.problem?.contains("SSL_CERT_DIR='\(dir.file("missing"))' is not a directory") == true, "\(notADirectory)")
        let options = GitNetworkOptions.fromEnvironment(["HOME": "/home/u", "SSL_CERT_DIR": dir.file("missing")])
        #expect(options.certificateAuthoritiesProblem != nil && options.settingProblem == nil, "only https needs them")
    }

    @Test func ipAddressesAreToldFromNames() {
        #expect(TLSTrust.address("127.0.0.1") == [127, 0, 0, 1])
        #expect(TLSTrust.address("::1") == Array(repeating: 0, count: 15) + [1])
        #expect(TLSTrust.address("[::1]") == Array(repeating: 0, count: 15) + [1])
        for name in ["localhost", "git.example.com", "127.0.0", "1.2.3.4.example"] { #expect(TLSTrust.address(name) == nil, "\(name)") }
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: TestCertificateAuthority.openssl), "needs openssl (apt-get install openssl)"))
    func aCertificateForAnAddressIsTrustedOnlyFromItsAuthorityAndForThatAddress() throws {
        let dir = TempDirectory("ca-verify")
        let authority = try TestCertificateAuthority(directory: dir.file("ca"))
        let stranger = try TestCertificateAuthority(directory: dir.file("stranger"), name: "another CA")
        let (pem, _) = try authority.issue("server", subjectAltNames: ["IP:127.0.0.1", "IP:::1", "DNS:localhost"])
        let der = dir.file("server.der")
        _ = try Subprocess.run(TestCertificateAuthority.openssl, ["x509", "-in", pem, "-outform", "der", "-out", der], in: dir.path)
        let certificate = try #require(FileManager.default.contents(atPath: der))
        let trusted = GitCertificateAuthorities(file: authority.certificate)
        func verify(_ host: String, _ authorities: GitCertificateAuthorities) throws -> TLSTrust.Verdict {
            let ip = try #require(TLSTrust.address(host))
            return certificate.withUnsafeBytes { TLSTrust.verify(certificate: $0, ip: ip, authorities: authorities) }
        }
        #expect(try verify("127.0.0.1", trusted) == .trusted)
        #expect(try verify("::1", trusted) == .trusted)
        #expect(try verify("127.0.0.2", trusted) == .otherAddress)
        #expect(try verify("::2", trusted) == .otherAddress)
        guard case .untrusted(let why) = try verify("127.0.0.1", GitCertificateAuthorities(file: stranger.certificate)) else {
            Issue.record("a certificate from an authority not given was trusted")
            return
        }
        #expect(why.contains("not correctly signed"), "\(why)")
        // A directory of authorities does as well; a file with no certificate in it trusts nothing.
        try FileManager.default.createDirectory(atPath: dir.file("authorities"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: authority.certificate, toPath: dir.file("authorities/ca.pem"))
        #expect(try verify("127.0.0.1", GitCertificateAuthorities(file: nil, directory: dir.file("authorities"))) == .trusted)
        try Data().write(to: URL(fileURLWithPath: dir.file("empty.pem")))
        #expect(try verify("127.0.0.1", GitCertificateAuthorities(file: dir.file("empty.pem"))) != .trusted)
    }
}
