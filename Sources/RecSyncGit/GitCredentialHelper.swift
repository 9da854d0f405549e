import Foundation

/// git's credential helpers, through `git credential fill|approve|reject` (the documented
/// helper protocol): libgit2 does not run helpers itself.
struct GitCredentialHelper {
    /// A credential a helper gave, with every attribute it sent (handed back on approve/reject).
    struct Credential {
        var username: String
        var password: GitSecret
        var attributes: [(String, String)]
    }

    let options: GitNetworkOptions

    /// Asks the helpers (or, on a terminal, the user) for a credential; nil if there is none.
    func fill(_ remote: GitRemoteURL) -> Credential? {
        var request = location(remote)
        if let user = remote.user, remote.password == nil { request.append(("username", user)) }
        guard let output = run("fill", request) else { return nil }
        var attributes: [(String, String)] = []
        for line in output.split(separator: "\n") {
            guard let eq = line.firstIndex(of: "=") else { continue }
            attributes.append((String(line[..<eq]), String(line[line.index(after: eq)...])))
        }
        guard let username = attributes.last(where: { $0.0 == "username" })?.1,
            let password = attributes.last(where: { $0.0 == "password" })?.1
        else { return nil }
        return Credential(username: username, password: GitSecret(password), attributes: attributes)
    }

    /// Tells the helpers the credential worked (they may store it).
    func approve(_ credential: Credential) { _ = run("approve", credential.attributes) }

    /// Tells the helpers the credential was refused (they forget it).
    func reject(_ credential: Credential) { _ = run("reject", credential.attributes) }

    /// Tells the helpers that `username` and `password` are the credential for `remote` (a
    /// password given in an address, which recsync does not keep); false if git could not run.
    func approve(for remote: GitRemoteURL, username: String, password: GitSecret) -> Bool {
        run("approve", location(remote) + [("username", username), ("password", password.value)]) != nil
    }

    /// The attributes naming where a credential is for: protocol, host and path.
    private func location(_ remote: GitRemoteURL) -> [(String, String)] {
        var attributes = [("protocol", remote.transport.rawValue), ("host", hostField(remote))]
        let path = remote.path.hasPrefix("/") ? String(remote.path.dropFirst()) : remote.path
        if !path.isEmpty { attributes.append(("path", path)) }
        return attributes
    }

    private func hostField(_ remote: GitRemoteURL) -> String {
        let host = remote.host.contains(":") ? "[\(remote.host)]" : remote.host
        return remote.port.map { "\(host):\($0)" } ?? host
    }

    /// Runs `git credential <action>` with the attributes on stdin; its stdout, or nil on failure.
    private func run(_ action: String, _ attributes: [(String, String)]) -> String? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: options.gitExecutable)
        process.arguments = ["credential", action]
        var environment = options.credentialHelperEnvironment ?? ProcessInfo.processInfo.environment
        // Without a terminal a prompt would fail anyway; say so instead of waiting.
        if isatty(STDIN_FILENO) == 0 { environment["GIT_TERMINAL_PROMPT"] = "0" }
        process.environment = environment
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return nil }
        var text = ""
        for (key, value) in attributes where !value.contains("\n") && !key.contains("=") { text += "\(key)=\(value)\n" }
        text += "\n"
        try? input.fileHandleForWriting.write(contentsOf: Data(text.utf8))
        try? input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        return String(decoding: data, as: UTF8.self)
    }
}
