import ArgumentParser
import RecSyncModel
import RecSyncStore

/// `recsync share ZONE --with USER [--read-only]`: shares one of your zones.
struct ShareCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "share",
        abstract: "Share one of your zones with another user.",
        discussion:
            """
            The zone appears in that user's shared/YOU/ZONE/ on their next pull. recsync refuses a read-only\
             participant's push before sending anything; the git host's permissions on the store are what\
             really protect it (see the README's security section).\n\nEXAMPLES\n  recsync share todo --with\
             bob\n  recsync share todo --with carol --read-only
            """
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "One of your zones.", completion: Completions.zones) var zone: String
    @Option(name: .customLong("with"), help: "The user to share it with.") var user: String
    @Flag(help: "Let them read but not change the zone.") var readOnly = false

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let engine = try context.engine()
        let saved = try await engine.store.share(
            try ZoneID(normalizing: zone, ownerName: engine.workspace.user), with: user, permission: readOnly ? .readOnly : .readWrite)
        return printParticipants(saved, context, zoneName: zone, "shared \(zone) with \(user) (\(readOnly ? "read-only" : "read-write"))")
    }
}

/// `recsync unshare ZONE --with USER`: stops sharing a zone with a user.
struct UnshareCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "unshare",
        abstract: "Stop sharing one of your zones with a user.",
        discussion:
            """
            The zone leaves that user's workspace on their next pull; their unpushed edits are kept in their\
             .recsync/lost+found/.\n\nEXAMPLES\n  recsync unshare todo --with bob
            """
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "One of your zones.", completion: Completions.zones) var zone: String
    @Option(name: .customLong("with"), help: "The user to stop sharing it with.") var user: String

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let engine = try context.engine()
        let saved = try await engine.store.unshare(try ZoneID(normalizing: zone, ownerName: engine.workspace.user), with: user)
        return printParticipants(saved, context, zoneName: zone, "stopped sharing \(zone) with \(user)")
    }
}

/// Prints a zone's participants after `share` or `unshare`.
func printParticipants(_ zone: RecordZone, _ context: CommandContext, zoneName: String, _ what: String) -> Int32 {
    context.console.document([
        "zone": .string(zoneName),
        "participants": .array(
            zone.participants.map {
                .object(["user": .string($0.userRecordName), "permission": .string($0.permission.rawValue)])
            }),
    ])
    context.console.info(what)
    return ExitCodes.success
}
