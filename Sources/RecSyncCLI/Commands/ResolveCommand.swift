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
            case .merge:
                "Field by field: take each side's change where only one side changed a field; fields both changed differently stay in conflict."
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
        discussion: """
            Without RECORD, every pending conflict is settled. Exit status 2 while conflicts \
            remain.

            --merge compares both sides with the version they started from: a field changed \
            on one side only takes that side's value, one changed the same way on both takes \
            it. Fields both sides changed differently are true clashes: the file then holds \
            the merge of the rest and OUR value for each clash, the record stays in conflict \
            and the clashing fields are listed ('recsync diff RECORD' shows both values). \
            Then edit the file and run --merge again (a clash set to either side's value \
            merges), or settle it: --ours keeps the file as it is (the merge, ours for the \
            clashes), --theirs takes the store's version whole. A record deleted on one side \
            cannot be merged: choose --ours or --theirs.

            A conflict whose two sides are the same (the file already holds the store's \
            version) settles itself: pull, push, status and resolve drop it.

            EXAMPLES
              recsync resolve --merge
              recsync resolve --theirs todo/milk
              recsync resolve --ours private/todo/milk.json
            """)

    @OptionGroup var global: GlobalOptions

    @Flag(help: "How to settle.")
    var strategy: Strategy

    @Argument(
        help: ArgumentHelp("The records to settle (default: all conflicts).", discussion: RecordReference.help), completion: Completions.conflicts)
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
                "resolved": .array(
                    outcomes.filter(\.resolved).map { o in
                        var obj = SyncOutput.recordObject(o.recordID, workspace: ws)
                        obj["toPush"] = .bool(o.toPush)
                        obj["assetsNotFetched"] = .array(o.assetsNotFetched.map(JSONValue.string))
                        obj["setAside"] = .array(o.setAside.map(JSONValue.string))
                        return .object(obj)
                    }),
                "clashes": .array(
                    outcomes.filter { !$0.clashes.isEmpty }.map { o in
                        var obj = SyncOutput.recordObject(o.recordID, workspace: ws)
                        obj["fields"] = .array(o.clashes.map(JSONValue.string))
                        return .object(obj)
                    }),
                "failed": .array(
                    outcomes.compactMap { o in
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
                } else if !o.clashes.isEmpty {
                    console.out(
                        """
                        merged \(path) in part; both sides changed\
                         \(o.clashes.map { "'\($0)'" }.joined(separator: ", ")) differently (the file keeps ours)
                        """
                    )
                } else {
                    console.info("resolved \(path) (\(o.toPush ? strategy.rawValue : "the store's version"))")
                }
                for aside in o.setAside { console.info("kept our asset file aside: \(aside)") }
            }
            let notFetched = outcomes.flatMap { o in o.assetsNotFetched.map { "'\($0)' of \(ws.relative(ws.recordPath(o.recordID)))" } }
            if !notFetched.isEmpty {
                console.hint(
                    """
                    the store's \(notFetched.joined(separator: ", ")) \(notFetched.count == 1 ? "is" : "are") not\
                     here yet; 'recsync pull' brings \(notFetched.count == 1 ? "it" : "them") (or 'recsync get\
                     --asset FIELD RECORD')
                    """
                )
            }
            if outcomes.contains(where: { !$0.clashes.isEmpty }) {
                console.hint(
                    """
                    see both values with 'recsync diff', edit the file and run 'recsync resolve --merge' again, or\
                     settle with --ours (the file as it is) or --theirs
                    """
                )
            }
            if pending.isEmpty {
                // Only what differs from the store's version is left to send.
                if outcomes.contains(where: { $0.resolved && $0.toPush }) { console.hint("run 'recsync push' to send the result") }
            } else {
                console.info("\(plural(pending.count, "conflict")) still pending")
            }
        }
        if !pending.isEmpty { return ExitCodes.conflictsPending }
        return outcomes.contains { $0.failure != nil } ? ExitCodes.error : ExitCodes.success
    }
}
