import ArgumentParser
import Dispatch
import Foundation
import RecSyncEngine
import RecSyncModel
import RecSyncStore
import RecSyncWorkspace
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `recsync watch`: waits for the store to move and reports matching subscriptions.
struct WatchCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Wait for changes on the store and report those your subscriptions match.",
        discussion: """
            For each subscription a change matches, prints one JSON line (subscriptionID, kind, \
            scope, zone), runs --exec with it in the environment (RECSYNC_SUBSCRIPTION_ID, \
            RECSYNC_KIND, RECSYNC_SCOPE, RECSYNC_ZONE, RECSYNC_NOTIFICATION), or pulls with \
            --pull. A burst of changes gives one notification per subscription. A notification \
            is a prompt to pull, never data. Stops on SIGINT or SIGTERM; a store that cannot be \
            reached is retried with back-off.
            """)

    @OptionGroup var global: GlobalOptions
    @Option(help: "A shell command to run for each notification.") var exec: String?
    @Flag(help: "Pull after each burst of changes.") var pull = false
    @Option(help: "Milliseconds a burst must be quiet before it is reported.") var settle: Int = 200

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let ws = try context.workspace()
        let store = try context.store(for: ws)
        let engine = SyncEngine(workspace: ws, store: store)
        let subscriptions = try ws.subscriptions()
        guard !subscriptions.isEmpty || pull else {
            throw .invalidArguments("nothing to watch for: add a subscription with 'recsync subscribe', or pass --pull")
        }
        // --pull with no subscription watches everything the user can see.
        let watched = subscriptions.isEmpty ? [Subscription(id: "all-private", kind: .database(.private)), Subscription(id: "all-shared", kind: .database(.shared))] : subscriptions
        let stop = StopFlag()
        stop.install()
        let wait: @Sendable (Double) async -> Bool
        if Remote.isNetwork(ws.config.remote) {
            wait = Self.pollRemote(store, stop: stop)
        } else {
            let signal = try LocalStoreSignal(storePath: try Remote.storePath(ws.config.remote, relativeTo: ws.root))
            wait = { timeout in
                // Wait in short slices, so a stop request is noticed promptly.
                let deadline = Date().addingTimeInterval(timeout)
                while !stop.requested {
                    let slice = min(0.25, max(0, deadline.timeIntervalSinceNow))
                    let changed = await withCheckedContinuation { continuation in
                        DispatchQueue.global().async { continuation.resume(returning: signal.wait(timeout: slice)) }
                    }
                    if changed { return true }
                    if Date() >= deadline { return false }
                }
                return false
            }
        }
        var loop = WatchLoop(waitForChange: wait)
        loop.settle = Double(settle) / 1000
        let console = context.console
        console.note("watching \(store.remote ?? ws.config.remote) for \(watched.map(\.id).joined(separator: ", ")); stop with Ctrl-C")
        let exec = self.exec
        let pull = self.pull
        await loop.run(
            watcher: ChangeWatcher(store: engine.store, subscriptions: watched),
            shouldStop: { stop.requested },
            onError: { error, retry in console.warning("\(error.message); trying again in \(String(format: "%.1f", retry)) s") },
            onRecovered: { console.note("the store is reachable again") }
        ) { notifications in
            for n in notifications {
                console.jsonLine(Self.members(n))
                if let exec {
                    let json = String(decoding: JSON.serialize(.object(Self.members(n).merging(["version": .int(1)]) { a, _ in a }), pretty: false), as: UTF8.self)
                    Self.run(exec, notification: n, json: json, console: console)
                }
            }
            if pull {
                do throws(RecSyncError) {
                    let report = try await engine.pull()
                    console.note("pulled: \(report.recordsWritten) written, \(report.recordsDeleted) deleted" + (report.conflicts.isEmpty ? "" : ", \(report.conflicts.count) conflicts (run 'recsync status')"))
                } catch {
                    console.warning("pull failed: \(error.message)")
                }
            }
        }
        console.note("stopped watching")
        return ExitCodes.success
    }

    static func members(_ n: WatchNotification) -> [String: JSONValue] {
        var o: [String: JSONValue] = ["subscriptionID": .string(n.subscriptionID), "kind": .string(n.kind), "scope": .string(n.scope)]
        if let zone = n.zone { o["zone"] = .string(zone) }
        return o
    }

    static func run(_ command: String, notification n: WatchNotification, json: String, console: Console) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        var env = ProcessInfo.processInfo.environment
        env["RECSYNC_SUBSCRIPTION_ID"] = n.subscriptionID
        env["RECSYNC_KIND"] = n.kind
        env["RECSYNC_SCOPE"] = n.scope
        env["RECSYNC_ZONE"] = n.zone ?? ""
        env["RECSYNC_NOTIFICATION"] = json
        process.environment = env
        do {
            try process.run()
            process.waitUntilExit()
            if process.terminationStatus != 0 { console.warning("--exec exited with status \(process.terminationStatus) for \(n.subscriptionID)") }
        } catch {
            console.warning("cannot run --exec: \(error)")
        }
    }
}

extension WatchCommand {
    /// Waits for a network store's branch to move by polling it (ls-remote), less often the
    /// longer nothing happens (1 s up to 5 s). A failed poll counts as "look now", so the
    /// check reports the outage and the loop backs off.
    static func pollRemote(_ store: GitStore, stop: StopFlag) -> @Sendable (Double) async -> Bool {
        let state = Mutex<(head: String?, interval: Double)>((nil, 1))
        return { timeout in
            let deadline = Date().addingTimeInterval(timeout)
            while !stop.requested {
                let head: String
                do { head = try await store.remoteHead() } catch { return true }
                let moved = state.withLock { s -> Bool in
                    defer { s.head = head }
                    if s.head != nil && s.head != head { s.interval = 1; return true }
                    s.interval = min(5, s.interval * 1.5)
                    return false
                }
                if moved { return true }
                let pause = min(state.withLock { $0.interval }, deadline.timeIntervalSinceNow)
                if pause <= 0 { return false }
                let until = Date().addingTimeInterval(pause)
                while Date() < until, !stop.requested { try? await Task.sleep(nanoseconds: 100_000_000) }
                if Date() >= deadline { return false }
            }
            return false
        }
    }
}

/// Set by SIGINT or SIGTERM.
///
/// `@unchecked`: the signal sources are only stored (once, by `install`) to keep them alive.
final class StopFlag: @unchecked Sendable {
    private let flag = Atomic<Bool>(false)
    private var sources: [DispatchSourceSignal] = []

    var requested: Bool { flag.load(ordering: .relaxed) }

    func install() {
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { [self] in flag.store(true, ordering: .relaxed) }
            source.resume()
            sources.append(source)
        }
    }
}
