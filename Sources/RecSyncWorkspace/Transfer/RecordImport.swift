import CSV
import Foundation
import RecSyncModel
import RecSyncSystem

/// The formats `import` reads and `export` writes.
package enum RecordFileFormat: String, Sendable, CaseIterable {
    /// JSON lines: one object per line, fields as a record file holds them.
    case jsonl
    /// Comma-separated values with a header row naming the fields; every value a string.
    case csv

    /// The format a file's extension names (`.jsonl`, `.ndjson`, `.json`, `.csv`), if any.
    package static func forFile(_ path: String) -> RecordFileFormat? {
        switch (path as NSString).pathExtension.lowercased() {
        case "jsonl", "ndjson", "json": .jsonl
        case "csv": .csv
        default: nil
        }
    }
}

/// The keys `export --system` adds to each record, in this order; `import --system` reads
/// `recordName` and `recordType` back and leaves the rest out.
package enum SystemColumns {
    package static let all = ["recordName", "zone", "owner", "recordType", "changeTag", "created", "modified"]
}

/// How `Workspace.importRecords` reads its input.
package struct ImportOptions: Sendable, Hashable {
    package var format: RecordFileFormat
    /// The key (or CSV column) holding each record's name; it is not stored as a field, and a
    /// record without it is an error. Nil: `recordName` names a record that has it (as
    /// `export` writes it), and a record without it is named by the hash of its canonical
    /// fields (`generatedName`).
    package var idField: String?
    /// The type of the new records (else the zone's default type applies on push).
    package var recordType: String?
    /// The input is `export --system` output: `recordName` names each record (unless
    /// `idField` is given), `recordType` types it (unless `recordType` is given), and the other
    /// system keys are left out.
    package var systemColumns: Bool
    /// CSV: every cell is a string, as it is. Otherwise a cell is read as `CSVCell.value` has
    /// it (JSON text is that value: `42`, `true`, `"42"`, `[1, 2]`), which is how `export`
    /// writes it.
    package var plainStrings: Bool

    package init(
        format: RecordFileFormat, idField: String? = nil, recordType: String? = nil, systemColumns: Bool = false, plainStrings: Bool = false
    ) {
        self.format = format
        self.idField = idField
        self.recordType = recordType
        self.systemColumns = systemColumns
        self.plainStrings = plainStrings
    }
}

/// What `Workspace.importRecords` did.
package struct ImportReport: Sendable, Hashable {
    package var zone: ZoneID
    /// Records that had no file.
    package var created: [RecordID] = []
    /// Records whose file held other fields (or had been removed): local edits now.
    package var modified: [RecordID] = []
    /// Records whose file already held exactly these fields: not written.
    package var unchanged: [RecordID] = []
    /// Records whose file changed while the import wrote (someone else's edit): left as they are.
    package var skipped: [RecordID] = []

    package init(zone: ZoneID) { self.zone = zone }
}

/// One record read from an import file.
package struct ImportedRecord: Sendable, Hashable {
    /// The 1-based line the record starts on.
    package var line: Int
    package var recordName: String
    package var recordType: String?
    package var fields: [String: FieldValue]
}

extension Workspace {
    /// The name of a record imported without `--id`: the hash of its canonical fields (the
    /// bytes of its record file), so importing the same data again names it the same.
    package static func generatedName(for fields: [String: FieldValue]) -> String {
        ContentHash.of(WorkspaceEncoding.encodeFields(fields))
    }

