import ArgumentParser
import RecSyncModel
import RecSyncStore

/// `recsync zone purge NAME`: purges a zone, then pulls.
struct ZonePurgeCommand: RecSyncSubcommand {
    static var commandPath: String { "zone " + (configuration.commandName ?? "") }
    static let configuration = CommandConfiguration(
        commandName: "purge",
        abstract: "Purge one of your zones: delete it so that no workspace uploads it again (then pull).",
        discussion: "Like 'zone delete', but workspaces treat the removal as the user's wish: they drop the zone and never re-upload it (unpushed edits still go to .recsync/lost+found/).")

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The zone: its name or its directory.", completion: .directory)
    var name: String

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let zone = try RecordReference.zone(name, in: context.workspace(), from: context.directory)
        return try await ZoneChange.apply(.purge(zone), verb: "purge", context: context)
    }
}
