import ArgumentParser
import RecSyncModel

/// A `recsync` subcommand: parses its arguments, hands off to the library, prints.
///
/// `run` maps every error to `recsync: <message>` on stderr and to its exit status
/// (`ExitCodes`); a command returns the status of an outcome that is not an error (conflicts).
protocol RecSyncSubcommand: AsyncParsableCommand {
    var global: GlobalOptions { get }
    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32
}

extension RecSyncSubcommand {
    mutating func run() async throws {
        let status: Int32
        do {
            let context = try CommandContext(global)
            var result = try await execute(context)
            // As git does: output that could not be written (a full disk, a closed stdout) is
            // the command's failure, whatever else it did.
            if result == ExitCodes.success && Console.outputFailed {
                Console(global).error("could not write to standard output")
                result = ExitCodes.error
            }
            status = result
        } catch {
            // With --json, scripts get the error as the one document: its kind, CloudKit
            // code and what it carries (`RecSyncError.json`); the message goes to stderr too.
            Console(global).document(["error": error.json])
            Console(global).error(error.message)
            status = ExitCodes.code(for: error)
        }
        if status != ExitCodes.success { throw ExitCode(status) }
    }
}
