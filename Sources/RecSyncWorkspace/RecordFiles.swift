import RecSyncModel

/// Reading one record's files: the record file (its fields) and the sidecar (its system fields).
///
/// Every reader of a single record — `get`, `diff`, `put`, `rm`, `resolve`, push — goes
/// through these, so a file that cannot be read or decoded is always an error naming it
/// (relative to the root) and saying what is wrong. The scan of a whole zone
/// (`Workspace.scan`) reads through open directories instead, and reports problems as lines.
extension Workspace {
    /// The fields in a record's file; nil when there is no file. A file that is not valid
    /// record JSON, or is too large to be one, is a `.fileSystem` error naming it.
    public func recordFields(_ id: RecordID) throws(RecSyncError) -> [String: FieldValue]? {
        let path = recordPath(id)
        guard let bytes = try readRecordFile(path) else { return nil }
        do { return try WorkspaceEncoding.decodeFields(bytes) } catch {
            throw .fileSystem(path: relative(path), message: error.message)
        }
    }

    /// The system fields in a record's sidecar; nil when it has none (a record never synced
    /// and given no type). A sidecar that does not decode is a `.fileSystem` error naming it.
    public func systemFields(_ id: RecordID) throws(RecSyncError) -> SystemFields? {
        let path = sidecarPath(id)
        guard let bytes = try readRecordFile(path) else { return nil }
        do { return try WorkspaceEncoding.decodeSystemFields(bytes) } catch {
            throw .fileSystem(path: relative(path), message: "the sidecar is damaged (\(error.message)); restore it, or delete it to write a new record")
        }
    }

    /// A record file's or sidecar's bytes (at most `FileIO.recordFileReadLimit`), with read
    /// errors naming the file relative to the root.
    private func readRecordFile(_ path: String) throws(RecSyncError) -> [UInt8]? {
        do { return try FileIO.read(path, limit: FileIO.recordFileReadLimit) } catch .fileSystem(let p, let message) {
            throw .fileSystem(path: relative(p), message: message)
        }
    }
}
