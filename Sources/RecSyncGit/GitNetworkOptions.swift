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
    /// Seconds a host has to accept a connection before the operation gives up
    /// (`RECSYNC_CONNECT_TIMEOUT`); 0: as long as the system tries (about two minutes).
    public var connectTimeout: Double
    /// Seconds a connection may stay silent (nothing received or sent, no progress) before the
    /// operation gives up (`RECSYNC_IDLE_TIMEOUT`); 0: for ever.
    public var idleTimeout: Double
    /// A setting from the environment that cannot be used, with what to do about it: network
    /// stores refuse to open while it is set (rather than quietly use the default).
    public var settingProblem: String?
    /// The certificate authorities https servers are checked against; nil: the system's.
    public var certificateAuthorities: GitCertificateAuthorities?
    /// Why the certificate authorities the environment names cannot be used: https
    /// connections fail with it (other transports do not need them).
    public var certificateAuthoritiesProblem: String?

    public static let defaultConnectTimeout: Double = 10
    public static let defaultIdleTimeout: Double = 60

    public init(
        sshDirectory: String,
        knownHostsFiles: [String],
        useSSHAgent: Bool = false,
        sshUser: String = GitNetworkOptions.loginName(ProcessInfo.processInfo.environment),
        token: GitSecret? = nil,
        tokenUsername: String = "x-access-token",
        useCredentialHelper: Bool = false,
        credentialHelperEnvironment: [String: String]? = nil,
        gitExecutable: String = "/usr/bin/git",
        connectTimeout: Double = GitNetworkOptions.defaultConnectTimeout,
        idleTimeout: Double = GitNetworkOptions.defaultIdleTimeout
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
        self.connectTimeout = connectTimeout
        self.idleTimeout = idleTimeout
    }

    /// The settings a user expects: keys in `~/.ssh`, ssh-agent when `SSH_AUTH_SOCK` is set,
    /// `RECSYNC_SSH_KNOWN_HOSTS` (else `~/.ssh/known_hosts`), `RECSYNC_TOKEN` /
    /// `RECSYNC_USERNAME`, else git's credential helpers; time limits from
    /// `RECSYNC_CONNECT_TIMEOUT` and `RECSYNC_IDLE_TIMEOUT` (seconds); certificate authorities
    /// from `GIT_SSL_CAINFO` / `SSL_CERT_FILE` and `GIT_SSL_CAPATH` / `SSL_CERT_DIR`.
    public static func fromEnvironment(_ env: [String: String] = ProcessInfo.processInfo.environment) -> GitNetworkOptions {
        let home = env["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        let ssh = "\(home)/.ssh"
        let knownHosts = env["RECSYNC_SSH_KNOWN_HOSTS"].flatMap { $0.isEmpty ? nil : $0 }
        let agent = env["SSH_AUTH_SOCK"].map { !$0.isEmpty && FileManager.default.fileExists(atPath: $0) } ?? false
        var options = GitNetworkOptions(
            sshDirectory: ssh,
            knownHostsFiles: [knownHosts ?? "\(ssh)/known_hosts"],
            useSSHAgent: agent,
            sshUser: loginName(env),
            token: env["RECSYNC_TOKEN"].flatMap { $0.isEmpty ? nil : GitSecret($0) },
            tokenUsername: env["RECSYNC_USERNAME"].flatMap { $0.isEmpty ? nil : $0 } ?? "x-access-token",
            useCredentialHelper: true,
            credentialHelperEnvironment: nil
        )
        var problems: [String] = []
        options.connectTimeout = seconds(env, "RECSYNC_CONNECT_TIMEOUT", default: defaultConnectTimeout, problems: &problems)
        options.idleTimeout = seconds(env, "RECSYNC_IDLE_TIMEOUT", default: defaultIdleTimeout, problems: &problems)
        options.settingProblem = problems.isEmpty ? nil : problems.joined(separator: "; ")
        (options.certificateAuthorities, options.certificateAuthoritiesProblem) = GitCertificateAuthorities.fromEnvironment(env)
        return options
    }

    /// A number of seconds from the environment: unset or empty gives `fallback`; anything but
    /// a number from 0 to a day is a problem (and gives `fallback`).
    static func seconds(_ env: [String: String], _ name: String, default fallback: Double, problems: inout [String]) -> Double {
        guard let text = env[name]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return fallback }
        // Decimal digits and a point only: Double also reads hex ("0x10"), exponents and "inf".
        let decimal = !text.isEmpty && text.allSatisfy { $0.isASCII && ($0.isNumber || $0 == ".") }
        guard decimal, let value = Double(text), value.isFinite, (0...86_400).contains(value) else {
            problems.append(
                """
                \(name)='\(text)' is not a number of seconds from 0 to 86400; set it to e.g. \(Int(fallback))\
                 (0: no limit), or unset it for the default (\(Int(fallback)) s)
                """
            )
            return fallback
        }
        return value
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
