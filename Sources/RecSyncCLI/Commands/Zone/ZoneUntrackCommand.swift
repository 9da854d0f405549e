import ArgumentParser
import RecSyncEngine
import RecSyncModel

/// `recsync zone untrack ZONE`: removes a zone's directory and stops fetching it.
struct ZoneUntrackCommand: RecSyncSubcommand {
    static var commandPath: String { "zone " + (configuration.commandName ?? "") }
    static let configuration = CommandConfiguration(
        commandName: "untrack",
        abstract: "Stop holding a zone here: its directory goes, and pulls no longer fetch it.",
        discussion:
            """
            The zone stays on the store; only this workspace lets it go, with everything it kept about it,\
             so 'recsync zone track' fetches it whole again. A workspace of every zone becomes a partial one\
             holding the zones it has but this one. A zone with work not pushed (new, edited or deleted\
             records, conflicts, files that are not records) is refused; --force keeps that work in\
             .recsync/lost+found/ and removes the directory. Works offline.\n\nEXAMPLES\n  recsync zone\
             untrack archive\n  recsync zone untrack alice/plans --force
            """
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The zone: its name, OWNER/ZONE, or its directory.", completion: Completions.zones)
    var name: String

    @Flag(name: .shortAndLong, help: "Untrack a zone with work not pushed too, keeping that work in .recsync/lost+found/.")
    var force = false

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let change = try await SyncEngine.untrackZone(name, force: force, in: context.workspace(), from: context.directory)
        ZoneTracking.print(change, context: context)
        context.console.info("untracked \(ZoneTracking.names(change))")
        if let kept = change.lostAndFound { context.console.info("work not pushed kept in \(kept)") }
        return ExitCodes.success
    }
}