    /// Reads every record of an import file, checking each as `put` would. The first bad line
    /// (not JSON, not an object, a bad key or value, no name, a name used twice, a record too
    /// large) is a `.malformed` error naming `source` and the line.
    package static func parseImport(_ bytes: [UInt8], options: ImportOptions, source: String, zone: ZoneID) throws(RecSyncError) -> [ImportedRecord] {
        if let type = options.recordType { try NameRules.validateRecordType(type) }
        if let id = options.idField, id.isEmpty { throw .invalidArguments("the field that names records needs a name") }
        let rows: [(line: Int, members: [String: JSONValue])]
        switch options.format {
        case .jsonl: rows = try jsonLines(bytes, source: source)
        case .csv: rows = try csvRows(bytes, source: source)
        }
        var records: [ImportedRecord] = []
        records.reserveCapacity(rows.count)
        var lines: [String: Int] = [:]
        for (line, members) in rows {
            func bad(_ detail: String) -> RecSyncError { .malformed(MalformedInput(path: source, line: line, detail: detail)) }
            var members = members
            var type = options.recordType
            let nameKey = options.idField ?? "recordName"
            if options.systemColumns {
                if type == nil, case .string(let t)? = members["recordType"] { type = t }
                for key in SystemColumns.all where key != nameKey { members[key] = nil }
            }
            var name: String?
            switch members.removeValue(forKey: nameKey) {
            case .string(let s)?: name = s
            case .int(let i)?: name = String(i)
            case nil, .null?:
                if options.idField != nil || options.systemColumns { throw bad("no '\(nameKey)' to name the record by (--id \(nameKey))") }
            case let other?: throw bad("'\(nameKey)' must be a string to name a record, found \(StoreEncoding.kindName(other))")
            }
            if options.format == .csv && !options.plainStrings {
                for (key, value) in members {
                    if case .string(let cell) = value { members[key] = CSVCell.value(cell) }
                }
            }
            var fields: [String: FieldValue] = [:]
            fields.reserveCapacity(members.count)
            do throws(RecSyncError) {
                for (key, value) in members {
                    try NameRules.validateFieldKey(key)
                    if let v = try WorkspaceEncoding.fieldValue(from: value, key: key) { fields[key] = v }
                }
                if let type { try NameRules.validateRecordType(type) }
            } catch {
                throw bad(Self.detail(of: error))
            }
            let recordName = name ?? generatedName(for: fields)
            let id: RecordID
            do { id = try RecordID(recordName: recordName, zoneID: zone) } catch { throw bad(Self.detail(of: error)) }
            do { try Record(recordID: id, recordType: type ?? "Record", fields: fields).validate() } catch { throw bad(Self.detail(of: error)) }
            if let first = lines[recordName] {
                throw bad(
                    name == nil
                        ? "holds the same fields as line \(first), so both would be the same record; give --id FIELD to name them"
                        : "record '\(recordName)' is on line \(first) already; each record may appear once")
            }
            lines[recordName] = line
            records.append(ImportedRecord(line: line, recordName: recordName, recordType: type, fields: fields))
        }
        return records
    }

    /// A library error's text without the path and line it may carry (the import adds its own).
    static func detail(of error: RecSyncError) -> String {
        if case .malformed(let m) = error.reason {
            return m.column.map { "column \($0): \(m.detail)" } ?? m.detail
        }
        return error.message
    }

    /// The objects of a JSON-lines file, each with its line; blank lines are skipped.
    static func jsonLines(_ bytes: [UInt8], source: String) throws(RecSyncError) -> [(line: Int, members: [String: JSONValue])] {
        var rows: [(line: Int, members: [String: JSONValue])] = []
        var line = 0
        var start = 0
        let count = bytes.count
        while start < count {
            line += 1
            var end = start
            while end < count && bytes[end] != 10 { end += 1 }
            var slice = bytes[start..<end]
            if slice.last == 13 { slice = slice.dropLast() }
            start = end + 1
            if slice.allSatisfy({ $0 == 32 || $0 == 9 }) { continue }
            let value: JSONValue
            do { value = try JSON.parse(Array(slice)) } catch {
                throw .malformed(MalformedInput(path: source, line: line, detail: "not valid JSON (\(detail(of: error)))"))
            }
            guard case .object(let members) = value else {
                throw .malformed(
                    MalformedInput(path: source, line: line, detail: "must hold a JSON object of fields, found \(StoreEncoding.kindName(value))"))
            }
            rows.append((line, members))
        }
        return rows
    }

