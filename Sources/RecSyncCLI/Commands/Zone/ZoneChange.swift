import RecSyncEngine
import RecSyncModel
import RecSyncStore

/// One zone operation on the store, followed by a pull so the workspace follows it.
enum ZoneChange {
    static func apply(_ operation: ZoneOperation, verb: String, context: CommandContext) async throws(RecSyncError) -> Int32 {
        let engine = try context.engine()
        let zone = operation.zoneID
        guard zone.ownerName == engine.workspace.user else {
            throw .permissionFailure("zone '\(zone)' belongs to \(zone.ownerName); only its owner can \(verb) it")
        }
        let result = try await engine.store.modifyRecordZones([operation])
        for r in result {
            if case .failure(let e) = r.result { throw e }
        }
        context.console.info("\(verb)d zone \(zone.zoneName) on the store")
        let output = SyncOutput(console: context.console, workspace: engine.workspace)
        return try output.pull(try await engine.pull(events: output.events), command: "zone \(verb)")
    }
}
