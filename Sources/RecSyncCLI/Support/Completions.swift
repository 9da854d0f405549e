import ArgumentParser
import Foundation
import RecSyncModel
import RecSyncWorkspace

/// Shell completion of what only a workspace knows: its zones, its records, its subscriptions.
///
/// The shells call `recsync` back with the words typed so far (swift-argument-parser's custom
/// completion); these read the workspace around the current directory (or `-C DIR` among the
/// words) and never fail: outside a workspace they offer nothing.
enum Completions {
    /// Zone names: your zones as `ZONE`, shared ones as `OWNER/ZONE`.
    static let zones = CompletionKind.custom { words, _, prefix in
        guard let ws = workspace(words) else { return [] }
        return zoneNames(ws).filter { $0.hasPrefix(prefix) }
    }

    /// Records: a zone first (`ZONE/`), then that zone's records (`ZONE/NAME`); shared records
    /// as `OWNER/ZONE/NAME`.
    static let records = CompletionKind.custom { words, _, prefix in
        guard let ws = workspace(words) else { return [] }
        let (zones, _) = ws.localZones()
        var result: [String] = []
        for zone in zones {
            let shown = zone.ownerName == ws.user ? zone.zoneName : "\(zone.ownerName)/\(zone.zoneName)"
            guard prefix.hasPrefix(shown + "/") else {
                if (shown + "/").hasPrefix(prefix) { result.append(shown + "/") }
                continue
            }
            // A completion offers what it can read; a zone it cannot list offers nothing.
            for name in (try? ws.recordNamesOnDisk(zone)) ?? [] {
                let candidate = "\(shown)/\(name)"
                if candidate.hasPrefix(prefix) { result.append(candidate) }
            }
        }
        return result
    }

    /// Records in conflict, as `ZONE/NAME` (`OWNER/ZONE/NAME` in a shared zone).
    static let conflicts = CompletionKind.custom { words, _, prefix in
        guard let ws = workspace(words), let conflicts = try? ws.allConflicts() else { return [] }
        return conflicts.map(\.recordID).sorted().map { id in
            id.zoneID.ownerName == ws.user
                ? "\(id.zoneID.zoneName)/\(id.recordName)" : "\(id.zoneID.ownerName)/\(id.zoneID.zoneName)/\(id.recordName)"
        }.filter { $0.hasPrefix(prefix) }
    }

    /// The workspace's subscription IDs.
    static let subscriptionIDs = CompletionKind.custom { words, _, prefix in
        guard let ws = workspace(words), let subscriptions = try? ws.subscriptions() else { return [] }
        return subscriptions.map(\.id).filter { $0.hasPrefix(prefix) }
    }

    /// Your zones' names and shared zones as `OWNER/ZONE`, sorted.
    static func zoneNames(_ ws: Workspace) -> [String] {
        ws.localZones().zones.map { $0.ownerName == ws.user ? $0.zoneName : "\($0.ownerName)/\($0.zoneName)" }.sorted()
    }

    /// The workspace around `-C DIR` (when among the words) or the current directory.
    static func workspace(_ words: [String]) -> Workspace? {
        var directory = FileManager.default.currentDirectoryPath
        if let c = words.firstIndex(of: "-C"), c + 1 < words.count {
            let given = words[c + 1]
            directory = given.hasPrefix("/") ? given : "\(directory)/\(given)"
        }
        return try? Workspace.find(from: directory)
    }
}
