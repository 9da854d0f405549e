import ArgumentParser
import Foundation
import RecSyncEngine
import RecSyncModel
import RecSyncStore

/// `recsync log [ZONE|RECORD]`: the store's history.
struct LogCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "log",
        abstract: "Show the store's history: all of it, one zone's, or one record's.",
        discussion: """
            A zone is a name (one of your zones) or a zone directory; a record is a record \
            file path or ZONE/NAME. For a record, each commit that changed it is shown with \
            the record's change tag then; with -p, also the fields it changed against the \
            version before ('-key: old', '+key: new', as 'recsync diff' shows them). For a \
            zone, -p shows under each commit the records it changed there, each with its \
            fields. 'recsync show RECORD@COMMIT' prints a whole version, and 'recsync restore \
            RECORD@COMMIT' puts it back in the file.

            EXAMPLES
              recsync log
              recsync log -n 5 todo
              recsync log todo/milk
              recsync log -p todo/milk
              recsync log -p -n 3 todo
              recsync log -p --json todo/milk
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "A zone or record to follow (default: the whole store).", completion: Completions.records)
    var target: String?

    @Option(name: [.customShort("n", allowingJoined: true), .long], help: "Show at most this many commits (-n 5, -n5).")
    var limit = 20

    @Flag(
        name: [.customShort("p"), .customLong("patch")], help: "Show the fields each version changed (for a zone: of each record a commit changed).")
    var patch = false

    func validate() throws {
        if limit < 1 { throw ValidationError("-n must be at least 1") }
    }

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let ws = try context.workspace()
        let store = try context.history(for: ws)
        var entries: [RecordCommit] = []
        var record: RecordID?
        if let target, try !RecordReference.namesZone(target, in: ws, from: context.directory) {
            record = try RecordReference.record(target, in: ws, from: context.directory)
        }
        var patches: [String: RecordPatch] = [:]
        var zonePatches: [String: ZonePatch] = [:]
        if patch && target == nil {
            throw .invalidArguments("-p shows the field changes of a record or a zone; name one (ZONE/NAME, ZONE, or its file or directory)")
        }
        if patch && record == nil, let target {
            let zone = try RecordReference.zone(target, in: ws, from: context.directory)
            let found = try await store.zonePatches(zone, limit: limit)
            entries = found.map { RecordCommit(commit: $0.commit, changeTag: nil) }
            zonePatches = Dictionary(found.map { ($0.commit.commit, $0) }, uniquingKeysWith: { a, _ in a })
            for problem in Set(found.flatMap { $0.records.compactMap(\.unreadable) }).sorted() { context.console.warning(problem) }
        } else if let id = record, patch {
            let found = try await store.recordPatches(id, limit: limit)
            entries = found.map(\.commit)
            patches = Dictionary(found.map { ($0.commit.commit.commit, $0) }, uniquingKeysWith: { a, _ in a })
            for problem in Set(found.compactMap(\.unreadable)).sorted() { context.console.warning(problem) }
        } else if let id = record {
            entries = try await store.recordLog(id, limit: limit)
        } else {
            let zone = try target.map { t throws(RecSyncError) in try RecordReference.zone(t, in: ws, from: context.directory) }
            entries = try await store.log(limit: limit, zone: zone).map { RecordCommit(commit: $0, changeTag: nil) }
        }
        let console = context.console
        if console.json {
            console.document([
                "commits": .array(
                    entries.map { e in
                        var o: [String: JSONValue] = [
                            "commit": .string(e.commit.commit), "author": .string(e.commit.authorName),
                            "email": .string(e.commit.authorEmail), "time": .int(e.commit.time * 1000),
                            "message": .string(e.commit.message),
                        ]
                        if record != nil { o["changeTag"] = e.changeTag.map(JSONValue.string) ?? .null }
                        if let p = patches[e.commit.commit] {
                            o["kind"] = .string(p.kind.rawValue)
                            o["fields"] = .array(p.changes.map(\.json))
                            if let why = p.unreadable { o["unreadable"] = .string(why) }
                        }
                        if let z = zonePatches[e.commit.commit] {
                            o["records"] = .array(
                                z.records.map { r in
                                    var obj = SyncOutput.recordObject(r.recordID, workspace: ws)
                                    obj["kind"] = .string(r.kind.rawValue)
                                    obj["fields"] = .array(r.changes.map(\.json))
                                    if let why = r.unreadable { obj["unreadable"] = .string(why) }
                                    return .object(obj)
                                })
                        }
                        return .object(o)
                    })
            ])
            return ExitCodes.success
        }
        for e in entries {
            let date = Timestamps.iso8601(e.commit.time * 1000).replacingOccurrences(of: ".000Z", with: "Z")
            let subject = e.commit.message.split(separator: "\n").first.map(String.init) ?? ""
            var line = console.paint(String(e.commit.commit.prefix(12)), .yellow) + " \(date) \(e.commit.authorName)  \(subject)"
            if record != nil {
                line += e.changeTag.map { "  [tag \($0.prefix(12))]" } ?? "  [deleted]"
            }
            console.out(line)
            if console.verbose {
                for body in e.commit.message.split(separator: "\n").dropFirst() { console.out("    " + body) }
            }
            if let p = patches[e.commit.commit] {
                for c in p.changes { c.lines(console, indent: "    ").forEach(console.out) }
                if let why = p.unreadable { console.out("    (changes unknown: \(why))") }
            }
            for r in zonePatches[e.commit.commit]?.records ?? [] {
                console.out("  \(r.kind.rawValue) \(ws.relative(ws.recordPath(r.recordID)))")
                for c in r.changes { c.lines(console, indent: "    ").forEach(console.out) }
                if let why = r.unreadable { console.out("    (changes unknown: \(why))") }
            }
        }
        if entries.isEmpty { console.info("no history") }
        return ExitCodes.success
    }
}
