import ArgumentParser

/// `recsync zone`: zone operations on the store.
struct ZoneCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "zone",
        abstract: "Create, delete, purge and list your zones on the store; choose the zones a workspace holds.",
        subcommands: [
            ZoneCreateCommand.self, ZoneDeleteCommand.self, ZonePurgeCommand.self, ZoneListCommand.self, ZoneTrackCommand.self,
            ZoneUntrackCommand.self,
        ])
}
