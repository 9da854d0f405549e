import Foundation
import RecSyncModel
import RecSyncSystem

/// A setting of `.recsync/config` that `recsync config` reads and writes.
public enum WorkspaceSetting: String, CaseIterable, Sendable {
    /// Where the store is (`WorkspaceConfig.remote`), kept without a password.
    case remote
    /// Who the workspace syncs as (`WorkspaceConfig.user`).
    case user
    /// Whether every pull commits a snapshot (`WorkspaceConfig.commitSnapshots`).
    case commitSnapshots
    /// The zones pulled without their assets (`WorkspaceConfig.noAssetZones`).
    case noAssetZones
    /// The zones a partial workspace holds, null for every zone (`WorkspaceConfig.trackedZones`):
    /// read here, changed by tracking and untracking zones, which fetch and remove their files.
    case trackedZones

    /// The setting a key names; an unknown key is an error listing the known ones.
    package init(key: String) throws(RecSyncError) {
        guard let setting = Self(rawValue: key) else {
            let known = Self.allCases.map(\.rawValue).joined(separator: ", ")
            throw .invalidArguments("'\(key)' is not a workspace setting; the settings are \(known)")
        }
        self = setting
    }

    /// A `commitSnapshots` value as written on the command line (true/false, yes/no, on/off, 1/0).
    package static func parseBool(_ text: String) throws(RecSyncError) -> Bool {
        switch text.lowercased() {
        case "true", "yes", "on", "1": return true
        case "false", "no", "off", "0": return false
        default: throw .invalidValue("commitSnapshots: '\(text)' is not true or false")
        }
    }
}

extension WorkspaceConfig {
    /// The value of a setting: a string, or a boolean for `commitSnapshots`.
    package func value(of setting: WorkspaceSetting) -> JSONValue {
        switch setting {
        case .remote: .string(RemoteAddress.withoutPassword(remote))
        case .user: .string(user)
        case .commitSnapshots: .bool(commitSnapshots ?? false)
        case .noAssetZones: .array((noAssetZones ?? []).map(JSONValue.string))
        case .trackedZones: trackedZones.map { .array($0.map(JSONValue.string)) } ?? .null
        }
    }
}

extension Workspace {
    /// Whether a pull leaves `zone`'s assets on the store (`WorkspaceConfig.noAssetZones`).
    package func pullsWithoutAssets(_ zone: ZoneID) -> Bool {
        guard let zones = config.noAssetZones, !zones.isEmpty else { return false }
        return zones.contains(relativeToRoot(zoneDirectory(zone)))
    }

    /// A `noAssetZones` value as written on the command line: zones (names, OWNER/ZONE or
    /// zone directories) separated by commas, none for an empty list; kept as the zones'
    /// directories relative to the root, sorted.
    package func parseZoneList(_ text: String, from directory: String) throws(RecSyncError) -> [String] {
        var zones = Set<String>()
        for part in text.split(separator: ",") {
            let name = part.trimmingCharacters(in: .whitespaces)
            if name.isEmpty { continue }
            zones.insert(relativeToRoot(zoneDirectory(try zone(named: name, from: directory))))
        }
        return zones.sorted()
    }

    func relativeToRoot(_ path: String) -> String {
        path.hasPrefix(root + "/") ? String(path.dropFirst(root.count + 1)) : path
    }

    /// Whether anything here came from a store: a token, an index, a sidecar of a synced
    /// record, a push under way. Such state belongs to one user on one store.
    package var hasSyncState: Bool {
        get throws(RecSyncError) {
            if !FileIO.list("\(stateDir)/tokens").isEmpty || !FileIO.list("\(stateDir)/index").isEmpty { return true }
            if try FileIO.info(pendingPushPath) != nil { return true }
            return localZones().zones.contains { !holdsNoSyncedRecord($0) }
        }
    }

    /// The ID of the store this workspace synced with: the config's, else the one its change
    /// tokens name; nil when it never synced.
    package func syncedStoreID() throws(RecSyncError) -> String? {
        if let id = config.storeID { return id }
        var paths = [scopeTokenPath(.private), scopeTokenPath(.shared)]
        paths += zonesWithTokens().map(zoneTokenPath)
        for path in paths {
            guard let token = try loadToken(path) else { continue }
            do { return try ChangeTokenContent.decode(token).storeID } catch {
                throw .fileSystem(path: path, message: "does not hold a change token recsync can read (\(error.message))").suggesting(
                    .checkWorkspace)
            }
        }
        return nil
    }

    /// Forgets where syncing got to with the store (change tokens, the network mirror), so
    /// the next pull fetches everything again: for a workspace switched to another store.
    package func resetSyncState() throws(RecSyncError) {
        try FileIO.remove("\(stateDir)/tokens")
        try FileIO.remove(mirrorPath)
    }
}
