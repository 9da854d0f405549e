import Foundation
import Glibc
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

/// Getting data in and out: import, export, ls, several records at once, OWNER/ZONE/NAME,
/// and paths relative to the directory a command runs in.
@Suite(.ownThreads) struct DataTransferTests {
    /// The type bits of what `lstat` finds at `path` (0 when nothing is there).
    func fileType(_ path: String) -> mode_t {
        var st = stat()
        return lstat(path, &st) == 0 ? st.st_mode & S_IFMT : 0
    }

    func write(_ f: CLIFixture, _ name: String, _ text: String) throws -> String {
        let path = f.directory.file(name)
        try writeFile(path, text)
        return path
    }

    /// The JSON document of a run fed `input` on stdin.
    func json(_ f: CLIFixture, _ arguments: [String], in dir: String, input: String) throws -> [String: Any] {
        let out = try f.run(arguments + ["--json"], in: dir, input: input)
        return try #require(try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Any])
    }

    func listing(_ f: CLIFixture, _ arguments: [String], in dir: String) throws -> [[String: Any]] {
        try #require(try f.json(["ls"] + arguments, in: dir)["records"] as? [[String: Any]])
    }

    @Test func importCSVThenListAndPush() throws {
        let f = try CLIFixture().withStore()
        try f.clone("ws")
        let csv = try write(f, "books.csv", "isbn,title,year\n1,Dune,1965\n2,\"Neuromancer, a novel\",1984\n3,\"two\nlines\",\n")
        let doc = try f.json(["import", "books", csv, "--id", "isbn", "--type", "Book"], in: "ws")
        #expect(doc["command"] as? String == "import")
        #expect(doc["new"] as? Int == 3 && doc["modified"] as? Int == 0 && doc["unchanged"] as? Int == 0)
        let neuromancer = try f.fields("ws", "private/books/2.json") ?? [:]
        #expect(neuromancer["title"] as? String == "Neuromancer, a novel" && neuromancer["year"] as? Int == 1984, "a number's cell is the number")
        #expect(try f.fields("ws", "private/books/3.json") as? [String: String] == ["title": "two\nlines"], "an empty cell is no field")

        var rows = try listing(f, ["books"], in: "ws")
        #expect(rows.map { $0["recordName"] as? String } == ["1", "2", "3"])
        #expect(rows.allSatisfy { $0["state"] as? String == "new" && $0["recordType"] as? String == "Book" })
        try f.run(["push"], in: "ws")
        rows = try listing(f, ["--long"], in: "ws")
        #expect(rows.allSatisfy { $0["state"] as? String == "synced" && $0["changeTag"] is String && $0["created"] is Int })
        let text = try f.run(["ls", "--long"], in: "ws").lines
        #expect(text.count == 3 && text[0].hasPrefix("synced") && text[0].hasSuffix("private/books/1.json"))

        // Again, with one value changed: one modified, two unchanged; ls shows the state.
        let edited = try write(f, "books2.csv", "isbn,title,year\n1,Dune,1966\n2,\"Neuromancer, a novel\",1984\n3,\"two\nlines\",\n")
        let again = try f.json(["import", "books", edited, "--id", "isbn"], in: "ws")
        #expect(again["modified"] as? Int == 1 && again["unchanged"] as? Int == 2)
        rows = try listing(f, ["books"], in: "ws")
        #expect(rows.map { $0["state"] as? String } == ["modified", "synced", "synced"])
    }

