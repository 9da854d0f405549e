import Foundation

/// What the machine running the tests has, for tests that need more than the package itself:
/// the condition of their `.enabled(if:)` trait, so that a run without it shows them as
/// skipped, with the reason, rather than passed without checking anything.
///
/// Each answer is cheap and says only whether the thing is there; a test that runs because it
/// is fails as before when the thing then does not work (a broken sshd is a failure, not a
/// skip). CI installs everything, so there every such test runs.
public enum Machine {
    /// OpenSSH's server and key generator, which `SSHServer` runs (apt-get install
    /// openssh-server).
    public static var hasSSHD: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/sbin/sshd") && hasSSHKeygen
    }

    /// git's own command line, which interoperability tests run (`GitCLI`; apt-get install git).
    public static var hasGit: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/bin/git")
    }

    /// git and its daemon, which `GitDaemon` runs (apt-get install git).
    public static var hasGitDaemon: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/bin/git")
            && FileManager.default.isExecutableFile(atPath: "/usr/lib/git-core/git-daemon")
    }

    /// OpenSSH's key generator (openssh-client).
    public static var hasSSHKeygen: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/bin/ssh-keygen")
    }

    /// nginx, fcgiwrap, openssl and git-http-backend, which `HTTPSGitServer` runs (apt-get
    /// install nginx fcgiwrap openssl).
    public static var hasHTTPSGitServer: Bool { HTTPSGitServer.unavailableReason == nil }

    /// Whether the kernel leaves a connection request to a full accept queue unanswered (as
    /// Linux does), so that `UnansweredPort` can imitate a host that drops packets. Asked once
    /// per process by making one (about 0.3 s).
    public static let dropsConnectionRequestsToAFullQueue: Bool = {
        guard let port = try? UnansweredPort(giveUpAfter: 5) else { return false }
        port.close()
        return true
    }()
}
