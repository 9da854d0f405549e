import ArgumentParser
import RecSyncEngine
import RecSyncModel
import RecSyncWorkspace

/// `recsync config set KEY VALUE`: changes one setting, validated as `init` does.
struct ConfigSetCommand: RecSyncSubcommand {
    static var commandPath: String { "config " + (configuration.commandName ?? "") }
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Change one setting of the workspace.",
        discussion: """
            remote is checked by opening the store first (a wrong path changes nothing); a \
            password in a network address goes to git's credential helpers, never into \
            .recsync/config. Once the workspace has synced, the new remote must be the same \
            store (the same store ID: a store that moved); another store is refused, since the \
            change tokens would mean nothing there, unless --force, which resets the sync state \
            so that the next pull fetches everything from the new store (the record files stay).

            user must be a valid user name, and can change only before the workspace holds \
            anything synced (its private/ zones are its user's); to work as another user, clone \
            the store into a new directory with --user.

            commitSnapshots takes true or false (yes/no, on/off, 1/0).

            noAssetZones takes zones separated by commas (names, OWNER/ZONE or zone \
            directories; an empty value for none): every pull leaves their assets' content on \
            the store, as 'recsync pull --no-assets' does ('recsync get --asset' fetches one).

            EXAMPLES
              recsync config set commitSnapshots true
              recsync config set remote ../moved/team.git
              recsync config set remote ssh://git@example.com/srv/team.git --force
              recsync config set user bob
              recsync config set noAssetZones photos,alice/scans
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "remote, user, commitSnapshots or noAssetZones.", completion: .list(WorkspaceSetting.allCases.map(\.rawValue)))
    var key: String

    @Argument(help: "The new value.")
    var value: String

    @Flag(help: "Switch the remote to another store, resetting the sync state (tokens) of this workspace.")
    var force = false

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let setting = try WorkspaceSetting(key: key)
        let change = try await SyncEngine.changeSetting(setting, to: value, in: context.workspace(), relativeTo: context.directory, force: force)
        let console = context.console
        console.document(["key": .string(setting.rawValue), "value": change.value, "syncStateReset": .bool(change.syncStateReset)])
        console.info("\(setting.rawValue)=\(ConfigListCommand.text(change.value))")
        if change.passwordHandedOff { InitCommand.passwordHint(context) }
        if change.syncStateReset {
            console.hint("the sync state was reset: run 'recsync pull' to fetch everything from the new store")
        }
        return ExitCodes.success
    }
}
