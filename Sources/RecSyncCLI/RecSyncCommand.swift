import ArgumentParser
import Foundation
import RecSyncModel
import RecSyncSystem

/// The `recsync` command; each subcommand lives in its own file under `Commands/`.
public struct RecSyncCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "recsync",
        abstract: "git for records: sync a directory of record files with a store.",
        discussion: """
            A workspace is a directory of record files (private/ZONE/NAME.json: the fields as \
            plain JSON) with their system fields in sidecars (private/ZONE/.system/NAME.json) \
            and sync state in .recsync/. A store is a git repository; give its path, a \
            file:// URL, or a network URL: ssh://[user@]host/path (also git+ssh://), the \
            scp-like [user@]host:path, https://, http:// or git://.

            RECORD arguments are ZONE/NAME for a record in one of your own zones, \
            OWNER/ZONE/NAME for one in a zone OWNER shares with you (an own zone named \
            OWNER wins; the path always says which), or a record file path \
            (private/ZONE/NAME.json, shared/OWNER/ZONE/NAME.json). ZONE arguments are a zone \
            name, OWNER/ZONE, or a zone directory. NAME may contain '/'.

            Paths are relative to the current directory, both the ones recsync prints and \
            the ones it reads, as git's are in a subdirectory; a path that starts with \
            private/ or shared/ and names nothing from the current directory is read from \
            the workspace root, so saved paths keep working.

            \(ExitCodes.table)
            """,
        version: "0.1.0",
        subcommands: [
            StoreCommand.self, InitCommand.self, CloneCommand.self,
            PullCommand.self, PushCommand.self, StatusCommand.self, DiffCommand.self,
            ResolveCommand.self, LogCommand.self, ShowCommand.self, RestoreCommand.self, ZoneCommand.self,
            GetCommand.self, PutCommand.self, PatchCommand.self, RmCommand.self, LsCommand.self,
            ImportCommand.self, ExportCommand.self, ChangesCommand.self,
            ShareCommand.self, UnshareCommand.self, KeysCommand.self, ConfigCommand.self, DoctorCommand.self,
            SubscribeCommand.self, SubscriptionsCommand.self, UnsubscribeCommand.self, WatchCommand.self, NotificationsCommand.self,
        ])

    /// Accepted before the subcommand too (`recsync -C DIR status`); subcommands read them.
    @OptionGroup public var global: GlobalOptions

    public init() {}
}

extension RecSyncCommand {
    /// Runs the command line: as swift-argument-parser's `main`, except that with `--json` a
    /// usage error (exit 64) is also printed as the JSON error document on stdout, as every
    /// other error is (docs/json.md).
    public static func main() async {
        HeapTuning.keepHeapCompact()
        let arguments = Array(CommandLine.arguments.dropFirst())
        // `recsync -V` and `recsync version` say what `--version` says.
        if arguments == ["-V"] || arguments == ["version"] {
            Console.write((configuration.version) + "\n", to: .output)
            Foundation.exit(ExitCodes.success)
        }
        // A mistyped subcommand gets git's "did you mean" rather than the parser's error.
        if let message = CommandSuggestion.unknownCommand(in: arguments) {
            if arguments.contains("--json") { printUsageError(message, arguments: arguments) }
            Console.write("recsync: " + message + "\n", to: .error)
            Foundation.exit(ExitCodes.usage)
        }
        do {
            var command = try parseAsRoot(arguments)
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            let status = exitCode(for: error).rawValue
            if status == ExitCodes.usage, arguments.contains("--json") {
                printUsageError(message(for: error), arguments: arguments)
            }
            exit(withError: error)
        }
    }

    /// The JSON error document of a usage error (exit 64), on stdout.
    static func printUsageError(_ message: String, arguments: [String]) {
        let document: JSONValue = .object([
            "command": .string(commandPath(in: arguments)),
            "error": .object([
                "kind": .string("usage"), "code": .int(Int64(CloudKitErrorCode.invalidArguments.rawValue)),
                "message": .string(message),
            ]),
            "exitCode": .int(Int64(ExitCodes.usage)),
            "version": .int(1),
        ])
        Console.write(String(decoding: JSON.serialize(document, pretty: true), as: UTF8.self), to: .output)
    }

    /// The subcommand words at the start of a command line (`zone delete`), skipping options.
    static func commandPath(in arguments: [String]) -> String {
        var words: [String] = []
        var candidates = configuration.subcommands
        var skipNext = false
        for argument in arguments {
            if skipNext { skipNext = false; continue }
            if argument == "-C" { skipNext = true; continue }
            if argument.hasPrefix("-") { continue }
            guard let match = candidates.first(where: { $0.configuration.commandName == argument }) else { break }
            words.append(argument)
            candidates = match.configuration.subcommands
        }
        return words.isEmpty ? "recsync" : words.joined(separator: " ")
    }
}
