import ArgumentParser
import Foundation
import RecSyncCLI
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

/// The schema in docs/json.md, read from its tables: for each shape, command and feed line,
/// its keys, whether each may be missing, and its type.
struct JSONSchema {
    struct Key {
        var name: String
        var optional: Bool
        var type: String
    }

    var tables: [String: [Key]] = [:]

    static let path = GeneratedFilesTests.packageRoot + "/docs/json.md"

    /// Reads every `### `NAME`` heading (several names separated by commas share the table)
    /// followed by a `| key | type | meaning |` table.
    static func load() throws -> JSONSchema {
        let text = try #require(readFile(path), "\(path) is missing")
        var schema = JSONSchema()
        var current: [String] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.hasPrefix("#") {
                let spans = Self.codeSpans(line)
                current = !line.hasPrefix("### ") ? [] : spans.isEmpty ? [String(line.dropFirst(4))] : spans
                if line.hasPrefix("### ") { for name in current { schema.tables[name] = schema.tables[name] ?? [] } }
                continue
            }
            guard !current.isEmpty, line.hasPrefix("| `") else { continue }
            let cells = Self.cells(line)
            guard cells.count >= 2 else { continue }
            var name = cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            let optional = name.hasSuffix("?")
            if optional { name.removeLast() }
            for table in current { schema.tables[table, default: []].append(Key(name: name, optional: optional, type: cells[1])) }
        }
        return schema
    }

    static func codeSpans(_ line: String) -> [String] {
        line.split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
    }

    /// The cells of a table row; `\|` inside a cell is a literal bar (a union type).
    static func cells(_ line: String) -> [String] {
        let marked = line.replacingOccurrences(of: "\\|", with: "\u{1}")
        return marked.split(separator: "|", omittingEmptySubsequences: false).dropFirst().dropLast()
            .map { $0.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "\u{1}", with: "|") }
    }

    /// Problems of `value` against a type: `string`, `int`, `time`, `bool`, `null`, `any`, `object`,
    /// `[T]`, `A|B`, or a shape's name.
    func problems(_ value: Any, type: String, at path: String) -> [String] {
        let alternatives = type.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
        if alternatives.count > 1 {
            let all = alternatives.map { problems(value, type: $0, at: path) }
            return all.contains { $0.isEmpty } ? [] : ["\(path): none of \(type) fits: " + all.flatMap { $0 }.joined(separator: "; ")]
        }
        switch type {
        case "any": return []
        case "string": return value is String ? [] : ["\(path): expected a string, got \(value)"]
        case "int":
            return (value as? NSNumber).map { !Self.isBool($0) && $0.doubleValue == $0.doubleValue.rounded() } == true
                ? [] : ["\(path): expected an integer, got \(value)"]
        case "bool": return (value as? NSNumber).map(Self.isBool) == true ? [] : ["\(path): expected true or false, got \(value)"]
        case "null": return value is NSNull ? [] : ["\(path): expected null, got \(value)"]
        case "object": return value is [String: Any] ? [] : ["\(path): expected an object, got \(value)"]
        case "time":
            // Milliseconds since the epoch: a count of seconds is below 10^11 until the year 5138.
            guard let n = value as? Int, !problemsOfInt(value) else { return ["\(path): expected a time, got \(value)"] }
            return n >= 100_000_000_000 ? [] : ["\(path): \(n) looks like seconds; times are milliseconds since the epoch"]
        default: break
        }
        if type.hasPrefix("[") && type.hasSuffix("]") {
            guard let array = value as? [Any] else { return ["\(path): expected an array, got \(value)"] }
            let element = String(type.dropFirst().dropLast())
            return array.enumerated().flatMap { problems($0.element, type: element, at: "\(path)[\($0.offset)]") }
        }
        guard let keys = tables[type] else { return ["\(path): docs/json.md has no table `\(type)`"] }
        guard let object = value as? [String: Any] else { return ["\(path): expected a \(type) object, got \(value)"] }
        return problems(object, keys: keys, at: path, what: type)
    }

    func problems(_ object: [String: Any], keys: [Key], at path: String, what: String) -> [String] {
        var found: [String] = []
        let documented = Set(keys.map(\.name))
        for key in object.keys.sorted() where !documented.contains(key) {
            found.append("\(path).\(key): not in docs/json.md's `\(what)`")
        }
        for key in keys {
            guard let value = object[key.name] else {
                if !key.optional { found.append("\(path).\(key.name): missing (docs/json.md's `\(what)` lists it)") }
                continue
            }
            found += problems(value, type: key.type, at: "\(path).\(key.name)")
        }
        return found
    }

    /// A command's document: its table plus `version` and `command`; or the error document.
    func documentProblems(_ document: [String: Any], command: String) -> [String] {
        var found: [String] = []
        if document["version"] as? Int != 1 { found.append("version is not 1") }
        if document["command"] as? String != command { found.append("command is \(document["command"] ?? "missing"), not \(command)") }
        var rest = document
        rest["version"] = nil
        rest["command"] = nil
        if document["error"] != nil {
            return found + problems(rest, keys: tables["Errors"] ?? [], at: command, what: "Errors")
        }
        // A dry run is its own document: `push --dry-run`.
        let table = document["dryRun"] as? Bool == true ? "\(command) --dry-run" : command
        guard let keys = tables[table] else { return found + ["docs/json.md has no table for `\(table)`"] }
        return found + problems(rest, keys: keys, at: table, what: table)
    }

    /// A feed line: `changes` lines by their `kind`, `watch` lines are notifications.
    func lineProblems(_ line: [String: Any], command: String) -> [String] {
        var rest = line
        guard rest.removeValue(forKey: "command") as? String == command else { return ["\(command) line without its command: \(line)"] }
        if command == "watch" { return problems(rest, type: "notification", at: "watch") }
        rest["version"] = nil
        guard line["version"] as? Int == 1 else { return ["\(command) line without version 1: \(line)"] }
        let table = "\(command):\(line["kind"] as? String ?? "?")"
        guard let keys = tables[table] else { return ["docs/json.md has no table `\(table)`"] }
        return problems(rest, keys: keys, at: table, what: table)
    }

    func problemsOfInt(_ value: Any) -> Bool { !problems(value, type: "int", at: "").isEmpty }

    /// JSONSerialization gives true and false as NSNumbers of type char ("c").
    static func isBool(_ n: NSNumber) -> Bool { String(cString: n.objCType) == "c" }
}

