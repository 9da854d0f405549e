import RecSyncModel
import RecSyncSystem

/// Reading one record's files: the record file (its fields) and the sidecar (its system fields).
///
/// Every reader of a single record — `get`, `diff`, `put`, `rm`, `resolve`, push — goes
/// through these, so a file that cannot be read or decoded is always an error naming it
/// (relative to the root) and saying what is wrong. The scan of a whole zone
/// (`Workspace.scan`) reads through open directories instead, and reports problems as lines.
extension Workspace {
    /// The fields in a record's file; nil when there is no file. A file that is not valid
    /// record JSON is a `.malformed` error naming it (with the line and column when the JSON
    /// itself is broken); one that cannot be read, or is too large, a `.fileSystem` error.
    package func recordFields(_ id: RecordID) throws(RecSyncError) -> [String: FieldValue]? {
        let path = recordPath(id)
        guard let bytes = try readRecordFile(path) else { return nil }
        do { return try WorkspaceEncoding.decodeFieldsAndDeletions(bytes, assets: assetResolver(id)).fields } catch {
            throw error.located(at: relative(path))
        }
    }

    /// The system fields in a record's sidecar; nil when it has none (a record never synced
    /// and given no type). A sidecar that does not decode is a `.malformed` error naming it.
    package func systemFields(_ id: RecordID) throws(RecSyncError) -> SystemFields? {
        let path = sidecarPath(id)
        guard let bytes = try readRecordFile(path) else { return nil }
        do { return try WorkspaceEncoding.decodeSystemFields(bytes) } catch {
            throw .malformed(
                MalformedInput(
                    path: relative(path), detail: "the sidecar is damaged (\(error.message)); restore it, or delete it to write a new record"))
        }
    }

    /// A record file's or sidecar's bytes (at most `FileIO.recordFileReadLimit`), with read
    /// errors naming the file relative to the root.
    func readRecordFile(_ path: String) throws(RecSyncError) -> [UInt8]? {
        do { return try FileIO.read(path, limit: FileIO.recordFileReadLimit) } catch {
            guard case .fileSystem(let p, let message, let cause) = error.reason else { throw error }
            throw .fileSystem(path: relative(p), message: message, cause: cause)
        }
    }
}

/// What `Workspace.put` made of a record.
package enum RecordPut: Sendable, Hashable {
    /// A record the store does not have yet (no sidecar with a change tag).
    case new
    /// A synced record whose file was there: its fields changed.
    case modified
    /// A synced record whose file had been removed: it is back.
    case restored
}

extension Workspace {
    /// Writes a record's fields into its file, as the user would, for the next push to send.
    ///
    /// The record is checked as a push would check it (types, sizes). A new record with a
    /// `type` gets a sidecar holding the type (else the zone's default type applies on push);
    /// a synced record's type cannot change, and a record whose name is too long for a file
    /// name needs a `type`, since only a sidecar can then hold its name.
    @discardableResult
    package func put(_ id: RecordID, fields: [String: FieldValue], type: String? = nil) throws(RecSyncError) -> RecordPut {
        try put([id], fields: fields, type: type)[0]
    }

    /// Writes the same fields into several records (`put` for each), all or nothing: every
    /// record is checked before any is written, and all are written in one batch.
    @discardableResult
    package func put(_ ids: [RecordID], fields: [String: FieldValue], type: String? = nil) throws(RecSyncError) -> [RecordPut] {
        if let type { try NameRules.validateRecordType(type) }
        var batch = WriteBatch()
        var results: [RecordPut] = []
        for id in ids { results.append(try stagePut(id, fields: fields, type: type, into: &batch)) }
        try batch.commit()
        return results
    }

