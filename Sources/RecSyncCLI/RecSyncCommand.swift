import ArgumentParser

/// The `recsync` command (subcommands in their own files).
public struct RecSyncCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "recsync",
        abstract: "git for records: sync a directory of record files with a store.")

    public init() {}
}
