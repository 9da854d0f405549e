import Foundation
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

/// config, did-you-mean, --color, store init's checks and changes' defaults, through the
/// built binary.
@Suite(.ownThreads) struct ToolingCLITests {
    @Test func configGetSetListValidatesLikeInit() throws {
        let f = try CLIFixture().withStore()
        try f.clone("w")
        #expect(
            try f.run(["config", "list"], in: "w").lines == [
                "remote=\(f.storePath)", "user=alice", "commitSnapshots=false", "noAssetZones=", "trackedZones=null",
            ])
        #expect(try f.run(["config", "get", "user"], in: "w").stdout == "alice\n")
        try f.run(["config", "set", "commitSnapshots", "yes"], in: "w")
        #expect(try f.json(["config", "get", "commitSnapshots"], in: "w")["value"] as? Bool == true)
        // Refused, and the config is untouched.
        let before = try #require(readFile(f.ws("w") + "/.recsync/config"))
        #expect(try f.run(["config", "set", "user", "bad<name>"], in: "w", expect: 1).stderr.contains("'<' or '>'"))
        #expect(try f.run(["config", "set", "commitSnapshots", "maybe"], in: "w", expect: 1).stderr.contains("maybe"))
        #expect(try f.run(["config", "set", "remote", "../nowhere.git"], in: "w", expect: 1).stderr.contains("no store"))
        let unknown = try f.run(["config", "get", "colour"], in: "w", expect: 1)
        #expect(unknown.stderr.contains("remote") && unknown.stderr.contains("user") && unknown.stderr.contains("commitSnapshots"), "\(unknown)")
        #expect(readFile(f.ws("w") + "/.recsync/config") == before)

