import Foundation
import RecSyncTestSupport
import Testing

@testable import RecSyncGit

/// `GitCredentialHelper`: what `git credential fill|approve|reject` is told, as a helper of the
/// test's own sees it (a script that logs its input), with no user or system config.
@Suite struct GitCredentialHelperTests {
    /// A directory with a helper that logs every call (`== action`, then its input) to `log`,
    /// answering `get` with `answer`, and options that run git with only that helper.
    struct Helper {
        let dir: TempDirectory
        let options: GitNetworkOptions
        var log: String { (try? String(contentsOfFile: dir.file("log"), encoding: .utf8)) ?? "" }

        init(_ name: String, answer: String = "username=helper-user\npassword=helper-pass\n") throws {
            dir = TempDirectory(name)
            let script = dir.file("helper.sh")
            try """
            #!/bin/sh
            echo "== $1" >> '\(dir.file("log"))'
            cat >> '\(dir.file("log"))'
            if [ "$1" = get ]; then printf '%s' '\(answer)'; fi

            """.write(toFile: script, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script)
            try "[credential]\n\thelper = \(script)\n\tuseHttpPath = true\n".write(toFile: dir.file("gitconfig"), atomically: true, encoding: .utf8)
            var env = GitCLI.hermeticEnvironment
            env["GIT_CONFIG_GLOBAL"] = dir.file("gitconfig")
            env["GIT_TERMINAL_PROMPT"] = "0"
            options = GitNetworkOptions(
                sshDirectory: dir.file("no-ssh"), knownHostsFiles: [], useCredentialHelper: true, credentialHelperEnvironment: env)
        }
    }

    @Test func fillAsksForTheAddressesProtocolHostPortPathAndUser() throws {
        let helper = try Helper("credential-fill")
        let remote = try #require(GitRemoteURL("https://alice@[::1]:8443/team/s.git"))
        let credential = try #require(GitCredentialHelper(options: helper.options).fill(remote))
        #expect(credential.username == "helper-user" && credential.password == GitSecret("helper-pass"))
        #expect(helper.log.contains("== get\nprotocol=https\nhost=[::1]:8443\npath=team/s.git\nusername=alice\n"), "\(helper.log)")
        // Everything the helper gave is kept, to be handed back on approve or reject.
        #expect(credential.attributes.contains { $0 == ("host", "[::1]:8443") })
        // A user that comes with a password in the address is not asked for: git is asked for
        // the host's credential, as it would be without one.
        let withPassword = try #require(GitRemoteURL("https://bob:pw@host.example/x.git"))
        _ = try #require(GitCredentialHelper(options: helper.options).fill(withPassword))
        #expect(helper.log.hasSuffix("== get\nprotocol=https\nhost=host.example\npath=x.git\n"), "\(helper.log)")
        #expect(!helper.log.contains("bob") && !helper.log.contains("pw\n"))
    }

    @Test func approveAndRejectHandBackWhatTheHelperGave() throws {
        let helper = try Helper("credential-approve")
        let remote = try #require(GitRemoteURL("http://127.0.0.1:8080/store.git"))
        let credential = try #require(GitCredentialHelper(options: helper.options).fill(remote))
        GitCredentialHelper(options: helper.options).approve(credential)
        GitCredentialHelper(options: helper.options).reject(credential)
        let calls = helper.log.components(separatedBy: "== ").filter { !$0.isEmpty }
        #expect(calls.map { $0.prefix(while: { $0 != "\n" }) } == ["get", "store", "erase"], "\(helper.log)")
        for call in calls.dropFirst() {
            #expect(call.contains("protocol=http\nhost=127.0.0.1:8080\npath=store.git\n"), "\(call)")
            #expect(call.contains("username=helper-user\npassword=helper-pass\n"), "\(call)")
        }
    }

    /// A value with a line break would add an attribute of its own choosing (another host);
    /// such a value is never sent, and git then stores nothing.
    @Test func aValueWithALineBreakCannotAddAnAttribute() throws {
        let helper = try Helper("credential-newline")
        let remote = try #require(GitRemoteURL("https://host.example/x.git"))
        let approved = GitCredentialHelper(options: helper.options)
            .approve(for: remote, username: "u", password: GitSecret("pw\nhost=evil.example"))
        #expect(approved, "git ran")
        #expect(!helper.log.contains("evil"), "\(helper.log)")
        let forged = GitCredentialHelper.Credential(
            username: "u", password: GitSecret("p"),
            attributes: [("protocol", "https"), ("host", "host.example"), ("username", "u"), ("password", "p"), ("host=evil.example\nx", "y")])
        GitCredentialHelper(options: helper.options).approve(forged)
        #expect(helper.log.contains("== store\nprotocol=https\nhost=host.example\nusername=u\npassword=p\n"), "\(helper.log)")
        #expect(!helper.log.contains("evil"), "\(helper.log)")
    }

    @Test func anAddressesOwnPasswordIsHandedToTheHelpers() throws {
        let helper = try Helper("credential-address")
        #expect(try #require(GitRemoteURL("https://bob:s3cret@host.example:8443/t/x.git")).approveCredentials(options: helper.options))
        #expect(
            helper.log.contains("== store\nprotocol=https\nhost=host.example:8443\npath=t/x.git\nusername=bob\npassword=s3cret\n"), "\(helper.log)")
        // Nothing to hand over without a password, or without a user.
        #expect(try !#require(GitRemoteURL("https://bob@host.example/x.git")).approveCredentials(options: helper.options))
        #expect(try !#require(GitRemoteURL("https://:pw@host.example/x.git")).approveCredentials(options: helper.options))
        #expect(helper.log.components(separatedBy: "== store").count == 2, "\(helper.log)")
    }

    @Test func noCredentialWhenTheHelperHasNoneOrGitCannotRun() throws {
        let silent = try Helper("credential-none", answer: "")
        let remote = try #require(GitRemoteURL("https://host.example/x.git"))
        #expect(GitCredentialHelper(options: silent.options).fill(remote) == nil)
        #expect(silent.log.hasPrefix("== get\n"), "the helper was asked: \(silent.log)")
        // Only a user name is no credential either.
        let userOnly = try Helper("credential-user-only", answer: "username=someone\n")
        #expect(GitCredentialHelper(options: userOnly.options).fill(remote) == nil)
        var options = silent.options
        options.gitExecutable = silent.dir.file("no-such-git")
        #expect(GitCredentialHelper(options: options).fill(remote) == nil)
        #expect(!GitCredentialHelper(options: options).approve(for: remote, username: "u", password: GitSecret("p")))
    }
}