    /// Checks that every asset in `fields` given by reference (`{"$asset": {"oid", …}}`, as
    /// `show --json` and conflict copies spell it) is the file the record's file will name: a
    /// record file names its assets by file (`{"$asset": "<field>"}`), so a reference to
    /// content that is not in that file would make a record that names a file that is not
    /// there (or holds something else), which no push can send.
    func checkAssetReferences(_ id: RecordID, fields: [String: FieldValue]) throws(RecSyncError) {
        let resolve = assetResolver(id)
        for (key, value) in fields.sorted(by: { $0.key < $1.key }) {
            guard case .asset(let given) = value else { continue }
            let path = relative(assetPath(id, field: key))
            let held: AssetReference
            do { held = try resolve(key, key) } catch {
                throw .invalidValue(
                    """
                    field '\(key)': the asset \(given.oid.prefix(12)) is not at \(path), the file a record file\
                     names; put the file there and write {\"$asset\": \"\(key)\"}
                    """
                )
            }
            guard held.oid == given.oid else {
                throw .invalidValue(
                    """
                    field '\(key)': \(path) holds another asset (\(held.oid.prefix(12))) than the one given\
                     (\(given.oid.prefix(12))); put the file you mean there and write {\"$asset\": \"\(key)\"}
                    """
                )
            }
        }
    }

    /// Checks one record of a `put` and adds its writes to `batch`.
    private func stagePut(_ id: RecordID, fields: [String: FieldValue], type: String?, into batch: inout WriteBatch) throws(RecSyncError) -> RecordPut
    {
        let recordPath = recordPath(id), sidecarPath = sidecarPath(id)
        try checkAssetReferences(id, fields: fields)
        let system = try systemFields(id)
        // The checks a push makes (types, sizes), now rather than later.
        try Record(recordID: id, recordType: system?.recordType ?? type ?? "Record", fields: fields).validate()
        if let system, let type, system.recordType != type {
            throw .invalidArguments(
                """
                \(relative(recordPath)) is a '\(system.recordType)' record; a record's type cannot change (remove\
                 it, push, then put it again as a '\(type)')
                """
            )
        }
        if system == nil {
            if let type {
                batch.write(
                    sidecarPath,
                    WorkspaceEncoding.encodeSystemFields(SystemFields(recordID: id, recordType: type, changeTag: nil, created: nil, modified: nil)))
            } else if Self.recordName(forFile: Self.fileName(for: id.recordName)) == nil {
                throw .invalidArguments(
                    "record name '\(id.recordName.prefix(40))…' is too long for a file name; give its type, so that its sidecar can hold the name")
            }
        }
        let existed = try FileIO.stamp(recordPath) != nil
        batch.write(recordPath, WorkspaceEncoding.encodeFields(fields))
        return system?.changeTag == nil ? .new : existed ? .modified : .restored
    }

    /// Removes a record's file, as the user would; returns whether the next push deletes the
    /// record on the store (it was synced). A record never pushed leaves nothing behind: its
    /// sidecar (a type note) goes too.
    @discardableResult
    package func removeRecord(_ id: RecordID) throws(RecSyncError) -> Bool {
        try removeRecords([id])[0]
    }

    /// Removes several records' files (`removeRecord` for each), all or nothing: a record
    /// with no file is an error naming it before any file is removed.
    @discardableResult
    package func removeRecords(_ ids: [RecordID]) throws(RecSyncError) -> [Bool] {
        var batch = WriteBatch()
        var results: [Bool] = []
        for id in ids {
            let recordPath = recordPath(id), sidecarPath = sidecarPath(id)
            guard try FileIO.stamp(recordPath) != nil else {
                throw .notFound("no record file at \(relative(recordPath))")
            }
            var synced = false
            if let side = try readRecordFile(sidecarPath) {
                // A damaged sidecar names no version the store could delete: the record goes as
                // one never pushed does, sidecar and all.
                synced = (try? WorkspaceEncoding.decodeSystemFields(side))?.changeTag != nil
            }
            batch.remove(recordPath)
            if !synced { batch.remove(sidecarPath) }
            results.append(synced)
        }
        try batch.commit()
        return results
    }
}

