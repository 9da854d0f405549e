import Foundation
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

/// The progress line: on a terminal one line updated in place, with the known total; nothing
/// on stderr when it is not a terminal.
@Suite(.ownThreads) struct ProgressTests {
    /// A store with `count` records in one zone, pushed from workspace `w`.
    func store(records count: Int) throws -> CLIFixture {
        let f = try CLIFixture().withStore()
        try f.clone("w")
        let zone = f.ws("w") + "/private/big"
        try FileManager.default.createDirectory(atPath: zone, withIntermediateDirectories: true)
        for i in 0..<count {
            try writeFile("\(zone)/r\(i).json", #"{"n": \#(i)}"# + "\n")
        }
        try f.run(["push", "-q"], in: "w")
        return f
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "script(1) from util-linux is not installed"))
    func aCloneOnATerminalUpdatesOneLineWithTheTotal() throws {
        let f = try store(records: 4_500)
        // script(1) gives recsync a pseudo-terminal for stdout and stderr.
        let command = "\(f.recsync.executable) clone store.git w2"
        let output = try Subprocess.capture(
            "/usr/bin/script", ["-qec", command, "/dev/null"], in: f.directory.path, environment: f.recsync.environment)
        #expect(output.status == 0, "\(output)")
        let updates = output.stdout.components(separatedBy: "\r\u{1B}[K").filter { $0.hasPrefix("cloning: ") }
        // The first update and the one reaching the total are always drawn (others at most
        // ten times a second).
        #expect(updates.first?.hasPrefix("cloning: 0/4,500 records (0%)") == true, "\(output.stdout.debugDescription)")
        #expect(updates.contains { $0.hasPrefix("cloning: 4,500/4,500 records (100%)") }, "\(updates)")
        // One line, not one per page: no update ends in a newline of its own.
        #expect(!updates.contains { $0.contains("records written") }, "\(updates)")
        #expect(output.stdout.contains("cloned 1 zone, 4500 records"))
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "script(1) from util-linux is not installed"))
    func anIncrementalPullOnATerminalCountsOutOfTheChangesTotal() throws {
        let f = try store(records: 10)
        try f.clone("w2")
        let zone = f.ws("w") + "/private/big"
        for i in 0..<1_200 { try writeFile("\(zone)/n\(i).json", #"{"n": \#(i)}"# + "\n") }
        try FileManager.default.removeItem(atPath: "\(zone)/r0.json")
        try f.run(["push", "-q"], in: "w")
        let output = try Subprocess.capture(
            "/usr/bin/script", ["-qec", "\(f.recsync.executable) pull", "/dev/null"], in: f.ws("w2"), environment: f.recsync.environment)
        #expect(output.status == 0, "\(output)")
        let updates = output.stdout.components(separatedBy: "\r\u{1B}[K").filter { $0.hasPrefix("pulling: ") }
        // A line while the store is asked; then the tree diff gives the total (1,200 new, 1
        // deleted) before the first page is read.
        #expect(updates.first == "pulling: asking the store what changed…", "\(output.stdout.debugDescription)")
        #expect(updates.dropFirst().first?.hasPrefix("pulling: 0/1,201 records (0%)") == true, "\(output.stdout.debugDescription)")
        #expect(updates.contains { $0.hasPrefix("pulling: 1,201/1,201 records (100%)") }, "\(updates)")
    }

    @Test func nothingOnStderrWhenItIsNotATerminal() throws {
        let f = try store(records: 2_500)
        let output = try f.run(["clone", "store.git", "w2"])
        #expect(output.stderr.isEmpty, "\(output.stderr)")
        try f.run(["put", "big/r1"], in: "w", input: #"{"n": -1}"#)
        #expect(try f.run(["push"], in: "w").stderr.isEmpty)
        #expect(try f.run(["pull"], in: "w2").stderr.isEmpty)
    }
}
