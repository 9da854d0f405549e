import Foundation
import Glibc
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

/// Durable subscriptions at their edges: a copied workspace, concurrent subscribes, output
/// that cannot be written, long IDs, hooks that read the workspace.
@Suite(.ownThreads) struct SubscriptionEdgeTests {
    /// The notifications `recsync notifications --json` shows in `dir`.
    func pending(_ f: CLIFixture, in dir: String, _ extra: [String] = []) throws -> [[String: Any]] {
        let doc = try f.json(["notifications"] + extra, in: dir)
        return doc["notifications"] as? [[String: Any]] ?? []
    }

    /// A workspace copied with `cp -r` (a backup restored, a VM or container image) keeps
    /// `.recsync/device`; each copy must still be told of the other's pushes, not take them
    /// for its own.
    @Test
    func copiedWorkspaceIsToldAboutTheOriginalsPushes() throws {
        let f = try CLIFixture().withStore()
        try f.clone("a")
        try f.run(["zone", "create", "notes"], in: "a")
        try f.run(["subscribe", "--zone", "notes"], in: "a")
        try FileManager.default.copyItem(atPath: f.ws("a"), toPath: f.ws("copy"))
        try f.put("notes/x", #"{"v": 1}"#, in: "copy")
        try f.run(["push"], in: "copy")
        let notes = try pending(f, in: "a")
        #expect(notes.count == 1, "a push from a copied workspace is another device's change: \(notes)")
    }

    /// With --include-own, a query subscription reports a record this workspace created and
    /// another workspace deleted, as it does without --include-own (compared over its whole
    /// range end to end, the creation and the deletion would cancel out).
    @Test
    func includeOwnDoesNotHideAnotherDevicesDeletion() throws {
        let f = try CLIFixture().withStore()
        try f.clone("a")
        try f.run(["zone", "create", "notes", "--default-type", "Note"], in: "a")
        try f.clone("b")
        try f.run(["subscribe", "--query", "Note", "--database", "private", "--fires-on", "delete", "--id", "gone", "--include-own"], in: "a")
        try f.put("notes/x", #"{"v": 1}"#, in: "a")
        try f.run(["push"], in: "a")
        try f.run(["pull"], in: "b")
        try f.run(["rm", "notes/x"], in: "b")
        try f.run(["push"], in: "b")
        let notes = try pending(f, in: "a")
        let records = notes.first?["records"] as? [[String: Any]] ?? []
        #expect(
            records.contains { $0["recordName"] as? String == "x" && $0["reason"] as? String == "deleted" },
            "b deleted x: the delete subscription must fire, --include-own or not: \(notes)")
    }

    /// `watch --once` whose stdout cannot be written delivers nothing (the cursors stay) and
    /// exits non-zero, so a cron job learns that its notifications went nowhere.
    @Test
    func watchOnceFailsWhenStdoutIsUnwritable() throws {
        let f = try CLIFixture.withOneChangePending()
        let watch = try f.runWritingTo("/dev/full", ["watch", "--once"], in: "a")
        #expect(watch.terminationStatus != 0, "nothing was delivered: the exit status must say so")
        #expect(try pending(f, in: "a").count == 1, "and the notification stays pending")
    }

    /// `notifications --ack` acknowledges what it printed: printed nowhere (a full disk), it
    /// must keep the cursors and say so, not crash (FileHandle.write traps on ENOSPC).
    @Test
    func notificationsAckThatCannotPrintKeepsTheCursors() throws {
        let f = try CLIFixture.withOneChangePending()
        for json in [false, true] {
            let ack = try f.runWritingTo("/dev/full", ["notifications", "--ack"] + (json ? ["--json"] : []), in: "a")
            #expect(ack.terminationReason == .exit && ack.terminationStatus == 1, "status \(ack.terminationStatus)")
            #expect(try pending(f, in: "a").count == 1, "the notification stays pending")
        }
    }

    /// Any command whose output cannot be written fails (as git does), not only the ones
    /// that acknowledge what they print.
    @Test
    func aCommandWhoseOutputIsLostFails() throws {
        let f = try CLIFixture.withOneChangePending()
        for arguments in [["status"], ["notifications"], ["subscriptions", "--json"]] {
            let p = try f.runWritingTo("/dev/full", arguments, in: "a")
            #expect(p.terminationReason == .exit && p.terminationStatus == 1, "recsync \(arguments): status \(p.terminationStatus)")
        }
    }

    /// A subscription ID the validator accepts (1–100 bytes) whose escaped cursor file name
    /// is longer than NAME_MAX: `subscribe` works or refuses the ID up front as a usage
    /// error, rather than failing with a file-system error.
    @Test
    func longEscapedSubscriptionIDWorksOrIsRefusedUpFront() throws {
        let f = try CLIFixture().withStore()
        try f.clone("a")
        try f.run(["zone", "create", "notes"], in: "a")
        let output = try f.recsync.run(["subscribe", "--zone", "notes", "--id", String(repeating: "%", count: 100)], in: f.ws("a"))
        #expect(output.status == 0 || output.status == 64, "\(output)")
        #expect(!output.stderr.contains("too long"), "\(output)")
    }

    /// Concurrent subscribes each rewrite subscriptions.json: every one that reports success
    /// must survive (without a lock only some would). (Probabilistic: without the lock it may
    /// still pass by luck.)
    @Test
    func concurrentSubscribesKeepEverySubscription() throws {
        let f = try CLIFixture().withStore()
        try f.clone("a")
        let count = 12
        var processes: [Process] = []
        for i in 0..<count {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: f.recsync.executable)
            p.arguments = ["subscribe", "--database", "private", "--id", "s\(i)", "--quiet"]
            p.currentDirectoryURL = URL(fileURLWithPath: f.ws("a"))
            p.environment = f.recsync.environment
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle.nullDevice
            processes.append(p)
        }
        for p in processes { try p.run() }
        var succeeded = 0
        for p in processes {
            p.waitUntilExit()
            if p.terminationStatus == 0 { succeeded += 1 }
        }
        let list = try f.run(["subscriptions"], in: "a")
        #expect(list.lines.count == succeeded, "\(succeeded) subscribes said they succeeded; listed:\n\(list.stdout)")
    }

