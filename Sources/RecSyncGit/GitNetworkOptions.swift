import Foundation

/// A secret (token or password) that never shows itself in descriptions, dumps or logs.
public struct GitSecret: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    let value: String

    public init(_ value: String) { self.value = value }

    public var description: String { "<secret>" }
    public var debugDescription: String { "<secret>" }
    public var customMirror: Mirror { Mirror(self, children: []) }
}

/// Where network operations find credentials and trusted host keys.
///
/// `fromEnvironment()` is what the command line uses; tests build one with explicit paths so
/// nothing depends on the process's `HOME` or ssh-agent.
public struct GitNetworkOptions: Sendable {
    /// Directory holding `id_ed25519`, `id_ecdsa`, `id_rsa` (tried in that order).
    public var sshDirectory: String
    /// known_hosts files recsync checks ssh host keys against, besides libgit2's own check of
    /// `~/.ssh/known_hosts`.
    public var knownHostsFiles: [String]
    /// Offer the keys of the ssh-agent at `SSH_AUTH_SOCK` first.
    public var useSSHAgent: Bool
    /// The ssh user when the address names none (git uses the login name too).
    public var sshUser: String
    /// An http(s) token (`RECSYNC_TOKEN`); when set, git credential helpers are not asked.
    public var token: GitSecret?
    /// The user name sent with the token when the URL names none (`RECSYNC_USERNAME`).
    public var tokenUsername: String
    /// Ask `git credential fill` for http(s) credentials (and approve/reject them afterwards).
    public var useCredentialHelper: Bool
    /// The environment `git credential` runs in; nil inherits this process's.
    public var credentialHelperEnvironment: [String: String]?
    /// The git executable used for `git credential` (the only thing recsync runs git for).
    public var gitExecutable: String

    public init(
        sshDirectory: String,
        knownHostsFiles: [String],
        useSSHAgent: Bool = false,
        sshUser: String = GitNetworkOptions.loginName(ProcessInfo.processInfo.environment),
        token: GitSecret? = nil,
        tokenUsername: String = "x-access-token",
        useCredentialHelper: Bool = false,
        credentialHelperEnvironment: [String: String]? = nil,
        gitExecutable: String = "/usr/bin/git"
    ) {
        self.sshDirectory = sshDirectory
        self.knownHostsFiles = knownHostsFiles
        self.useSSHAgent = useSSHAgent
        self.sshUser = sshUser
        self.token = token
        self.tokenUsername = tokenUsername
        self.useCredentialHelper = useCredentialHelper
        self.credentialHelperEnvironment = credentialHelperEnvironment
        self.gitExecutable = gitExecutable
    }

    /// The settings a user expects: keys in `~/.ssh`, ssh-agent when `SSH_AUTH_SOCK` is set,
    /// `RECSYNC_SSH_KNOWN_HOSTS` (else `~/.ssh/known_hosts`), `RECSYNC_TOKEN` /
    /// `RECSYNC_USERNAME`, else git's credential helpers.
    public static func fromEnvironment(_ env: [String: String] = ProcessInfo.processInfo.environment) -> GitNetworkOptions {
        let home = env["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        let ssh = "\(home)/.ssh"
        let knownHosts = env["RECSYNC_SSH_KNOWN_HOSTS"].flatMap { $0.isEmpty ? nil : $0 }
        let agent = env["SSH_AUTH_SOCK"].map { !$0.isEmpty && FileManager.default.fileExists(atPath: $0) } ?? false
        return GitNetworkOptions(
            sshDirectory: ssh,
            knownHostsFiles: [knownHosts ?? "\(ssh)/known_hosts"],
            useSSHAgent: agent,
            sshUser: loginName(env),
            token: env["RECSYNC_TOKEN"].flatMap { $0.isEmpty ? nil : GitSecret($0) },
            tokenUsername: env["RECSYNC_USERNAME"].flatMap { $0.isEmpty ? nil : $0 } ?? "x-access-token",
            useCredentialHelper: true,
            credentialHelperEnvironment: nil
        )
    }

    /// The login name: `USER`, else `LOGNAME`, else the password database's name for this uid.
    public static func loginName(_ env: [String: String]) -> String {
        if let user = env["USER"], !user.isEmpty { return user }
        if let user = env["LOGNAME"], !user.isEmpty { return user }
        return accountName() ?? "git"
    }

    /// This process's user name in the password database, if it has one.
    public static func accountName() -> String? {
        guard let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name else { return nil }
        return String(cString: name)
    }
}
