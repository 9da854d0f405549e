import ArgumentParser
import RecSyncEngine
import RecSyncModel
import RecSyncStore

/// `recsync doctor [--fix]` (also `fsck`): checks the workspace and its store.
struct DoctorCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check the workspace and its store; with --fix, repair what is safe.",
        discussion: """
            The workspace: leftovers of a killed sync's writes, sidecars without a record \
            (that are not deletions waiting for a push), synced files whose sidecar is gone, \
            stale stat-index entries, change tokens that do not decode. The store: that it \
            opens, lock files killed writers left, entries no workspace can hold, zone \
            metadata and records that do not decode (every record is read, as git fsck reads \
            every object). --fix removes batch leftovers, stale index entries and stale store \
            locks; the rest is reported with what to do. Exit status 1 when a problem remains.

            EXAMPLES
              recsync doctor
              recsync doctor --fix
              recsync fsck --json | jq '.findings[] | select(.fixed | not)'
            """,
        aliases: ["fsck"])

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Repair what is safe to repair (nothing that holds your data).")
    var fix = false

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let ws = try context.workspace()
        let findings = try await SyncEngine.doctor(
            workspace: ws, openStore: { () throws(RecSyncError) -> any RemoteStore in try context.store(for: ws) }, fix: fix)
        let console = context.console
        console.document([
            "findings": .array(
                findings.map { f in
                    .object([
                        "kind": .string(f.kind.rawValue), "path": .string(f.path), "detail": .string(f.detail), "fixable": .bool(f.fixable),
                        "fixed": .bool(f.fixed),
                    ])
                })
        ])
        for f in findings {
            let mark = f.fixed ? console.paint("fixed", .green) : f.remains ? console.paint(f.kind.rawValue, .red) : f.kind.rawValue
            // What was repaired, or is work under way, is information; what remains is the result.
            let line = "\(mark): \(f.path): \(f.detail)"
            if f.remains { console.out(line) } else { console.info(line) }
        }
        let remaining = findings.filter(\.remains)
        if findings.isEmpty { console.info("no problems found in the workspace or its store") }
        if remaining.contains(where: \.fixable) && !fix { console.hint("'recsync doctor --fix' repairs what is marked fixable (see --json)") }
        return remaining.isEmpty ? ExitCodes.success : ExitCodes.error
    }
}
