import RecSyncEngine
import RecSyncModel
import RecSyncStore

/// One zone operation on the store, followed by a pull so the workspace follows it.
enum ZoneChange {
    static func apply(_ operation: ZoneOperation, verb: String, context: CommandContext) async throws(RecSyncError) -> Int32 {
        let engine = try context.engine()
        let output = SyncOutput(console: context.console, workspace: engine.workspace)
        let report = try await engine.changeZone(
            operation, verb: verb,
            applied: {
                context.console.info("\(verb)d zone \(operation.zoneID.zoneName) on the store")
            }, events: output.events)
        return try output.pull(report, command: "zone \(verb)")
    }
}
