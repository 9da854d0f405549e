import RecSyncEngine
import RecSyncModel
import RecSyncWorkspace

/// The output `zone track` and `zone untrack` share.
enum ZoneTracking {
    /// A zone as a person names it: its name, or `OWNER/ZONE` for another user's.
    static func names(_ change: TrackingChange) -> String {
        change.zones.map { $0.ownerName == change.workspace.user ? $0.zoneName : "\($0.ownerName)/\($0.zoneName)" }.joined(separator: ", ")
    }

    static func print(_ change: TrackingChange, context: CommandContext) {
        let ws = change.workspace
        context.console.document([
            "zones": .array(
                change.zones.map { zone in
                    .object([
                        "zone": .string(zone.zoneName), "owner": .string(zone.ownerName), "path": .string(ws.relative(ws.zoneDirectory(zone))),
                        "tracked": .bool(ws.tracks(zone)),
                    ])
                }),
            "changed": .bool(change.changed), "partial": .bool(ws.isPartial),
            "lostAndFound": change.lostAndFound.map(JSONValue.string) ?? .null,
        ])
    }
}
