import Testing

@testable import RecSyncGit

/// `GitRemoteURL`: which addresses name a remote, what is read from them, and what is shown.
@Suite struct GitRemoteURLTests {
    struct Parsed: Equatable, CustomStringConvertible {
        var transport: GitRemoteURL.Transport
        var user: String?
        var host: String
        var port: Int?
        var path: String
        var description: String { "\(transport) \(user ?? "-")@\(host):\(port.map(String.init) ?? "-") \(path)" }
    }

    func parsed(_ string: String) -> Parsed? {
        GitRemoteURL(string).map { Parsed(transport: $0.transport, user: $0.user, host: $0.host, port: $0.port, path: $0.path) }
    }

    @Test(arguments: [
        ("ssh://git@host/srv/store.git", Parsed(transport: .ssh, user: "git", host: "host", port: nil, path: "/srv/store.git")),
        ("git+ssh://host:2222/x", Parsed(transport: .ssh, user: nil, host: "host", port: 2222, path: "/x")),
        ("ssh+git://u@h/x", Parsed(transport: .ssh, user: "u", host: "h", port: nil, path: "/x")),
        ("ssh://alice@[::1]:2222/srv/s.git", Parsed(transport: .ssh, user: "alice", host: "::1", port: 2222, path: "/srv/s.git")),
        ("git://127.0.0.1:9418/store.git", Parsed(transport: .git, user: nil, host: "127.0.0.1", port: 9418, path: "/store.git")),
        ("HTTPS://Host/x", Parsed(transport: .https, user: nil, host: "Host", port: nil, path: "/x")),
        ("http://host", Parsed(transport: .http, user: nil, host: "host", port: nil, path: "/")),
        ("https://u%40corp:p%3Aw@host:8443/t/s.git", Parsed(transport: .https, user: "u@corp", host: "host", port: 8443, path: "/t/s.git")),
        ("file:///srv/store.git", Parsed(transport: .file, user: nil, host: "", port: nil, path: "/srv/store.git")),
        ("file://localhost/srv/store.git", Parsed(transport: .file, user: nil, host: "", port: nil, path: "/srv/store.git")),
        // scp-like: [user@]host:path, no slash before the first colon.
        ("git@example.com:team/store.git", Parsed(transport: .ssh, user: "git", host: "example.com", port: nil, path: "team/store.git")),
        ("host:store.git", Parsed(transport: .ssh, user: nil, host: "host", port: nil, path: "store.git")),
        ("me@[::1]:srv/x:y", Parsed(transport: .ssh, user: "me", host: "::1", port: nil, path: "srv/x:y")),
    ])
    func aRemoteAddressIsReadAsGitReadsIt(address: String, expected: Parsed) {
        #expect(parsed(address) == expected)
        #expect(GitRemoteURL.isRemote(address))
    }

    @Test(arguments: [
        "/srv/store.git", "store.git", "./a:b", "../x/y:z", "dir/with:colon", "/srv/a:b@c", "",
        ":path", "host:", "ftp://host/x", "file://otherhost/srv/x", "file://nopath",
        "ssh://host:0/x", "ssh://host:65536/x", "ssh://host:port/x", "https://[::1/x", "https:///x",
    ])
    func anythingElseIsALocalPathOrRefused(address: String) {
        #expect(GitRemoteURL(address) == nil)
        #expect(!GitRemoteURL.isRemote(address))
    }

    @Test func eachTransportHasItsDefaultPort() throws {
        let ports = try ["ssh://h/x", "git://h/x", "http://h/x", "https://h/x", "file:///x", "h:x"].map {
            try #require(GitRemoteURL($0)).effectivePort
        }
        #expect(ports == [22, 9418, 80, 443, nil, 22])
        #expect(try #require(GitRemoteURL("https://h:8443/x")).effectivePort == 8443)
    }

