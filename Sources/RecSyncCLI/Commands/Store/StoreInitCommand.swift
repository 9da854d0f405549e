import ArgumentParser
import RecSyncModel
import RecSyncStore

/// `recsync store init PATH`: creates an empty store.
struct StoreInitCommand: RecSyncSubcommand {
    static var commandPath: String { "store " + (configuration.commandName ?? "") }
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Create an empty store (a bare git repository) at PATH.")

    @OptionGroup var global: GlobalOptions

    @Argument(help: "Where to create the store (a new or empty directory).", completion: .directory)
    var path: String

    @Option(help: "Who creates it (default: $RECSYNC_USER, else your login name).")
    var user: String?

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        if StoreLocation.isNetwork(path) {
            throw .invalidArguments("'\(path)': network remotes are not supported yet; create the store on a local path")
        }
        let target = try StoreLocation.storePath(path, relativeTo: context.directory)
        let manifest = try GitStore.create(at: target, actor: StoreActor(userRecordName: context.user(user)))
        context.console.document(["path": .string(target), "storeID": .string(manifest.storeID)])
        context.console.info("created an empty store at \(target) (store \(manifest.storeID))")
        context.console.hint("make a workspace of it with 'recsync clone \(path)'")
        return ExitCodes.success
    }
}
