import ArgumentParser
import RecSyncEngine
import RecSyncModel
import RecSyncStore

/// `recsync restore RECORD[@REV]…`: undoes local edits and removals, or restores older versions (like `git restore`).
struct RestoreCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Undo local edits or an 'rm' of records, or put an older version (@REV) in their files.",
        discussion: """
            Each record file is rewritten with the version its sidecar names (the one last \
            pulled or pushed), read from the store. Refused, with nothing written, when a \
            record is new (never pushed: there is nothing to go back to; 'recsync rm' deletes \
            it), in conflict ('recsync resolve' settles it), or its synced version is no \
            longer in the store (pull first). --all restores every edited or removed record \
            and leaves new records and conflicts alone.

            RECORD@REV (or --source REV) puts an older version into the file instead, as a \
            local edit that 'recsync status', 'recsync diff' and 'recsync push' treat as any \
            edit: REV is a store commit as 'recsync log' prints it, or ~N, the record's Nth \
            version back (as 'recsync show' takes it). With --source a ZONE may be named too: \
            its records become what they were at the commit (records it did not hold are \
            removed; records never pushed are left alone). A record in conflict is refused, and \
            so is one with edits not pushed that the restore would overwrite, unless --force.

            EXAMPLES
              recsync restore todo/milk
              recsync restore private/todo/milk.json private/todo/eggs.json
              recsync restore --all
              recsync restore todo/milk@~1
              recsync restore --source 3f2a9c1e todo/milk todo/eggs
              recsync restore --source 3f2a9c1e todo
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(
        help: ArgumentHelp("The records to restore, each optionally @REV (with --source, zones too).", discussion: RecordReference.help),
        completion: Completions.records)
    var records: [String] = []

    @Flag(help: "Restore every record edited or removed here.")
    var all = false

    @Option(help: ArgumentHelp("Put the version of this revision into the files (a store commit, or ~N).", valueName: "rev"))
    var source: String?

    @Flag(help: "With @REV or --source: overwrite edits not pushed (they are lost).")
    var force = false

    func validate() throws {
        if all == !records.isEmpty { throw ValidationError(all ? "give records or --all, not both" : "name the records to restore, or give --all") }
        if all && source != nil { throw ValidationError("--source restores the records or zones named; name them instead of --all") }
        if force && source == nil && !records.contains(where: { StoreRevision.split($0).revision != .current }) {
            throw ValidationError("--force is for a restore from a revision (RECORD@REV or --source REV)")
        }
        if let source, StoreRevision(source) == nil || source.isEmpty {
            throw ValidationError("--source '\(source)' is not a revision: give a store commit (4 to 40 hex digits) or ~N")
        }
    }

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let engine = try context.engine()
        let ws = engine.workspace
        let split = records.map(StoreRevision.split)
        if source != nil || split.contains(where: { $0.revision != .current }) {
            return try await restoreFromRevision(split, engine: engine, context: context)
        }
        var ids: [RecordID]?
        if !all {
            ids = []
            for r in records { ids?.append(try RecordReference.record(r, in: ws, from: context.directory)) }
        }
        let outcomes = try await engine.restore(ids)
        let console = context.console
        let restored = outcomes.filter { $0.undone != nil }
        console.document([
            "restored": .array(
                restored.map { o in
                    var obj = SyncOutput.recordObject(o.recordID, workspace: ws)
                    obj["kind"] = .string(o.undone?.rawValue ?? "")
                    return .object(obj)
                }),
            "unchanged": .array(outcomes.filter { $0.undone == nil }.map { .object(SyncOutput.recordObject($0.recordID, workspace: ws)) }),
        ])
        for o in outcomes {
            let path = ws.relative(ws.recordPath(o.recordID))
            switch o.undone {
            case .deleted?: console.info("restored \(path) (its removal undone)")
            case .some: console.info("restored \(path)")
            case nil: console.info("\(path) already holds its synced version")
            }
        }
        if outcomes.isEmpty { console.info("nothing to restore") }
        return ExitCodes.success
    }

    /// `restore RECORD@REV …` and `restore --source REV RECORD|ZONE …`.
    func restoreFromRevision(
        _ split: [(record: String, revision: StoreRevision)], engine: SyncEngine, context: CommandContext
    ) async throws(RecSyncError) -> Int32 {
        let ws = engine.workspace
        let common = source.flatMap(StoreRevision.init)
        var byRevision: [StoreRevision: [RecordID]] = [:]
        var zones: [ZoneID] = []
        for (text, revision) in split {
            if let common {
                guard revision == .current else {
                    throw .invalidArguments("\(text)@\(revision.text): give the revision once, with --source or after each record, not both")
                }
                if try RecordReference.namesZone(text, in: ws, from: context.directory) {
                    zones.append(try RecordReference.zone(text, in: ws, from: context.directory))
                    continue
                }
                byRevision[common, default: []].append(try RecordReference.record(text, in: ws, from: context.directory))
            } else {
                guard revision != .current else {
                    throw .invalidArguments("\(text): name its revision too (\(text)@REV), or restore it on its own to undo its edits")
                }
                byRevision[revision, default: []].append(try RecordReference.record(text, in: ws, from: context.directory))
            }
        }
        var outcomes: [RestoreOutcome] = []
        for (revision, ids) in byRevision.sorted(by: { $0.key.text < $1.key.text }) {
            outcomes += try await engine.restore(ids, from: revision, force: force)
        }
        for zone in zones {
            outcomes += try await engine.restore(zone: zone, from: common ?? .current, force: force)
        }
        let console = context.console
        func object(_ o: RestoreOutcome) -> JSONValue {
            var obj = SyncOutput.recordObject(o.recordID, workspace: ws)
            if let written = o.written { obj["kind"] = .string(written.rawValue) }
            obj["commit"] = o.commit.map(JSONValue.string) ?? .null
            return .object(obj)
        }
        console.document([
            "restored": .array(outcomes.filter { $0.written != nil }.map(object)),
            "unchanged": .array(outcomes.filter { $0.written == nil }.map(object)),
        ])
        for o in outcomes {
            let path = ws.relative(ws.recordPath(o.recordID))
            let from = o.commit.map { " (from \($0.prefix(12)))" } ?? ""
            switch o.written {
            case .deleted?: console.info("removed \(path)\(from): not there at that revision")
            case .some: console.info("restored \(path)\(from)")
            case nil: console.info("\(path) already holds that version")
            }
        }
        if outcomes.contains(where: { $0.written != nil }) {
            console.hint("the files are local edits now: 'recsync diff' shows them, 'recsync push' sends them")
        }
        if outcomes.isEmpty { console.info("nothing to restore") }
        return ExitCodes.success
    }
}
