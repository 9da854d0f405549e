import ArgumentParser
import Foundation
import RecSyncModel
import RecSyncStore

/// `recsync zone create NAME`: a new zone on the store, then a pull.
struct ZoneCreateCommand: RecSyncSubcommand {
    static var commandPath: String { "zone " + (configuration.commandName ?? "") }
    static let configuration = CommandConfiguration(
        commandName: "create",
        abstract: "Create one of your zones on the store (then pull, so its directory appears).",
        discussion:
            """
            A new directory under private/ also becomes a zone on the next push; this creates it right away,\
             with its default record type.\n\nWith --encrypted (or --encrypt FIELDS), field values are\
             sealed on this machine with a key of the zone before they reach the store, which sees only\
             ciphertext; record names and types stay in clear. Needs your key ('recsync keys\
             init').\n\nEXAMPLES\n  recsync zone create todo --default-type Task\n  recsync zone create\
             diary --encrypted\n  recsync zone create contacts --encrypt phone,address
            """
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The zone's name.")
    var name: String

    @Option(help: "The type of new records that do not name one (see 'recsync put --type').")
    var defaultType: String?

    @Flag(help: "Encrypt every field of the zone's records on the client.")
    var encrypted = false

    @Option(help: ArgumentHelp("Encrypt only these fields (comma-separated) on the client.", valueName: "fields"))
    var encrypt: String?

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let ws = try context.workspace()
        let zone = try ZoneID(normalizing: name, ownerName: ws.user)
        if let defaultType { try NameRules.validateRecordType(defaultType) }
        let existing = try await context.store(for: ws).fetchAllRecordZones(scope: .private)
        if existing.contains(where: { $0.zoneID == zone }) {
            throw .alreadyExists("zone '\(name)' already exists on the store")
        }
        var created = RecordZone(zoneID: zone, defaultRecordType: defaultType)
        if let encrypt {
            let fields = encrypt.split(separator: ",", omittingEmptySubsequences: false).map { String($0).trimmingCharacters(in: .whitespaces) }
            for field in fields {
                do { try NameRules.validateFieldKey(field) } catch { throw .invalidArguments("--encrypt: \(error.message)") }
            }
            created.encryption = ZoneEncryption(fields: fields)
        } else if encrypted {
            created.encryption = ZoneEncryption()
        }
        return try await ZoneChange.apply(.recreate(created), verb: "create", context: context)
    }
}
