import ArgumentParser
import RecSyncEngine
import RecSyncModel

/// `recsync zone track ZONE...`: adds zones to a partial workspace; the next pull fetches them.
struct ZoneTrackCommand: RecSyncSubcommand {
    static var commandPath: String { "zone " + (configuration.commandName ?? "") }
    static let configuration = CommandConfiguration(
        commandName: "track",
        abstract: "Add zones to the ones a partial workspace holds; the next pull fetches them.",
        discussion:
            """
            A workspace made by 'recsync clone --zone' holds only some zones, as git's sparse checkout holds\
             some directories. Tracking a zone adds it to the set; nothing is fetched until the next pull,\
             which fetches it whole. A workspace of every zone tracks them all already. --all makes the\
             workspace hold every zone again, those that appear on the store later too.\n\nEXAMPLES\n\
              recsync zone track todo && recsync pull\n  recsync zone track alice/plans\n  recsync zone track --all
            """
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The zones: names, OWNER/ZONE for a zone shared with you, or zone directories.", completion: Completions.zones)
    var zones: [String] = []

    @Flag(help: "Hold every zone again (no longer a partial workspace).")
    var all = false

    func validate() throws {
        if all, !zones.isEmpty { throw ValidationError("give ZONEs or --all, not both") }
        if !all, zones.isEmpty { throw ValidationError("give at least one ZONE, or --all") }
    }

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let change = try SyncEngine.trackZones(zones, all: all, in: context.workspace(), from: context.directory)
        ZoneTracking.print(change, context: context)
        if !change.changed {
            context.console.info(change.workspace.isPartial ? "already tracked; nothing changed" : "this workspace tracks every zone already")
        } else {
            context.console.info(all ? "tracking every zone" : "tracking \(ZoneTracking.names(change))")
            context.console.hint("'recsync pull' fetches \(all ? "the zones this workspace lacks" : change.zones.count == 1 ? "it" : "them")")
        }
        return ExitCodes.success
    }
}
