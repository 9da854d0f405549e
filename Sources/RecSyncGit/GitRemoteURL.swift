import RecSyncModel

/// The address of a network git remote, parsed the way git reads it.
///
/// Accepts `ssh://`, `git+ssh://`, `ssh+git://`, `git://`, `http://`, `https://`, `file://` URLs
/// and the scp-like `[user@]host:path`. A plain path (anything with a slash before its first
/// colon, or no colon at all) is not a remote: it is a local store. `redacted` is the form to
/// show users: it never carries a password or token.
public struct GitRemoteURL: Sendable, Hashable, CustomStringConvertible {
    public enum Transport: String, Sendable, Hashable {
        case ssh, git, http, https, file
    }

    /// The address exactly as given; handed to libgit2, never shown (it may carry a secret).
    public let url: String
    public let transport: Transport
    /// The user named in the address, if any (for http(s) this may be a token: never shown).
    public let user: String?
    /// The password in the address, if any.
    let password: String?
    /// Host name or address, without brackets; empty for `file://`.
    public let host: String
    /// The port given in the address, nil for the transport's default.
    public let port: Int?
    /// The path on the host (for `file://`, the local path).
    public let path: String

    public init?(_ string: String) {
        url = string
        if let schemeEnd = string.range(of: "://") {
            let scheme = string[..<schemeEnd.lowerBound].lowercased()
            switch scheme {
            case "ssh", "git+ssh", "ssh+git": transport = .ssh
            case "git": transport = .git
            case "http": transport = .http
            case "https": transport = .https
            case "file": transport = .file
            default: return nil
            }
            let rest = string[schemeEnd.upperBound...]
            if transport == .file {
                // file:///abs/path or file://localhost/abs/path
                guard let slash = rest.firstIndex(of: "/") else { return nil }
                let authority = rest[..<slash]
                guard authority.isEmpty || authority == "localhost" else { return nil }
                (user, password, host, port, path) = (nil, nil, "", nil, String(rest[slash...]))
                return
            }
            let slash = rest.firstIndex(of: "/") ?? rest.endIndex
            var authority = rest[..<slash]
            path = slash == rest.endIndex ? "/" : String(rest[slash...])
            if let at = authority.lastIndex(of: "@") {
                let info = authority[..<at]
                authority = authority[authority.index(after: at)...]
                if let colon = info.firstIndex(of: ":") {
                    user = Self.percentDecoded(info[..<colon])
                    password = Self.percentDecoded(info[info.index(after: colon)...])
                } else {
                    user = Self.percentDecoded(info)
                    password = nil
                }
            } else {
                (user, password) = (nil, nil)
            }
            guard let (h, p) = Self.hostAndPort(authority) else { return nil }
            (host, port) = (h, p)
        } else {
            // scp-like: [user@]host:path, where no slash comes before the first colon.
            guard let colon = Self.scpColon(string) else { return nil }
            var authority = string[..<colon]
            path = String(string[string.index(after: colon)...])
            transport = .ssh
            password = nil
            port = nil
            if let at = authority.lastIndex(of: "@") {
                user = String(authority[..<at])
                authority = authority[authority.index(after: at)...]
            } else {
                user = nil
            }
            if authority.hasPrefix("[") && authority.hasSuffix("]") {
                host = String(authority.dropFirst().dropLast())
            } else {
                host = String(authority)
            }
            guard !path.isEmpty else { return nil }
        }
        guard !host.isEmpty else { return nil }
    }

    /// Whether `string` names a network remote (or a `file://` URL) rather than a local path.
    public static func isRemote(_ string: String) -> Bool { GitRemoteURL(string) != nil }

    /// The port the connection goes to.
    public var effectivePort: Int? {
        if let port { return port }
        switch transport {
        case .ssh: return 22
        case .git: return 9418
        case .http: return 80
        case .https: return 443
        case .file: return nil
        }
    }

