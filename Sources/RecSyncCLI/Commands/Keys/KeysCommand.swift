import ArgumentParser
import Foundation
import RecSyncEncryption
import RecSyncEngine
import RecSyncModel
import RecSyncSystem
import RecSyncWorkspace

/// `recsync keys`: your encryption key pair, for encrypted zones.
struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Make, show, reset and move your encryption key (for encrypted zones).",
        subcommands: [KeysInitCommand.self, KeysShowCommand.self, KeysResetCommand.self, KeysExportCommand.self, KeysImportCommand.self])
}

/// Prints a key report as text and as the JSON document.
func printKeyReport(_ report: UserKeyReport, _ context: CommandContext, _ what: String) -> Int32 {
    var doc: [String: JSONValue] = [
        "user": .string(report.user), "path": .string(report.path),
        "publicKey": .string(Base64.encode(report.publicKey)), "fingerprint": .string(report.fingerprint),
        "created": .bool(report.created),
    ]
    if let published = report.published { doc["published"] = .bool(published) }
    if !report.zonesReset.isEmpty { doc["zonesReset"] = .array(report.zonesReset.map { .string($0.zoneName) }) }
    context.console.document(doc)
    context.console.info(what)
    context.console.info("key\t\(report.path)\nfingerprint\t\(report.fingerprint)")
    if let published = report.published {
        context.console.info(
            published
                ? "published\tyes"
                : "published\tno: the store holds another key of \(report.user) (run 'recsync keys init' or 'recsync keys import FILE')")
    }
    return ExitCodes.success
}

/// A key file argument as an absolute path without `.` or `..` components (`../alice.key`
/// from inside a workspace leaves it, and is read as the file it names).
func keyFilePath(_ file: String, _ context: CommandContext) -> String {
    URL(fileURLWithPath: file, relativeTo: URL(fileURLWithPath: context.directory, isDirectory: true)).standardizedFileURL.path
}

/// `recsync keys init`: makes your key pair if needed and publishes its public key.
struct KeysInitCommand: RecSyncSubcommand {
    static var commandPath: String { "keys " + (configuration.commandName ?? "") }
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Make your key pair (if this machine has none) and publish its public key on the store.",
        discussion:
            """
            The private key is kept in $XDG_CONFIG_HOME/recsync/keys/ (default ~/.config/recsync/keys/),\
             mode 0600, never in a workspace or the store. Others can share encrypted zones with you once\
             your public key is published.\n\nEXAMPLES\n  recsync keys init
            """
    )

    @OptionGroup var global: GlobalOptions

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let ws = try context.workspace()
        let report = try await EncryptionKeys.initialize(user: ws.user, keyStore: try context.keyStore(), store: try context.store(for: ws))
        return printKeyReport(
            report, context, report.created ? "made a key pair for \(ws.user) and published its public key" : "published the public key of \(ws.user)"
        )
    }
}

/// `recsync keys show`: your key's fingerprint and whether the store publishes it.
struct KeysShowCommand: RecSyncSubcommand {
    static var commandPath: String { "keys " + (configuration.commandName ?? "") }
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show where your key is, its fingerprint, and whether the store publishes it.",
        discussion:
            "Compare fingerprints between devices to check they hold the same key.\n\nEXAMPLES\n  recsync keys show\n  recsync keys show --json")

    @OptionGroup var global: GlobalOptions

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let ws = try context.workspace()
        let report = try await EncryptionKeys.show(user: ws.user, keyStore: try context.keyStore(), store: try context.store(for: ws))
        return printKeyReport(report, context, "encryption key of \(ws.user)")
    }
}

/// `recsync keys reset`: a new key pair after the old one was lost; your encrypted zones are reset.
struct KeysResetCommand: RecSyncSubcommand {
    static var commandPath: String { "keys " + (configuration.commandName ?? "") }
    static let configuration = CommandConfiguration(
        commandName: "reset",
        abstract: "Make a new key pair after losing yours; your encrypted zones are reset on the store.",
        discussion:
            """
            Every encrypted zone you own is dropped on the store with reason encryptedDataReset (CloudKit's\
             deletedDueToUserEncryptedDataReset): workspaces that hold a copy keep it and upload it again on\
             their next push, under a new zone key. Participants must be added again with 'recsync share'.\
             Other devices of yours need the new key: 'recsync keys export' here, 'recsync keys import FILE'\
             there.\n\nEXAMPLES\n  recsync keys reset --yes
            """
    )

    @OptionGroup var global: GlobalOptions
    @Flag(help: "Reset without asking.") var yes = false

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        guard yes else {
            throw .notConfirmed(
                "'recsync keys reset' drops your encrypted zones on the store (workspaces upload their copies again); pass --yes to go ahead")
        }
        let ws = try context.workspace()
        let report = try await EncryptionKeys.reset(user: ws.user, keyStore: try context.keyStore(), store: try context.store(for: ws))
        let zones = report.zonesReset.map(\.zoneName).joined(separator: ", ")
        return printKeyReport(
            report, context,
            "made a new key pair for \(ws.user)" + (zones.isEmpty ? "" : "; reset \(zones) on the store: the next push uploads them again"))
    }
}

/// `recsync keys export`: writes your private key, to import on another device.
struct KeysExportCommand: RecSyncSubcommand {
    static var commandPath: String { "keys " + (configuration.commandName ?? "") }
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write your private key to a file (mode 0600), to import on another device.",
        discussion:
            """
            Whoever holds the file can read your encrypted zones: move it over a channel you trust and\
             delete it afterwards.\n\nEXAMPLES\n  recsync keys export alice.key
            """
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The file to write (must not exist).") var file: String

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let ws = try context.workspace()
        let bytes = try EncryptionKeys.export(user: ws.user, keyStore: try context.keyStore())
        let path = keyFilePath(file, context)
        try EncryptionKeys.writeNewPrivateFile(path, bytes)
        context.console.document(["user": .string(ws.user), "path": .string(path)])
        context.console.info("wrote the private key of \(ws.user) to \(path)")
        return ExitCodes.success
    }
}

/// `recsync keys import FILE`: installs a key exported on another device.
struct KeysImportCommand: RecSyncSubcommand {
    static var commandPath: String { "keys " + (configuration.commandName ?? "") }
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Install your private key exported on another device.",
        discussion: "EXAMPLES\n  recsync keys import alice.key\n  recsync keys import alice.key --replace")

    @OptionGroup var global: GlobalOptions
    @Argument(help: "A file written by 'recsync keys export'.") var file: String
    @Flag(help: "Overwrite a different key already on this machine.") var replace = false

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let ws = try context.workspace()
        let path = keyFilePath(file, context)
        // A key file is a few hundred bytes: a FIFO, a link to one or a huge file is refused,
        // not waited on or read whole.
        guard let data = try InputFile.read(path, limit: 64 << 10) else {
            throw .fileSystem(path: path, message: "cannot read the key file: it is missing or not a plain file")
        }
        let report = try EncryptionKeys.importKey(data, from: path, user: ws.user, keyStore: try context.keyStore(), replace: replace)
        return printKeyReport(report, context, "installed the key of \(ws.user) from \(path)")
    }
}
