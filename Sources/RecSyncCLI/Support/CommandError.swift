import RecSyncModel

/// How the command line tells a library error: its exit status (`ExitCodes`) and what to do
/// next in the command line's own words, commands and flags. The library's messages speak of
/// the library only; what `recsync` adds to them is decided here and nowhere else.
enum CommandError {
    /// The lines printed after the error as `hint:` (text mode; not with --quiet or --json).
    static func hints(for error: RecSyncError) -> [String] {
        kindHints(for: error) + error.remedies.map(hint)
    }

    /// A remedy the library names, as the command that does it.
    static func hint(_ remedy: RecSyncError.Remedy) -> String {
        switch remedy {
        case .importKey: "run 'recsync keys export' on a device that holds the key, then 'recsync keys import FILE' here"
        case .makeKey: "'recsync keys init' makes your key and publishes it"
        case .resetKeys: "if the key is lost, 'recsync keys reset' makes a new one (encrypted zones are dropped and uploaded again)"
        case .askToPublishKey(let user): "ask \(user) to run 'recsync keys init' in a workspace of this store"
        case .compareKeyFingerprints: "'recsync keys show' prints the fingerprints to compare"
        case .replaceKey: "pass --replace to overwrite it"
        case .createStore(let path): "create one with 'recsync store init \(path ?? "PATH")'"
        case .checkStore(let path): "'recsync store doctor\(path.map { " \($0)" } ?? "")' checks the store and removes what a killed writer left"
        case .compactStoreWhereItLives: "compact the store where it lives: 'recsync store compact PATH' on the server"
        case .listZones: "'recsync zone list' shows the zones and who they are shared with"
        case .trackZones: "'recsync zone track ZONE' and 'recsync zone untrack ZONE' change the zones this workspace holds"
        case .listSubscriptions: "'recsync subscriptions' lists them"
        case .listHistory: "'recsync log' lists the store's history"
        case .listRecordVersions: "'recsync log -p RECORD' lists its versions"
        case .pull: "run 'recsync pull' first"
        case .resolve(let path): "settle it with 'recsync resolve --ours|--theirs|--merge \(path)'"
        case .chooseAnotherSubscriptionID: "pass --id to name this one, or 'recsync unsubscribe' the one there"
        case .subscribeOrPull: "add a subscription with 'recsync subscribe', or pass --pull"
        case .lookWithoutAcknowledging: "'recsync notifications' without --ack shows them without taking them"
        case .cloneAs(let user): "'recsync clone --user \(user) STORE DIR' makes a workspace for \(user)"
        case .finishClone(let directory): "'recsync -C \(directory) pull' finishes it"
        case .checkWorkspace: "'recsync doctor' checks the workspace and repairs what it can"
        case .createZone(let zone): "'recsync zone create \(zone)' makes it again"
        case .removeRecord(let path): "'recsync rm \(path)' deletes it"
        case .showOrUndoEdits(let path): "'recsync diff \(path)' shows the edits; 'recsync restore \(path)' undoes them"
        case .force: "pass --force to do it anyway"
        case .forceSave: "'recsync push --force' replaces the store's copy with yours"
        case .nameRecordsByAnotherKey: "pass --id KEY to name records by another key, or --no-names to leave names out"
        }
    }

    /// Hints that follow from the error's kind alone.
    private static func kindHints(for error: RecSyncError) -> [String] {
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
        case .unsupportedStoreFormat:
            return ["install a newer recsync ('recsync --version' shows this one's); the workspace and the store are as they were"]
        case .networkUnavailable, .networkFailure:
            return ["pull and push take --retry [N] or --wait to try again by themselves"]
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
        let hints = hints(for: error)
        var document: [String: JSONValue] = ["error": error.json, "exitCode": .int(Int64(status))]
        if !hints.isEmpty { document["hints"] = .array(hints.map { .string($0) }) }
        console.document(document)
        console.error(error.message)
        for hint in hints { console.hint(hint) }
        return status
    }
}
