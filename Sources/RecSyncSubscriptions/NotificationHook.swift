import CRecSyncSys
import Dispatch
import Foundation
import Glibc
import RecSyncModel
import RecSyncSystem
import RecSyncWorkspace
import Synchronization

/// A stop asked for by SIGINT or SIGTERM (`install`) or by `request`, and the hook command
/// running now, which a stop stops with it: SIGTERM to its process group, then SIGKILL after
/// two seconds.
///
/// `@unchecked`: the signal sources are only stored (once, by `install`) to keep them alive.
public final class StopSignal: @unchecked Sendable {
    private let flag = Atomic<Bool>(false)
    private let received = Atomic<Int32>(0)
    /// The process group of the hook running now (0: none).
    let child = Atomic<Int32>(0)
    private var sources: [DispatchSourceSignal] = []

    public init() {}

    /// The signal that asked for the stop (SIGINT or SIGTERM), 0 before any or after `request`.
    public var stoppedBy: Int32 { received.load(ordering: .relaxed) }

    /// Whether a stop was asked for.
    public var requested: Bool { flag.load(ordering: .relaxed) }

    /// Asks for a stop as SIGINT or SIGTERM would, and stops the running hook.
    public func request() {
        flag.store(true, ordering: .relaxed)
        stopChild()
    }

    /// Takes SIGINT and SIGTERM from their default (ending the process) to asking for a stop.
    public func install() {
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { [self] in
                received.store(sig, ordering: .relaxed)
                flag.store(true, ordering: .relaxed)
                stopChild()
            }
            source.resume()
            sources.append(source)
        }
    }

    func stopChild() {
        let pid = child.load(ordering: .relaxed)
        guard pid > 0 else { return }
        kill(-pid, SIGTERM)
        DispatchQueue.global().asyncAfter(deadline: .now() + 2) { [self] in
            if child.load(ordering: .relaxed) == pid { kill(-pid, SIGKILL) }
        }
    }
}

/// A shell command run for each subscription notification (`recsync watch --exec`): the
/// notification's JSON line on its stdin, and in `RECSYNC_NOTIFICATION` when it is short
/// enough for the environment (64 KiB), with `RECSYNC_SUBSCRIPTION_ID`, `RECSYNC_KIND`,
/// `RECSYNC_SCOPE`, `RECSYNC_ZONE` and `RECSYNC_COUNT`. Its stdout goes to `output` (watch
/// passes its stderr, out of its own feed).
///
/// Spawned here rather than with Foundation's `Process`, which counts a command as running
/// while anything it started in the background still holds a descriptor: the command gets a
/// process group of its own, so a stop stops all of it, and the run waits for the command
/// alone.
public struct NotificationHook: Sendable {
    /// How one run ended.
    public enum Outcome: Sendable, Hashable {
        /// It exited 0: the notification is delivered.
        case delivered
        /// It could not be started (no pipe, no process): the reason.
        case notStarted(String)
        /// It ran, but its exit status could not be read: the reason. Not a delivery.
        case exitUnknown(String)
        /// It exited with this non-zero status.
        case exited(Int32)
        /// A signal killed it.
        case killed(signal: Int32)
        /// It was stopped with the stop it ran under.
        case stopped
    }

    public var command: String
    /// Where the command's stdout goes.
    public var output: Int32
    /// The environment it runs in, before the notification's variables.
    public var environment: [String: String]

    public init(command: String, output: Int32 = STDERR_FILENO, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.command = command
        self.output = output
        self.environment = environment
    }

    /// Runs the command for one notification and waits for it; a `stop` requested meanwhile
    /// stops it (its notification then stays pending).
    public func run(for n: SubscriptionNotification, stop: StopSignal? = nil) -> Outcome {
        let json = JSON.serialize(n.json, pretty: false) + [10]
        var env = environment
        env["RECSYNC_SUBSCRIPTION_ID"] = n.subscriptionID
        env["RECSYNC_KIND"] = n.kind
        env["RECSYNC_SCOPE"] = n.scope.rawValue
        env["RECSYNC_ZONE"] = n.zone?.description ?? ""
        env["RECSYNC_COUNT"] = String(n.count)
        env["RECSYNC_NOTIFICATION"] = json.count <= 64 * 1024 ? String(decoding: json.dropLast(), as: UTF8.self) : nil
        // Both ends close-on-exec: the command gets the read end as its stdin (dup2 clears the
        // flag there) and no second copy of it.
        var fds: [Int32] = [0, 0]
        guard recsync_pipe_cloexec(&fds) == 0 else {
            return .notStarted("no pipe (\(String(cString: strerror(errno))))")
        }
        var cEnv: [UnsafeMutablePointer<CChar>?] = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for p in cEnv { free(p) } }
        var pid: Int32 = 0
        let rc = command.withCString { recsync_spawn_shell($0, &cEnv, fds[0], output, &pid) }
        close(fds[0])
        guard rc == 0 else {
            close(fds[1])
            return .notStarted(String(cString: strerror(rc)))
        }
        stop?.child.store(pid, ordering: .relaxed)
        // A stop that came before the command was known: stopped as the stop would have.
        if stop?.requested == true { stop?.stopChild() }
        // A command that does not read its stdin closes the pipe (EPIPE, without SIGPIPE, which
        // keeps its default for the caller's own stdout): that is not a failure. One that
        // neither reads nor exits holds the write until it is stopped.
        var offset = 0
        while offset < json.count {
            let written = json[offset...].withUnsafeBytes { buffer in
                Syscall.attempt { recsync_write_nosigpipe(fds[1], buffer.baseAddress, buffer.count) }
            }
            guard case .success(let n) = written, n > 0 else { break }
            offset += n
        }
        close(fds[1])
        // Wait for its exit without reaping it, so its pid cannot be handed to another process
        // while the stop may still signal it; forget it; then reap it.
        var info = siginfo_t()
        _ = Syscall.attempt { waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) }
        stop?.child.store(0, ordering: .relaxed)
        var status: Int32 = 0
        let reaped = Syscall.attempt { waitpid(pid, &status, 0) }
        if stop?.requested == true { return .stopped }
        // Its exit status is what delivers the notification: one that cannot be read (an app
        // that reaps children itself, or ignores SIGCHLD) is not taken for a success.
        if case .failure(let failure) = reaped {
            return .exitUnknown("waitpid: \(String(cString: strerror(failure.code)))")
        }
        // WIFEXITED / WEXITSTATUS, which Swift does not import as functions.
        let signalled = status & 0x7F
        if signalled != 0 { return .killed(signal: signalled) }
        let exitStatus = (status >> 8) & 0xFF
        return exitStatus == 0 ? .delivered : .exited(exitStatus)
    }
}
