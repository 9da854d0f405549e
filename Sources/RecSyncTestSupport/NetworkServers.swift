import CRecSyncSys
import Foundation
import Glibc
import Synchronization

/// A server a test cannot run here (a program is missing), with the reason to print.
public struct ServerUnavailable: Error, CustomStringConvertible {
    public let reason: String
    public var description: String { reason }
}

/// A server process started in its own process group, so that stopping it also stops every
/// child it forked (connection handlers, hooks): the way a crashed or killed host goes away.
final class ServerProcess: Sendable {
    let pid: pid_t

    init(_ executable: String, _ arguments: [String], log: String, environment: [String: String]) throws {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
        posix_spawnattr_setpgroup(&attributes, 0)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Nothing else of the test process: a server holding the write end of a pipe another
        // test reads to its end (a `recsync put`'s stdin) would keep that test waiting for ever.
        recsync_spawn_close_from(&actions, 3)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var child: pid_t = 0
        let result = posix_spawn(&child, executable, &actions, &attributes, argv, envp)
        guard result == 0 else { throw ServerUnavailable(reason: "cannot start \(executable): \(String(cString: strerror(result)))") }
        pid = child
    }

    /// Kills the whole process group at once (SIGKILL: no clean shutdown) and reaps the leader.
    func kill() {
        _ = Glibc.kill(-pid, SIGKILL)
        var status: Int32 = 0
        _ = waitpid(pid, &status, 0)
    }
}

/// Loopback TCP helpers for test servers.
public enum Loopback {
    /// A port that was free a moment ago.
    public static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        _ = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether something accepts connections on 127.0.0.1:port.
    public static func isListening(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    /// Waits until 127.0.0.1:port accepts connections (at most `seconds`).
    static func waitUntilListening(_ port: Int, seconds: Double = 10, what: String, log: String) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while !isListening(port) {
            guard Date() < deadline else {
                let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
                throw ServerUnavailable(reason: "\(what) did not start listening on port \(port): \(output)")
            }
            usleep(20_000)
        }
    }
}

/// `git daemon` serving every repository under a directory on 127.0.0.1, pushes enabled.
public final class GitDaemon: Sendable {
    public let basePath: String
    public let port: Int
    private let process: Mutex<ServerProcess?>
    private let log: String
    private let environment: [String: String]

    /// Starts serving `basePath` on a free port. `environment` is the daemon's and that of
    /// the git programs it runs for each connection (a test's `GIT_CONFIG_GLOBAL` sets
    /// what only a user's configuration may, such as `uploadpack.packObjectsHook`).
    public init(basePath: String, environment: [String: String] = GitCLI.hermeticEnvironment) throws {
        self.basePath = basePath
        port = Loopback.freePort()
        log = "\(basePath)/../git-daemon-\(port).log"
        process = Mutex(nil)
        self.environment = environment
        try start()
    }

    /// The connections the daemon has accepted so far (each fetch, push or `ls-remote` is
    /// one), from its `--verbose` log: what a test counts round trips by.
    public var connectionsAccepted: Int {
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        return text.components(separatedBy: "\n").filter { $0.contains("Connection from") }.count
    }

    /// The git:// address of a repository under the base path.
    public func url(_ repository: String) -> String { "git://127.0.0.1:\(port)/\(repository)" }

    /// (Re)starts the daemon on the same port (retrying while the old one lets go of it).
    public func start() throws {
        var attempt = 0
        while true {
            let server = try ServerProcess(
                "/usr/bin/git",
                [
                    "daemon", "--verbose", "--reuseaddr", "--base-path=\(basePath)", "--export-all", "--enable=receive-pack",
                    "--listen=127.0.0.1", "--port=\(port)", basePath,
                ], log: log, environment: environment)
            process.withLock { $0 = server }
            do {
                try Loopback.waitUntilListening(port, seconds: 4, what: "git daemon", log: log)
                return
            } catch {
                attempt += 1
                server.kill()
                if attempt >= 5 { throw error }
                usleep(500_000)
            }
        }
    }

