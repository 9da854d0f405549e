import ArgumentParser
import RecSyncModel
import RecSyncStore

/// `recsync store upgrade [STORE]`: moves a store's zones onto refs of their own (format 2).
struct StoreUpgradeCommand: RecSyncSubcommand {
    static var commandPath: String { "store " + (configuration.commandName ?? "") }
    static let configuration = CommandConfiguration(
        commandName: "upgrade",
        abstract: "Give each zone of the store a git ref of its own (store format 2, experimental).",
        discussion: """
            In format 1 every zone lives on the store's one branch, main, so every push races \
            every other. The upgrade moves each zone, with its whole history, onto \
            refs/recsync/zones/OWNER/ZONE: a commit of main that changed a zone becomes a \
            commit on that zone's ref with the same tree, author, time and message. Then main \
            moves, by compare-and-swap, to a commit that says format 2; if someone wrote \
            meanwhile, what they wrote is replayed too. A run stopped before that leaves a \
            format-1 store (a rerun finishes it); nothing is deleted, and main's old history \
            stays as the switch's parent, so workspaces keep their zones' change tokens.

            Format 2 is not released: the upgrade runs only with \
            RECSYNC_EXPERIMENTAL_STORE_FORMAT=2 set, and every recsync that uses the store \
            afterwards needs it too; a recsync without it refuses the store as too new. Plain \
            'git clone' of an upgraded store gets main only: 'git fetch origin \
            "refs/recsync/*:refs/recsync/*"' gets the zones. Without STORE, the current \
            workspace's store. On a terminal recsync asks you to type 'upgrade'; scripts pass \
            --yes.

            EXAMPLES
              RECSYNC_EXPERIMENTAL_STORE_FORMAT=2 recsync store upgrade ~/stores/notes.git
              RECSYNC_EXPERIMENTAL_STORE_FORMAT=2 recsync store upgrade --json --yes
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The store: a path or URL (default: the current workspace's store).", completion: .directory)
    var store: String?

    @Flag(name: .shortAndLong, help: "Do not ask: for scripts (without a terminal, recsync refuses unless --yes is given).")
    var yes = false

    @Option(help: "With STORE: who upgrades (default: $RECSYNC_USER, else your login name). Without STORE it is the workspace's user.")
    var user: String?

    func validate() throws {
        if user != nil && store == nil {
            throw ValidationError("--user goes with STORE: in a workspace, the workspace's user upgrades")
        }
    }

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let what = "move every zone of the store onto a ref of its own (format \(StoreLayout.zoneRefsFormat)); recsync without it cannot go back"
        let target = try StoreTarget.resolve(store, user: user, context: context)
        try Confirmation.require(what, typing: "upgrade", yes: yes)
        let report = try await StoreLocation.upgrade(target.location, relativeTo: target.base, actor: target.actor, mirror: target.mirror)
        show(report, store: target.shown, context: context)
        return ExitCodes.success
    }

    private func show(_ report: StoreUpgradeReport, store: String, context: CommandContext) {
        context.console.document([
            "store": .string(store),
            "upgraded": .bool(report.upgraded),
            "formatBefore": .int(Int64(report.formatBefore)),
            "formatAfter": .int(Int64(report.formatAfter)),
            "oldHead": .string(report.oldHead),
            "newHead": .string(report.newHead),
            "zones": .int(Int64(report.zones)),
            "commitsRead": .int(Int64(report.commitsRead)),
            "zoneCommits": .int(Int64(report.zoneCommits)),
            "skipped": .array(report.skipped.map { .string($0) }),
            "attempts": .int(Int64(report.attempts)),
            "writersHeldOff": .bool(report.writersHeldOff),
            "leasesLeft": .array(report.leasesLeft.map { .string($0) }),
        ])
        guard report.upgraded else {
            context.console.info("\(store) already has format \(report.formatAfter) (a ref per zone); nothing was changed")
            return
        }
        context.console.info(
            """
            upgraded \(store) to format \(report.formatAfter): \(report.zones) zones moved to refs of their own, with\
             \(report.zoneCommits) commits replayed from \(report.commitsRead) of main
            """
        )
        if !report.skipped.isEmpty {
            context.console.warning(
                """
                \(report.skipped.count) entries no recsync writes were left on main's old history and got no ref:\
                 \(report.skipped.prefix(5).joined(separator: ", "))\(report.skipped.count > 5 ? ", …" : "")
                """
            )
        }
        if !report.leasesLeft.isEmpty {
            context.console.warning(
                """
                \(store) would not let recsync remove the upgrade's lease (\(report.leasesLeft.joined(separator: ", ")));\
                 it stops holding writers at its deadline: git push \(store) \(report.leasesLeft.map { ":\($0)" }.joined(separator: " "))
                """
            )
        }
        context.console.hint(
            "every recsync that uses \(store) now needs RECSYNC_EXPERIMENTAL_STORE_FORMAT=\(report.formatAfter); workspaces keep their zones' change tokens"
        )
    }
}