    @Test func badLinesAreReportedAndNothingIsWritten() throws {
        let f = try CLIFixture().withStore()
        try f.clone("ws")
        let cases: [(name: String, text: String, arguments: [String], expected: String)] = [
            ("bad.jsonl", "{\"id\": \"a\"}\n{\"id\": \"b\"}\n{\"id\": \"c\", oops}\n", ["--id", "id"], "bad.jsonl: line 3"),
            ("array.jsonl", "{\"id\": \"a\"}\n\n[1, 2]\n", ["--id", "id"], "array.jsonl: line 3: must hold a JSON object"),
            (
                "dup.jsonl", "{\"id\": \"a\"}\n{\"id\": \"b\"}\n{\"id\": \"a\"}\n", ["--id", "id"],
                "dup.jsonl: line 3: record 'a' is on line 1 already"
            ),
            ("noid.jsonl", "{\"id\": \"a\"}\n{\"name\": \"b\"}\n", ["--id", "id"], "noid.jsonl: line 2: no 'id'"),
            ("badname.jsonl", "{\"id\": \"a\"}\n{\"id\": \"_b\"}\n", ["--id", "id"], "badname.jsonl: line 2:"),
            ("badkey.jsonl", "{\"id\": \"a\"}\n{\"id\": \"b\", \"9lives\": 1}\n", ["--id", "id"], "badkey.jsonl: line 2: field key '9lives'"),
            ("badvalue.jsonl", "{\"v\": 1}\n{\"v\": {\"$date\": \"soon\"}}\n", [], "badvalue.jsonl: line 2:"),
            ("same.jsonl", "{\"v\": 1}\n{\"v\": 2}\n{\"v\": 1}\n", [], "same.jsonl: line 3: holds the same fields as line 1"),
            ("cells.csv", "id,title\na,one\nb,two,extra\n", ["--id", "id"], "cells.csv: line 3: has 3 cells where the header names 2 columns"),
            ("quote.csv", "id,title\na,\"one\nb,two\n", ["--id", "id"], "quote.csv: line 2: a quote is left open"),
            // CSV.swift alone reads these without an error, the rest of the file as one cell.
            ("after.csv", "id,note\n1,\"bad\"x\n2,ok\n3,ok\n", ["--id", "id"], "after.csv: line 2: a cell's closing quote is followed by 'x'"),
            (
                "aftercrlf.csv", "id,note\r\n1,ok\r\n2,\"bad\"xyz,\r\n3,ok\r\n", ["--id", "id"],
                "aftercrlf.csv: line 3: a cell's closing quote is followed by 'x'"
            ),
            ("inner.csv", "id,note\n1,\"two\nlines\"\n2,ab\"cd\n", ["--id", "id"], "inner.csv: line 4: a quote inside a cell"),
            ("header.csv", "id,id\na,b\n", [], "header.csv: line 1: the header names column 'id' twice"),
            ("csvdup.csv", "id,title\na,one\na,two\n", ["--id", "id"], "csvdup.csv: line 3: record 'a' is on line 2 already"),
        ]
        for c in cases {
            let path = try write(f, c.name, c.text)
            let out = try f.run(["import", "todo", path] + c.arguments, in: "ws", expect: 1)
            #expect(out.stderr.contains(c.expected), "\(c.name): \(out.stderr)")
            #expect(!FileManager.default.fileExists(atPath: "\(f.ws("ws"))/private/todo"), "\(c.name) wrote something")
        }
        // As JSON: the error document names the file and line.
        let doc = try f.json(["import", "todo", f.directory.file("dup.jsonl"), "--id", "id"], in: "ws", expect: 1)
        let error = try #require(doc["error"] as? [String: Any])
        #expect(error["kind"] as? String == "malformed")
        // A bad line in an existing zone leaves its records as they were.
        try f.put("todo/a", #"{"v": 1}"#, in: "ws")
        let before = f.records("ws")
        try f.run(["import", "todo", try write(f, "late.jsonl", "{\"id\": \"a\", \"v\": 2}\n{\"id\": 5.5}\n"), "--id", "id"], in: "ws", expect: 1)
        #expect(f.records("ws") == before)
        // No format to be told from the name; an unknown zone for ls.
        #expect(try f.run(["import", "todo", try write(f, "data.txt", "{}\n")], in: "ws", expect: 1).stderr.contains("--format"))
        #expect(try f.run(["ls", "nosuchzone"], in: "ws", expect: 1).stderr.contains("no zone 'nosuchzone'"))
    }

    @Test func generatedNamesAreStable() throws {
        let f = try CLIFixture().withStore()
        try f.clone("ws")
        let input = "{\"title\": \"milk\", \"n\": 2}\n{\"title\": \"eggs\", \"done\": true}\n"
        #expect(try json(f, ["import", "todo", "-"], in: "ws", input: input)["new"] as? Int == 2)
        let names = try listing(f, ["todo"], in: "ws").compactMap { $0["recordName"] as? String }
        #expect(names.count == 2 && names.allSatisfy { $0.count >= 16 })
        #expect(try json(f, ["import", "todo", "-"], in: "ws", input: input)["unchanged"] as? Int == 2)
        #expect(try listing(f, ["todo"], in: "ws").compactMap { $0["recordName"] as? String } == names)
    }

    @Test func exportRoundTripsThroughImport() throws {
        let f = try CLIFixture().withStore()
        try f.clone("ws")
        let input = """
            {"id": "b", "n": 2, "x": 1.5, "ok": true, "tags": ["a", "b"], "due": {"$date": "2026-11-22T10:00:00.000Z"}, "meta": {"k": [1]}}
            {"id": "a", "title": "comma, \\"quoted\\"\\nnewline"}
            {"id": "c/d", "title": "slash"}

            """
        try f.run(["import", "one", "-", "--id", "id", "--type", "Item"], in: "ws", input: input)
        let first = try f.run(["export", "one", "--system"], in: "ws").stdout
        #expect(first.split(separator: "\n").count == 3)
        #expect(first.hasPrefix(#"{"recordName":"a""#) || first.contains(#""recordName":"a""#))
        try f.run(["import", "two", "-", "--system"], in: "ws", input: first)
        let second = try f.run(["export", "two", "--system"], in: "ws").stdout
        #expect(second == first.replacingOccurrences(of: #""zone":"one""#, with: #""zone":"two""#))
        #expect(try listing(f, ["two"], in: "ws").allSatisfy { $0["recordType"] as? String == "Item" })

        // A field named like a system column would be hidden by it, and lost on the way back.
        try f.run(["import", "clash", "-", "--id", "id"], in: "ws", input: #"{"id": "c", "owner": "bob", "title": "t"}"# + "\n")
        for format in ["jsonl", "csv"] {
            let out = try f.run(["export", "clash", "--system", "--format", format], in: "ws", expect: 1)
            #expect(out.stderr.contains("private/clash/c.json: its field 'owner' has the name of a system column"), "\(out.stderr)")
            #expect(out.stdout.isEmpty)
        }
        #expect(try f.run(["export", "clash"], in: "ws").stdout == #"{"owner":"bob","recordName":"c","title":"t"}"# + "\n")

        // -o replaces a regular file, and nothing else: not a link, a FIFO or a device.
        let target = f.directory.file("target")
        try FileManager.default.createSymbolicLink(atPath: target, withDestinationPath: f.directory.file("elsewhere"))
        #expect(try f.run(["export", "one", "-o", target], in: "ws", expect: 1).stderr.contains("is a symbolic link"))
        #expect(fileType(target) == S_IFLNK && !FileManager.default.fileExists(atPath: f.directory.file("elsewhere")))
        let fifo = f.directory.file("fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(try f.run(["export", "one", "-o", fifo], in: "ws", expect: 1).stderr.contains("not a regular file"))
        #expect(fileType(fifo) == S_IFIFO, "the FIFO is still there")

        // Plain export (names and fields) → import → export: the same bytes, names included,
        // in both formats; under another key with --id, and without names (hashed) with --no-names.
        for format in ["jsonl", "csv"] {
            let plain = try f.run(["export", "one", "--format", format], in: "ws").stdout
            #expect(plain.contains("a"))
            try f.run(["import", "three-\(format)", "-", "--format", format], in: "ws", input: plain)
            #expect(try f.run(["export", "three-\(format)", "--format", format], in: "ws").stdout == plain)
            let keyed = try f.run(["export", "one", "--format", format, "--id", "key"], in: "ws").stdout
            try f.run(["import", "four-\(format)", "-", "--format", format, "--id", "key"], in: "ws", input: keyed)
            #expect(try f.run(["export", "four-\(format)", "--format", format], in: "ws").stdout == plain)
        }
        let unnamed = try f.run(["export", "one", "--no-names"], in: "ws").stdout
        #expect(!unnamed.contains("recordName"))
        #expect(
            try f.run(["export", "one", "--system", "--id", "x"], in: "ws", expect: 64).stderr.contains("--system names each record by recordName"))
        try f.run(["export", "one", "--no-names", "--id", "x"], in: "ws", expect: 64)
        // The workspace's state and record directories are not export targets; nor is a link
        // into them (the workspace writes through no link).
        for target in [".recsync/config", "private/one/a.json", "x/../shared/new.jsonl"] {
            let refused = try f.run(["export", "one", "-o", target], in: "ws", expect: 1)
            #expect(refused.stderr.contains("which recsync keeps"), "\(target): \(refused)")
        }
        try FileManager.default.createSymbolicLink(atPath: "\(f.ws("ws"))/state", withDestinationPath: ".recsync")
        #expect(try f.run(["export", "one", "-o", "state/config"], in: "ws", expect: 1).stderr.contains("is a symbolic link"))
        try f.run(["status"], in: "ws")

        // CSV, to a file: strings round-trip.
        try f.run(["import", "s", try write(f, "s.csv", "k,a,b\n1,x,\"y, z\"\n2,,w\n"), "--id", "k"], in: "ws")
        try f.run(["export", "s", "--system", "-o", "out.csv"], in: "ws")
        let csv = try String(contentsOfFile: "\(f.ws("ws"))/out.csv", encoding: .utf8)
        #expect(csv.hasPrefix("recordName,zone,owner,recordType,changeTag,created,modified,a,b\n1,s,alice,,,,,x,\"y, z\"\n"))
        try f.run(["import", "s2", "out.csv", "--system"], in: "ws")
        try f.run(["export", "s2", "--system", "-o", "out2.csv"], in: "ws")
        let csv2 = try String(contentsOfFile: "\(f.ws("ws"))/out2.csv", encoding: .utf8)
        #expect(csv2 == csv.replacingOccurrences(of: ",s,alice", with: ",s2,alice"))
        // Non-string values are their JSON text in CSV.
        let typed = try f.run(["export", "one", "--format", "csv"], in: "ws").stdout
        #expect(typed.contains(#"2,true,"["a","b"]""#) || typed.contains("true"))
    }

    @Test func patchChangesSomeFieldsAndPushSendsThem() throws {
        let f = try CLIFixture().withStore()
        try f.clone("ws")
        try f.put("todo/milk", #"{"title": "milk", "qty": 1, "note": "x"}"#, in: "ws")
        try f.put("todo/eggs", #"{"title": "eggs"}"#, in: "ws")
        try f.run(["push"], in: "ws")
        let doc = try json(f, ["patch", "todo/milk", "todo/eggs"], in: "ws", input: #"{"done": true, "note": null}"#)
        #expect((doc["records"] as? [[String: Any]])?.map { $0["changed"] as? Bool } == [true, true])
        #expect(NSDictionary(dictionary: try f.fields("ws", "private/todo/milk.json") ?? [:]) == ["title": "milk", "qty": 1, "done": true])
        #expect(NSDictionary(dictionary: try f.fields("ws", "private/todo/eggs.json") ?? [:]) == ["title": "eggs", "done": true])
        #expect(try f.run(["status"], in: "ws").lines.filter { $0.hasPrefix("M ") }.count == 2)
        try f.run(["push"], in: "ws")
        // From a file; a record already so is unchanged; a missing record writes nothing.
        let patchFile = try write(f, "p.json", #"{"qty": 2}"#)
        #expect(try f.run(["patch", "todo/milk", "--file", patchFile], in: "ws").stdout.contains("patched private/todo/milk.json"))
        #expect(try f.run(["patch", "todo/milk", "--file", patchFile], in: "ws").stdout.contains("unchanged"))
        let missing = try f.run(["patch", "todo/eggs", "todo/none"], in: "ws", input: #"{"qty": 9}"#, expect: 1)
        #expect(missing.stderr.contains("no record file at private/todo/none.json"))
        #expect(try f.fields("ws", "private/todo/eggs.json")?["qty"] == nil)
        #expect(try f.run(["patch", "todo/eggs"], in: "ws", input: "not json", expect: 1).stderr.contains("not valid JSON"))
        #expect(try f.run(["put", "--help"], in: "ws").stdout.contains("replacing the whole record"))
    }

    @Test func severalRecordsAtOnce() throws {
        let f = try CLIFixture().withStore()
        try f.clone("ws")
        try f.run(["put", "todo/a", "todo/b"], in: "ws", input: #"{"done": false}"#)
        let lines = try f.run(["get", "todo/a", "todo/b"], in: "ws").lines
        #expect(lines == [#"{"done":false}"#, #"{"done":false}"#])
        let doc = try f.json(["get", "todo/b", "todo/a"], in: "ws")
        #expect((doc["records"] as? [[String: Any]])?.map { $0["recordName"] as? String } == ["b", "a"])
        // A bad name among several: nothing written, the error names it.
        let bad = try f.run(["put", "todo/c", "todo/_d"], in: "ws", input: "{}", expect: 1)
        #expect(bad.stderr.contains("_d"))
        #expect(!FileManager.default.fileExists(atPath: "\(f.ws("ws"))/private/todo/c.json"))
        // rm: one missing record → nothing removed.
        let missing = try f.run(["rm", "todo/a", "todo/zz"], in: "ws", expect: 1)
        #expect(missing.stderr.contains("private/todo/zz.json"))
        #expect(FileManager.default.fileExists(atPath: "\(f.ws("ws"))/private/todo/a.json"))
        // Never pushed: rm refuses to lose them, as git rm does, unless --force.
        let refused = try f.run(["rm", "todo/a", "todo/b"], in: "ws", expect: 1)
        #expect(
            refused.stderr.contains("private/todo/a.json is a new record, never pushed") && refused.stderr.contains("--force"), "\(refused.stderr)")
        #expect(FileManager.default.fileExists(atPath: "\(f.ws("ws"))/private/todo/b.json"))
        let removed = try f.json(["rm", "-f", "todo/a", "todo/b"], in: "ws")
        #expect((removed["records"] as? [[String: Any]])?.count == 2)
        #expect(try listing(f, [], in: "ws").isEmpty)
        #expect(try f.run(["get", "todo/a"], in: "ws", expect: 1).stderr.contains("no record file"))
    }

    @Test func sharedRecordsByOwnerZoneName() throws {
        let f = try CLIFixture().withStore()
        for user in ["alice", "bob"] {
            _ = try f.recsync.run(["clone", "store.git", user], in: f.directory.path, environment: ["RECSYNC_USER": user])
        }
        try f.run(["zone", "create", "plans"], in: "alice")
        try f.put("plans/trip", #"{"where": "Lisbon"}"#, in: "alice")
        try f.run(["push"], in: "alice")
        try f.run(["share", "plans", "--with", "bob"], in: "alice")
        func bob(_ arguments: [String], input: String? = nil, expect status: Int32 = 0) throws -> ProcessOutput {
            let out = try f.recsync.run(arguments, in: f.ws("bob"), input: input, environment: ["RECSYNC_USER": "bob"])
            #expect(out.status == status, "\(arguments):\n\(out)")
            return out
        }
        _ = try bob(["pull"])
        #expect(try bob(["get", "alice/plans/trip"]).stdout.contains("Lisbon"))
        let listed = try bob(["ls", "alice/plans", "--json"]).stdout
        #expect(listed.contains(#""path" : "shared/alice/plans/trip.json""#) || listed.contains("shared/alice/plans/trip.json"))
        _ = try bob(["put", "alice/plans/trip"], input: #"{"where": "Porto"}"#)
        #expect(try f.fields("bob", "shared/alice/plans/trip.json")?["where"] as? String == "Porto")
        #expect(try bob(["export", "alice/plans", "--system"]).stdout.contains(#""owner":"alice""#))
        // Bob's own zone named like the owner wins; the path form still reaches the shared one.
        _ = try bob(["put", "alice/first"], input: "{}")
        _ = try bob(["put", "alice/plans/x"], input: "{}")
        #expect(FileManager.default.fileExists(atPath: "\(f.ws("bob"))/private/alice/plans%2Fx.json"))
        #expect(try bob(["get", "shared/alice/plans/trip.json"]).stdout.contains("Porto"))
    }

    @Test func pathsAreRelativeToTheCurrentDirectory() throws {
        let f = try CLIFixture().withStore()
        try f.clone("ws")
        try f.put("todo/a", #"{"v": 1}"#, in: "ws")
        try f.put("todo/b", #"{"v": 1}"#, in: "ws")
        try f.put("notes/n", #"{"v": 1}"#, in: "ws")
        try f.run(["push"], in: "ws")
        try writeFile("\(f.ws("ws"))/private/todo/a.json", #"{"v": 2}"#)
        try FileManager.default.removeItem(atPath: "\(f.ws("ws"))/private/notes/n.json")

        // In a zone directory: status prints paths from here, and they work as arguments.
        let sub = "ws/private/todo"
        let status = try f.json(["status"], in: sub)
        #expect(paths(status, "changes") == ["../notes/n.json", "a.json"])
        #expect(try f.run(["status"], in: sub).lines.contains("M a.json"))
        for path in paths(status, "changes") {
            let diff = try f.json(["diff", path], in: sub)
            #expect((diff["records"] as? [[String: Any]])?.count == 1, "diff \(path)")
        }
        #expect(try f.run(["get", "a.json"], in: sub).stdout.contains("2"))
        #expect(try f.json(["ls", "todo"], in: sub)["records"].map { "\($0)" }?.contains("b.json") == true)
        // A root-relative path saved by a script still works from here.
        #expect(try f.run(["get", "private/todo/b.json"], in: sub).stdout.contains("1"))
        try f.run(["rm", "b.json"], in: sub)
        #expect(try f.run(["status"], in: "ws/private").lines.contains("D todo/b.json"))
        // a.json has an edit not pushed: rm refuses to lose it (as git rm does) unless --force.
        let refused = try f.run(["rm", "private/todo/a.json"], in: "ws/private/notes", expect: 1)
        #expect(refused.stderr.contains("../todo/a.json has edits not pushed"), "\(refused.stderr)")
        #expect(try f.fields("ws", "private/todo/a.json")?["v"] as? Int == 2)
        try f.run(["rm", "--force", "private/todo/a.json"], in: "ws/private/notes")
        #expect(!FileManager.default.fileExists(atPath: "\(f.ws("ws"))/private/todo/a.json"))
        // -C counts as the directory the command runs in.
        #expect(try f.run(["-C", "private/notes", "status"], in: "ws").lines.contains("D n.json"))
    }
}
