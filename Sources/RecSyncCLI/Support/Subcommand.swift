import ArgumentParser
import RecSyncModel

/// A `recsync` subcommand: parses its arguments, hands off to the library, prints.
///
/// `run` maps every error to `recsync: <message>` on stderr and to its exit status
/// (`ExitCodes`); a command returns the status of an outcome that is not an error (conflicts).
protocol RecSyncSubcommand: AsyncParsableCommand {
    var global: GlobalOptions { get }
    /// The command's words as a user types them (`zone delete`): the `command` of its JSON.
    static var commandPath: String { get }
    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32
}

extension RecSyncSubcommand {
    static var commandPath: String { configuration.commandName ?? "recsync" }

    mutating func run() async throws {
        let status: Int32
        do {
            let context = try CommandContext(global, command: Self.commandPath)
            var result = try await execute(context)
            // As git does: output that could not be written (a full disk, a closed stdout) is
            // the command's failure, whatever else it did.
            if result == ExitCodes.success && Console.outputFailed {
                Console(global, command: Self.commandPath).error("could not write to standard output")
                result = ExitCodes.error
            }
            status = result
        } catch {
            status = CommandError.report(error, on: Console(global, command: Self.commandPath))
        }
        ProgressLine.shared.clear()
        if status != ExitCodes.success { throw ExitCode(status) }
    }
}