        // A synced workspace cannot change user; another store needs --force and resets.
        try f.run(["zone", "create", "todo"], in: "w")
        #expect(try f.run(["config", "set", "user", "bob"], in: "w", expect: 1).stderr.contains("recsync clone --user bob"))
        try f.run(["store", "init", "other.git"])
        #expect(try f.run(["config", "set", "remote", "../other.git"], in: "w", expect: 1).stderr.contains("--force"))
        let refused = try f.json(["config", "set", "remote", "../other.git"], in: "w", expect: 1)
        let error = try #require(refused["error"] as? [String: Any], "\(refused)")
        #expect(error["kind"] as? String == "storeMismatch" && error["expected"] is String && error["found"] is String, "\(error)")
        let switched = try f.json(["config", "set", "remote", "../other.git", "--force"], in: "w")
        #expect(switched["syncStateReset"] as? Bool == true, "\(switched)")
        try f.run(["pull"], in: "w")
    }

    @Test func aMistypedCommandGetsDidYouMean() throws {
        let f = try CLIFixture().withStore()
        let typo = try f.run(["stauts"], expect: 64)
        #expect(typo.stderr.contains("'stauts' is not a recsync command. Did you mean 'status'?"), "\(typo)")
        #expect(try f.run(["zone", "dlete", "x"], expect: 64).stderr.contains("Did you mean 'delete'?"))
        #expect(try f.run(["-C", ".", "pusj"], expect: 64).stderr.contains("'push'"))
        let json = try f.json(["stauts"], in: nil, expect: 64)
        #expect((json["error"] as? [String: Any])?["kind"] as? String == "usage", "\(json)")
        // Nothing near: no suggestion, still a usage error.
        #expect(!(try f.run(["xyzzyplugh"], expect: 64).stderr.contains("Did you mean")))
    }

    @Test func colourFollowsTheOptionNoColorAndTerm() throws {
        let f = try CLIFixture().withStore()
        try f.clone("w")
        try f.run(["zone", "create", "todo"], in: "w")
        try f.run(["put", "todo/a"], in: "w", input: #"{"a": 1}"#)
        let escape = "\u{1B}["
        // The runner sets NO_COLOR: always wins over it, as the help says.
        #expect(try f.run(["status", "--color", "always"], in: "w").stdout.contains(escape + "32mA"))
        #expect(!(try f.run(["status", "--color", "never"], in: "w").stdout.contains(escape)))
        // auto: not a terminal here, so no colour.
        #expect(!(try f.run(["status"], in: "w").stdout.contains(escape)))
        #expect(try f.run(["status", "--color", "bogus"], in: "w", expect: 64).stderr.contains("bogus"))
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "script(1) from util-linux is not installed"))
    func onATerminalAutoColoursUnlessNoColorOrDumb() throws {
        let f = try CLIFixture().withStore()
        try f.clone("w")
        try f.run(["zone", "create", "todo"], in: "w")
        try f.run(["put", "todo/a"], in: "w", input: #"{"a": 1}"#)
        func status(_ extra: [String: String]) throws -> String {
            var environment = f.recsync.environment
            environment["TERM"] = "xterm"
            environment["NO_COLOR"] = nil  // the runner sets it; here each case says
            environment.merge(extra) { $1 }
            return try Subprocess.capture(
                "/usr/bin/script", ["-qec", "\(f.recsync.executable) status", "/dev/null"], in: f.ws("w"), environment: environment
            ).stdout
        }
        #expect(try status([:]).contains("\u{1B}[32mA"))
        #expect(!(try status(["NO_COLOR": "1"]).contains("\u{1B}[32m")))
        #expect(!(try status(["TERM": "dumb"]).contains("\u{1B}[32m")))
    }

    @Test func storeInitRefusesANonEmptyDirectoryAndAFile() throws {
        let f = try CLIFixture()
        try FileManager.default.createDirectory(atPath: f.ws("full"), withIntermediateDirectories: true)
        try writeFile(f.ws("full") + "/notes.txt", "mine\n")
        #expect(try f.run(["store", "init", "full"], expect: 1).stderr.contains("is not empty (it holds 'notes.txt')"))
        #expect(readFile(f.ws("full") + "/notes.txt") == "mine\n")
        try writeFile(f.ws("plain"), "a file\n")
        #expect(try f.run(["store", "init", "plain"], expect: 1).stderr.contains("is a file, not a directory"))
        try FileManager.default.createDirectory(atPath: f.ws("empty"), withIntermediateDirectories: true)
        try f.run(["store", "init", "empty"])
    }

    /// Inside a workspace, `changes` reads its store as its user: a participant sees the
    /// shared zone, record lines say where they are, and a token follows every page.
    @Test func changesInAWorkspaceUsesItsStoreAndUser() throws {
        let f = try CLIFixture().withStore()
        try f.clone("w")
        try f.run(["zone", "create", "todo"], in: "w")
        try f.run(["put", "todo/a", "todo/b", "todo/c"], in: "w", input: #"{"title": "x", "n": 1}"#)
        try f.run(["push"], in: "w")
        try f.run(["share", "todo", "--with", "bob"], in: "w")
        let bob = CLIRunner(user: "bob", home: f.directory.file("home"))
        _ = try bob.run(["clone", "store.git", "b"], in: f.directory.path)
        let shared = try bob.run(["changes", "--scope", "shared"], in: f.ws("b"), environment: ["RECSYNC_USER": "carol"])
        #expect(shared.status == 0, "\(shared)")
        #expect(shared.stdout.contains(#""kind":"zone","owner":"alice""#), "bob's own workspace, not $RECSYNC_USER: \(shared)")

        let paged = try f.run(["changes", "--zone", "todo", "--limit", "2", "--desired-keys", "title"], in: "w")
        let lines = try paged.lines.map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        #expect(lines.map { $0["kind"] as? String } == ["record", "record", "token"], "\(paged)")
        #expect(lines[0]["zone"] as? String == "todo" && lines[0]["owner"] as? String == "alice")
        #expect((lines[0]["fields"] as? [String: Any]).map { Array($0.keys) } == ["title"])
        let token = try #require(lines[2]["token"] as? String)
        let rest = try f.run(["changes", "--zone", "todo", "--since", token], in: "w").lines
        #expect(rest.count == 2 && rest[1].contains(#""kind":"token""#), "\(rest)")
    }
}
