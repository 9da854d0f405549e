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

/// What `Workspace.exportRecords` writes.
package struct ExportOptions: Sendable, Hashable {
    package var format: RecordFileFormat
    /// The key (or first CSV column) that names each record; nil leaves names out.
    package var nameKey: String?
    /// Adds `SystemColumns` to each record (`recordName` names it; `nameKey` is not used).
    package var system: Bool

    package init(format: RecordFileFormat, nameKey: String? = "recordName", system: Bool = false) {
        self.format = format
        self.nameKey = nameKey
        self.system = system
    }
}

/// A field's value in a CSV cell, as `export` writes it and `import` reads it: the value's
/// plain JSON text, except that a string is written as it is when that cannot be read as
/// JSON (most strings: `Dune`, `007`, `a, b`), and as a JSON string otherwise (`"42"`,
/// `"true"`, `""`). Reading a cell undoes it: a cell that is JSON text is that value, any
/// other cell the string it holds; so a value read back is the value written.
package enum CSVCell {
    package static func text(_ value: JSONValue) -> String {
        if case .string(let s) = value, !s.isEmpty, !isJSON(s) { return s }
        return String(decoding: JSON.serialize(value, pretty: false), as: UTF8.self)
    }

    package static func value(_ cell: String) -> JSONValue {
        do { return try JSON.parse(cell) } catch { return .string(cell) }
    }

    static func isJSON(_ s: String) -> Bool {
        do {
            _ = try JSON.parse(s)
            return true
        } catch {
            return false
        }
    }
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

    /// Exports a zone's records (see `exportRecords(of:options:)`) into the file at `path`,
    /// replaced whole and atomically. Only a regular file is replaced: a link, a directory, a
    /// FIFO or a device there is refused (replacing `/dev/null` or a link's name with a file
    /// is never what was meant; a shell's `>` writes through them).
    package func exportRecords(of zone: ZoneID, options: ExportOptions, to path: String) throws(RecSyncError) {
        // The workspace's state and its record directories are recsync's to write, not an
        // export's: a file there would be taken for a record or break the state.
        for dir in [stateDir, "\(root)/private", "\(root)/shared"] where path == dir || path.hasPrefix(dir + "/") {
            throw .invalidArguments(
                "\(relative(path)): is in \(relative(dir))/, which recsync keeps; write the export elsewhere (the workspace's top directory will do)")
        }
        if let existing = try FileIO.info(path), !existing.isRegular {
            let what = existing.isSymlink ? "a symbolic link" : existing.isDirectory ? "a directory" : "not a regular file (a FIFO, socket or device)"
            throw .invalidArguments(
                """
                \(path): is \(what); give the path of a regular file to replace, or write to standard output\
                 and redirect it
                """
            )
        }
        try FileIO.writeAtomically(path, try exportRecords(of: zone, options: options))
    }

    /// A zone's records as JSON lines or CSV (`RecordFileFormat`), sorted by record name; what
    /// `importRecords` reads back into the same records, names and fields included.
    ///
    /// Each record is named in `options.nameKey` (a key of its JSON line, or the first CSV
    /// column), unless it is nil. With `options.system`, each record also carries
    /// `SystemColumns` (times as integer milliseconds, absent ones null or an empty cell), and
    /// `recordName` names it. In CSV a field's cell is its value's plain JSON text, except
    /// that a string is written as it is unless it reads as JSON (`42`, `true`, `"a"`, `[1]`)
    /// or is empty: such a string is written as a JSON string (`"42"`), so that `import` tells
    /// it from the number.
    ///
    /// A record with a field named like the name key or a system column is an error naming
    /// it: the column would hide the field, and `import` would not read it back.
    package func exportRecords(of zone: ZoneID, options: ExportOptions) throws(RecSyncError) -> [UInt8] {
        let records = try records(in: zone)
        let nameKey = options.system ? "recordName" : options.nameKey
        let added = options.system ? SystemColumns.all : nameKey.map { [$0] } ?? []
        if !added.isEmpty {
            let columns = Set(added)
            for r in records {
                if let clash = r.fields.keys.filter(columns.contains).sorted().first {
                    let file = relative(recordPath(r.recordID))
                    if options.system {
                        throw .invalidArguments(
                            """
                            \(file): its field '\(clash)' has the name of a system column\
                             (\(SystemColumns.all.joined(separator: ", "))); export without system columns, or rename the field
                            """
                        )
                    }
                    throw .invalidArguments(
                        "\(file): its field '\(clash)' has the name of the key that names each record, which would hide it"
                    ).suggesting(.nameRecordsByAnotherKey)
                }
            }
        }
        let rows: [[String: JSONValue]] = records.map { r in
            var row = r.fields.mapValues(WorkspaceEncoding.json(from:))
            if options.system {
                row["recordName"] = .string(r.recordID.recordName)
                row["zone"] = .string(zone.zoneName)
                row["owner"] = .string(zone.ownerName)
                row["recordType"] = r.system.map { .string($0.recordType) } ?? .null
                row["changeTag"] = r.system?.changeTag.map(JSONValue.string) ?? .null
                row["created"] = r.system?.created.map { .int($0.timestamp) } ?? .null
                row["modified"] = r.system?.modified.map { .int($0.timestamp) } ?? .null
            } else if let nameKey {
                row[nameKey] = .string(r.recordID.recordName)
            }
            return row
        }
        switch options.format {
        case .jsonl:
            var out: [UInt8] = []
            for row in rows {
                out += JSON.serialize(.object(row), pretty: false)
                out.append(10)
            }
            return out
        case .csv:
            let fieldNames = Set(records.flatMap(\.fields.keys)).sorted()
            return try Self.csv(rows, columns: added + fieldNames, plain: Set(added))
        }
    }

    /// Rows as CSV (RFC 4180, lines ending in LF) with a header row. The cells of the `plain` columns (names and
    /// system columns) hold their strings as they are; the others are written as
    /// `CSVCell.text` has it, so that `CSVCell.value` reads them back.
    ///
    /// Written here rather than by CSV.swift's writer, which the import's reader is: that
    /// writer decides whether to quote a cell by `Character`, so a quote or comma that joins
    /// the next scalar in one grapheme (`"` before an emoji modifier, `,` before a combining
    /// accent) goes unquoted and the file no longer reads back. This quotes by UTF-8 byte.
    static func csv(_ rows: [[String: JSONValue]], columns: [String], plain: Set<String>) throws(RecSyncError) -> [UInt8] {
        func text(_ value: JSONValue?, plain: Bool) -> String {
            switch value {
            case nil, .null?: ""
            case .string(let s)? where plain: s
            case let other?: CSVCell.text(other)
            }
        }
        let quote = UInt8(ascii: "\""), comma = UInt8(ascii: ","), newline = UInt8(ascii: "\n"), cr = UInt8(ascii: "\r")
        var out: [UInt8] = []
        func write(_ cells: [String]) {
            for (i, cell) in cells.enumerated() {
                if i > 0 { out.append(comma) }
                let bytes = Array(cell.utf8)
                guard bytes.contains(where: { $0 == quote || $0 == comma || $0 == newline || $0 == cr }) else {
                    out += bytes
                    continue
                }
                out.append(quote)
                for b in bytes {
                    out.append(b)
                    if b == quote { out.append(quote) }
                }
                out.append(quote)
            }
            out.append(newline)
        }
        guard !columns.isEmpty else { return [] }
        let plainColumns = columns.map(plain.contains)
        write(columns)
        for row in rows { write(zip(columns, plainColumns).map { text(row[$0], plain: $1) }) }
        return out
    }
}
