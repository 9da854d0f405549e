import ArgumentParser
import RecSyncModel
import RecSyncStore

/// `recsync zone purge NAME`: purges a zone, then pulls.
struct ZonePurgeCommand: RecSyncSubcommand {
    static var commandPath: String { "zone " + (configuration.commandName ?? "") }
    static let configuration = CommandConfiguration(
        commandName: "purge",
        abstract: "Purge one of your zones: delete it so that no workspace uploads it again (then pull).",
        discussion:
            """
            Like 'zone delete', but workspaces treat the removal as the user's wish: they drop the zone and\
             never re-upload it (unpushed edits still go to .recsync/lost+found/). On a terminal recsync\
             asks you to type the zone's name; scripts pass --yes.\n\nEXAMPLES\n  recsync zone purge\
             secrets\n  recsync zone purge secrets --yes
            """
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The zone: its name or its directory.", completion: Completions.zones)
    var name: String

    @Flag(name: .shortAndLong, help: "Do not ask: for scripts (without a terminal, recsync refuses unless --yes is given).")
    var yes = false

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let zone = try RecordReference.zone(name, in: context.workspace(), from: context.directory)
        try Confirmation.require("purge zone '\(zone.zoneName)' and every record in it", typing: zone.zoneName, yes: yes)
        return try await ZoneChange.apply(.purge(zone), verb: "purge", context: context)
    }
}
