import RecSyncModel

/// How the command line tells a library error: its exit status (`ExitCodes`) and what to do
/// next in the command line's own words, commands and flags. The library's messages speak of
/// the library only; what `recsync` adds to them is decided here and nowhere else.
enum CommandError {
    /// The lines printed after the error as `hint:` (text mode; not with --quiet or --json).
    static func hints(for error: RecSyncError) -> [String] {
        switch error.reason {
        case .notAWorkspace:
            return ["run 'recsync init' or 'recsync clone', or pass -C DIR"]
        case .notDelivered:
            return ["the next 'recsync watch' or 'recsync watch --once' delivers them again"]
        case .invalidName(let message) where message.hasPrefix("the subscription ID"):
            return ["pass another ID with --id"]
        case .noRemote:
            return ["set one with 'recsync config set remote URL' (or give the store on the command line, where the command takes one)"]
        case .storeMismatch:
            return [
                """
                clone that store into a new directory, or switch this workspace to it with 'recsync config set\
                 remote URL --force' (its sync state is reset, and the next pull fetches everything)
                """
            ]
        case .workspaceLocked:
            return ["wait for it to finish; 'recsync doctor' tells whether the lock is stale"]
        case .internalError:
            return ["this failed inside recsync (at \(error.location)); if the machine is not at fault, report it with this output"]
        default:
            return []
        }
    }

    /// Prints the error and its hints on stderr (and, with --json, the error document on
    /// stdout); its exit status.
    static func report(_ error: RecSyncError, on console: Console) -> Int32 {
        let status = ExitCodes.code(for: error)
        // With --json, scripts get the error as the one document: its kind, CloudKit code,
        // what it carries (`RecSyncError.json`) and the exit status; the message goes to
        // stderr too.
        console.document(["error": error.json, "exitCode": .int(Int64(status))])
        console.error(error.message)
        for hint in hints(for: error) { console.hint(hint) }
        return status
    }
}