    /// Kills the daemon and everything it forked (connections in flight die mid-transfer).
    public func stop() {
        let server = process.withLock { p -> ServerProcess? in
            defer { p = nil }
            return p
        }
        server?.kill()
    }

    deinit { stop() }
}

/// An OpenSSH server on 127.0.0.1 for one test: a generated host key, a generated client key
/// (authorized), and a known_hosts line for the host key. Everything lives in one directory.
public final class SSHServer: Sendable {
    public let port: Int
    /// The user the client logs in as (the user running the tests).
    public let user: String
    /// The client's ssh directory: `id_ed25519` and `id_ed25519.pub`, authorized on the server.
    public let clientSSHDirectory: String
    /// A known_hosts line for this server's host key.
    public let knownHostsLine: String
    private let process: ServerProcess

    /// Starts sshd; throws `ServerUnavailable` (with the reason) when it cannot run here.
    public init(directory: String) throws {
        let sshd = "/usr/sbin/sshd"
        guard FileManager.default.isExecutableFile(atPath: sshd), FileManager.default.isExecutableFile(atPath: "/usr/bin/ssh-keygen") else {
            throw ServerUnavailable(reason: "\(sshd) is not installed (apt-get install openssh-server)")
        }
        // As root, sshd wants its privilege-separation directory (the package's service creates it).
        if geteuid() == 0 && !FileManager.default.fileExists(atPath: "/run/sshd") {
            do {
                try FileManager.default.createDirectory(
                    atPath: "/run/sshd", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
            } catch {
                throw ServerUnavailable(reason: "sshd needs /run/sshd and it cannot be created: \(error)")
            }
        }
        let dir = "\(directory)/sshd"
        clientSSHDirectory = "\(directory)/client-ssh"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: clientSSHDirectory, withIntermediateDirectories: true)
        _ = try Subprocess.run("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "recsync-test-host", "-f", "\(dir)/host_key"], in: dir)
        _ = try Subprocess.run(
            "/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "recsync-test-client", "-f", "\(clientSSHDirectory)/id_ed25519"], in: dir)
        try FileManager.default.copyItem(atPath: "\(clientSSHDirectory)/id_ed25519.pub", toPath: "\(dir)/authorized_keys")
        port = Loopback.freePort()
        user = GitNetworkLogin.name
        let hostKey = try String(contentsOfFile: "\(dir)/host_key.pub", encoding: .utf8).split(separator: " ").prefix(2).joined(separator: " ")
        knownHostsLine = "[127.0.0.1]:\(port) \(hostKey)"
        let config = """
            Port \(port)
            ListenAddress 127.0.0.1
            HostKey \(dir)/host_key
            AuthorizedKeysFile \(dir)/authorized_keys
            PidFile \(dir)/sshd.pid
            StrictModes no
            UsePAM no
            PasswordAuthentication no
            KbdInteractiveAuthentication no
            PubkeyAuthentication yes
            PermitRootLogin prohibit-password
            """
        try config.write(toFile: "\(dir)/sshd_config", atomically: true, encoding: .utf8)
        let log = "\(dir)/sshd.log"
        process = try ServerProcess(sshd, ["-D", "-e", "-f", "\(dir)/sshd_config"], log: log, environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"])
        do { try Loopback.waitUntilListening(port, what: "sshd", log: log) } catch {
            process.kill()
            throw error
        }
    }

    /// The ssh:// address of a repository at an absolute path on this host.
    public func url(_ absolutePath: String) -> String { "ssh://\(user)@127.0.0.1:\(port)\(absolutePath)" }

    deinit { process.kill() }
}

/// The login name of the user running the tests.
enum GitNetworkLogin {
    static var name: String {
        if let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name { return String(cString: name) }
        return ProcessInfo.processInfo.environment["USER"] ?? "root"
    }
}

/// An HTTP server that refuses every request with `401 Basic` and records the Authorization
/// headers it was sent: enough to watch how credentials are offered, and that they are not
/// offered in a loop. With `hangWhenAuthorized`, a request that carries credentials gets no
/// answer at all: a server that hangs after the client authenticated. Such a connection is
/// closed after 20 s (or with the server), so that a client with no time limit of its own
/// fails then instead of hanging the test run.
public final class HTTPAuthRefuser: Sendable {
    public let port: Int
    private let listener: Int32
    private let recorder = Recorder()

    private final class Recorder: Sendable {
        let seen = Mutex<[String?]>([])
        /// Connections left unanswered, closed with the server.
        let held = Mutex<[Int32]>([])

        /// Closes an unanswered connection, if the server has not already.
        func hangUp(_ client: Int32) {
            held.withLock { open in
                guard let i = open.firstIndex(of: client) else { return }
                close(open.remove(at: i))
            }
        }
    }

    public init(hangWhenAuthorized: Bool = false) throws {
        let (fd, port) = try loopbackListener(backlog: 16)
        self.port = port
        listener = fd
        let recorder = recorder
        let server = Thread {
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 { return }
                var request = [UInt8]()
                var buffer = [UInt8](repeating: 0, count: 4096)
                while !request.ends(with: Array("\r\n\r\n".utf8)) {
                    let n = read(client, &buffer, buffer.count)
                    if n <= 0 { break }
                    request += buffer[0..<n]
                }
                let text = String(decoding: request, as: UTF8.self)
                let auth = text.split(separator: "\r\n").first { $0.lowercased().hasPrefix("authorization:") }.map(String.init)
                recorder.seen.withLock { $0.append(auth) }
                if hangWhenAuthorized && auth != nil {
                    recorder.held.withLock { $0.append(client) }
                    Thread.detachNewThread {
                        usleep(20_000_000)
                        recorder.hangUp(client)
                    }
                    continue
                }
                let response =
                    "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"recsync-test\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                _ = response.withCString { write(client, $0, strlen($0)) }
                close(client)
            }
        }
        server.start()
    }

    /// The Authorization header of each request so far (nil: the request had none).
    public var authorizations: [String?] { recorder.seen.withLock { $0 } }

    public func url(_ path: String) -> String { "http://127.0.0.1:\(port)/\(path)" }

    deinit {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        recorder.held.withLock { open in
            open.forEach { close($0) }
            open = []
        }
    }
}

extension Array where Element == UInt8 {
    fileprivate func ends(with suffix: [UInt8]) -> Bool {
        count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix
    }
}

/// A listening socket on 127.0.0.1 (any free port), closed on deinit.
private func loopbackListener(backlog: Int32) throws -> (fd: Int32, port: Int) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw ServerUnavailable(reason: "cannot make a socket: \(String(cString: strerror(errno)))") }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { p in p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
    guard bound == 0, listen(fd, backlog) == 0 else {
        close(fd)
        throw ServerUnavailable(reason: "cannot listen on 127.0.0.1: \(String(cString: strerror(errno)))")
    }
    _ = withUnsafeMutablePointer(to: &address) { p in p.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
    return (fd, Int(UInt16(bigEndian: address.sin_port)))
}

/// A non-blocking connect to 127.0.0.1:port; the socket, and whether it connected within
/// `seconds`.
private func loopbackConnect(_ port: Int, within seconds: Double) -> (fd: Int32, connected: Bool) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return (fd, false) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    let result = withUnsafePointer(to: &address) { p in
        p.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    if result == 0 { return (fd, true) }
    guard errno == EINPROGRESS else { return (fd, false) }
    var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
    guard poll(&p, 1, Int32(seconds * 1000)) == 1 else { return (fd, false) }
    var error: Int32 = 0
    var length = socklen_t(MemoryLayout<Int32>.size)
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
    return (fd, error == 0)
}

/// A server on 127.0.0.1 that accepts every connection and never says a word: a hung server,
/// or a port that is not the git or ssh server it was taken for.
///
/// After `hangUpAfter` seconds it closes every connection and stops listening, so that a
/// client with no time limit of its own fails then, instead of hanging the test run.
public final class SilentServer: Sendable {
    public let port: Int
    private let sockets: Sockets

    /// The listener and the connections it accepted; nil once closed. A class of its own so
    /// the accepting thread does not keep the server alive.
    private final class Sockets: Sendable {
        let held: Mutex<(listener: Int32, accepted: [Int32])?>
        let count = Atomic<Int>(0)
        init(listener: Int32) { held = Mutex((listener, [])) }

        func close() {
            held.withLock { h in
                guard let open = h else { return }
                open.accepted.forEach { Glibc.close($0) }
                Glibc.close(open.listener)
                h = nil
            }
        }
    }

    public init(hangUpAfter seconds: Double = 20) throws {
        let (fd, port) = try loopbackListener(backlog: 16)
        self.port = port
        let sockets = Sockets(listener: fd)
        self.sockets = sockets
        let deadline = Date().addingTimeInterval(seconds)
        Thread.detachNewThread {
            while Date() < deadline {
                let open = sockets.held.withLock { h -> Bool in
                    guard let listener = h?.listener else { return false }
                    var p = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
                    if poll(&p, 1, 0) == 1 {
                        let client = accept(listener, nil, nil)
                        if client >= 0 {
                            h?.accepted.append(client)
                            sockets.count.add(1, ordering: .relaxed)
                        }
                    }
                    return true
                }
                if !open { return }
                usleep(20_000)
            }
            sockets.close()
        }
    }

    /// How many connections it has accepted.
    public var connections: Int { sockets.count.load(ordering: .relaxed) }

    /// Hangs up every connection and stops listening.
    public func stop() { sockets.close() }

    public func url(_ scheme: String, _ path: String) -> String { "\(scheme)://127.0.0.1:\(port)/\(path)" }

    deinit { stop() }
}

/// A port on 127.0.0.1 where a connection is never accepted nor refused: the listener's
/// accept queue is full (and nobody accepts), so Linux drops new connection requests (SYNs)
/// the way a firewall that drops packets, or a host gone off the network, does. The client's
/// connect waits for an answer that does not come.
///
/// This stands in for an unreachable host, which loopback cannot have without firewall
/// rules. Creation checks that the kernel really drops: it throws `ServerUnavailable` where
/// it answers instead. After `giveUpAfter` seconds it closes, so a client without a time
/// limit is then refused (on its next SYN retransmission) instead of hanging the test run.
public final class UnansweredPort: Sendable {
    public let port: Int
    private let sockets: Sockets

    /// The listener and the connections that fill its queue; nil once closed.
    private final class Sockets: Sendable {
        let held: Mutex<[Int32]?>
        init(_ fds: [Int32]) { held = Mutex(fds) }

        func close() {
            held.withLock { h in
                h?.forEach { Glibc.close($0) }
                h = nil
            }
        }
    }

    public init(giveUpAfter seconds: Double = 20) throws {
        let (fd, port) = try loopbackListener(backlog: 0)
        self.port = port
        var held = [fd]
        // Connections that fill the accept queue (with a backlog of 0, Linux queues one), up
        // to the first that the kernel leaves unanswered.
        var dropping = false
        for _ in 0..<8 {
            let (client, connected) = loopbackConnect(port, within: 0.3)
            held.append(client)
            if !connected {
                dropping = true
                break
            }
        }
        guard dropping else {
            held.forEach { Glibc.close($0) }
            throw ServerUnavailable(
                reason: "this kernel answers connections to a full accept queue, so a host that drops packets cannot be imitated on 127.0.0.1")
        }
        let sockets = Sockets(held)
        self.sockets = sockets
        Thread.detachNewThread {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline, sockets.held.withLock({ $0 != nil }) { usleep(50_000) }
            sockets.close()
        }
    }

    public func url(_ scheme: String, _ path: String) -> String { "\(scheme)://127.0.0.1:\(port)/\(path)" }

    /// Closes the listener and the connections that filled its queue.
    public func close() { sockets.close() }

    deinit { close() }
}
