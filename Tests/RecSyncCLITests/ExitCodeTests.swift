import Foundation
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

/// Exit statuses and error messages, as scripts see them.
@Suite(.ownThreads) struct ExitCodeTests {
    @Test func errorsMapToDocumentedStatuses() throws {
        let f = try CLIFixture().withStore()
        let outside = try f.run(["status"], expect: 3)
        #expect(outside.stderr.hasPrefix("recsync: '"), "\(outside)")
        #expect(outside.stderr.contains("is not inside a recsync workspace"))
        // The library says what happened; the command line says what to type next.
        #expect(outside.stderr.contains("\nhint: run 'recsync init' or 'recsync clone', or pass -C DIR\n"), "\(outside)")
        let quiet = try f.run(["status", "--quiet"], expect: 3)
        #expect(!quiet.stderr.contains("hint:"), "\(quiet)")
        #expect(try f.run(["status", "--no-such-option"], expect: 64).stderr.contains("Unknown option"))
        #expect(try f.run(["resolve"], expect: 64).stderr.contains("Missing one of"))
        // A network remote nobody answers at: exit 5, the remote named, nothing left behind.
        let closed = Loopback.freePort()
        let network = try f.run(["clone", "git://127.0.0.1:\(closed)/store.git", "unreachable"], expect: 5)
        #expect(network.stderr.contains("cannot reach git://127.0.0.1:\(closed)/store.git"), "\(network)")
        #expect(!FileManager.default.fileExists(atPath: f.ws("unreachable")))
        let secret = try f.run(["clone", "ssh://user:secret@127.0.0.1:\(closed)/store.git", "unreachable"], expect: 5)
        #expect(!secret.stderr.contains("secret") && !secret.stdout.contains("secret"), "credentials never appear in output")
        #expect(try f.run(["clone", "missing.git"], expect: 1).stderr.contains("no store at"))
        #expect(!FileManager.default.fileExists(atPath: f.ws("missing")))

        // -C before or after the subcommand; the workspace's user is the one given at clone.
        try f.run(["clone", "store.git", "ws", "--user", "carol"])
        let status = try f.json(["-C", "ws", "status"], in: nil)
        #expect(status["clean"] as? Bool == true)
        try f.run(["status", "-C", f.ws("ws")])
        try f.put("notes/r1", #"{"a": 1}"#, in: "ws", type: "Note")
        let changes = try f.json(["status"], in: "ws")["changes"] as? [[String: Any]]
        #expect(changes?.first?["owner"] as? String == "carol")
        #expect(try f.run(["init"], in: "ws", expect: 1).stderr.contains("already a recsync workspace"))
        #expect(try f.run(["get", "nothing-here"], in: "ws", expect: 1).stderr.contains("does not name a record"))
    }

    /// With --json a failing command prints the error as its one document, so a script can
    /// tell errors apart without reading messages: kind, CloudKit code, and where.
    @Test func withJSONAnErrorIsADocumentScriptsCanTellApart() throws {
        let f = try CLIFixture().withStore()
        try f.run(["clone", "store.git", "ws"])
        try f.run(["zone", "create", "notes"], in: "ws")
        try FileManager.default.createDirectory(atPath: "\(f.ws("ws"))/private/notes", withIntermediateDirectories: true)
        try "{\"a\": 1,\n  \"b\": }".write(toFile: "\(f.ws("ws"))/private/notes/r.json", atomically: true, encoding: .utf8)
        let broken = try f.json(["get", "notes/r"], in: "ws", expect: 1)
        let error = try #require(broken["error"] as? [String: Any], "\(broken)")
        #expect(error["kind"] as? String == "malformed")
        #expect(error["code"] as? Int == 12)
        #expect(error["path"] as? String == "private/notes/r.json")
        #expect(error["line"] as? Int == 2 && error["column"] as? Int == 8, "\(error)")

        let noStore = try f.json(["clone", "missing.git", "elsewhere"], in: nil, expect: 1)
        #expect((noStore["error"] as? [String: Any])?["kind"] as? String == "notAStore", "\(noStore)")
        let badName = try f.json(["zone", "create", "a/b"], in: "ws", expect: 1)
        #expect((badName["error"] as? [String: Any])?["kind"] as? String == "invalidName", "\(badName)")
        // The message still goes to stderr, for people.
        #expect(try f.run(["get", "notes/r", "--json"], in: "ws", expect: 1).stderr.contains("line 2, column 8"))
        // Without --json, stdout stays empty.
        #expect(try f.run(["get", "notes/r"], in: "ws", expect: 1).stdout.isEmpty)
        // The exit status and the command are in the document.
        #expect(broken["exitCode"] as? Int == 1 && broken["command"] as? String == "get", "\(broken)")
        #expect(badName["command"] as? String == "zone create", "\(badName)")

        // The library names the remedy, the command line the command: a script reads it as
        // `hints`, a person as `hint:` lines; the message itself names no command.
        let missing = try f.json(["unsubscribe", "nosuch"], in: "ws", expect: 1)
        let missingError = try #require(missing["error"] as? [String: Any], "\(missing)")
        #expect(missingError["kind"] as? String == "notFound" && missingError["code"] as? Int == 12, "\(missing)")
        #expect(!(missingError["message"] as? String ?? "recsync").contains("recsync"), "\(missing)")
        #expect(missing["hints"] as? [String] == ["'recsync subscriptions' lists them"], "\(missing)")
        let text = try f.run(["unsubscribe", "nosuch"], in: "ws", expect: 1)
        #expect(text.stderr.contains("\nhint: 'recsync subscriptions' lists them\n"), "\(text)")
        #expect(badName["hints"] == nil, "no remedy, no hints: \(badName)")
    }

    /// Hints go to stderr: stdout of `status` is only its lines, for a script to parse.
    @Test func hintsGoToStderr() throws {
        let f = try CLIFixture().withStore()
        try f.run(["clone", "store.git", "ws"])
        try f.run(["zone", "create", "notes"], in: "ws")
        let put = try f.run(["put", "notes/a"], in: "ws", input: #"{"a": 1}"#)
        #expect(put.stderr.contains("hint: 'recsync push' sends it"), "\(put)")
        #expect(!put.stdout.contains("hint"), "\(put)")
        let status = try f.run(["status"], in: "ws")
        #expect(status.lines == ["A private/notes/a.json"], "\(status)")
        #expect(status.stderr.contains("hint: "), "\(status)")
        #expect(try f.run(["status", "-q"], in: "ws").stderr.isEmpty)
    }

    /// A usage error (exit 64) is a JSON document too, naming the subcommand; without --json
    /// stdout stays empty and the parser's message goes to stderr.
    @Test func withJSONAUsageErrorIsADocumentToo() throws {
        let f = try CLIFixture().withStore()
        try f.run(["clone", "store.git", "ws"])
        let usage = try f.json(["zone", "delete", "todo", "--no-such-option"], in: "ws", expect: 64)
        #expect(usage["command"] as? String == "zone delete", "\(usage)")
        #expect(usage["exitCode"] as? Int == 64 && usage["version"] as? Int == 1, "\(usage)")
        let error = try #require(usage["error"] as? [String: Any], "\(usage)")
        #expect(error["kind"] as? String == "usage")
        #expect((error["message"] as? String)?.contains("--no-such-option") == true, "\(error)")
        let plain = try f.run(["-C", "ws", "resolve"], expect: 64)
        #expect(plain.stdout.isEmpty && plain.stderr.contains("--ours"), "\(plain)")
    }

    /// `status --exit-code`, as `git diff --exit-code`: 0 clean, 1 something to push, 2
    /// conflicts pending; without the flag, 0 whatever the workspace holds.
    @Test func statusExitCodeTellsAScriptWhatIsPending() throws {
        let f = try CLIFixture().withStore()
        try f.clone("laptop")
        try f.clone("phone")
        try f.run(["zone", "create", "notes"], in: "laptop")
        try f.run(["status", "--exit-code"], in: "laptop", expect: 0)
        try f.put("notes/r", #"{"v": 1}"#, in: "laptop")
        try f.run(["status", "--exit-code"], in: "laptop", expect: 1)
        #expect(try f.json(["status", "--exit-code"], in: "laptop", expect: 1)["clean"] as? Bool == false)
        try f.run(["status"], in: "laptop", expect: 0)
        try f.run(["push"], in: "laptop")
        try f.run(["status", "--exit-code"], in: "laptop", expect: 0)

        try f.run(["pull"], in: "phone")
        try f.put("notes/r", #"{"v": 2}"#, in: "laptop")
        try f.put("notes/r", #"{"v": 3}"#, in: "phone")
        try f.run(["push"], in: "laptop")
        try f.run(["push"], in: "phone", expect: 2)
        try f.run(["status", "--exit-code"], in: "phone", expect: 2)
        try f.run(["status"], in: "phone", expect: 0)
    }

    /// --quiet prints only errors: `status --exit-code --quiet || echo ...` (the README's
    /// example) and `import -q` are silent; data a command was asked for still prints.
    @Test func quietPrintsOnlyErrors() throws {
        let f = try CLIFixture().withStore()
        try f.clone("w")
        try f.run(["zone", "create", "notes"], in: "w")
        let imported = try f.run(["import", "notes", "-", "-q"], in: "w", input: "{\"a\": 1}\n")
        #expect(imported.stdout.isEmpty && imported.stderr.isEmpty, "\(imported)")
        try writeFile(f.ws("w") + "/private/notes/bad.json", "{bad")
        try writeFile(f.ws("w") + "/private/notes/notes.txt", "x")
        let quiet = try f.run(["status", "--exit-code", "--quiet"], in: "w", expect: 1)
        #expect(quiet.stdout.isEmpty && quiet.stderr.isEmpty, "\(quiet)")
        #expect(try f.run(["status", "--exit-code"], in: "w", expect: 1).lines.count == 3)
        let failed = try f.run(["push", "-q"], in: "w", expect: 1)
        #expect(failed.stderr.contains("bad.json"), "errors still print: \(failed)")
        #expect(try f.run(["ls", "notes", "-q"], in: "w").lines.count == 1, "ls still lists")
    }

    /// A workspace made with `init` and no remote gets one later, then pulls.
    @Test func initThenSetRemote() throws {
        let f = try CLIFixture().withStore()
        try FileManager.default.createDirectory(atPath: f.ws("plain"), withIntermediateDirectories: true)
        try f.run(["init"], in: "plain")
        #expect(try f.run(["pull"], in: "plain", expect: 1).stderr.contains("no remote"))
        try f.run(["init", "--remote", "../store.git"], in: "plain")
        try f.run(["pull"], in: "plain")
        #expect(try f.json(["status"], in: "plain")["clean"] as? Bool == true)
        // A file:// URL names the same store; clone picks the directory name from it.
        let clone = try f.json(["clone", "file://" + f.storePath], in: nil)
        #expect(clone["command"] as? String == "clone")
        #expect(readFile(f.ws("store") + "/.recsync/config")?.contains("\"file:") == true)
        try f.run(["pull"], in: "store")
    }
}
