import RecSyncCLI

/// The `recsync` executable: everything is in RecSyncCLI.
@main
struct Main {
    static func main() async {
        await RecSyncCommand.main()
    }
}