    /// With --pull, the pull runs before --exec, so a hook that reads the workspace sees the
    /// change it was told about, not the state before it.
    @Test
    func execWithPullSeesThePulledWorkspace() throws {
        let f = try CLIFixture().withStore()
        try f.clone("a")
        try f.run(["zone", "create", "notes"], in: "a")
        try f.clone("b")
        try f.run(["subscribe", "--zone", "notes"], in: "a")
        try f.put("notes/x", #"{"v": 7}"#, in: "b")
        try f.run(["push"], in: "b")
        try f.run(["watch", "--once", "--pull", "--exec", "cat private/notes/x.json > ../seen.txt 2>/dev/null; true"], in: "a")
        let seen = (try? String(contentsOfFile: f.directory.file("seen.txt"), encoding: .utf8)) ?? ""
        #expect(seen.contains("7"), "the hook ran on a workspace without the change: '\(seen)'")
    }

    /// A hook inherits only its stdin, stdout and stderr: not watch's delivery lock, store
    /// repository or any other descriptor (a hook that leaves a background job behind would
    /// otherwise hold the lock after watch exits).
    @Test
    func anExecHookInheritsNoOtherDescriptor() throws {
        let f = try CLIFixture().withStore()
        try f.clone("a")
        try f.run(["zone", "create", "notes"], in: "a")
        try f.clone("b")
        try f.run(["subscribe", "--zone", "notes"], in: "a")
        try f.put("notes/x", #"{"v": 7}"#, in: "b")
        try f.run(["push"], in: "b")
        let out = f.directory.file("fds.txt")
        try f.run(["watch", "--once", "--exec", "for d in /proc/$$/fd/*; do echo \"${d##*/} $(readlink $d)\"; done > '\(out)'"], in: "a")
        let fds = try #require(try? String(contentsOfFile: out, encoding: .utf8)).split(separator: "\n").map(String.init)
        #expect(fds.count >= 3, "\(fds)")
        // Beyond 0–2 the shell has only its own (a saved copy of a redirected descriptor, the
        // pipe of $(...)): nothing of watch's (its store, its lock, the test runner's socket).
        let inherited = fds.filter { $0.contains("socket:") || $0.contains(".recsync") || $0.contains(".git") || $0.contains("anon_inode") }
        #expect(inherited.isEmpty, "the hook inherited \(inherited) of \(fds)")
    }

    /// Started with stdout closed, `watch --once` must not count a notification as
    /// delivered. (Opening /dev/null read-write on the closed descriptor made every line
    /// "written", so the cursor moved past a notification nobody saw.)
    @Test
    func watchOnceWithStdoutClosedKeepsTheNotificationPending() throws {
        let f = try CLIFixture.withOneChangePending()

        let watch = Process()
        watch.executableURL = URL(fileURLWithPath: "/bin/sh")
        watch.arguments = ["-c", #"exec "$0" watch --once >&-"#, f.recsync.executable]
        watch.currentDirectoryURL = URL(fileURLWithPath: f.ws("a"))
        watch.environment = f.recsync.environment
        watch.standardError = FileHandle.nullDevice
        try watch.run()
        watch.waitUntilExit()
        #expect(watch.terminationStatus != 0, "nothing was delivered: the exit status must say so")
        #expect(try pending(f, in: "a").count == 1, "and the notification stays pending")
    }

    /// `watch --once --pull` whose pull fails (here: another process holds the
    /// workspace lock) must not exit 0 just because no notification was pending.
    @Test
    func watchOncePullThatFailsExitsNonZero() throws {
        let f = try CLIFixture().withStore()
        try f.clone("a")
        try f.run(["zone", "create", "notes"], in: "a")
        try f.run(["subscribe", "--zone", "notes"], in: "a")
        let fd = open(f.ws("a") + "/.recsync/lock", O_RDWR | O_CREAT, 0o644)
        try #require(fd >= 0)
        defer { close(fd) }
        try #require(flock(fd, LOCK_EX | LOCK_NB) == 0)
        let output = try f.recsync.run(["watch", "--once", "--pull"], in: f.ws("a"))
        #expect(output.status != 0, "the pull at start failed: \(output)")
        flock(fd, LOCK_UN)
        try f.run(["watch", "--once", "--pull"], in: "a")
    }
}

/// `watch` at its edges: started with stdout closed, stopped by SIGTERM while an --exec hook
/// runs, a pull at start that fails, a subscription whose cursor file is gone.
@Suite(.ownThreads) struct SubscriptionWatchEdgeTests {
    /// A workspace whose other workspace `b` pushed one change to zone `notes`, which `a`
    /// subscribes to.
    func pendingCount(_ f: CLIFixture) throws -> Int {
        let doc = try f.json(["notifications"], in: "a")
        return (doc["notifications"] as? [[String: Any]] ?? []).count
    }

    /// A `recsync` process started through `/bin/sh -c SCRIPT` (for redirections such as `>&-`).
    func shell(_ f: CLIFixture, _ script: String, in dir: String) -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/sh")
        p.arguments = ["-c", script, f.recsync.executable]
        p.currentDirectoryURL = URL(fileURLWithPath: f.ws(dir))
        p.environment = f.recsync.environment
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        return p
    }

    /// Started with stdout closed, `watch --once` must not write its lines into a /dev/null
    /// opened on fd 1, exit 0 and move the cursor (the notification lost): startup opens it
    /// read-only, so watch exits non-zero and the notification stays pending.
    @Test
    func watchOnceWithClosedStdoutKeepsTheNotification() throws {
        let f = try CLIFixture.withOneChangePending()
        let watch = shell(f, #"exec "$0" watch --once >&-"#, in: "a")
        try watch.run()
        watch.waitUntilExit()
        let left = try pendingCount(f)
        #expect(watch.terminationStatus != 0, "nothing could be written: the exit status must say so")
        #expect(left == 1, "and the notification stays pending")
    }

    /// SIGTERM while an --exec hook runs stops `watch` promptly, without waiting for the hook
    /// to exit: otherwise a hook that hangs would keep `watch` from stopping at all.
    @Test
    func watchStopsPromptlyOnSigtermWhileExecRuns() throws {
        let f = try CLIFixture.withOneChangePending()
        let marker = f.directory.file("hook-started")
        let watch = shell(f, #"exec "$0" watch --exec "touch '\#(marker)'; sleep 60""#, in: "a")
        try watch.run()
        defer { if watch.isRunning { kill(watch.processIdentifier, SIGKILL); watch.waitUntilExit() } }
        var started = false
        for _ in 0..<300 where !started {
            started = FileManager.default.fileExists(atPath: marker)
            if !started { usleep(100_000) }
        }
        try #require(started, "the hook never ran")
        kill(watch.processIdentifier, SIGTERM)
        var stopped = false
        for _ in 0..<150 where !stopped {
            stopped = !watch.isRunning
            if !stopped { usleep(100_000) }
        }
        #expect(stopped, "watch did not stop within 15 s of SIGTERM (its hook sleeps 60 s)")
    }

    /// `watch --once` stopped by SIGTERM (a cron job's timeout) stops its --exec command's
    /// whole process group, as plain watch does, and says by its exit status that it was
    /// stopped; the notification stays pending.
    @Test
    func watchOnceStopsItsExecCommandOnSigterm() throws {
        let f = try CLIFixture.withOneChangePending()
        let pidFile = f.directory.file("hook-pid")
        let watch = shell(f, #"exec "$0" watch --once --exec "echo \$\$ > '\#(pidFile).tmp'; mv '\#(pidFile).tmp' '\#(pidFile)'; sleep 60""#, in: "a")
        try watch.run()
        defer { if watch.isRunning { kill(watch.processIdentifier, SIGKILL); watch.waitUntilExit() } }
        var hook: pid_t = 0
        for _ in 0..<300 where hook == 0 {
            hook = (try? String(contentsOfFile: pidFile, encoding: .utf8)).flatMap { pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 0
            if hook == 0 { usleep(100_000) }
        }
        try #require(hook > 0, "the hook never ran")
        kill(watch.processIdentifier, SIGTERM)
        watch.waitUntilExit()
        #expect(watch.terminationStatus == 128 + SIGTERM)
        // The hook's group got SIGTERM (then SIGKILL after 2 s): gone within a few seconds.
        var gone = false
        for _ in 0..<100 where !gone {
            gone = kill(-hook, 0) != 0 && errno == ESRCH
            if !gone { usleep(100_000) }
        }
        #expect(gone, "the --exec command's process group outlived watch --once")
        if !gone { kill(-hook, SIGKILL) }
        #expect(try pendingCount(f) == 1, "the notification stays pending")
    }

    /// `watch --once --pull` whose pull fails (here: another recsync holds the workspace
    /// lock) says so and exits non-zero even when no notification was pending, so cron hears
    /// that the pull failed.
    @Test
    func watchOncePullFailsLoudlyWhenThePullFails() throws {
        let f = try CLIFixture.withOneChangePending()
        try f.run(["notifications", "--ack"], in: "a")
        let fd = open(f.ws("a") + "/.recsync/lock", O_RDWR | O_CREAT, 0o644)
        try #require(fd >= 0)
        defer { close(fd) }
        try #require(flock(fd, LOCK_EX | LOCK_NB) == 0)
        let output = try f.recsync.run(["watch", "--once", "--pull"], in: f.ws("a"))
        flock(fd, LOCK_UN)
        #expect(output.stderr.contains("pull failed") || output.stderr.contains("is syncing this workspace"), "\(output)")
        #expect(output.status != 0, "the pull failed: \(output)")
        #expect(!FileManager.default.fileExists(atPath: f.ws("a") + "/private/notes/x.json"))
    }

    /// A subscription whose cursor file is gone gives a `reset` notification once, rather than
    /// dropping what was pending with only a warning.
    @Test
    func missingCursorReportsAReset() throws {
        let f = try CLIFixture.withOneChangePending()
        try FileManager.default.removeItem(atPath: f.ws("a") + "/.recsync/subscriptions/zone-alice-notes.cursor")
        let doc = try f.json(["notifications"], in: "a")
        let notes = doc["notifications"] as? [[String: Any]] ?? []
        #expect(notes.contains { $0["reset"] as? Bool == true }, "a change was pending when the cursor went: \(notes)")
    }
}

/// The `--exec` hook and watch's stdout: what the hook inherits, and a watch whose stdout's
/// reader is gone.
@Suite(.ownThreads) struct SubscriptionExecHookTests {
    /// The hook gets its notification on fd 0 and nothing else of watch's: not a second
    /// copy of the pipe's read end (a background child of the hook would keep it open), nor
    /// a descriptor of the workspace's state (its lock files).
    @Test
    func execHookInheritsNoStrayDescriptor() throws {
        let f = try CLIFixture.withOneChangePending()
        let listing = f.directory.file("fds.txt")
        let hook = #"for d in /proc/$$/fd/*; do echo "${d##*/} $(readlink "$d")"; done > '\#(listing)'; cat >/dev/null"#
        try f.run(["watch", "--once", "--exec", hook], in: "a")
        let lines = try String(contentsOfFile: listing, encoding: .utf8).split(separator: "\n").map {
            $0.split(separator: " ", maxSplits: 1).map(String.init)
        }
        let targets = Dictionary(lines.compactMap { $0.count == 2 ? ($0[0], $0[1]) : nil }, uniquingKeysWith: { a, _ in a })
        let stdin = try #require(targets["0"], "no stdin in \(lines)")
        #expect(stdin.hasPrefix("pipe:"))
        let stray = targets.filter { $0.key != "0" && ($0.value == stdin || $0.value.contains("/.recsync/")) }
        #expect(stray.isEmpty, "the hook inherited \(stray)")
    }

    /// Once its stdout's reader is gone, `watch --exec` must not go on for ever failing to
    /// write (holding watch.lock, so no new watch can start): it ends as it does without
    /// --exec, and what it could not write stays pending.
    @Test
    func watchWithExecEndsWhenItsStdoutReaderIsGone() throws {
        let f = try CLIFixture.withOneChangePending()
        let first = f.directory.file("first.txt")
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/sh")
        // Not `cmd & wait`: dash's `wait` hangs under a signal mask the test runner passes on.
        p.arguments = ["-c", #""$0" watch --exec 'cat >/dev/null' 2>/dev/null | head -n 1 > '\#(first)'"#, f.recsync.executable]
        p.currentDirectoryURL = URL(fileURLWithPath: f.ws("a"))
        p.environment = f.recsync.environment
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        defer {
            // watch.lock names the watch ("pid N: watch"), should it still run.
            let holder = (try? String(contentsOfFile: f.ws("a") + "/.recsync/watch.lock", encoding: .utf8)) ?? ""
            if p.isRunning, let pid = holder.split(separator: " ").dropFirst().first.flatMap({ Int32($0.dropLast()) }), pid > 0 { kill(pid, SIGKILL) }
            p.waitUntilExit()
        }
        // The first notification is read (and the reader exits); its hook runs; then another change.
        var delivered = false
        for _ in 0..<300 where !delivered {
            let read = (try? String(contentsOfFile: first, encoding: .utf8))?.contains("zone-alice-notes") == true
            delivered = try read && (f.json(["notifications"], in: "a")["notifications"] as? [Any])?.isEmpty == true
            if !delivered { usleep(100_000) }
        }
        try #require(delivered, "the first notification was never delivered")
        try f.put("notes/x", #"{"v": 2}"#, in: "b")
        try f.run(["push"], in: "b")
        var ended = false
        for _ in 0..<300 where !ended {
            ended = !p.isRunning
            if !ended { usleep(100_000) }
        }
        #expect(ended, "watch still runs 30 s after its stdout's reader went away")
        let pending = try f.json(["notifications"], in: "a")["notifications"] as? [Any] ?? []
        #expect(pending.count == 1, "the change it could not write stays pending")
    }
}