    @Test func theShownFormCarriesNoSecret() throws {
        let https = try #require(GitRemoteURL("https://me:s3cr3t@host:8443/team/store.git"))
        #expect(https.redacted == "https://host:8443/team/store.git")
        #expect(https.description == https.redacted)
        #expect(https.hasPassword && https.secrets == ["s3cr3t"])
        // A user alone in an http(s) address is often a token: neither shown nor kept.
        let token = try #require(GitRemoteURL("https://ghp_abcdef@github.com/me/s.git"))
        #expect(token.redacted == "https://github.com/me/s.git" && !token.hasPassword && token.secrets == ["ghp_abcdef"])
        // ssh keeps its user name, which is no secret; a password in an ssh URL is.
        let ssh = try #require(GitRemoteURL("ssh://git:pw@[::1]:2222/srv/s.git"))
        #expect(ssh.redacted == "ssh://git@[::1]:2222/srv/s.git" && ssh.secrets == ["pw"])
        #expect(try #require(GitRemoteURL("git@h:team/s.git")).redacted == "git@h:team/s.git")
        #expect(try #require(GitRemoteURL("file://localhost/srv/s.git")).redacted == "file:///srv/s.git")
        // A query string is a secret too (a token): shown as `?…`, scrubbed from messages.
        let query = try #require(GitRemoteURL("https://host/s.git?token=t0ps3cret"))
        #expect(query.redacted == "https://host/s.git?…" && query.secrets == ["token=t0ps3cret"])
        #expect(GitRemoteURL.shown("https://me:pw@host/s.git?token=t0ps3cret") == "https://me@host/s.git?…")
        #expect(GitRemoteURL.shown("/srv/with?mark/s.git") == "/srv/with?mark/s.git", "a local path is shown as it is")
        // The address itself is kept as given, for libgit2.
        #expect(https.url == "https://me:s3cr3t@host:8443/team/store.git")
    }

    @Test func aPasswordIsStrippedAndNothingElse() {
        #expect(GitRemoteURL.withoutPassword("https://me:s3cr3t@host:8443/x.git") == "https://me@host:8443/x.git")
        #expect(GitRemoteURL.withoutPassword("ssh://git:pw@host/x") == "ssh://git@host/x")
        #expect(GitRemoteURL.withoutPassword("http://me:p%40ss:w@host/x?y=@z") == "http://me@host/x?y=@z")
        // Not parseable (a bad port): the password goes all the same.
        #expect(GitRemoteURL.withoutPassword("https://me:pw@host:notaport/x") == "https://me@host:notaport/x")
        for unchanged in [
            "https://me@host/x.git", "https://host/x?u=a:b@c", "https://host/x#a:b@c", "git@host:x.git", "/srv/a:b@c", "user:pw@host:x",
        ] {
            #expect(GitRemoteURL.withoutPassword(unchanged) == unchanged, "\(unchanged)")
        }
    }

    /// The user part ends at the last '@' (an e-mail address as user name), its password at
    /// the first ':' after the user.
    @Test func aUserNameMayHoldAnAtSign() throws {
        let https = try #require(GitRemoteURL("https://me@corp.example:pw@host/x.git"))
        #expect(https.user == "me@corp.example" && https.host == "host" && https.secrets == ["pw"])
        #expect(https.redacted == "https://host/x.git")
        let scp = try #require(GitRemoteURL("me@corp.example@host:x.git"))
        #expect(scp.user == "me@corp.example" && scp.host == "host" && scp.path == "x.git")
        #expect(scp.redacted == "me@corp.example@host:x.git")
    }

    /// Every form but `file://` shows its host as given, an IPv6 address in brackets, and the
    /// scheme in lower case whatever spelling the address used.
    @Test(arguments: [
        ("https://[fe80::1]/x", "https://[fe80::1]/x"), ("http://[::1]:80/x", "http://[::1]:80/x"),
        ("ssh://[::1]/srv/x", "ssh://[::1]/srv/x"), ("[::1]:srv/x", "[::1]:srv/x"), ("SSH://Git@Host/x", "ssh://Git@Host/x"),
        ("GIT+SSH://h:2222/x", "ssh://h:2222/x"), ("git://u:pw@h:9418/x", "git://h:9418/x"), ("Git://h/x?t=1", "git://h/x?…"),
        ("host:path?token=x", "host:path?…"), ("FILE:///srv/x?y", "file:///srv/x?y"),
    ])
    func theShownFormSpellsHostAndSchemeAlike(address: String, shown: String) throws {
        #expect(try #require(GitRemoteURL(address)).redacted == shown)
    }

    /// A secret is found as the server gets it: percent-encoded characters decoded, a broken
    /// escape kept as it is.
    @Test func secretsArePercentDecoded() throws {
        #expect(try #require(GitRemoteURL("https://tok%2Fen%3D@h/x")).secrets == ["tok/en="])
        #expect(try #require(GitRemoteURL("https://u:p%zz%4@h/x")).secrets == ["p%zz%4"])
        #expect(try #require(GitRemoteURL("https://u:%C3%A9t%C3%A9@h/x")).secrets == ["été"])
        // Secrets too short to scrub safely are still secrets of the address.
        #expect(try #require(GitRemoteURL("ssh://git:x@h/x")).secrets == ["x"])
        // An empty password is none to hide, but it is a password.
        let empty = try #require(GitRemoteURL("https://u:@h/x"))
        #expect(empty.hasPassword && empty.secrets.isEmpty && empty.redacted == "https://h/x")
    }
}
