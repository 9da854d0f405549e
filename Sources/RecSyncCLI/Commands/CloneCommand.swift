import ArgumentParser
import Foundation
import RecSyncEncryption
import RecSyncEngine
import RecSyncModel
import RecSyncStore
import RecSyncWorkspace

/// `recsync clone URL [DIR]`: a new workspace of a store, pulled.
struct CloneCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "clone",
        abstract: "Make a new workspace of a store and pull everything.",
        discussion:
            """
            The workspace acts as --user NAME, else $RECSYNC_USER, else your login name. A network store is\
             kept in a bare mirror in .recsync/mirror. With --zone, the workspace is a partial one: it fetches\
             only the zones named ('recsync zone track' adds more).\n\nEXAMPLES\n  recsync clone ~/stores/notes.git\
             notes\n  recsync clone ~/stores/photos.git photos --no-assets\n  recsync clone ~/stores/notes.git work --zone todo\
             --zone alice/plans\n  recsync clone\
             ssh://git@example.org/team/notes.git notes --user alice
            """
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The store: a path, a file:// URL, or a network URL (ssh://, user@host:path, https://, git://).", completion: .directory)
    var url: String

    @Argument(help: "The new workspace's directory (default: the store's name without .git).", completion: .directory)
    var dir: String?

    @Option(help: "Who you are on the store (default: $RECSYNC_USER, else your login name).")
    var user: String?

    @Flag(help: "Fetch the records without their assets' content; 'recsync get --asset' or a later pull fetches it.")
    var noAssets = false

    @Option(
        name: .customLong("zone"),
        help: ArgumentHelp("Hold only this zone (OWNER/ZONE for one shared with you); repeat for more. Default: every zone.", valueName: "zone"))
    var zones: [String] = []

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let who = try context.user(user)
        let remote = try StoreLocation.normalized(url, relativeTo: context.directory)
        let network = StoreLocation.isNetwork(remote)
        // A local store is opened before anything is created; a network one needs the mirror.
        let localStore = network ? nil : try CommandContext.openStore(remote, user: who, relativeTo: context.directory)
        let name = dir ?? StoreLocation.defaultDirectoryName(url)
        guard !name.isEmpty, name != "/" else { throw .invalidArguments("cannot tell a directory name from '\(url)'; give DIR") }
        let target = StoreLocation.absolute(name, relativeTo: context.directory)
        let console = context.console
        let (engine, report) = try await SyncEngine.clone(
            into: target, config: WorkspaceConfig(user: who, remote: remote), fetchesAssets: !noAssets, zones: zones,
            openStore: { ws throws(RecSyncError) -> any RemoteStore in
                if let localStore { return EncryptingStore(localStore, keyStore: try context.keyStore(), state: ws) }
                return try context.store(for: ws)
            },
            started: { ws, store in
                console.info("cloning \(store.remote ?? remote) into \(ws.root) as \(who)")
                return SyncOutput(console: console, workspace: ws).events
            })
        let status = try SyncOutput(console: console, workspace: engine.workspace).pull(report, command: "clone")
        if report.zonesChanged.isEmpty {
            console.hint(
                "no zones of yours or shared with you yet: 'recsync zone create NAME' makes one, and a zone someone"
                    + " shares with you ('recsync share ZONE --with \(who)') appears on your next 'recsync pull'")
        }
        if StoreLocation.withoutPassword(remote) != remote { InitCommand.passwordHint(context) }
        return status
    }
}
