import ArgumentParser
import CRecSyncSys
import Dispatch
import Foundation
import RecSyncEngine
import RecSyncSubscriptions
import RecSyncModel
import RecSyncStore
import RecSyncSystem
import RecSyncWorkspace
import Synchronization

import Glibc

/// `recsync watch`: reports what changed since each subscription's cursor, then waits for
/// the store to move and reports again.
struct WatchCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Report changes your subscriptions match: those since you last looked, then new ones as they come.",
        discussion: """
            First reports what changed since each subscription's cursor, including changes made \
            while nothing was running, then waits for the store to move. For each subscription \
            a burst of changes matches, prints one JSON line (subscriptionID, kind, scope, zone, \
            count, zones; query subscriptions add records: recordName, zoneName, ownerName, \
            reason; zones and records list at most 100) and runs --exec with it on stdin and in \
            the environment (RECSYNC_SUBSCRIPTION_ID, RECSYNC_KIND, RECSYNC_SCOPE, RECSYNC_ZONE, \
            RECSYNC_COUNT, and RECSYNC_NOTIFICATION up to 64 KiB). A notification is a prompt \
            to pull, never data.

            --pull pulls the whole workspace (every zone of both databases, as 'recsync pull' \
            does) once at start and, for each burst that notifies, before its notifications; \
            with no subscription it watches both databases. A subscription's cursor moves once \
            its notification is delivered: the line written, --exec exited 0, and with --pull \
            the pull finished. Delivery is at least once: a watch killed before that reports \
            the burst again when it starts, and what could not be delivered is tried again \
            after a growing pause (per subscription). --exec runs in a process group of its \
            own; its output goes to stderr, and stopping watch stops it (its notification \
            stays pending). --once reports what is pending and exits (for cron; exit \
            status 1 if something could not be delivered). Changes this workspace pushed are \
            left out unless the subscription or --include-own says otherwise. Stops on SIGINT \
            or SIGTERM; a store that cannot be reached is retried with back-off.

            EXAMPLES
              recsync watch --pull
              recsync watch --exec 'notify-send recsync "$RECSYNC_COUNT changes"'
              recsync watch --once --json
            """)

    @OptionGroup var global: GlobalOptions
    @Option(help: "A shell command to run for each notification.") var exec: String?
    @Flag(help: "Pull the whole workspace at start and before each burst's notifications.") var pull = false
    @Flag(help: "Report what is pending since each cursor, deliver it, and exit.") var once = false
    @Flag(help: "Report changes this workspace pushed itself too.") var includeOwn = false
    @Option(help: "Milliseconds a burst must be quiet before it is reported.") var settle: Int = 200

    func validate() throws {
        if settle < 0 { throw ValidationError("--settle must be 0 or more milliseconds") }
    }

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        // First, so a SIGTERM while the store is opened stops watch cleanly too.
        // --once too: a cron job's timeout stops its --exec command's process group with it.
        let stop = StopFlag()
        stop.install()
        let engine = try context.engine()
        let console = context.console
        let exec = self.exec
        let hookStop: StopFlag? = stop
        // A --once stopped part-way delivered less than was pending: it says so as a shell does
        // for a command a signal ended (128 + the signal); what was not delivered stays pending.
        let stoppedStatus = { () -> Int32? in once && stop.requested ? 128 + stop.stoppedBy : nil }
        do throws(RecSyncError) {
            try await watch(engine, stop: stop, hookStop: hookStop, console: console, exec: exec)
        } catch {
            if let status = stoppedStatus() { return status }
            throw error
        }
        return stoppedStatus() ?? ExitCodes.success
    }

    private func watch(_ engine: SyncEngine, stop: StopFlag, hookStop: StopFlag?, console: Console, exec: String?) async throws(RecSyncError) {
        try await engine.watch(
            WatchOptions(once: once, pull: pull, includeOwn: includeOwn, settle: Double(settle) / 1000),
            shouldStop: { stop.requested },
            deliver: { n in
                if let error = Self.writeLine(n.json, command: console.command) {
                    console.warning("cannot write the notification for \(n.subscriptionID) to stdout (\(String(cString: strerror(error)))); it stays pending")
                    // EPIPE: whoever read stdout is gone, for good (SIGPIPE, which would have
                    // ended watch, was ignored by whoever started it).
                    return error == EPIPE ? .receiverGone : .failed
                }
                if let exec { return Self.run(exec, notification: n, console: console, stop: hookStop) ? .delivered : .failed }
                return .delivered
            },
            events: { Self.print($0, console) })
    }

    /// Prints what the watch did: notes and warnings on stderr (stdout is the feed).
    static func print(_ event: WatchEvent, _ console: Console) {
        switch event {
        case .storeWarning(let w): console.warning("\(w)")
        case .watching(let remote, let subscriptions):
            console.note("watching \(remote) for \(subscriptions?.joined(separator: ", ") ?? "every zone (--pull)"); stop with Ctrl-C")
        case .pulled(let report):
            console.note("pulled: \(report.recordsWritten) written, \(report.recordsDeleted) deleted" + (report.conflicts.isEmpty ? "" : ", \(report.conflicts.count) conflicts (run 'recsync status')"))
        case .pullFailed(let error, let willRetry):
            console.warning("pull failed: \(error.message)" + (willRetry ? "; the notifications stay pending" : ""))
        case .lookFailed(let error, let retry): console.warning("\(error.message); trying again in \(String(format: "%.1f", retry)) s")
        case .recovered: console.note("the store is reachable again")
        case .nothingNew(let ids): console.note("nothing new for \(ids.joined(separator: ", "))")
        case .stopped: console.note("stopped watching")
        }
    }

    /// Writes one JSON line to stdout with write(2); the errno value if it could not be
    /// written whole (a closed pipe), so the notification is not acknowledged; nil once written.
    static func writeLine(_ json: JSONValue, command: String) -> Int32? {
        var line = json
        if case .object(var o) = json {
            o["command"] = .string(command)
            line = .object(o)
        }
        return FileIO.writeFully(STDOUT_FILENO, JSON.serialize(line, pretty: false) + [10])
    }

    /// Runs --exec for one notification: the JSON line on its stdin, and in
    /// RECSYNC_NOTIFICATION when it is short enough for the environment (64 KiB); its stdout
    /// goes to stderr, out of watch's feed. Delivered only if the command exits 0; otherwise
    /// it runs again for the same notification later.
    ///
    /// Spawned here rather than with Foundation's Process, which counts a command as running
    /// while anything it started in the background still holds a descriptor: the command gets
    /// a process group of its own, so stopping watch stops all of it (SIGTERM, then SIGKILL
    /// after 2 s: `StopFlag`), and watch waits for the command alone.
    static func run(_ command: String, notification n: SubscriptionNotification, console: Console, stop: StopFlag?) -> Bool {
        let json = JSON.serialize(n.json, pretty: false) + [10]
        var env = ProcessInfo.processInfo.environment
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
            console.warning("cannot run --exec for \(n.subscriptionID): no pipe (\(String(cString: strerror(errno)))); it stays pending")
            return false
        }
        var cEnv: [UnsafeMutablePointer<CChar>?] = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for p in cEnv { free(p) } }
        var pid: Int32 = 0
        let rc = command.withCString { recsync_spawn_shell($0, &cEnv, fds[0], STDERR_FILENO, &pid) }
        close(fds[0])
        guard rc == 0 else {
            close(fds[1])
            console.warning("cannot run --exec for \(n.subscriptionID): \(String(cString: strerror(rc))); it stays pending")
            return false
        }
        stop?.child.store(pid, ordering: .relaxed)
        if stop?.requested == true { kill(-pid, SIGTERM) }
        // A command that does not read its stdin closes the pipe (EPIPE, without SIGPIPE, which
        // keeps its default for watch's own stdout): that is not a failure. One that neither
        // reads nor exits holds the write until it is stopped.
        var offset = 0
        while offset < json.count {
            let written = json[offset...].withUnsafeBytes { recsync_write_nosigpipe(fds[1], $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            if written <= 0 { break }
            offset += written
        }
        close(fds[1])
        // Wait for its exit without reaping it, so its pid cannot be handed to another process
        // while `StopFlag` may still signal it; forget it; then reap it.
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR {}
        stop?.child.store(0, ordering: .relaxed)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        if stop?.requested == true {
            console.warning("--exec was stopped with watch; the notification for \(n.subscriptionID) stays pending")
            return false
        }
        // WIFEXITED / WEXITSTATUS, which Swift does not import as functions.
        let signalled = status & 0x7F
        guard signalled == 0, (status >> 8) & 0xFF == 0 else {
            console.warning("--exec \(signalled == 0 ? "exited with status \((status >> 8) & 0xFF)" : "was killed by signal \(signalled)") for \(n.subscriptionID); the notification stays pending and is delivered again later")
            return false
        }
        return true
    }
}