/// A JSON merge patch (RFC 7386), as `Workspace.patch` applies it to a record's fields.
package enum MergePatch {
    /// `patch` applied to `target`: an object patch sets each of its members in the target
    /// (merging objects into objects, member by member) and removes those it gives as `null`;
    /// any other patch replaces the target. Nil: nothing is left (a `null` patch).
    package static func apply(_ patch: JSONValue, to target: JSONValue?) -> JSONValue? {
        guard case .object(let members) = patch else { return patch == .null ? nil : patch }
        var result: [String: JSONValue] = [:]
        if case .object(let existing)? = target { result = existing }
        for (key, value) in members {
            if value == .null {
                result[key] = nil
            } else {
                result[key] = apply(value, to: result[key])
            }
        }
        return .object(result)
    }
}

extension Workspace {
    /// Applies a JSON merge patch (RFC 7386) to the fields of records that have a file, for
    /// the next push to send: the fields it gives are set (objects merged member by member,
    /// as the record file writes them), `null` removes a field, and the others stay. A tagged
    /// value (`{"$date": …}`, `{"$asset": …}` and the others) is one value, never merged: a
    /// field given as one, or holding one, is replaced whole. A record in conflict is refused. Every record is read and checked first;
    /// a record with no file, or a result a push would refuse, is an error naming it and
    /// nothing is written. Returns, per record, whether its fields changed.
    @discardableResult
    package func patch(_ ids: [RecordID], with patch: JSONValue) throws(RecSyncError) -> [Bool] {
        guard case .object = patch else {
            throw .invalidArguments("a merge patch of a record's fields is a JSON object, found \(StoreEncoding.kindName(patch))")
        }
        guard case .object(let members) = patch else { return [] }
        var batch = WriteBatch()
        var changed: [Bool] = []
        var written: [String] = []
        let conflicted = Set(try allConflicts().map(\.recordID))
        for id in ids {
            let path = recordPath(id)
            guard let stamp = try FileIO.stamp(path), let fields = try recordFields(id) else {
                throw .notFound("no record file at \(relative(path)); a patch changes a record that is here (write the whole record to make one)")
            }
            if conflicted.contains(id) {
                throw .invalidArguments("\(relative(path)) is in conflict; settle it before patching it").suggesting(.resolve(path: relative(path)))
            }
            func tagged(_ value: JSONValue?) -> Bool {
                guard case .object(let o)? = value else { return false }
                return o.keys.contains { $0.hasPrefix("$") }
            }
            var merged = fields.mapValues(WorkspaceEncoding.json(from:))
            for (key, value) in members {
                if value == .null {
                    merged[key] = nil
                } else if tagged(value) || tagged(merged[key]) {
                    merged[key] = value
                } else {
                    merged[key] = MergePatch.apply(value, to: merged[key])
                }
            }
            let result: [String: FieldValue]
            do { result = try WorkspaceEncoding.decodeFields(JSON.serialize(.object(merged), pretty: false)) } catch {
                throw .invalidArguments("\(relative(path)): the patched fields are not valid: \(error.message)")
            }
            guard result != fields else {
                changed.append(false)
                continue
            }
            try checkAssetReferences(id, fields: result)
            let system = try systemFields(id)
            do { try Record(recordID: id, recordType: system?.recordType ?? "Record", fields: result).validate() } catch {
                throw .invalidArguments("\(relative(path)): the patched record is not valid: \(error.message)")
            }
            batch.write(path, WorkspaceEncoding.encodeFields(result), expect: .unchanged(stamp), group: path)
            written.append(path)
            changed.append(true)
        }
        try batch.commit()
        let skipped = written.filter(batch.skipped.contains)
        if !skipped.isEmpty {
            throw .fileSystem(path: skipped.map(relative).joined(separator: ", "), message: "changed while the patch was applied; left as it is")
        }
        return changed
    }
}
