import RecSyncModel
import RecSyncSystem

/// The zones a partial workspace holds: CloudKit's model, where an app chooses the zones it
/// fetches, kept as git's sparse checkout keeps its set.
///
/// A workspace without a set (`WorkspaceConfig.trackedZones` nil) holds every zone. Once a set
/// exists, a pull fetches the zones of the set and those with a directory here (a zone made
/// here and not pushed yet is the user's own choice); a zone that appears on the store is not
/// fetched until it is tracked.
extension Workspace {
    /// Whether the workspace holds only some zones.
    public var isPartial: Bool { config.trackedZones != nil }

    /// Whether a pull fetches `zone` (see the type's note).
    package func tracks(_ zone: ZoneID) -> Bool {
        guard let tracked = config.trackedZones else { return true }
        return tracked.contains(rootRelative(zoneDirectory(zone))) || hasZoneDirectory(zone)
    }

    /// The zones a pull fetches; nil for every zone.
    package func trackedZoneIDs() throws(RecSyncError) -> [ZoneID]? {
        guard let tracked = config.trackedZones else { return nil }
        var zones = Set(localZones().zones)
        for path in tracked { zones.insert(try trackedZone(path)) }
        return zones.sorted()
    }

    /// Zones of the set the workspace holds no token of: tracked since the last pull, or a
    /// first fetch of them was stopped (a directory may be there). A pull fetches them whole
    /// if the store has them.
    package func trackedZonesNotHeld() throws(RecSyncError) -> [ZoneID] {
        guard let tracked = config.trackedZones else { return [] }
        let withToken = Set(zonesWithTokens())
        var zones: [ZoneID] = []
        for path in tracked {
            let zone = try trackedZone(path)
            if !withToken.contains(zone) { zones.append(zone) }
        }
        return zones
    }

    private func trackedZone(_ path: String) throws(RecSyncError) -> ZoneID {
        do { return try zone(named: path, from: root) } catch {
            throw .fileSystem(path: "\(stateDir)/config", message: "trackedZones: \(error.message)").suggesting(.checkWorkspace)
        }
    }

    /// The zone a name stands for (a zone name, `OWNER/ZONE`, or a zone directory) and its
    /// directory relative to the root, as the set keeps it.
    package func trackedEntry(_ name: String, from directory: String) throws(RecSyncError) -> (zone: ZoneID, entry: String) {
        let zone = try zone(named: name, from: directory)
        return (zone, rootRelative(zoneDirectory(zone)))
    }

    /// Makes a new workspace a partial one that tracks `names` (zone names, `OWNER/ZONE`).
    package func trackingOnly(_ names: [String]) throws(RecSyncError) -> Workspace {
        var entries = Set<String>()
        for name in names {
            do { entries.insert(try trackedEntry(name, from: root).entry) } catch {
                throw .invalidArguments("zone '\(name)': \(error.message)")
            }
        }
        var config = config
        config.trackedZones = entries.sorted()
        try saveConfig(config)
        return withConfig(config)
    }

    /// The set a partial workspace starts from when it is made from a workspace of every zone:
    /// the zones it holds (a directory or a zone token).
    package func zonesHeld() -> [String] {
        Set((localZones().zones + zonesWithTokens()).map { rootRelative(zoneDirectory($0)) }).sorted()
    }

    /// What the zone holds that removing it would lose, as paths to show (empty: nothing): a
    /// record not pushed (new, edited, deleted here), a file that cannot be read, a file that
    /// is not a record, pending conflicts.
    package func unpushedWork(in scan: ZoneScan, of zone: ZoneID) -> [String] {
        var paths = scan.records.filter { $0.state != .clean }.map { relative("\(zoneDirectory(zone))/\($0.fileName)") }
        paths += scan.problems.map(\.path)
        paths += filesNotRecords(in: zone).map { relative("\(zoneDirectory(zone))/\($0)") }
        if !FileIO.list(conflictDirectory(zone)).isEmpty { paths.append("conflicts of zone \(zone)") }
        return paths
    }

    /// Removes a zone no longer tracked, leaving nothing a later track could misread: its
    /// directory (what it holds beyond the synced records goes to lost+found first, under
    /// `stamp`), its token, index, notes and markers. Returns where the kept files went.
    package func dropUntrackedZone(_ zone: ZoneID, scan: ZoneScan, stamp: String) throws(RecSyncError) -> String? {
        var saved: String?
        if hasZoneDirectory(zone) {
            saved = try setAsideUnpushedWork(of: zone, scan: scan, stamp: stamp)
            try removeZoneDirectory(zone)
        } else if try zoneDirectoryIsLink(zone) {
            try removeZoneDirectory(zone)
        }
        try forgetZoneState(zone)
        try clearAwaitsReupload(zone)
        return saved
    }
}
