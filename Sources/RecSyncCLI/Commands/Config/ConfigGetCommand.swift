import ArgumentParser
import RecSyncModel
import RecSyncWorkspace

/// `recsync config get KEY`: prints one setting.
struct ConfigGetCommand: RecSyncSubcommand {
    static var commandPath: String { "config " + (configuration.commandName ?? "") }
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Print one setting of the workspace.",
        discussion: """
            KEY is remote, user, commitSnapshots, noAssetZones or trackedZones. An unset remote prints an empty line.

            EXAMPLES
              recsync config get user
              recsync config get remote --json
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "remote, user, commitSnapshots, noAssetZones or trackedZones.", completion: .list(WorkspaceSetting.allCases.map(\.rawValue)))
    var key: String

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let setting = try WorkspaceSetting(key: key)
        let value = try context.workspace().config.value(of: setting)
        context.console.document(["key": .string(setting.rawValue), "value": value])
        context.console.out(ConfigListCommand.text(value))
        return ExitCodes.success
    }
}
