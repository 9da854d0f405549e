import CLibGit2
import CRecSyncNet
import Foundation
import Synchronization

/// The certificate authorities https connections trust: a file of PEM certificates, a
/// directory of them, or both, named as OpenSSL and git name them.
///
/// libgit2 holds one set for the whole process, so the first https connection decides it:
/// a later connection that asks for another set fails rather than quietly use the first.
public struct GitCertificateAuthorities: Sendable, Hashable {
    /// A file of concatenated PEM certificates.
    public var file: String?
    /// A directory of PEM certificates, one a file.
    public var directory: String?
    /// The environment variables that named `file` and `directory`, for messages
    /// (`GIT_SSL_CAINFO=/path`); empty when given otherwise.
    public var origin: String

    public init(file: String?, directory: String? = nil, origin: String = "") {
        self.file = file
        self.directory = directory
        self.origin = origin
    }

    /// The system's set, which libgit2 trusts when none is given (Debian's bundle, built into
    /// its libgit2).
    public static let system = GitCertificateAuthorities(file: "/etc/ssl/certs/ca-certificates.crt", origin: "the system's")

    /// The variables that name a file of authorities, in the order they are read: git's first.
    public static let fileVariables = ["GIT_SSL_CAINFO", "SSL_CERT_FILE"]
    /// The variables that name a directory of authorities, git's first.
    public static let directoryVariables = ["GIT_SSL_CAPATH", "SSL_CERT_DIR"]

    /// The authorities the environment names (`GIT_SSL_CAINFO`, else `SSL_CERT_FILE`; and
    /// `GIT_SSL_CAPATH`, else `SSL_CERT_DIR`), nil when it names none: the system's then. A
    /// variable naming nothing usable is a problem, with what to do about it.
    public static func fromEnvironment(_ env: [String: String]) -> (authorities: GitCertificateAuthorities?, problem: String?) {
        func first(_ names: [String]) -> (name: String, value: String)? {
            names.lazy.compactMap { name in env[name].flatMap { $0.isEmpty ? nil : (name, $0) } }.first
        }
        let file = first(fileVariables)
        let directory = first(directoryVariables)
        guard file != nil || directory != nil else { return (nil, nil) }
        var problems: [String] = []
        var isDirectory: ObjCBool = false
        if let file, !(FileManager.default.fileExists(atPath: file.value, isDirectory: &isDirectory) && !isDirectory.boolValue) {
            problems.append("\(file.name)='\(file.value)' is not a file of certificates; point it at the PEM file of your certificate authority")
        }
        if let directory, !(FileManager.default.fileExists(atPath: directory.value, isDirectory: &isDirectory) && isDirectory.boolValue) {
            problems.append(
                "\(directory.name)='\(directory.value)' is not a directory; point it at a directory of PEM certificates, or unset it")
        }
        let origin = [file, directory].compactMap { $0.map { "\($0.name)=\($0.value)" } }.joined(separator: " and ")
        let authorities = GitCertificateAuthorities(file: file?.value, directory: directory?.value, origin: origin)
        return (authorities, problems.isEmpty ? nil : problems.joined(separator: "; "))
    }
}

/// The certificate authorities libgit2 trusts in this process, set before the first https
/// connection.
enum TLSTrust {
    /// What the process trusts once set: nil until the first https connection.
    private static let applied = Mutex<GitCertificateAuthorities?>(nil)

    /// Makes libgit2 trust `authorities` (nil: the system's), unless it already does; the
    /// problem when it cannot.
    static func use(_ authorities: GitCertificateAuthorities?, for remote: GitRemoteURL) -> String? {
        let wanted = authorities ?? .system
        return applied.withLock { current -> String? in
            if let current {
                if current == wanted { return nil }
                return
                    """
                    cannot connect to \(remote.redacted) trusting the certificate authorities of \(wanted.origin): this process\
                     already trusts those of \(current.origin), and https connections in one process share one set
                    """
            }
            // The system's set is libgit2's own default: nothing to load.
            if authorities != nil {
                let result = recsync_git_set_ssl_cert_locations(wanted.file, wanted.directory)
                if result < 0 {
                    let cause = GitError.last("git_libgit2_opts", result).message
                    return
                        """
                        cannot read the certificate authorities of \(wanted.origin): \(cause); point it at PEM\
                         certificates (a file of them, or a directory with one a file)
                        """
                }
            }
            current = wanted
            return nil
        }
    }

    /// The set libgit2 was given (the system's until an https connection set another).
    static var current: GitCertificateAuthorities { applied.withLock { $0 } ?? .system }

    /// Whether `host` (as libgit2 passes it: without brackets) is an IP address, and its bytes.
    static func address(_ host: String) -> [UInt8]? {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        var v4 = in_addr()
        if inet_pton(AF_INET, bare, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, bare, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    /// What the check of a certificate for an IP address found.
    enum Verdict: Equatable {
        case trusted
        /// Signed by a trusted authority, but for other addresses.
        case otherAddress
        /// Not trusted, with mbedTLS's words for why.
        case untrusted(String)
    }

    /// Checks a server's DER certificate for the IP address `ip` against `authorities` (by
    /// default the ones libgit2 was given).
    static func verify(certificate: UnsafeRawBufferPointer, ip: [UInt8], authorities: GitCertificateAuthorities = current) -> Verdict {
        var detail = [CChar](repeating: 0, count: 512)
        let outcome = ip.withUnsafeBufferPointer { address in
            recsync_tls_verify_ip(
                certificate.baseAddress?.assumingMemoryBound(to: UInt8.self), certificate.count, authorities.file, authorities.directory,
                address.baseAddress, address.count, &detail, detail.count)
        }
        switch outcome {
        case RECSYNC_TLS_TRUSTED: return .trusted
        case RECSYNC_TLS_OTHER_ADDRESS: return .otherAddress
        default: return .untrusted(String(decoding: detail.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
    }
}
