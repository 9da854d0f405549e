import ArgumentParser
import RecSyncModel
import RecSyncStore

/// `recsync store init PATH`: creates an empty store.
struct StoreInitCommand: RecSyncSubcommand {
    static var commandPath: String { "store " + (configuration.commandName ?? "") }
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Create an empty store (a bare git repository) at PATH.",
        discussion:
            """
            PATH must be new or an empty directory: recsync refuses a directory that holds anything and a\
             regular file. To serve it, push it to any git host (git push --mirror) and clone it by\
             URL.\n\nEXAMPLES\n  recsync store init ~/stores/notes.git\n  recsync store init notes.git &&\
             git -C notes.git push --mirror git@example.org:team/notes.git
            """
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "Where to create the store (a new or empty directory).", completion: .directory)
    var path: String

    @Option(help: "Who creates it (default: $RECSYNC_USER, else your login name).")
    var user: String?

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        if StoreLocation.isNetwork(path) {
            throw .unsupported("'\(path)': network remotes are not supported yet; create the store on a local path")
        }
        let target = try StoreLocation.storePath(path, relativeTo: context.directory)
        let manifest = try StoreLocation.create(at: target, actor: StoreActor(userRecordName: context.user(user)))
        context.console.document(["path": .string(target), "storeID": .string(manifest.storeID)])
        context.console.info("created an empty store at \(target) (store \(manifest.storeID))")
        context.console.hint("make a workspace of it with 'recsync clone \(path)'")
        return ExitCodes.success
    }
}
