import Foundation
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

/// Shell completion of zones, records and subscription IDs, as the shells ask for it
/// (`recsync ---completion SUBCOMMAND -- ARGUMENT INDEX CURSOR WORDS...`, the protocol the
/// generated scripts in completions/ use).
@Suite(.ownThreads) struct CompletionTests {
    func workspace() throws -> CLIFixture {
        let f = try CLIFixture().withStore()
        try f.clone("w")
        try f.run(["zone", "create", "todo"], in: "w")
        try f.run(["zone", "create", "tools"], in: "w")
        try f.run(["put", "todo/milk"], in: "w", input: #"{"a": 1}"#)
        try f.run(["put", "todo/mint"], in: "w", input: #"{"a": 2}"#)
        try f.run(["put", "tools/hammer"], in: "w", input: #"{"a": 3}"#)
        try f.run(["subscribe", "--zone", "todo"], in: "w")
        return f
    }

    func complete(_ f: CLIFixture, _ path: [String], _ argument: String, _ word: String, in dir: String = "w") throws -> [String] {
        let output = try f.run(["---completion"] + path + ["--", argument, "0", "\(word.utf8.count)", word], in: dir)
        return output.lines
    }

    @Test func zonesThenRecordsOfTheZoneTyped() throws {
        let f = try workspace()
        #expect(try complete(f, ["diff"], "positional@0", "t") == ["todo/", "tools/"])
        #expect(try complete(f, ["diff"], "positional@0", "todo/m") == ["todo/milk", "todo/mint"])
        #expect(try complete(f, ["diff"], "positional@0", "todo/mil") == ["todo/milk"])
        #expect(try complete(f, ["share"], "positional@0", "") == ["todo", "tools"])
        #expect(try complete(f, ["subscribe"], "--zone", "too") == ["tools"])
    }

    @Test func subscriptionIDs() throws {
        let f = try workspace()
        #expect(try complete(f, ["unsubscribe"], "positional@0", "") == ["zone-alice-todo"])
    }

    @Test func resolveOffersOnlyRecordsInConflict() throws {
        let f = try workspace()
        try f.run(["push"], in: "w")
        try f.clone("w2")
        try f.run(["put", "todo/milk"], in: "w2", input: #"{"a": 10}"#)
        try f.run(["push"], in: "w2")
        try f.run(["put", "todo/milk"], in: "w", input: #"{"a": 20}"#)
        try f.run(["pull"], in: "w", expect: 2)
        #expect(try complete(f, ["resolve"], "positional@0", "") == ["todo/milk"])
        #expect(try complete(f, ["resolve"], "positional@0", "tools").isEmpty)
    }

    @Test func outsideAWorkspaceNothingIsOffered() throws {
        let f = try workspace()
        #expect(try complete(f, ["diff"], "positional@0", "", in: ".").isEmpty)
    }
}
