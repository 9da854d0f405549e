import CSV
import Foundation
import RecSyncModel
import RecSyncSystem

/// One record of a zone as the workspace holds it: its fields and, when it has a sidecar,
/// its system fields.
package struct WorkspaceRecord: Sendable, Hashable {
    package var recordID: RecordID
    package var fields: [String: FieldValue]
    package var system: SystemFields?
}

extension Workspace {
    /// Every record file of a zone, sorted by record name (in UTF-8 byte order); a record
    /// removed here (its file gone) is not among them. A file that does not decode is an error
    /// naming it.
    package func records(in zone: ZoneID) throws(RecSyncError) -> [WorkspaceRecord] {
        let dir = zoneDirectory(zone)
        guard FileIO.isDirectory(dir) else {
            throw .notFound(
                """
                no zone '\(zone.zoneName)'\(zone.ownerName == user ? "" : " of \(zone.ownerName)") in this\
                 workspace (\(relative(dir)) is not there)
                """
            ).suggesting(.listZones)
        }
        var records: [WorkspaceRecord] = []
        for file in FileIO.listUnsorted(dir) where file.hasSuffix(".json") && !file.hasPrefix(".") {
            let id: RecordID
            let system = try systemFields(named: file, in: dir)
            if let system {
                id = system.recordID
            } else if let name = Self.recordName(forFile: file) {
                id = try RecordID(recordName: name, zoneID: zone)
            } else {
                continue  // a hashed name without its sidecar: status reports it
            }
            guard let fields = try recordFields(id) else { continue }
            records.append(WorkspaceRecord(recordID: id, fields: fields, system: system))
        }
        records.sort { $0.recordID.recordName.utf8.lexicographicallyPrecedes($1.recordID.recordName.utf8) }
        return records
    }

    /// The sidecar of the record file `file` in the zone directory `dir`, if there is one.
    func systemFields(named file: String, in dir: String) throws(RecSyncError) -> SystemFields? {
        let path = "\(dir)/.system/\(file)"
        guard let bytes = try readRecordFile(path) else { return nil }
        do { return try WorkspaceEncoding.decodeSystemFields(bytes) } catch {
            throw .malformed(
                MalformedInput(
                    path: relative(path), detail: "the sidecar is damaged (\(error.message)); restore it, or delete it to write a new record"))
        }
    }

    /// Exports a zone's records (see `exportRecords(of:format:system:)`) into the file at
    /// `path`, replaced whole and atomically. Only a regular file is replaced: a link, a
    /// directory, a FIFO or a device there is refused (replacing `/dev/null` or a link's name
    /// with a file is never what was meant; a shell's `>` writes through them).
    package func exportRecords(of zone: ZoneID, format: RecordFileFormat, system: Bool, to path: String) throws(RecSyncError) {
        if let existing = try FileIO.info(path), !existing.isRegular {
            let what = existing.isSymlink ? "a symbolic link" : existing.isDirectory ? "a directory" : "not a regular file (a FIFO, socket or device)"
            throw .invalidArguments(
                """
                \(path): is \(what); give the path of a regular file to replace, or write to standard output\
                 and redirect it
                """
            )
        }
        try FileIO.writeAtomically(path, try exportRecords(of: zone, format: format, system: system))
    }

    /// A zone's records as JSON lines or CSV (`RecordFileFormat`), sorted by record name; what
    /// `importRecords` reads back. With `system`, each record also carries `SystemColumns`
    /// (times as integer milliseconds, absent ones null or an empty cell). In CSV, strings are
    /// written as they are and other values as their plain JSON text.
    ///
    /// With `system`, a record with a field named like a system column is an error naming it:
    /// the column would hide the field, and `import --system` would not read it back.
    package func exportRecords(of zone: ZoneID, format: RecordFileFormat, system: Bool) throws(RecSyncError) -> [UInt8] {
        let records = try records(in: zone)
        if system {
            let columns = Set(SystemColumns.all)
            for r in records {
                if let clash = r.fields.keys.filter(columns.contains).sorted().first {
                    throw .invalidArguments(
                        """
                        \(relative(recordPath(r.recordID))): its field '\(clash)' has the name of a system column\
                         (\(SystemColumns.all.joined(separator: ", "))); export without --system, or rename the field
                        """
                    )
                }
            }
        }
        let rows: [[String: JSONValue]] = records.map { r in
            var row = r.fields.mapValues(WorkspaceEncoding.json(from:))
            if system {
                row["recordName"] = .string(r.recordID.recordName)
                row["zone"] = .string(zone.zoneName)
                row["owner"] = .string(zone.ownerName)
                row["recordType"] = r.system.map { .string($0.recordType) } ?? .null
                row["changeTag"] = r.system?.changeTag.map(JSONValue.string) ?? .null
                row["created"] = r.system?.created.map { .int($0.timestamp) } ?? .null
                row["modified"] = r.system?.modified.map { .int($0.timestamp) } ?? .null
            }
            return row
        }
        switch format {
        case .jsonl:
            var out: [UInt8] = []
            for row in rows {
                out += JSON.serialize(.object(row), pretty: false)
                out.append(10)
            }
            return out
        case .csv:
            let fieldNames = Set(records.flatMap(\.fields.keys)).sorted()
            return try Self.csv(rows, columns: (system ? SystemColumns.all : []) + fieldNames)
        }
    }

    /// Rows as CSV with a header row, written by CSV.swift's writer.
    static func csv(_ rows: [[String: JSONValue]], columns: [String]) throws(RecSyncError) -> [UInt8] {
        func text(_ value: JSONValue?) -> String {
            switch value {
            case nil, .null?: ""
            case .string(let s)?: s
            case let other?: String(decoding: JSON.serialize(other, pretty: false), as: UTF8.self)
            }
        }
        do {
            let writer = try CSVWriter(stream: .toMemory())
            try writer.write(row: columns)
            for row in rows { try writer.write(row: columns.map { text(row[$0]) }) }
            writer.stream.close()
            guard let data = writer.stream.property(forKey: .dataWrittenToMemoryStreamKey) as? Data else {
                throw RecSyncError.internalError("the CSV writer kept no output")
            }
            return Array(data) + (rows.isEmpty && columns.isEmpty ? [] : [10])
        } catch let error as RecSyncError {
            throw error
        } catch {
            throw .internalError("cannot write CSV: \(error)")
        }
    }
}
