import RecSyncModel
import RecSyncStore
import RecSyncWorkspace

extension SyncEngine {
    /// Makes a workspace at `target` (a new path or an empty directory) and pulls everything
    /// into it: `recsync clone`. `openStore` opens the store once the workspace exists (a
    /// network store keeps its mirror inside it, and looks at the remote as it opens: the pull
    /// reads from that look rather than asking again); `started` is told before the pull and returns
    /// the handler for the pull's events. On any
    /// failure nothing half-made is left: the error is rethrown, or, when the clean-up fails
    /// too, a `fileSystem` error naming what is left to remove by hand. `fetchesAssets` false
    /// leaves assets' content on the store (`SyncEngine.fetchesAssets`). `zones` (names,
    /// `OWNER/ZONE` for a zone shared with the user) makes a partial workspace that fetches
    /// only those (`Workspace.isPartial`); none, a workspace of every zone.
    public static func clone(
        into target: String, config: WorkspaceConfig, fetchesAssets: Bool = true, zones: [String] = [],
        openStore: (Workspace) throws(RecSyncError) -> any RemoteStore,
        started: (Workspace, any RemoteStore) -> (@Sendable (SyncEvent) -> Void) = { _, _ in { _ in } }
    ) async throws(RecSyncError) -> (SyncEngine, PullReport) {
        let existed = try Workspace.checkNewWorkspaceTarget(target)
        do throws(RecSyncError) {
            var ws = try Workspace.create(at: target, config: config)
            if !zones.isEmpty { ws = try ws.trackingOnly(zones) }
            let store = try openStore(ws)
            let events = started(ws, store)
            var engine = SyncEngine(workspace: ws, store: store)
            engine.fetchesAssets = fetchesAssets
            var report = try await engine.pull(fromLastLook: true, events: events)
            // A zone asked for that the pull did not find: said, not an error (it may come later).
            for zone in try ws.trackedZonesNotHeld() {
                report.warnings.append("zone \(zone) is not on the store, or not shared with you; a pull fetches it once it is")
            }
            return (engine, report)
        } catch {
            do throws(RecSyncError) { try Workspace.discardHalfMade(target, existed: existed) } catch let cleanup {
                throw .fileSystem(
                    path: target, message: "\(error.message); and what the clone made could not be removed (\(cleanup.message)): remove it by hand")
            }
            throw error
        }
    }
}
