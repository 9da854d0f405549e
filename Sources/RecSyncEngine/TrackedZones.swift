import RecSyncModel
import RecSyncStore
import RecSyncWorkspace

/// What `SyncEngine.trackZones` or `SyncEngine.untrackZone` did.
public struct TrackingChange: Sendable {
    /// The workspace with its new config.
    public let workspace: Workspace
    /// The zones named, in the order given.
    public let zones: [ZoneID]
    /// Whether the set changed (a zone tracked already, or a workspace of every zone, is left as it was).
    public let changed: Bool
    /// Where an untracked zone's unpushed files went (`force`), relative to where the command runs.
    public let lostAndFound: String?
}

extension SyncEngine {
    /// `recsync zone track`: adds zones to the set of a partial workspace; the next pull
    /// fetches each whole. A workspace of every zone tracks them already and is left as it
    /// is. With `all` (and no zones), the workspace goes back to holding every zone; the next
    /// pull fetches those it lacks.
    ///
    /// Nothing is fetched here: the next pull fetches a tracked zone it holds no token of
    /// whole, if the store has it. For `all`, the scopes' change tokens are forgotten, so that
    /// the next pull reads the zone lists whole and fetches every zone it lacks (the zones
    /// held keep their own tokens).
    public static func trackZones(_ names: [String], all: Bool, in workspace: Workspace, from directory: String) throws(RecSyncError)
        -> TrackingChange
    {
        if all, !names.isEmpty { throw .invalidArguments("give zones to track, or all of them, not both") }
        if !all, names.isEmpty { throw .invalidArguments("give the zones to track") }
        return try workspace.withLock(purpose: "zone track") { () throws(RecSyncError) -> TrackingChange in
            let ws = try Workspace.open(at: workspace.root)
            var config = ws.config
            var zones: [ZoneID] = []
            var scopes = Set<DatabaseScope>()
            if all {
                guard config.trackedZones != nil else { return TrackingChange(workspace: ws, zones: [], changed: false, lostAndFound: nil) }
                config.trackedZones = nil
                scopes = [.private, .shared]
            } else {
                var set = config.trackedZones
                for name in names {
                    let (zone, entry) = try ws.trackedEntry(name, from: directory)
                    zones.append(zone)
                    // A zone made here is fetched for its directory; named, it is kept in the set.
                    guard var tracked = set, !tracked.contains(entry) else { continue }
                    tracked.append(entry)
                    set = tracked.sorted()
                }
                guard set != config.trackedZones else { return TrackingChange(workspace: ws, zones: zones, changed: false, lostAndFound: nil) }
                config.trackedZones = set
            }
            // The tokens before the config: killed in between, a pull reads the zone lists
            // whole for nothing; the other way round, the workspace would track every zone
            // with no pull to fetch those it lacks, and a second track would change nothing.
            for scope in scopes.sorted(by: { $0.rawValue < $1.rawValue }) { try ws.saveToken(nil, at: ws.scopeTokenPath(scope)) }
            try ws.saveConfig(config)
            return TrackingChange(workspace: workspace.withConfig(config), zones: zones, changed: true, lostAndFound: nil)
        }
    }

    /// `recsync zone untrack`: takes a zone out of the workspace's set and removes its
    /// directory and everything kept about it, so a later track fetches it whole again. A
    /// workspace of every zone becomes a partial one holding the zones it has but this one.
    ///
    /// A zone with work not pushed (new, edited or deleted records, conflicts, files that are
    /// not records) is refused with `localChanges`, unless `force`, which moves that work to
    /// lost+found first. Works offline: the store is not asked.
    public static func untrackZone(_ name: String, force: Bool, in workspace: Workspace, from directory: String) async throws(RecSyncError)
        -> TrackingChange
    {
        try await workspace.withLock(purpose: "zone untrack") { () async throws(RecSyncError) -> TrackingChange in
            let ws = try Workspace.open(at: workspace.root)
            let (zone, entry) = try ws.trackedEntry(name, from: directory)
            guard ws.tracks(zone) else {
                throw .notFound("zone \(zone) is not tracked by this workspace").suggesting(.listZones)
            }
            // A push stopped before it wrote its sidecars: the next pull settles it, and would
            // note records of this zone as pushed after its state was forgotten.
            if try ws.pendingPushNote() != nil {
                throw .localChanges("a push was stopped before it finished; nothing was untracked").suggesting(.pull)
            }
            var config = ws.config
            // The store is not asked: the index says what was synced.
            let scan = try await ws.scan(zone: zone) { _, _ throws(RecSyncError) in nil }
            let unpushed = ws.unpushedWork(in: scan, of: zone)
            if !unpushed.isEmpty, !force {
                let shown = unpushed.prefix(10).joined(separator: ", ") + (unpushed.count > 10 ? ", and \(unpushed.count - 10) more" : "")
                throw .localChanges(
                    "zone \(zone) holds work that is not pushed (\(shown)); push it first, or remove the zone keeping that work in lost+found; nothing was untracked"
                ).suggesting(.force)
            }
            config.trackedZones = (config.trackedZones ?? ws.zonesHeld()).filter { $0 != entry }
            // The set first: killed before the directory goes, the zone is still held (its
            // directory is there), and untracking it again finishes the job.
            try ws.saveConfig(config)
            let saved = try ws.dropUntrackedZone(zone, scan: scan, stamp: Self.stamp())
            return TrackingChange(workspace: workspace.withConfig(config), zones: [zone], changed: true, lostAndFound: saved.map(workspace.relative))
        }
    }
}
