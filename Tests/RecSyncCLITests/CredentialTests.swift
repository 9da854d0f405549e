import Foundation
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

/// A password in a remote's address never lands on disk in the workspace (DESIGN §11).
@Suite(.ownThreads) struct CredentialTests {
    @Test func aPasswordInTheRemoteGoesToTheCredentialHelperNotTheConfig() throws {
        let f = try CLIFixture()
        let secret = "S3cret-Pw-77"
        // git's credential-store helper, kept in the fixture's HOME.
        let helperFile = f.directory.file("credentials")
        try writeFile(f.directory.file("home/.gitconfig"), "[credential]\n\thelper = store --file=\(helperFile)\n")

        try FileManager.default.createDirectory(atPath: f.ws("a"), withIntermediateDirectories: true)
        let initialized = try f.run(["init", "--remote", "https://alice:\(secret)@127.0.0.1:9/team.git"], in: "a")
        let config = try String(contentsOfFile: f.ws("a") + "/.recsync/config", encoding: .utf8)
        #expect(!config.contains(secret), "\(config)")
        #expect(config.contains("https://alice@127.0.0.1:9/team.git"), "\(config)")
        #expect(!initialized.stdout.contains(secret) && !initialized.stderr.contains(secret), "\(initialized)")
        #expect(initialized.stderr.contains("credential helper"), "\(initialized)")
        #expect((try? String(contentsOfFile: helperFile, encoding: .utf8))?.contains(secret) == true, "the helper was given the password")

        // A clone whose server refuses: the error does not show the password, nothing is left.
        let server = try HTTPAuthRefuser()
        let cloned = try f.run(["clone", "http://alice:\(secret)@127.0.0.1:\(server.port)/store.git", "b"], expect: 4)
        #expect(!cloned.stdout.contains(secret) && !cloned.stderr.contains(secret), "\(cloned)")
        #expect(!FileManager.default.fileExists(atPath: f.ws("b")))
        for file in TreeSnapshot.files(f.ws("a")) {
            #expect(!String(decoding: file.value, as: UTF8.self).contains(secret), "\(file.key)")
        }
    }
}
