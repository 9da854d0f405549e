import ArgumentParser
import RecSyncModel
import RecSyncStore

/// `recsync zone delete NAME`: deletes a zone and its records, then pulls.
struct ZoneDeleteCommand: RecSyncSubcommand {
    static var commandPath: String { "zone " + (configuration.commandName ?? "") }
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete one of your zones and its records from the store (then pull).",
        discussion:
            """
            Other workspaces remove the zone's directory on their next pull, saving unpushed edits under\
             .recsync/lost+found/. The zone may be created again. On a terminal recsync asks you to type the\
             zone's name; scripts pass --yes.\n\nEXAMPLES\n  recsync zone delete todo\n  recsync zone delete\
             todo --yes --json
            """
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The zone: its name or its directory.", completion: Completions.zones)
    var name: String

    @Flag(name: .shortAndLong, help: "Do not ask: for scripts (without a terminal, recsync refuses unless --yes is given).")
    var yes = false

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let zone = try RecordReference.zone(name, in: context.workspace(), from: context.directory)
        try Confirmation.require("delete zone '\(zone.zoneName)' and every record in it", typing: zone.zoneName, yes: yes)
        return try await ZoneChange.apply(.delete(zone), verb: "delete", context: context)
    }
}