    /// The rows of a CSV file as objects of strings keyed by the header row, each with the line
    /// it starts on. An empty cell is no field; a row with more or fewer cells than the header
    /// is an error; blank lines are skipped.
    static func csvRows(_ bytes: [UInt8], source: String) throws(RecSyncError) -> [(line: Int, members: [String: JSONValue])] {
        var body = bytes
        if body.starts(with: [0xEF, 0xBB, 0xBF]) { body.removeFirst(3) }  // a byte-order mark
        guard let text = String(validating: body, as: UTF8.self) else {
            throw .malformed(MalformedInput(path: source, detail: "is not UTF-8 text"))
        }
        try checkQuoting(text, source: source)
        let reader: CSVReader
        do { reader = try CSVReader(string: text, hasHeaderRow: false) } catch {
            throw .malformed(MalformedInput(path: source, line: 1, detail: "cannot be read as CSV (\(error))"))
        }
        guard let header = reader.next(), header != [""] else {
            throw .malformed(MalformedInput(path: source, line: 1, detail: "has no header row naming the fields"))
        }
        var seen = Set<String>()
        for key in header {
            if !seen.insert(key).inserted {
                throw .malformed(MalformedInput(path: source, line: 1, detail: "the header names column '\(key)' twice"))
            }
        }
        var line = 1 + header.reduce(0) { $0 + newlines($1) }
        var rows: [(line: Int, members: [String: JSONValue])] = []
        while let row = reader.next() {
            line += 1
            let start = line
            line += row.reduce(0) { $0 + newlines($1) }
            if row == [""] { continue }
            guard row.count == header.count else {
                throw .malformed(
                    MalformedInput(
                        path: source, line: start,
                        detail: "has \(row.count) cells where the header names \(header.count) columns (a stray comma, or a quote left open?)"))
            }
            var members: [String: JSONValue] = [:]
            members.reserveCapacity(row.count)
            for (key, cell) in zip(header, row) where !cell.isEmpty { members[key] = .string(cell) }
            rows.append((start, members))
        }
        if let error = reader.error {
            throw .malformed(MalformedInput(path: source, line: line, detail: "cannot be read as CSV (\(error))"))
        }
        return rows
    }

    /// Checks the quoting of CSV text as RFC 4180 has it, naming the line of the first fault.
    ///
    /// Hand-written beside CSV.swift, which does the parsing, because CSV.swift reads some
    /// faulty quoting without an error: a character after a cell's closing quote (`"a"x,`)
    /// makes the rest of the file part of that cell, and a quote left open does the same.
    /// This only walks the bytes once; it builds no cells.
    static func checkQuoting(_ text: String, source: String) throws(RecSyncError) {
        func fault(_ line: Int, _ detail: String) -> RecSyncError {
            .malformed(MalformedInput(path: source, line: line, detail: detail))
        }
        let quote = UInt8(ascii: "\""), comma = UInt8(ascii: ","), newline = UInt8(ascii: "\n"), cr = UInt8(ascii: "\r")
        var line = 1
        var quoted = false
        var openedOn = 1
        var atCellStart = true
        var bytes = text.utf8.makeIterator()
        var pending: UInt8? = bytes.next()
        while let c = pending {
            pending = bytes.next()
            if quoted {
                if c == quote {
                    if pending == quote {
                        pending = bytes.next()  // a doubled quote inside the cell
                        continue
                    }
                    quoted = false
                    if let next = pending, next != comma, next != newline, next != cr {
                        throw fault(
                            line,
                            """
                            a cell's closing quote is followed by '\(Character(Unicode.Scalar(next)))'; quote a cell whole,\
                             doubling the quotes inside it (\"a \"\"b\"\" c\")
                            """
                        )
                    }
                } else if c == newline {
                    line += 1
                }
                continue
            }
            switch c {
            case quote:
                guard atCellStart else {
                    throw fault(
                        line,
                        "a quote inside a cell that does not start with one; quote the cell whole, doubling the quotes inside it (\"a \"\"b\"\" c\")")
                }
                quoted = true
                openedOn = line
                atCellStart = false
            case comma: atCellStart = true
            case newline: line += 1; atCellStart = true
            case cr: break
            default: atCellStart = false
            }
        }
        if quoted {
            throw fault(openedOn, "a quote is left open (the cell starting with \" here runs to the end of the file)")
        }
    }

