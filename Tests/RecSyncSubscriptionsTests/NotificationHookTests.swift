import Foundation
import RecSyncModel
import RecSyncSubscriptions
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

/// The command run for each notification (`watch --exec`): what it is handed, how its exit
/// reads, and that a stop stops it and everything it started.
@Suite(.dedicatedThreads) struct NotificationHookTests {
    let notification: SubscriptionNotification

    init() throws {
        notification = SubscriptionNotification(
            subscriptionID: "notes-changes", kind: "zone", scope: .private, zone: try ZoneID(zoneName: "notes", ownerName: "alice"),
            count: 2, zones: [], records: [], reset: false)
    }

    private func hook(_ command: String, in dir: TempDirectory) -> NotificationHook {
        // Its output goes to a file of the test's, not to the test runner's stderr.
        let out = open(dir.file("out"), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        return NotificationHook(command: command, output: out, environment: ["PATH": "/usr/bin:/bin"])
    }

    @Test func theNotificationGoesOnStdinAndInTheEnvironment() throws {
        let dir = TempDirectory()
        let hook = hook("cat > '\(dir.file("stdin"))'; env | grep '^RECSYNC_' | sort > '\(dir.file("env"))'", in: dir)
        defer { close(hook.output) }
        #expect(hook.run(for: notification) == .delivered)
        let stdin = try String(contentsOfFile: dir.file("stdin"), encoding: .utf8)
        let sent = String(decoding: JSON.serialize(notification.json, pretty: false), as: UTF8.self)
        #expect(stdin == sent + "\n")
        let env = try String(contentsOfFile: dir.file("env"), encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(env.contains("RECSYNC_SUBSCRIPTION_ID=notes-changes"))
        #expect(env.contains("RECSYNC_COUNT=2"))
        #expect(env.contains("RECSYNC_SCOPE=private"))
        #expect(env.contains("RECSYNC_ZONE=\(notification.zone!.description)"))
        #expect(env.contains("RECSYNC_NOTIFICATION=\(sent)"))
    }

    @Test func aNonZeroExitOrASignalIsNotADelivery() throws {
        let dir = TempDirectory()
        let failing = hook("exit 3", in: dir)
        defer { close(failing.output) }
        #expect(failing.run(for: notification) == .exited(3))
        let killed = hook("kill -9 $$", in: dir)
        #expect(killed.run(for: notification) == .killed(signal: 9))
        close(killed.output)
    }

    @Test func aCommandThatDoesNotReadItsStdinStillDelivers() throws {
        let dir = TempDirectory()
        let hook = hook("exec 0<&-; true", in: dir)
        defer { close(hook.output) }
        #expect(hook.run(for: notification) == .delivered)
    }

    @Test func aStopStopsTheCommandAndWhatItStarted() throws {
        let dir = TempDirectory()
        let pids = dir.file("pids")
        // A command that starts a background child and waits: both must go with the stop.
        let hook = hook("sleep 300 & echo $! > '\(pids)'; echo $$ >> '\(pids)'; wait", in: dir)
        defer { close(hook.output) }
        let stop = StopSignal()
        let stopper = Thread {
            while (try? String(contentsOfFile: pids, encoding: .utf8))?.split(separator: "\n").count ?? 0 < 2 { usleep(10_000) }
            stop.request()
        }
        stopper.start()
        let started = Date()
        #expect(hook.run(for: notification, stop: stop) == .stopped)
        #expect(Date().timeIntervalSince(started) < 60)
        let started2 = try String(contentsOfFile: pids, encoding: .utf8).split(separator: "\n").compactMap { Int32($0) }
        #expect(started2.count == 2)
        // The background child was in the command's process group: it is gone too (or a
        // zombie of init's, about to be). kill(pid, 0) fails with ESRCH once it is reaped.
        let deadline = Date().addingTimeInterval(10)
        var alive = true
        while alive && Date() < deadline {
            alive = started2.contains { kill($0, 0) == 0 && !Self.isZombie($0) }
            if alive { usleep(20_000) }
        }
        #expect(!alive, "the command's background child outlived the stop")
    }

    @Test func aStopRequestedBeforeTheRunStopsItAtOnce() throws {
        let dir = TempDirectory()
        let hook = hook("sleep 300", in: dir)
        defer { close(hook.output) }
        let stop = StopSignal()
        stop.request()
        #expect(hook.run(for: notification, stop: stop) == .stopped)
    }

    @Test func aCommandThatCannotStartIsSaidSo() throws {
        let dir = TempDirectory()
        // The shell starts, the command does not exist: the shell's status 127.
        let hook = hook("/no/such/command", in: dir)
        defer { close(hook.output) }
        #expect(hook.run(for: notification) == .exited(127))
    }

    private static func isZombie(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return false }
        return stat[stat.index(close, offsetBy: 2)...].hasPrefix("Z")
    }
}
