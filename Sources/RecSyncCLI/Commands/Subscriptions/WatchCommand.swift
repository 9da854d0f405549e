import ArgumentParser
import Foundation
import RecSyncEngine
import RecSyncModel
import RecSyncStore
import RecSyncSubscriptions
import RecSyncSystem
import RecSyncWorkspace
import Synchronization

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
        let stop = StopSignal()
        stop.install()
        let engine = try context.engine()
        let console = context.console
        let exec = self.exec
        let hookStop: StopSignal? = stop
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

    private func watch(_ engine: SyncEngine, stop: StopSignal, hookStop: StopSignal?, console: Console, exec: String?) async throws(RecSyncError) {
        try await engine.watch(
            WatchOptions(once: once, pull: pull, includeOwn: includeOwn, settle: Double(settle) / 1000),
            shouldStop: { stop.requested },
            deliver: { n in
                if let error = Self.writeLine(n.json, command: console.command) {
                    console.warning(
                        "cannot write the notification for \(n.subscriptionID) to stdout (\(StandardStream.describe(error))); it stays pending")
                    // EPIPE: whoever read stdout is gone, for good (SIGPIPE, which would have
                    // ended watch, was ignored by whoever started it).
                    return error == EPIPE ? .receiverGone : .failed
                }
                if let exec { return Self.runHook(exec, for: n, console: console, stop: hookStop) ? .delivered : .failed }
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
            console.note(
                "pulled: \(report.recordsWritten) written, \(report.recordsDeleted) deleted"
                    + (report.conflicts.isEmpty ? "" : ", \(report.conflicts.count) conflicts (run 'recsync status')"))
        case .pullFailed(let error, let willRetry):
            console.warning("pull failed: \(error.message)" + (willRetry ? "; the notifications stay pending" : ""))
        case .lookFailed(let error, let retry): console.warning("\(error.message); trying again in \(String(format: "%.1f", retry)) s")
        case .recovered: console.note("the store is reachable again")
        case .nothingNew(let ids): console.note("nothing new for \(ids.joined(separator: ", "))")
        case .stopped: console.note("stopped watching")
        }
    }

    /// Runs --exec for one notification (`NotificationHook`), saying why when it did not
    /// deliver it: it then runs again for the same notification later.
    static func runHook(_ command: String, for n: SubscriptionNotification, console: Console, stop: StopSignal?) -> Bool {
        switch NotificationHook(command: command).run(for: n, stop: stop) {
        case .delivered:
            return true
        case .notStarted(let reason):
            console.warning("cannot run --exec for \(n.subscriptionID): \(reason); it stays pending")
        case .stopped:
            console.warning("--exec was stopped with watch; the notification for \(n.subscriptionID) stays pending")
        case .exitUnknown(let reason):
            console.warning("--exec ran for \(n.subscriptionID), but its exit status could not be read (\(reason)); it stays pending")
        case .exited(let status):
            console.warning(
                "--exec exited with status \(status) for \(n.subscriptionID); the notification stays pending and is delivered again later")
        case .killed(let signal):
            console.warning(
                "--exec was killed by signal \(signal) for \(n.subscriptionID); the notification stays pending and is delivered again later")
        }
        return false
    }

    /// Writes one JSON line to stdout with write(2); the errno value if it could not be
    /// written whole (a closed pipe), so the notification is not acknowledged; nil once written.
    static func writeLine(_ json: JSONValue, command: String) -> Int32? {
        var line = json
        if case .object(var o) = json {
            o["command"] = .string(command)
            line = .object(o)
        }
        return StandardStream.output.write(JSON.serialize(line, pretty: false) + [10])
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
                var line =
                    "\(show(n.subscriptionID))\t\(n.reset ? "reset: anything may have changed; pull" : "\(n.count) change\(n.count == 1 ? "" : "s")")"
                if !n.zones.isEmpty {
                    line += "\tin " + n.zones.prefix(SubscriptionNotification.listLimit).map { show($0.description) }.joined(separator: ", ")
                    if n.zones.count > SubscriptionNotification.listLimit {
                        line += " and \(n.zones.count - SubscriptionNotification.listLimit) more"
                    }
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
        if round.notifications.isEmpty {
            console.info("nothing new")
        } else if !ack {
            console.hint("'recsync notifications --ack' moves the cursors past these")
        }
        return ExitCodes.success
    }
}
