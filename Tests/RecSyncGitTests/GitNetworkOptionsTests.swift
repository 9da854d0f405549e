import Foundation
import RecSyncTestSupport
import Testing

@testable import RecSyncGit

/// `GitNetworkOptions.fromEnvironment`, the time limits handed to the network stream, and
/// `GitSecret`, which never shows its value.
@Suite struct GitNetworkOptionsTests {
    @Test func withNothingSetTheDefaultsComeFromHome() {
        let options = GitNetworkOptions.fromEnvironment(["HOME": "/home/u", "USER": "u", "SSH_AUTH_SOCK": "/nonexistent/agent.sock"])
        #expect(options.sshDirectory == "/home/u/.ssh" && options.knownHostsFiles == ["/home/u/.ssh/known_hosts"])
        #expect(!options.useSSHAgent, "an agent socket that is not there is not used")
        #expect(options.sshUser == "u" && options.token == nil && options.tokenUsername == "x-access-token")
        #expect(options.useCredentialHelper && options.credentialHelperEnvironment == nil)
        #expect(options.connectTimeout == GitNetworkOptions.defaultConnectTimeout && options.idleTimeout == GitNetworkOptions.defaultIdleTimeout)
        #expect(options.settingProblem == nil)
    }

    @Test func settingsAreReadAndEmptyOnesCountAsUnset() throws {
        let dir = TempDirectory("net-options")
        let socket = dir.file("agent.sock")
        try Data().write(to: URL(fileURLWithPath: socket))
        let options = GitNetworkOptions.fromEnvironment([
            "HOME": "/home/u", "LOGNAME": "logname", "SSH_AUTH_SOCK": socket, "RECSYNC_SSH_KNOWN_HOSTS": "/etc/recsync/known_hosts",
            "RECSYNC_TOKEN": "t0ken", "RECSYNC_USERNAME": "bot", "RECSYNC_CONNECT_TIMEOUT": " 2.5 ", "RECSYNC_IDLE_TIMEOUT": "0",
        ])
        #expect(options.useSSHAgent && options.knownHostsFiles == ["/etc/recsync/known_hosts"] && options.sshUser == "logname")
        #expect(options.token == GitSecret("t0ken") && options.tokenUsername == "bot")
        #expect(options.connectTimeout == 2.5 && options.idleTimeout == 0 && options.settingProblem == nil)
        let empty = GitNetworkOptions.fromEnvironment([
            "HOME": "/home/u", "USER": "", "LOGNAME": "ln", "RECSYNC_SSH_KNOWN_HOSTS": "", "RECSYNC_TOKEN": "", "RECSYNC_USERNAME": "",
            "RECSYNC_CONNECT_TIMEOUT": "", "RECSYNC_IDLE_TIMEOUT": "  ",
        ])
        #expect(empty.knownHostsFiles == ["/home/u/.ssh/known_hosts"] && empty.token == nil && empty.tokenUsername == "x-access-token")
        #expect(empty.sshUser == "ln" && empty.connectTimeout == 10 && empty.idleTimeout == 60 && empty.settingProblem == nil)
    }

    /// A time limit that is not a number of seconds from 0 to a day is a problem to report (the
    /// store refuses to open), named with the variable; the default stands meanwhile.
    @Test(arguments: ["-1", "abc", "86401", "nan", "inf", "1e400", "10s", "1,5", "0x10", "1e1"])
    func aTimeLimitThatIsNoNumberOfSecondsIsAProblem(text: String) throws {
        let options = GitNetworkOptions.fromEnvironment(["HOME": "/h", "RECSYNC_CONNECT_TIMEOUT": text, "RECSYNC_IDLE_TIMEOUT": text])
        #expect(options.connectTimeout == 10 && options.idleTimeout == 60)
        let problem = try #require(options.settingProblem)
        #expect(problem.contains("RECSYNC_CONNECT_TIMEOUT='\(text)'") && problem.contains("RECSYNC_IDLE_TIMEOUT='\(text)'"), "\(problem)")
        #expect(problem.contains("from 0 to 86400") && problem.contains("e.g. 10") && problem.contains("e.g. 60"), "\(problem)")
    }

    @Test func theLoginNameFallsBackFromUserToLognameToTheAccount() {
        #expect(GitNetworkOptions.loginName(["USER": "a", "LOGNAME": "b"]) == "a")
        #expect(GitNetworkOptions.loginName(["USER": "", "LOGNAME": "b"]) == "b")
        #expect(GitNetworkOptions.loginName([:]) == (GitNetworkOptions.accountName() ?? "git"))
    }

    @Test func timeLimitsBecomeWholeMillisecondsAndZeroIsNoLimit() {
        #expect(NetworkTimeLimits.milliseconds(0) == 0 && NetworkTimeLimits.milliseconds(-5) == 0)
        #expect(NetworkTimeLimits.milliseconds(0.0001) == 1, "a limit is never rounded down to none")
        #expect(NetworkTimeLimits.milliseconds(2.5) == 2500 && NetworkTimeLimits.milliseconds(0.0015) == 2)
        #expect(NetworkTimeLimits.milliseconds(86_400) == 86_400_000)
        #expect(NetworkTimeLimits.milliseconds(1e12) == Int32.max)
        #expect(NetworkTimeLimits.shown(10) == "10 s" && NetworkTimeLimits.shown(0.5) == "0.5 s")
    }

    @Test func aSecretNeverShowsItsValue() {
        let secret = GitSecret("hunter2-token")
        var dumped = ""
        dump(secret, to: &dumped)
        let options = GitNetworkOptions(sshDirectory: "/s", knownHostsFiles: [], token: secret)
        var dumpedOptions = ""
        dump(options, to: &dumpedOptions)
        for text in ["\(secret)", String(describing: secret), String(reflecting: secret), dumped, "\(options)", dumpedOptions] {
            #expect(!text.contains("hunter2"), "\(text)")
        }
        #expect("\(secret)" == "<secret>")
        #expect(secret == GitSecret("hunter2-token") && secret != GitSecret("other"))
    }
}
