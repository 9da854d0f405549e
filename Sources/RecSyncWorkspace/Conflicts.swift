import Foundation
import RecSyncModel
import RecSyncSystem

/// A record whose local edit and the store's version both changed: the three copies, kept
/// under `.recsync/conflicts/` until `resolve` settles it.
package struct Conflict: Sendable, Hashable {
    package var recordID: RecordID
    package var fileName: String
    /// The local fields (nil: deleted locally).
    package var client: [String: FieldValue]?
    /// The store's version (nil: deleted on the store) and its system fields.
    package var server: [String: FieldValue]?
    package var serverSystem: SystemFields?
    /// The version both sides started from (nil: unknown or none).
    package var ancestor: [String: FieldValue]?

    package init(
        recordID: RecordID, fileName: String, client: [String: FieldValue]?, server: [String: FieldValue]?, serverSystem: SystemFields?,
        ancestor: [String: FieldValue]?
    ) {
        self.recordID = recordID
        self.fileName = fileName
        self.client = client
        self.server = server
        self.serverSystem = serverSystem
        self.ancestor = ancestor
    }

    /// The fields that differ between the two sides.
    package var conflictingKeys: [String] {
        let keys = Set((client ?? [:]).keys).union((server ?? [:]).keys)
        return keys.filter { client?[$0] != server?[$0] }.sorted()
    }

    func encoded() -> [UInt8] {
        func fieldsJSON(_ f: [String: FieldValue]?) -> JSONValue {
            guard let f else { return .null }
            return .object(f.mapValues(WorkspaceEncoding.json(from:)))
        }
        var o: [String: JSONValue] = [
            "recordName": .string(recordID.recordName),
            "zone": .object(["zoneName": .string(recordID.zoneID.zoneName), "ownerName": .string(recordID.zoneID.ownerName)]),
            "client": fieldsJSON(client), "server": fieldsJSON(server), "ancestor": fieldsJSON(ancestor),
        ]
        if let s = serverSystem, let j = try? JSON.parse(WorkspaceEncoding.encodeSystemFields(s)) {
            o["serverSystem"] = j
        } else {
            o["serverSystem"] = .null
        }
        return JSON.serialize(.object(o), pretty: true)
    }

    static func decode(_ bytes: [UInt8], fileName: String, path: String) throws(RecSyncError) -> Conflict {
        func bad(_ why: String) -> RecSyncError { .fileSystem(path: path, message: "damaged conflict file (\(why)); delete it and pull again") }
        let json: JSONValue
        do { json = try JSON.parse(bytes) } catch { throw bad(error.message) }
        guard case .object(let o) = json, case .string(let name)? = o["recordName"], case .object(let z)? = o["zone"],
            case .string(let zn)? = z["zoneName"], case .string(let on)? = z["ownerName"]
        else { throw bad("missing recordName or zone") }
        func fields(_ key: String) throws(RecSyncError) -> [String: FieldValue]? {
            guard let v = o[key], v != .null else { return nil }
            return try WorkspaceEncoding.decodeFields(JSON.serialize(v, pretty: false))
        }
        var system: SystemFields?
        if let s = o["serverSystem"], s != .null {
            system = try WorkspaceEncoding.decodeSystemFields(JSON.serialize(s, pretty: false))
        }
        let id = try RecordID(recordName: name, zoneID: ZoneID(zoneName: zn, ownerName: on))
        return Conflict(
            recordID: id, fileName: fileName, client: try fields("client"), server: try fields("server"), serverSystem: system,
            ancestor: try fields("ancestor"))
    }
}

extension Workspace {
    package func conflictPath(_ zone: ZoneID, fileName: String) -> String { "\(conflictDirectory(zone))/\(fileName)" }

    package func saveConflict(_ conflict: Conflict) throws(RecSyncError) {
        try FileIO.writeAtomically(conflictPath(conflict.recordID.zoneID, fileName: conflict.fileName), conflict.encoded())
    }

    package func removeConflict(_ zone: ZoneID, fileName: String) throws(RecSyncError) {
        var batch = WriteBatch()
        batch.remove(conflictPath(zone, fileName: fileName))
        try batch.commit()
    }

    /// Every pending conflict of a zone.
    package func conflicts(in zone: ZoneID) throws(RecSyncError) -> [Conflict] {
        let dir = conflictDirectory(zone)
        var result: [Conflict] = []
        for file in FileIO.list(dir) where file.hasSuffix(".json") && !file.hasPrefix(".") {
            let path = "\(dir)/\(file)"
            guard let bytes = try FileIO.read(path) else { continue }
            result.append(try Conflict.decode(bytes, fileName: file, path: path))
        }
        return result
    }

    /// Every pending conflict in the workspace.
    package func allConflicts() throws(RecSyncError) -> [Conflict] {
        var result: [Conflict] = []
        for scope in ["private", "shared"] {
            let base = "\(stateDir)/conflicts/\(scope)"
            for owner in FileIO.list(base) {
                for zone in FileIO.list("\(base)/\(owner)") {
                    guard let o = NameEscaping.unescape(owner), let z = NameEscaping.unescape(zone),
                        let id = try? ZoneID(zoneName: z, ownerName: o)
                    else { continue }
                    result += try conflicts(in: id)
                }
            }
        }
        return result
    }

    /// The names of the files in the zone's directory that are not records, nor recsync's own
    /// (dot files, files that are not `.json`): the user's, kept when the zone goes.
    package func filesNotRecords(in zone: ZoneID) -> [String] {
        FileIO.list(zoneDirectory(zone)).filter { name in
            name != ".system" && !name.contains(TempFile.marker) && (name.hasPrefix(".") || !name.hasSuffix(".json"))
        }
    }

    /// Moves everything of a zone that is not simply the synced version (unpushed new and
    /// edited records with their sidecars, files that are not records, unreadable files,
    /// pending conflicts) to `.recsync/lost+found/<stamp>/<scope>/<owner>/<zone>/`, leaving only synced
    /// records behind. Returns where it went, nil when there was nothing to keep.
    package func setAsideUnpushedWork(of zone: ZoneID, scan: ZoneScan, stamp: String) throws(RecSyncError) -> String? {
        let dir = zoneDirectory(zone)
        let unpushed = scan.records.contains { $0.state == .new || $0.state == .modified }
        // Anything that is not a record file (dot files, untracked or ignored files) is the
        // user's, and goes with the directory.
        let others = !filesNotRecords(in: zone).isEmpty
        let conflictDir = conflictDirectory(zone)
        let conflicts = !FileIO.list(conflictDir).isEmpty
        guard unpushed || others || conflicts || !scan.problems.isEmpty else { return nil }
        // One path component per name: owner and zone joined in one could pass 255 bytes.
        let target = "\(stateDir)/lost+found/\(stamp)/\(zoneStateKey(zone))"
        try FileIO.move(dir, to: target)
        // What the store had anyway need not be kept.
        var batch = WriteBatch()
        for r in scan.records where r.state == .clean || r.state == .deleted {
            if r.state == .clean { batch.remove("\(target)/\(r.fileName)") }
            batch.remove("\(target)/.system/\(r.fileName)")
        }
        try batch.commit()
        if conflicts { try FileIO.move(conflictDir, to: "\(target)/.conflicts") }
        try FileIO.makeDirectories(dir)  // the caller removes it, as for a zone with nothing to keep
        return target
    }
}