/// `recsync notifications`: what is pending for each subscription, without waiting.
struct NotificationsCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "notifications",
        abstract: "Show what your subscriptions match since their cursors, and exit.",
        discussion: """
            One line per subscription with pending changes (with --json, one document). The \
            cursors stay where they are, so running it again shows the same and more, unless \
            --ack moves them past what was shown. 'recsync watch --once' delivers the same \
            notifications as watch does (JSON lines, --exec, --pull) and acknowledges them.

            EXAMPLES
              recsync notifications
              recsync notifications --ack --json
            """)

    @OptionGroup var global: GlobalOptions
    @Flag(help: "Move the cursors past what is shown.") var ack = false
    @Flag(help: "Report changes this workspace pushed itself too.") var includeOwn = false

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let console = context.console
        let round = try await context.engine().notifications(includeOwn: includeOwn, acknowledge: ack) { round throws(RecSyncError) in
            for w in round.warnings { console.warning("\(w)") }
            console.document(["notifications": .array(round.notifications.map(\.json)), "acknowledged": .bool(ack)])
            // Names come from other users of shared zones: shown with control characters escaped.
            let show = NameRules.printable
            for n in round.notifications {
                var line = "\(show(n.subscriptionID))\t\(n.reset ? "reset: anything may have changed; pull" : "\(n.count) change\(n.count == 1 ? "" : "s")")"
                if !n.zones.isEmpty {
                    line += "\tin " + n.zones.prefix(SubscriptionNotification.listLimit).map { show($0.description) }.joined(separator: ", ")
                    if n.zones.count > SubscriptionNotification.listLimit { line += " and \(n.zones.count - SubscriptionNotification.listLimit) more" }
                }
                console.out(line)
                for r in n.records { console.out("  \(r.reason.rawValue)\t\(show(r.recordID.zoneID.description))/\(show(r.recordID.recordName))") }
                if n.count > n.records.count, n.kind == "query" { console.out("  … and \(n.count - n.records.count) more") }
            }
            // What could not be printed was not seen: the cursors stay.
            if ack, Console.outputFailed {
                console.warning("cannot write the notifications to stdout")
                throw .notDelivered(round.notifications.map(\.subscriptionID))
            }
        }
        if round.notifications.isEmpty { console.info("nothing new") }
        else if !ack { console.hint("'recsync notifications --ack' moves the cursors past these") }
        return ExitCodes.success
    }
}


