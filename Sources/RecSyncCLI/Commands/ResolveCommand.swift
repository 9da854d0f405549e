import ArgumentParser
import RecSyncEngine
import RecSyncModel

/// `recsync resolve`: settles pending conflicts.
struct ResolveCommand: RecSyncSubcommand {
    /// The strategies as flags (`--ours`, `--theirs`, `--merge`).
    enum Strategy: String, EnumerableFlag {
        case ours, theirs, merge

        static func help(for value: Strategy) -> ArgumentHelp? {
            switch value {
            case .ours: "Keep the record file as it is; the next push overwrites the store's version."
            case .theirs: "Take the store's version (or its deletion)."
            case .merge: "Field by field: keep each side's change where only one side changed a field (fails when both changed the same field)."
            }
        }

        var engine: ResolveStrategy {
            switch self {
            case .ours: .ours
            case .theirs: .theirs
            case .merge: .merge
            }
        }
    }

    static let configuration = CommandConfiguration(
        commandName: "resolve",
        abstract: "Settle conflicts: keep ours, take theirs, or merge field by field.",
        usage: "recsync resolve [<options>] (--ours | --theirs | --merge) [<records> ...]",
        discussion: "Without RECORD, every pending conflict is settled. Resolved records are ready to push. Exit status 2 while conflicts remain.")

    @OptionGroup var global: GlobalOptions

    @Flag(help: "How to settle.")
    var strategy: Strategy

    @Argument(help: ArgumentHelp("The records to settle (default: all conflicts).", discussion: RecordReference.help), completion: .file(extensions: ["json"]))
    var records: [String] = []

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let engine = try context.engine()
        let ws = engine.workspace
        var ids: [RecordID]?
        if !records.isEmpty {
            ids = []
            for r in records { ids?.append(try RecordReference.record(r, in: ws, from: context.directory)) }
        }
        let outcomes = try engine.resolve(ids, strategy: strategy.engine)
        let pending = try ws.allConflicts().map(\.recordID).sorted()
        let console = context.console
        if console.json {
            console.document([
                "strategy": .string(strategy.rawValue),
                "resolved": .array(outcomes.filter { $0.failure == nil }.map { .object(SyncOutput.recordObject($0.recordID, workspace: ws)) }),
                "failed": .array(outcomes.compactMap { o in
                    guard let why = o.failure else { return nil }
                    var obj = SyncOutput.recordObject(o.recordID, workspace: ws)
                    obj["reason"] = .string(why)
                    return .object(obj)
                }),
                "conflictsPending": .array(pending.map { .object(SyncOutput.recordObject($0, workspace: ws)) }),
            ])
        } else {
            if outcomes.isEmpty { console.info("no conflicts to resolve") }
            for o in outcomes {
                let path = ws.relative(ws.recordPath(o.recordID))
                if let why = o.failure {
                    console.out("not resolved: \(path): \(why)")
                } else {
                    console.info("resolved \(path) (\(strategy.rawValue))")
                }
            }
            if pending.isEmpty {
                if outcomes.contains(where: { $0.failure == nil }) { console.hint("run 'recsync push' to send the result") }
            } else {
                console.out("\(plural(pending.count, "conflict")) still pending")
            }
        }
        if !pending.isEmpty { return ExitCodes.conflictsPending }
        return outcomes.contains { $0.failure != nil } ? ExitCodes.error : ExitCodes.success
    }
}
