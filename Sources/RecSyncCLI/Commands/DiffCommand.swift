import ArgumentParser
import RecSyncEngine
import RecSyncModel
import RecSyncWorkspace

/// `recsync diff [RECORD|ZONE ...]`: field-level differences between record files and their synced versions.
struct DiffCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "diff",
        abstract: "Show field-level changes of records against their synced versions.",
        discussion: """
            Each changed field is shown as '-key: old' and '+key: new' (values as plain JSON). \
            A new record shows all its fields as added, a deleted one all as removed. For a \
            record in conflict, the fields each side changed since the common version are \
            shown as 'ours' (this file) and 'theirs' (the store).

            With no argument every changed record is compared; arguments name records (each \
            shown even when unchanged) and zones (their changed records). --stat prints one \
            line per record with how many fields it adds (+), changes (~) and removes (-), \
            and a total. --exit-code exits with 1 when something differs and 0 when nothing \
            does, as git diff --exit-code does (an error exits with 1 too, and says so on \
            stderr; with --json, the document tells them apart); with --quiet it prints \
            nothing.

            EXAMPLES
              recsync diff
              recsync diff todo/milk todo/eggs
              recsync diff todo --stat
              recsync diff --exit-code --quiet || echo "unpushed edits"
              recsync diff --json | jq '.records[].fields'
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(
        help: ArgumentHelp(
            "Records and zones to compare (default: every changed record).", discussion: RecordReference.help,
            valueName: "record-or-zone"),
        completion: Completions.records)
    var targets: [String] = []

    @Flag(help: "Show how many fields each record adds, changes and removes, and a total.")
    var stat = false

    @Flag(help: "Exit with 1 when something differs, 0 when nothing does.")
    var exitCode = false

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let engine = try context.engine()
        let ws = engine.workspace
        var records: [RecordID] = []
        var zones: [ZoneID] = []
        for target in targets {
            if try RecordReference.namesZone(target, in: ws, from: context.directory) {
                let zone = try RecordReference.zone(target, in: ws, from: context.directory)
                guard ws.hasZoneDirectory(zone) else {
                    throw .zoneNotFound(zone).suggesting(.listZones)
                }
                zones.append(zone)
            } else {
                records.append(try RecordReference.record(target, in: ws, from: context.directory))
            }
        }
        let diffs = try await engine.diff(targets.isEmpty ? nil : records, zones: zones)
        let console = context.console
        let differs = diffs.contains(where: \.differs)
        console.document(["records": .array(diffs.map { json($0, ws) }), "differs": .bool(differs)])
        if !console.json && !(console.quiet && exitCode) {
            if stat { printStat(diffs, console, ws) } else { for d in diffs { print(d, console, ws) } }
        }
        return exitCode && differs ? ExitCodes.error : ExitCodes.success
    }

    func printStat(_ diffs: [RecordDiff], _ console: Console, _ ws: Workspace) {
        let paths = diffs.map { ws.relative(ws.recordPath($0.recordID)) }
        let width = paths.map(\.count).max() ?? 0
        let countWidth = diffs.map { String($0.stat.total).count }.max() ?? 1
        var total = RecordDiff.Stat([])
        for (d, path) in zip(diffs, paths) {
            let s = d.stat
            total.added += s.added
            total.changed += s.changed
            total.removed += s.removed
            let marks =
                console.paint(String(repeating: "+", count: min(s.added, 20)), .green)
                + console.paint(String(repeating: "~", count: min(s.changed, 20)), .cyan)
                + console.paint(String(repeating: "-", count: min(s.removed, 20)), .red)
            let state = d.state == .modified ? "" : " (\(d.state.rawValue))"
            let count = String(repeating: " ", count: countWidth - String(s.total).count) + String(s.total)
            console.out(" \(path.padding(toLength: width, withPad: " ", startingAt: 0)) | \(count) \(marks)\(state)")
        }
        let changed = diffs.filter(\.differs).count
        console.out(
            " \(plural(changed, "record")) changed, \(plural(total.added, "field")) added, \(total.changed) changed,"
                + " \(total.removed) removed")
    }

    func note(_ note: RecordDiff.Note) -> String {
        switch note {
        case .deletedOnStore: "deleted on the store"
        case .deletedHere: "deleted here"
        case .syncedVersionGone: "the synced version is no longer in the store; pull to refresh it"
        }
    }

    func json(_ d: RecordDiff, _ ws: Workspace) -> JSONValue {
        var o = SyncOutput.recordObject(d.recordID, workspace: ws)
        o["kind"] = .string(d.state.rawValue)
        o["fields"] = .array(d.changes.map(\.json))
        let stat = d.stat
        o["added"] = .int(Int64(stat.added))
        o["changed"] = .int(Int64(stat.changed))
        o["removed"] = .int(Int64(stat.removed))
        if let theirs = d.theirs { o["theirs"] = .array(theirs.map(\.json)) }
        if let n = d.note { o["note"] = .string(note(n)) }
        return .object(o)
    }

    func print(_ d: RecordDiff, _ console: Console, _ ws: Workspace) {
        let path = ws.relative(ws.recordPath(d.recordID))
        console.out(console.paint("\(d.state.rawValue) \(path)", .bold))
        if let n = d.note { console.out("  (\(note(n)))") }
        if let theirs = d.theirs {
            for c in d.changes { console.out("  " + console.paint("ours  ", .green) + " " + line(c)) }
            for c in theirs { console.out("  " + console.paint("theirs", .cyan) + " " + line(c)) }
            return
        }
        for c in d.changes { c.lines(console).forEach(console.out) }
    }

    func line(_ c: FieldChange) -> String {
        "\(c.key): " + (c.new.map(FieldChange.text) ?? "(removed)")
    }
}