/// Set by SIGINT or SIGTERM.
///
/// `@unchecked`: the signal sources are only stored (once, by `install`) to keep them alive.
final class StopFlag: @unchecked Sendable {
    private let flag = Atomic<Bool>(false)
    private let received = Atomic<Int32>(0)
    /// The signal that asked watch to stop (SIGINT or SIGTERM), 0 before any.
    var stoppedBy: Int32 { received.load(ordering: .relaxed) }
    /// The --exec command running now (0: none): stopped with watch.
    let child = Atomic<Int32>(0)
    private var sources: [DispatchSourceSignal] = []

    var requested: Bool { flag.load(ordering: .relaxed) }

    /// Stops watch as SIGINT or SIGTERM would, between notifications.
    func request() { flag.store(true, ordering: .relaxed) }

    func install() {
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { [self] in
                received.store(sig, ordering: .relaxed)
                flag.store(true, ordering: .relaxed)
                let pid = child.load(ordering: .relaxed)
                guard pid > 0 else { return }
                // The command's whole process group (`WatchCommand.run`).
                kill(-pid, SIGTERM)
                DispatchQueue.global().asyncAfter(deadline: .now() + 2) { [self] in
                    if child.load(ordering: .relaxed) == pid { kill(-pid, SIGKILL) }
                }
            }
            source.resume()
            sources.append(source)
        }
    }
}
