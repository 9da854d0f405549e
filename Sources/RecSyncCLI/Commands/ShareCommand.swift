import ArgumentParser
import RecSyncModel
import RecSyncStore

/// `recsync share ZONE --with USER [--read-only]`: shares one of your zones.
struct ShareCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "share",
        abstract: "Share one of your zones with another user.",
        discussion: "The zone appears in that user's shared/YOU/ZONE/ on their next pull. recsync refuses a read-only participant's push before sending anything; the git host's permissions on the store are what really protect it (see the README's security section).")

    @OptionGroup var global: GlobalOptions
    @Argument(help: "One of your zones.") var zone: String
    @Option(name: .customLong("with"), help: "The user to share it with.") var user: String
    @Flag(help: "Let them read but not change the zone.") var readOnly = false

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        try await changeParticipants(context, zoneName: zone) { participants throws(RecSyncError) in
            try NameRules.validateOwnerName(user)
            participants.removeAll { $0.userRecordName == user }
            participants.append(ShareParticipant(userRecordName: user, permission: readOnly ? .readOnly : .readWrite))
            return "shared \(zone) with \(user) (\(readOnly ? "read-only" : "read-write"))"
        }
    }
}

/// `recsync unshare ZONE --with USER`: stops sharing a zone with a user.
struct UnshareCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "unshare",
        abstract: "Stop sharing one of your zones with a user.",
        discussion: "The zone leaves that user's workspace on their next pull; their unpushed edits are kept in their .recsync/lost+found/.")

    @OptionGroup var global: GlobalOptions
    @Argument(help: "One of your zones.") var zone: String
    @Option(name: .customLong("with"), help: "The user to stop sharing it with.") var user: String

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        try await changeParticipants(context, zoneName: zone) { participants throws(RecSyncError) in
            guard participants.contains(where: { $0.userRecordName == user }) else {
                throw .invalidArguments("zone \(zone) is not shared with \(user); 'recsync zone list' shows who it is shared with")
            }
            participants.removeAll { $0.userRecordName == user }
            return "stopped sharing \(zone) with \(user)"
        }
    }
}

/// Reads a zone of the workspace's user, changes its participant list, saves it.
func changeParticipants(_ context: CommandContext, zoneName: String, _ change: (inout [ShareParticipant]) throws(RecSyncError) -> String) async throws(RecSyncError) -> Int32 {
    let ws = try context.workspace()
    let store = try context.store(for: ws)
    let zoneID = try ZoneID(normalizing: zoneName, ownerName: ws.user)
    guard var zone = try await store.fetchAllRecordZones(scope: .private).first(where: { $0.zoneID == zoneID }) else {
        throw .zoneNotFound(zoneID)
    }
    let what = try change(&zone.participants)
    _ = try await store.modifyRecordZones([.save(zone)])[0].result.get()
    context.console.document(["command": .string("share"), "zone": .string(zoneName), "participants": .array(zone.participants.map {
        .object(["user": .string($0.userRecordName), "permission": .string($0.permission.rawValue)])
    })])
    context.console.info(what)
    return ExitCodes.success
}