    static func newlines(_ cell: String) -> Int { cell.utf8.reduce(0) { $1 == 10 ? $0 + 1 : $0 } }

    /// Imports records into a zone of the workspace (one of the user's own, or a new one that
    /// push then creates): every record is read and checked first, then all are written in one
    /// write batch (one durability barrier, not one per record), as local edits for the next
    /// push. A bad line is an error and nothing is written. Records already there are
    /// overwritten; a record's type cannot change.
    @discardableResult
    package func importRecords(_ bytes: [UInt8], into zone: ZoneID, options: ImportOptions, source: String) throws(RecSyncError) -> ImportReport {
        let records = try Self.parseImport(bytes, options: options, source: source, zone: zone)
        return try withLock(purpose: "import") { () throws(RecSyncError) -> ImportReport in
            try write(records, into: zone, source: source)
        }
    }

    /// Writes checked records (see `importRecords`); checks what only the workspace can tell
    /// (a type that would change, a long name with no sidecar) before writing any.
    func write(_ records: [ImportedRecord], into zone: ZoneID, source: String) throws(RecSyncError) -> ImportReport {
        var report = ImportReport(zone: zone)
        var batch = try recordBatch(zone: zone)
        var kinds: [(RecordID, Bool)] = []  // written records: whether new
        for r in records {
            func bad(_ detail: String) -> RecSyncError { .malformed(MalformedInput(path: source, line: r.line, detail: detail)) }
            let id = try RecordID(recordName: r.recordName, zoneID: zone)
            let path = recordPath(id), side = sidecarPath(id)
            do { try checkAssetReferences(id, fields: r.fields) } catch { throw bad(error.message) }
            let bytes = WorkspaceEncoding.encodeFields(r.fields)
            let info = try FileIO.info(path)
            let system = try info == nil ? FileIO.info(side) == nil ? nil : systemFields(id) : systemFields(id)
            if let system, let type = r.recordType, system.recordType != type {
                throw bad("record '\(r.recordName)' is a '\(system.recordType)' record in \(relative(path)); a record's type cannot change")
            }
            if system == nil && r.recordType == nil && Self.recordName(forFile: Self.fileName(for: r.recordName)) == nil {
                throw bad("record name '\(r.recordName.prefix(40))…' is too long for a file name; give --type so its sidecar can hold the name")
            }
            if let info {
                if try readRecordFile(path) == bytes { report.unchanged.append(id); continue }
                batch.write(path, bytes, expect: .unchanged(info.stamp), group: path)
                kinds.append((id, false))
            } else {
                batch.write(path, bytes, expect: .absent, group: path)
                kinds.append((id, system?.changeTag == nil))
            }
            if system == nil, let type = r.recordType {
                batch.write(
                    side,
                    WorkspaceEncoding.encodeSystemFields(SystemFields(recordID: id, recordType: type, changeTag: nil, created: nil, modified: nil)),
                    late: true, group: path)
            }
        }
        try batch.commit()
        for (id, new) in kinds {
            if batch.skipped.contains(recordPath(id)) {
                report.skipped.append(id)
            } else if new {
                report.created.append(id)
            } else {
                report.modified.append(id)
            }
        }
        return report
    }
}
