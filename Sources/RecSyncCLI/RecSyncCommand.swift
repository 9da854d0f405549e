import ArgumentParser

/// The `recsync` command; each subcommand lives in its own file under `Commands/`.
public struct RecSyncCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "recsync",
        abstract: "git for records: sync a directory of record files with a store.",
        discussion: """
            A workspace is a directory of record files (private/ZONE/NAME.json: the fields as \
            plain JSON) with their system fields in sidecars (private/ZONE/.system/NAME.json) \
            and sync state in .recsync/. A store is a git repository; give its path or a \
            file:// URL.

            RECORD arguments are a record file path (private/ZONE/NAME.json, \
            shared/OWNER/ZONE/NAME.json) or ZONE/NAME for a record in one of your own zones.

            \(ExitCodes.table)
            """,
        version: "0.1.0",
        subcommands: [
            StoreCommand.self, InitCommand.self, CloneCommand.self,
            PullCommand.self, PushCommand.self, StatusCommand.self, DiffCommand.self,
            ResolveCommand.self, LogCommand.self, ZoneCommand.self,
            GetCommand.self, PutCommand.self, RmCommand.self, ChangesCommand.self,
            ShareCommand.self, UnshareCommand.self, ConfigCommand.self,
            SubscribeCommand.self, SubscriptionsCommand.self, UnsubscribeCommand.self, WatchCommand.self, NotificationsCommand.self,
        ])

    /// Accepted before the subcommand too (`recsync -C DIR status`); subcommands read them.
    @OptionGroup public var global: GlobalOptions

    public init() {}
}
