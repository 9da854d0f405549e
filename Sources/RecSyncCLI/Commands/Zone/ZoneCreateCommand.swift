import ArgumentParser
import RecSyncModel
import RecSyncStore

/// `recsync zone create NAME`: a new zone on the store, then a pull.
struct ZoneCreateCommand: RecSyncSubcommand {
    static var commandPath: String { "zone " + (configuration.commandName ?? "") }
    static let configuration = CommandConfiguration(
        commandName: "create",
        abstract: "Create one of your zones on the store (then pull, so its directory appears).",
        discussion: "A new directory under private/ also becomes a zone on the next push; this creates it right away, with its default record type.\n\nEXAMPLES\n  recsync zone create todo --default-type Task")

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The zone's name.")
    var name: String

    @Option(help: "The type of new records that do not name one (see 'recsync put --type').")
    var defaultType: String?

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let ws = try context.workspace()
        let zone = try ZoneID(normalizing: name, ownerName: ws.user)
        if let defaultType { try NameRules.validateRecordType(defaultType) }
        let existing = try await context.store(for: ws).fetchAllRecordZones(scope: .private)
        if existing.contains(where: { $0.zoneID == zone }) {
            throw .invalidArguments("zone '\(name)' already exists on the store")
        }
        return try await ZoneChange.apply(.recreate(RecordZone(zoneID: zone, defaultRecordType: defaultType)), verb: "create", context: context)
    }
}
