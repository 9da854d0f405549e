import Foundation
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

/// `zone delete` and `zone purge` ask on a terminal, take --yes in scripts, and refuse
/// otherwise, before anything is changed.
@Suite(.ownThreads) struct ConfirmationTests {
    func workspace() throws -> CLIFixture {
        let f = try CLIFixture().withStore()
        try f.clone("w")
        try f.run(["zone", "create", "todo"], in: "w")
        try f.run(["put", "todo/milk"], in: "w", input: #"{"a": 1}"#)
        try f.run(["push"], in: "w")
        return f
    }

    func zones(_ f: CLIFixture) throws -> [String] {
        let list = try f.json(["zone", "list"], in: "w")
        return (list["zones"] as? [[String: Any]] ?? []).compactMap { $0["zone"] as? String }
    }

    @Test func withoutATerminalOrYesNothingIsDeleted() throws {
        let f = try workspace()
        for verb in ["delete", "purge"] {
            let refused = try f.run(["zone", verb, "todo"], in: "w", expect: 1)
            #expect(refused.stderr.contains("pass --yes"), "\(refused)")
            let json = try f.json(["zone", verb, "todo"], in: "w", expect: 1)
            #expect((json["error"] as? [String: Any])?["kind"] as? String == "notConfirmed", "\(json)")
        }
        #expect(try zones(f) == ["todo"])
        #expect(FileManager.default.fileExists(atPath: f.ws("w") + "/private/todo/milk.json"))
        try f.run(["zone", "purge", "todo", "--yes"], in: "w")
        #expect(try zones(f).isEmpty)
    }

    /// script(1) gives recsync a terminal; what it reads there is the typed answer.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "script(1) from util-linux is not installed"))
    func onATerminalTheZoneNameMustBeTyped() throws {
        let f = try workspace()
        let command = "\(f.recsync.executable) zone delete todo"
        let wrong = try Subprocess.capture(
            "/usr/bin/script", ["-qec", command, "/dev/null"], in: f.ws("w"), environment: f.recsync.environment, input: "tod\n")
        #expect(wrong.status == 1 && wrong.stdout.contains("Type 'todo' to confirm") && wrong.stdout.contains("not confirmed"), "\(wrong)")
        #expect(try zones(f) == ["todo"])
        let right = try Subprocess.capture(
            "/usr/bin/script", ["-qec", command, "/dev/null"], in: f.ws("w"), environment: f.recsync.environment, input: "todo\n")
        #expect(right.status == 0 && right.stdout.contains("deleted zone todo"), "\(right)")
        #expect(try zones(f).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: f.ws("w") + "/private/todo"))
    }
}
