import Foundation
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

/// The words a git user types: help for a mistyped command, git's commands that recsync has
/// none of, -V and version, zone ls, and what share, clone and subscribe say when the user
/// expected something else; through the built binary.
@Suite(.ownThreads) struct CommandWordsTests {
    @Test func helpForAMistypedCommandSaysWhichWasMeant() throws {
        let f = try CLIFixture()
        let typo = try f.run(["help", "pul"], expect: 64)
        #expect(typo.stderr.contains("'pul' is not a recsync command. Did you mean 'pull'?"), "\(typo)")
        #expect(typo.stdout.isEmpty, "\(typo)")
        #expect(try f.run(["help", "zone", "lisst"], expect: 64).stderr.contains("Did you mean 'list'?"))
        #expect(try f.run(["help", "pull"]).stdout.contains("USAGE: recsync pull"))
    }

    @Test(arguments: [
        ("commit", "There is no staging: 'recsync push' sends every edit."),
        ("add", "There is no staging: 'recsync push' sends every edit."),
        ("checkout", "use 'recsync restore'"),
        ("fetch", "use 'recsync pull -n'"),
    ])
    func gitsWordsSayWhatToUseInstead(_ word: String, _ pointer: String) throws {
        let f = try CLIFixture().withStore()
        try f.clone("w")
        let out = try f.run([word, "-a"], in: "w", expect: 64)
        #expect(out.stderr.contains("'\(word)' is not a recsync command. ") && out.stderr.contains(pointer), "\(out)")
        let json = try f.json([word], in: "w", expect: 64)
        #expect((json["error"] as? [String: Any])?["kind"] as? String == "usage", "\(json)")
    }

    @Test func dashCapitalVAndVersionPrintTheVersion() throws {
        let f = try CLIFixture()
        let version = try f.run(["--version"]).stdout
        #expect(!version.isEmpty)
        #expect(try f.run(["-V"]).stdout == version)
        #expect(try f.run(["version"]).stdout == version)
    }

    @Test func zoneLsListsAsZoneListDoesWithAHeaderOnlyOnATerminal() throws {
        let f = try CLIFixture().withStore()
        try f.clone("w")
        try f.run(["zone", "create", "todo"], in: "w")
        let list = try f.run(["zone", "list"], in: "w")
        #expect(list.lines.count == 1 && list.lines[0].hasPrefix("private\ttodo\t"), "\(list)")
        #expect(try f.run(["zone", "ls"], in: "w").stdout == list.stdout)
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/script") else { return }
        // On a terminal (script(1) gives it one) the columns are named first.
        let tty = try Subprocess.capture(
            "/usr/bin/script", ["-qec", "'\(f.recsync.executable)' zone ls", "/dev/null"], in: f.ws("w"), environment: f.recsync.environment)
        let lines = tty.stdout.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(lines.first == "SCOPE\tZONE\tOWNER\tPERMISSION\tDETAILS" && lines.dropFirst().first?.hasPrefix("private\ttodo\t") == true, "\(tty)")
    }

    /// Runs recsync as `user` in the workspace named after them.
    func run(_ f: CLIFixture, as user: String, _ arguments: [String]) throws -> ProcessOutput {
        try f.recsync.run(arguments, in: f.ws(user), environment: ["RECSYNC_USER": user])
    }

    @Test func shareOfAZoneSharedWithYouNamesItsOwner() throws {
        let f = try CLIFixture().withStore()
        for user in ["alice", "bob"] {
            _ = try f.recsync.run(["clone", "store.git", user], in: f.directory.path, environment: ["RECSYNC_USER": user])
        }
        try f.run(["zone", "create", "plans"], in: "alice")
        try f.run(["share", "plans", "--with", "bob"], in: "alice")
        #expect(try run(f, as: "bob", ["pull"]).status == 0)
        for arguments in [["share", "plans", "--with", "carol"], ["unshare", "plans", "--with", "bob"]] {
            let refused = try run(f, as: "bob", arguments)
            #expect(refused.status != 0 && refused.status != 64, "\(refused)")
            #expect(refused.stderr.contains("zone 'plans' belongs to alice; only its owner can share it"), "\(refused)")
        }
        // A zone nobody has is still not found.
        #expect(try run(f, as: "bob", ["share", "nowhere", "--with", "carol"]).stderr.contains("nowhere"))
    }

    @Test func aCloneWithNoZonesSaysHowZonesArrive() throws {
        let f = try CLIFixture().withStore()
        try f.clone("alice")
        try f.run(["zone", "create", "plans"], in: "alice")
        let bob = try f.recsync.run(["clone", "store.git", "bob"], in: f.directory.path, environment: ["RECSYNC_USER": "bob"])
        #expect(bob.status == 0, "\(bob)")
        #expect(bob.stdout.contains("cloned 0 zones"), "\(bob)")
        #expect(bob.stderr.contains("hint: ") && bob.stderr.contains("'recsync share ZONE --with bob'"), "\(bob)")
        // A clone that finds zones has nothing to add; --json keeps stderr for errors.
        let second = try f.run(["clone", "store.git", "alice2"])
        #expect(!second.stderr.contains("hint: "), "\(second)")
        let json = try f.recsync.run(["clone", "store.git", "bob2", "--json"], in: f.directory.path, environment: ["RECSYNC_USER": "bob"])
        #expect(json.status == 0 && !json.stderr.contains("hint: "), "\(json)")
    }

    @Test func aQuerySubscriptionAsksWhichDatabase() throws {
        let f = try CLIFixture().withStore()
        try f.clone("w")
        let refused = try f.run(["subscribe", "--query", "Task"], in: "w", expect: 64)
        #expect(refused.stderr.contains("--query matches in one database: give --database private"), "\(refused)")
        try f.run(["subscribe", "--query", "Task", "--database", "shared", "--id", "theirs"], in: "w")
        try f.run(["subscribe", "--query", "Task", "--database", "private", "--id", "mine"], in: "w")
        // The refused one was not saved.
        #expect(try f.run(["subscriptions"], in: "w").lines.count == 2)
    }
}