    /// The address without any secret: http(s) loses its whole user part (it may be a token),
    /// ssh keeps the user name.
    /// A query string in the address (`?token=…`) is a secret as a password is: it is shown
    /// as `?…`.
    public var redacted: String {
        let hostPart = host.contains(":") ? "[\(host)]" : host
        let portPart = port.map { ":\($0)" } ?? ""
        let path = query == nil ? self.path : String(self.path[..<(self.path.firstIndex(of: "?") ?? self.path.endIndex)]) + "?…"
        switch transport {
        case .file:
            return "file://\(path)"
        case .http, .https:
            return "\(transport.rawValue)://\(hostPart)\(portPart)\(path)"
        case .git:
            return "git://\(hostPart)\(portPart)\(path)"
        case .ssh:
            let userPart = user.map { "\($0)@" } ?? ""
            if url.contains("://") { return "ssh://\(userPart)\(hostPart)\(portPart)\(path)" }
            return "\(userPart)\(hostPart):\(path)"
        }
    }

    public var description: String { redacted }

    /// `string` without the password of a `scheme://user:password@host/…` address (the user
    /// name stays): the form a workspace may keep on disk or print. Anything else, even an
    /// address recsync cannot parse, comes back unchanged apart from that password.
    public static func withoutPassword(_ string: String) -> String { RemoteAddress.withoutPassword(string) }

    /// `string` as a message may show it: without a password (`withoutPassword`), and with a
    /// query string (`?token=…`, a secret too) shown as `?…`.
    public static func shown(_ string: String) -> String {
        let kept = withoutPassword(string)
        guard kept.contains("://"), let mark = kept.firstIndex(of: "?"), kept.index(after: mark) < kept.endIndex else { return kept }
        return String(kept[...mark]) + "…"
    }

    /// Whether the address carries a password (`scheme://user:password@host/…`).
    public var hasPassword: Bool { password != nil }

    /// The user name and password the address carries, handed to git's credential helpers
    /// (`git credential approve`) so that a workspace keeping only `withoutPassword` still
    /// authenticates; false when the address has no password or no helper could be run.
    @discardableResult
    public func approveCredentials(options: GitNetworkOptions) -> Bool {
        guard let user, let password, !user.isEmpty else { return false }
        return GitCredentialHelper(options: options).approve(for: self, username: user, password: GitSecret(password))
    }

    /// The query string of a network address (after `?`, without it), nil if it has none.
    var query: String? {
        guard transport != .file, let mark = path.firstIndex(of: "?") else { return nil }
        let query = path[path.index(after: mark)...]
        return query.isEmpty ? nil : String(query)
    }

    /// The secrets in the address, to scrub from any message that might echo them.
    var secrets: [String] {
        var result: [String] = []
        if let query { result.append(query) }
        if let password, !password.isEmpty { result.append(password) }
        if transport == .http || transport == .https, let user, !user.isEmpty, password == nil { result.append(user) }
        return result
    }

    private static func scpColon(_ string: String) -> String.Index? {
        guard let colon = string.firstIndex(of: ":") else { return nil }
        let before = string[..<colon]
        if before.isEmpty || before.contains("/") { return nil }
        // A bracketed host ([::1]:path) carries colons of its own.
        if before.contains("[") {
            guard let close = string.firstIndex(of: "]"), let after = string.index(close, offsetBy: 1, limitedBy: string.endIndex),
                after < string.endIndex, string[after] == ":"
            else { return nil }
            return after
        }
        return colon
    }

    private static func hostAndPort(_ authority: Substring) -> (String, Int?)? {
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            let host = String(authority[authority.index(after: authority.startIndex)..<close])
            let rest = authority[authority.index(after: close)...]
            if rest.isEmpty { return (host, nil) }
            guard rest.hasPrefix(":"), let port = Int(rest.dropFirst()), (1...65535).contains(port) else { return nil }
            return (host, port)
        }
        if let colon = authority.lastIndex(of: ":") {
            let portText = authority[authority.index(after: colon)...]
            if portText.isEmpty { return (String(authority[..<colon]), nil) }
            guard let port = Int(portText), (1...65535).contains(port) else { return nil }
            return (String(authority[..<colon]), port)
        }
        return (String(authority), nil)
    }

    private static func percentDecoded(_ text: Substring) -> String {
        guard text.contains("%") else { return String(text) }
        let input = Array(text.utf8)
        var bytes: [UInt8] = []
        var i = 0
        while i < input.count {
            if input[i] == UInt8(ascii: "%"), i + 2 < input.count,
                let value = UInt8(String(decoding: input[(i + 1)...(i + 2)], as: UTF8.self), radix: 16)
            {
                bytes.append(value)
                i += 3
            } else {
                bytes.append(input[i])
                i += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