/// Every command's `--json` output against docs/json.md, through the built binary.
@Suite(.serialized, .ownThreads) struct JSONSchemaTests {
    /// Runs a command with --json and checks its document; returns it.
    @discardableResult
    func check(
        _ f: CLIFixture, _ arguments: [String], in dir: String? = "w", input: String? = nil, environment: [String: String] = [:],
        expect status: Int32 = 0, schema: JSONSchema, seen: inout Set<String>, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> [String: Any] {
        let output = try f.run(
            arguments + ["--json"], in: dir, input: input, environment: environment, expect: status, sourceLocation: sourceLocation)
        let parsed = try? JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any]
        let document = try #require(
            parsed, "recsync \(arguments.joined(separator: " ")) --json printed no JSON object:\n\(output.description)",
            sourceLocation: sourceLocation)
        // The command the arguments name (aliases by their name), not what the document says.
        let words = arguments.filter { !$0.hasPrefix("-") }.map { $0 == "fsck" ? "doctor" : $0 }
        let command = Self.leafCommands().filter { words.starts(with: $0.split(separator: " ").map(String.init)) }.max { $0.count < $1.count } ?? "?"
        let problems = schema.documentProblems(document, command: command)
        #expect(
            problems.isEmpty, "recsync \(arguments.joined(separator: " ")) --json:\n\(problems.joined(separator: "\n"))",
            sourceLocation: sourceLocation)
        seen.insert(document["error"] == nil ? command : "error")
        return document
    }

    /// Every leaf subcommand's words (`zone delete`).
    static func leafCommands(_ type: any ParsableCommand.Type = RecSyncCommand.self, prefix: [String] = []) -> [String] {
        let subcommands = type.configuration.subcommands
        if subcommands.isEmpty { return [prefix.joined(separator: " ")] }
        return subcommands.flatMap { leafCommands($0, prefix: prefix + [$0.configuration.commandName ?? ""]) }
    }

    @Test func everyCommandIsDocumented() throws {
        let schema = try JSONSchema.load()
        let feeds: Set<String> = ["changes", "watch"]
        for command in Self.leafCommands() where !feeds.contains(command) {
            #expect(schema.tables[command] != nil, "docs/json.md has no table for `\(command)`")
        }
        #expect(schema.tables["watch"] != nil && schema.tables["changes:token"] != nil)
    }

    @Test func everyDocumentFollowsTheSchema() throws {
        let schema = try JSONSchema.load()
        var seen: Set<String> = []
        let f = try CLIFixture(user: "alice")
        try check(f, ["store", "init", "store.git"], in: nil, schema: schema, seen: &seen)
        try check(f, ["store", "doctor", "store.git"], in: nil, schema: schema, seen: &seen)
        try check(f, ["clone", "store.git", "w"], in: nil, schema: schema, seen: &seen)
        try check(f, ["zone", "create", "todo", "--default-type", "Task"], schema: schema, seen: &seen)
        try check(f, ["zone", "create", "spare"], schema: schema, seen: &seen)
        try check(f, ["put", "todo/milk"], input: #"{"title": "Milk", "n": 1}"#, schema: schema, seen: &seen)
        try check(f, ["put", "todo/bread"], input: #"{"title": "Bread"}"#, schema: schema, seen: &seen)
        try check(f, ["status"], schema: schema, seen: &seen)
        try check(f, ["diff"], schema: schema, seen: &seen)
        try check(f, ["push", "--dry-run"], schema: schema, seen: &seen)
        try check(f, ["pull", "-n"], schema: schema, seen: &seen)
        try check(f, ["push"], schema: schema, seen: &seen)
        try check(f, ["get", "todo/milk", "todo/bread"], schema: schema, seen: &seen)
        try check(f, ["ls"], schema: schema, seen: &seen)
        try check(f, ["ls", "todo", "--long"], schema: schema, seen: &seen)
        try check(f, ["import", "spare", "-", "--format", "csv", "--id", "id"], input: "id,title\nx1,One\nx2,Two\n", schema: schema, seen: &seen)
        try check(f, ["export", "spare", "-o", "spare.jsonl"], schema: schema, seen: &seen)
        try check(f, ["import", "spare", "-", "--format", "jsonl"], input: "{\"a\": 1}\nnot json\n", expect: 1, schema: schema, seen: &seen)
        try check(f, ["log"], schema: schema, seen: &seen)
        try check(f, ["log", "todo/milk"], schema: schema, seen: &seen)
        try check(f, ["log", "-p", "todo/milk"], schema: schema, seen: &seen)
        try check(f, ["show", "todo/milk"], schema: schema, seen: &seen)
        try f.run(["put", "todo/milk"], in: "w", input: #"{"title": "Milk?", "n": 1}"#)
        try check(f, ["restore", "todo/milk"], schema: schema, seen: &seen)
        try check(f, ["log", "-p", "todo"], schema: schema, seen: &seen)
        try check(f, ["patch", "todo/milk"], input: #"{"n": 7}"#, schema: schema, seen: &seen)
        try check(f, ["diff", "todo", "--stat"], schema: schema, seen: &seen)
        try check(f, ["restore", "todo/milk@~0", "--force"], schema: schema, seen: &seen)
        try check(f, ["zone", "list"], schema: schema, seen: &seen)
        try check(f, ["share", "todo", "--with", "bob"], schema: schema, seen: &seen)
        try check(f, ["unshare", "todo", "--with", "bob"], schema: schema, seen: &seen)
        try check(f, ["keys", "init"], schema: schema, seen: &seen)
        try check(f, ["keys", "show"], schema: schema, seen: &seen)
        try check(f, ["zone", "create", "diary", "--encrypt", "title,body"], schema: schema, seen: &seen)
        try check(f, ["zone", "list"], schema: schema, seen: &seen)
        try check(f, ["keys", "export", "alice.key"], schema: schema, seen: &seen)
        try check(f, ["keys", "import", "alice.key"], schema: schema, seen: &seen)
        try check(f, ["keys", "reset", "--yes"], schema: schema, seen: &seen)
        try check(f, ["subscribe", "--zone", "todo"], schema: schema, seen: &seen)
        try check(f, ["subscribe", "--query", "Task", "--database", "private", "--since-beginning", "--include-own"], schema: schema, seen: &seen)
        try check(f, ["subscriptions"], schema: schema, seen: &seen)
        try check(f, ["config", "list"], schema: schema, seen: &seen)
        try writeFile(f.ws("w") + "/.recsync/.x.tmp-1", "")
        try check(f, ["doctor"], expect: 1, schema: schema, seen: &seen)
        try check(f, ["doctor", "--fix"], schema: schema, seen: &seen)
        try check(f, ["config", "get", "user"], schema: schema, seen: &seen)
        try check(f, ["config", "set", "commitSnapshots", "false"], schema: schema, seen: &seen)
        try check(f, ["config", "get", "nonsense"], expect: 1, schema: schema, seen: &seen)
        try check(f, ["notifications"], schema: schema, seen: &seen)
        try check(f, ["unsubscribe", "zone-alice-todo"], schema: schema, seen: &seen)

        // A conflict with a second workspace, then its resolution.
        try f.run(["clone", "store.git", "w2"])
        try f.run(["put", "todo/milk"], in: "w2", input: #"{"title": "Oat milk", "n": 1}"#)
        try f.run(["push"], in: "w2")
        try check(f, ["put", "todo/milk"], input: #"{"title": "Whole milk", "n": 2}"#, schema: schema, seen: &seen)
        try check(f, ["pull"], expect: 2, schema: schema, seen: &seen)
        try check(f, ["diff"], schema: schema, seen: &seen)
        let merge = try check(f, ["resolve", "--merge"], expect: 2, schema: schema, seen: &seen)
        #expect((merge["clashes"] as? [[String: Any]])?.first?["fields"] as? [String] == ["title"], "\(merge)")
        try check(f, ["resolve", "--theirs"], schema: schema, seen: &seen)
        // A forced push over a version this workspace never pulled names it.
        try f.run(["pull"], in: "w2")
        try f.run(["put", "todo/milk"], in: "w2", input: #"{"title": "Goat milk", "n": 3}"#)
        try f.run(["push"], in: "w2")
        try f.run(["put", "todo/milk"], in: "w", input: #"{"title": "Mine", "n": 4}"#)
        let forced = try check(f, ["push", "--force"], schema: schema, seen: &seen)
        #expect((forced["overwritten"] as? [[String: Any]])?.map { $0["recordName"] as? String } == ["milk"], "\(forced)")
        #expect(!(try f.run(["push", "--force"], in: "w").stdout.contains("overwrote")))
        try f.run(["put", "todo/milk"], in: "w2", input: #"{"title": "Goat milk", "n": 5}"#)
        try f.run(["pull"], in: "w2", expect: 2)
        try f.run(["resolve", "--ours"], in: "w2")
        try f.run(["push"], in: "w2")
        try f.run(["put", "todo/milk"], in: "w", input: #"{"title": "Mine", "n": 6}"#)
        let text = try f.run(["push", "--force"], in: "w")
        #expect(text.stdout.contains("overwrote private/todo/milk.json: the store held a version you had not pulled"), "\(text)")
        try check(f, ["rm", "todo/bread"], schema: schema, seen: &seen)
        try check(f, ["push"], schema: schema, seen: &seen)
        try check(f, ["zone", "delete", "spare", "--yes"], schema: schema, seen: &seen)
        try check(f, ["zone", "create", "spare"], schema: schema, seen: &seen)
        try check(f, ["zone", "purge", "spare", "--yes"], schema: schema, seen: &seen)
        try check(f, ["zone", "untrack", "todo", "--force"], schema: schema, seen: &seen)
        try check(f, ["zone", "track", "todo"], schema: schema, seen: &seen)
        try check(f, ["pull"], schema: schema, seen: &seen)
        try check(f, ["store", "compact", "--keep-last", "2", "--drop-tombstones", "--yes"], schema: schema, seen: &seen)
        try check(f, ["store", "compact", "--before", "2000-01-01", "store.git", "--yes"], in: nil, schema: schema, seen: &seen)
        try f.run(["store", "init", "upgraded.git"], in: nil)
        let experimental = ["RECSYNC_EXPERIMENTAL_STORE_FORMAT": "2"]
        try check(f, ["store", "upgrade", "upgraded.git", "--yes"], in: nil, environment: experimental, schema: schema, seen: &seen)
        try check(f, ["store", "upgrade", "upgraded.git", "--yes"], in: nil, environment: experimental, schema: schema, seen: &seen)
        try FileManager.default.createDirectory(atPath: f.ws("plain"), withIntermediateDirectories: true)
        try check(f, ["init"], in: "plain", schema: schema, seen: &seen)

        // Errors: the library's and the parser's.
        try check(f, ["get", "todo/none"], expect: 1, schema: schema, seen: &seen)
        try check(f, ["zone", "create", "a/b"], expect: 1, schema: schema, seen: &seen)
        // A file that stops a push: `files` holds {path, message} objects, not text.
        try writeFile(f.ws("w") + "/private/todo/bad.json", "{bad")
        let invalid = try check(f, ["push"], expect: 1, schema: schema, seen: &seen)
        let files = (invalid["error"] as? [String: Any])?["files"] as? [[String: Any]]
        #expect(files?.map { $0["path"] as? String } == ["private/todo/bad.json"], "\(invalid)")
        #expect((files?.first?["message"] as? String)?.hasPrefix("line 1") == true, "\(invalid)")
        try FileManager.default.removeItem(atPath: f.ws("w") + "/private/todo/bad.json")
        try check(f, ["status", "--no-such-option"], expect: 64, schema: schema, seen: &seen)
        try check(f, ["status"], in: nil, expect: 3, schema: schema, seen: &seen)

        // Feeds.
        let feed = try f.run(["changes", "--zone", "todo", "--limit", "1"], in: "w")
        var lines = feed.lines
        let token = try f.run(["changes", "--store", "store.git"], in: nil)
        lines += token.lines
        for line in lines {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
            let problems = schema.lineProblems(object, command: "changes")
            #expect(problems.isEmpty, "changes: \(line)\n\(problems.joined(separator: "\n"))")
        }
        let watch = try f.run(["watch", "--once"], in: "w")
        for line in watch.lines {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
            let problems = schema.lineProblems(object, command: "watch")
            #expect(problems.isEmpty, "watch: \(line)\n\(problems.joined(separator: "\n"))")
        }

        // Every documented command was looked at (a table for a command nothing printed
        // would be a schema nobody checks).
        let commands = Set(Self.leafCommands()).subtracting(["changes", "watch"])
        let unchecked = commands.subtracting(seen).sorted()
        #expect(unchecked.isEmpty, "no document of these commands was checked: \(unchecked)")
    }
}
