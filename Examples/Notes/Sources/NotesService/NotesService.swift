import Foundation
import GRDB
import RecSyncEngine
import RecSyncModel
import RecSyncStore
import Synchronization

/// recsync's record (GRDB has a `Record` class of its own).
typealias Record = RecSyncModel.Record

/// A note as the app keeps it.
public struct Note: Sendable, Hashable {
    public var id: String
    public var title: String
    public var body: String

    public init(id: String, title: String, body: String) {
        self.id = id
        self.title = title
        self.body = body
    }
}

/// A notes service that keeps its notes in SQLite and syncs them through a recsync store.
///
/// A note may carry an attachment: a file, uploaded as an asset when the note is sent (as
/// CKSyncEngine apps put a `CKAsset` in the record they send) and downloaded when asked for.
/// The zone may seal some fields (over an `EncryptingStore`, see `openEncryptedStore`): the
/// store then holds them as ciphertext only.
///
/// Everything recsync needs lives in the app's own database, written in the same transaction
/// as the data it belongs to: each note's change tag (the version of the store it was last
/// fetched or saved as), and the engine's state. That is what makes a kill at any point
/// harmless: the state saved never covers a change the notes table does not have.
public final class NotesService: RecordSyncEngineDelegate, Sendable {
    public static let recordType = "Note"
    public let zoneID: ZoneID
    /// The fields the notes zone seals; nil: none (a plain zone).
    public let sealedFields: [String]?
    let database: DatabaseQueue
    /// Attachments: those downloaded or sent, each named by its SHA-256, and copies of files
    /// attached here that are not sent yet.
    let attachmentsDirectory: String
    /// Per note, the attachment file (its name) its last `recordsToSave` uploaded, and the reference.
    let uploaded = Mutex<[RecordID: (file: String, asset: AssetReference)]>([:])
    let engineBox = Mutex<RecordSyncEngine?>(nil)

    /// Opens (or creates) the notes database at `path`, syncing with `store` as its user.
    /// With `automaticallySync` (the default) the engine fetches and sends by itself; without
    /// it, only `sync()` does. With `sealedFields`, the notes zone is created encrypted,
    /// sealing those fields: `store` must then be an `EncryptingStore` (`openEncryptedStore`).
    public init(databasePath path: String, store: any RemoteStore, automaticallySync: Bool = true, sealedFields: [String]? = nil) async throws {
        database = try DatabaseQueue(path: path)
        zoneID = try ZoneID(zoneName: "notes", ownerName: store.userRecordName)
        self.sealedFields = sealedFields
        attachmentsDirectory = path + ".attachments"
        try FileManager.default.createDirectory(atPath: attachmentsDirectory, withIntermediateDirectories: true)
        // Copies an `attach` killed part-way was making.
        for name in try FileManager.default.contentsOfDirectory(atPath: attachmentsDirectory) where name.hasPrefix(".") {
            try FileManager.default.removeItem(atPath: "\(attachmentsDirectory)/\(name)")
        }
        try Self.migrator.migrate(database)
        let saved = try await database.read { db in try Data.fetchOne(db, sql: "SELECT data FROM syncState WHERE id = 1") }
        let state = try saved.map { bytes throws(RecSyncError) in try RecordSyncEngine.State(serialized: bytes) } ?? RecordSyncEngine.State()
        var options = RecordSyncEngine.Options()
        options.automaticallySync = automaticallySync
        let engine = try RecordSyncEngine(store: store, state: state, delegate: self, options: options)
        engineBox.withLock { $0 = engine }
        // The engine signs in (a new database) before its first fetch, send or change: the
        // zone is made sure of then (`.accountChange`, below).
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE note (
                        id TEXT PRIMARY KEY NOT NULL,
                        title TEXT NOT NULL,
                        body TEXT NOT NULL,
                        -- The store's version this note was last fetched or saved as, and its
                        -- fields then: the common ancestor when an edit here meets one from elsewhere.
                        changeTag TEXT,
                        baseTitle TEXT,
                        baseBody TEXT
                    );
                    CREATE TABLE syncState (id INTEGER PRIMARY KEY CHECK (id = 1), data BLOB NOT NULL);
                    -- Notes a whole-zone delivery has not brought yet (see .fetchingWholeZone); kept
                    -- with the notes, so a delivery stopped part-way and resumed ends right.
                    CREATE TABLE unseen (id TEXT PRIMARY KEY NOT NULL);
                    -- Notes deleted here whose deletion the store has not confirmed: a fetch must
                    -- not bring them back meanwhile.
                    CREATE TABLE deletedNote (id TEXT PRIMARY KEY NOT NULL);
                    """)
        }
        migrator.registerMigration("v2") { db in
            // A note's attachment as the store last had it (an asset reference, `AssetText`);
            // a file attached here that is not sent yet (the name of its copy in the
            // attachments directory, uploaded with the note); why that file could not go.
            try db.execute(sql: "ALTER TABLE note ADD COLUMN attachment TEXT")
            try db.execute(sql: "ALTER TABLE note ADD COLUMN attachmentFile TEXT")
            try db.execute(sql: "ALTER TABLE note ADD COLUMN attachmentProblem TEXT")
        }
        return migrator
    }

    /// The notes zone as the service creates it: sealing `sealedFields`, if any.
    var zoneToSave: RecordZone {
        var zone = RecordZone(zoneID: zoneID, defaultRecordType: Self.recordType)
        if let sealedFields { zone.encryption = ZoneEncryption(fields: sealedFields) }
        return zone
    }

    var engine: RecordSyncEngine {
        get throws {
            guard let engine = engineBox.withLock({ $0 }) else { throw RecSyncError.internalError("the notes service has no sync engine") }
            return engine
        }
    }

    // MARK: The app's own operations

    /// Every note, by title.
    public func notes() async throws -> [Note] {
        try await database.read { db in
            try Row.fetchAll(db, sql: "SELECT id, title, body FROM note ORDER BY title, id").map {
                Note(id: $0["id"], title: $0["title"], body: $0["body"])
            }
        }
    }

    /// Adds a note; it is sent on the next sync. Returns its ID.
    @discardableResult
    public func add(title: String, body: String, id: String = UUID().uuidString.lowercased()) async throws -> String {
        try await database.write { db in
            try db.execute(sql: "INSERT INTO note (id, title, body) VALUES (?, ?, ?)", arguments: [id, title, body])
        }
        try await engine.add(pendingRecordZoneChanges: [.saveRecord(recordID(id))])
        return id
    }

    /// Changes a note; it is sent on the next sync.
    public func edit(_ id: String, title: String? = nil, body: String? = nil) async throws {
        try await database.write { db in
            if let title { try db.execute(sql: "UPDATE note SET title = ? WHERE id = ?", arguments: [title, id]) }
            if let body { try db.execute(sql: "UPDATE note SET body = ? WHERE id = ?", arguments: [body, id]) }
        }
        try await engine.add(pendingRecordZoneChanges: [.saveRecord(recordID(id))])
    }

    /// Deletes a note here and, on the next sync, on the store.
    public func delete(_ id: String) async throws {
        let unsent = try await database.write { db -> String? in
            let file = try String.fetchOne(db, sql: "SELECT attachmentFile FROM note WHERE id = ?", arguments: [id])
            try db.execute(sql: "DELETE FROM note WHERE id = ?", arguments: [id])
            try db.execute(sql: "INSERT OR IGNORE INTO deletedNote (id) VALUES (?)", arguments: [id])
            return file
        }
        // A file attached to it and never sent goes with it.
        if let unsent, unsent.hasPrefix("local-") { try? FileManager.default.removeItem(atPath: "\(attachmentsDirectory)/\(unsent)") }
        try await engine.add(pendingRecordZoneChanges: [.deleteRecord(recordID(id))])
    }

    /// Attaches a copy of the file at `path` to a note, replacing any attachment; it is
    /// uploaded with the note on the next sync. A file the store would refuse (over its size
    /// limit, or in a sealed field) is refused here.
    public func attach(_ id: String, fileAt path: String) async throws {
        let engine = try engine
        if sealedFields?.contains("attachment") == true {
            throw RecSyncError.invalidArguments(
                "the notes zone seals attachments, and recsync does not encrypt files: leave 'attachment' out of sealedFields")
        }
        let size = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value ?? 0
        guard size <= engine.store.maxAssetBytes else {
            throw RecSyncError.limitExceeded("\(path) is \(size) bytes; the store takes files of up to \(engine.store.maxAssetBytes) bytes")
        }
        // The copy is whole and durable before the database names it.
        let name = "local-\(UUID().uuidString)"
        let partial = "\(attachmentsDirectory)/.\(name)"
        // The file a link points to, not the link (a copied link would not upload).
        try FileManager.default.copyItem(atPath: URL(fileURLWithPath: path).resolvingSymlinksInPath().path, toPath: partial)
        let copy = try FileHandle(forUpdating: URL(fileURLWithPath: partial))
        try copy.synchronize()
        try copy.close()
        try Self.move(partial, to: "\(attachmentsDirectory)/\(name)")
        let replaced: String?
        do {
            replaced = try await database.write { db -> String? in
                let before = try String.fetchOne(db, sql: "SELECT attachmentFile FROM note WHERE id = ?", arguments: [id])
                try db.execute(sql: "UPDATE note SET attachmentFile = ?, attachmentProblem = NULL WHERE id = ?", arguments: [name, id])
                guard db.changesCount == 1 else { throw RecSyncError.notFound("there is no note '\(id)' to attach a file to") }
                return before
            }
        } catch {
            try? FileManager.default.removeItem(atPath: "\(attachmentsDirectory)/\(name)")  // not attached: nothing refers to it
            throw error
        }
        // An earlier file attached here and never sent: replaced, so no longer needed.
        if let replaced, replaced.hasPrefix("local-") { try? FileManager.default.removeItem(atPath: "\(attachmentsDirectory)/\(replaced)") }
        try await engine.add(pendingRecordZoneChanges: [.saveRecord(recordID(id))])
    }

    /// The file of a note's attachment: the one attached here if it is not sent yet, else the
    /// store's, downloaded the first time it is asked for (streamed, and checked against its
    /// reference: size and SHA-256). Nil when the note has none.
    public func attachmentFile(of id: String) async throws -> String? {
        let (text, local) = try await database.read { db -> (String?, String?) in
            let row = try Row.fetchOne(db, sql: "SELECT attachment, attachmentFile FROM note WHERE id = ?", arguments: [id])
            return (row?["attachment"], row?["attachmentFile"])
        }
        if let local { return "\(attachmentsDirectory)/\(local)" }
        guard let text, let asset = try AssetText.decode(text) else { return nil }
        let path = "\(attachmentsDirectory)/\(asset.sha256)"
        if FileManager.default.fileExists(atPath: path) { return path }
        do {
            // Whole or not at all under its name (the engine writes it aside first).
            try await engine.downloadAsset(asset, of: recordID(id), to: path)
        } catch {
            // Another call put it there meanwhile.
            if FileManager.default.fileExists(atPath: path) { return path }
            throw error
        }
        return path
    }

    /// Why the file last attached to a note could not be sent (it stays here, and the note
    /// went without it); nil when nothing went wrong. Attaching a file again clears it.
    public func attachmentProblem(of id: String) async throws -> String? {
        try await database.read { db in try String.fetchOne(db, sql: "SELECT attachmentProblem FROM note WHERE id = ?", arguments: [id]) }
    }

    /// Renames `file` to `path`, replacing what is there.
    static func move(_ file: String, to path: String) throws {
        guard file != path else { return }
        guard rename(file, path) == 0 else {
            let e = errno
            unlink(file)
            throw RecSyncError.fileSystem(path: path, message: "cannot put the attachment in place: \(String(cString: strerror(e)))")
        }
    }

    /// Fetches what others changed, then sends what changed here.
    public func sync() async throws {
        let engine = try engine
        try await engine.fetchChanges()
        let sent: Result<Void, RecSyncError>
        do { sent = .success(try await engine.sendChanges()) } catch { sent = .failure(error) }
        if case .failure(let error) = sent, !Self.handledInEvents(error) { throw error }
    }

    /// Whether a send's error is only refusals that `.sentRecordZoneChanges` takes care of (a
    /// conflict merged and pending again, a gone zone dropped, a change still pending): not a
    /// failure of the sync. Any other refusal is.
    static func handledInEvents(_ error: RecSyncError) -> Bool {
        guard case .partialFailure(let refused) = error.reason else { return false }
        return (Array(refused.records.values) + Array(refused.zones.values)).allSatisfy { refusal in
            switch refusal.reason {
            case .serverRecordChanged, .zoneNotFound, .userDeletedZone, .batchRequestFailed, .storeBusy: true
            default: false
            }
        }
    }

    /// Changes not sent yet.
    public func pendingChanges() async throws -> Int {
        try await engine.state.pendingRecordZoneChanges.count
    }

    func recordID(_ id: String) throws -> RecordID {
        try RecordID(recordName: id, zoneID: zoneID)
    }

    // MARK: RecordSyncEngineDelegate

    public func recordsToSave(_ recordIDs: [RecordID], syncEngine: RecordSyncEngine) async throws -> [RecSyncModel.Record] {
        let zone = zoneID
        let rows = try await database.read { db in
            try recordIDs.filter { $0.zoneID == zone }.compactMap { id -> (Record, String?)? in
                guard
                    let row = try Row.fetchOne(
                        db, sql: "SELECT title, body, attachment, attachmentFile, attachmentProblem, changeTag FROM note WHERE id = ?",
                        arguments: [id.recordName])
                else { return nil }
                let record = try Record(
                    recordID: id, recordType: Self.recordType,
                    fields: Self.fields(title: row["title"], body: row["body"], attachment: row["attachment"]), changeTag: row["changeTag"])
                // A file that could not go before waits for the user to attach one again.
                return (record, row["attachmentProblem"] == nil ? row["attachmentFile"] : nil)
            }
        }
        var records: [Record] = []
        for (var record, attachmentFile) in rows {
            let id = record.recordID
            // A file attached here goes up now, as the note is sent (its zone exists by then).
            if let file = attachmentFile {
                let upload: Result<AssetReference, RecSyncError>
                do {
                    upload = .success(try await syncEngine.uploadAsset(fileAt: "\(attachmentsDirectory)/\(file)", for: id, field: "attachment"))
                } catch { upload = .failure(error) }
                switch upload {
                case .success(let asset):
                    record.fields["attachment"] = .asset(asset)
                    uploaded.withLock { $0[id] = (file, asset) }
                case .failure(let error) where RecordSyncEngine.isTransient(error):
                    throw error
                case .failure(let error):
                    // Refused for good (the file went, the store's limit is lower than when
                    // it was attached): the note goes without it, and says why; one bad file
                    // does not hold up every sync after it.
                    try await database.write { db in
                        try db.execute(
                            sql: "UPDATE note SET attachmentProblem = ? WHERE id = ? AND attachmentFile = ?",
                            arguments: [error.message, id.recordName, file])
                    }
                }
            }
            records.append(record)
        }
        return records
    }

    public func handleEvent(_ event: RecordSyncEngine.Event, syncEngine: RecordSyncEngine) async throws {
        let zone = zoneID
        switch event {
        case .stateUpdate(let state):
            let bytes = try state.serialized()
            try await database.write { db in
                try db.execute(sql: "INSERT OR REPLACE INTO syncState (id, data) VALUES (1, ?)", arguments: [bytes])
            }
        case .accountChange(let change):
            // A new database's first act: make sure its zone exists on the store. Moved to
            // another store by the same user, the notes go up to it as new records; opened as
            // another user, the previous user's notes are not theirs to see.
            if case .switchAccounts(let previous, let current) = change {
                if previous.userRecordName == current.userRecordName {
                    try await uploadAgain(syncEngine)
                    return
                }
                try await database.write { db in try Self.dropAll(db) }
            }
            try await syncEngine.add(pendingDatabaseChanges: [.saveZone(zoneToSave)])
        case .fetchedDatabaseChanges(let changes):
            for deletion in changes.deletions where deletion.zoneID == zone {
                if deletion.reason == .encryptedDataReset {
                    try await uploadAgain(syncEngine)
                } else {
                    try await database.write { db in try Self.dropAll(db) }
                }
            }
        case .fetchingWholeZone(let z) where z == zone:
            // Everything follows: mark what came from the store; what is still marked at the
            // end is gone from it. Notes never sent (no change tag) are not the store's.
            try await database.write { db in
                try db.execute(sql: "DELETE FROM unseen")
                try db.execute(sql: "INSERT INTO unseen SELECT id FROM note WHERE changeTag IS NOT NULL")
            }
        case .fetchedRecordZoneChanges(let changes) where changes.zoneID == zone:
            let edited = try await database.write { db in
                var edited: [RecordID] = []
                for record in changes.modifications {
                    if try Self.applyFetched(record, db: db) { edited.append(record.recordID) }
                    try db.execute(sql: "DELETE FROM unseen WHERE id = ?", arguments: [record.recordID.recordName])
                }
                for failure in changes.undeliverable {
                    try db.execute(sql: "DELETE FROM unseen WHERE id = ?", arguments: [failure.recordID.recordName])
                }
                for deletion in changes.deletions {
                    try db.execute(sql: "DELETE FROM note WHERE id = ?", arguments: [deletion.recordID.recordName])
                }
                return edited
            }
            // Notes edited here that changed elsewhere too were merged onto the new version.
            if !edited.isEmpty { try await syncEngine.add(pendingRecordZoneChanges: edited.map { .saveRecord($0) }) }
        case .didFetchRecordZoneChanges(let z, nil) where z == zone:
            try await database.write { db in
                try db.execute(sql: "DELETE FROM note WHERE id IN (SELECT id FROM unseen)")
                try db.execute(sql: "DELETE FROM unseen")
            }
        case .sentRecordZoneChanges(let sent):
            let servers: [Record] = sent.failedRecordSaves.compactMap { failure in
                guard case .serverRecordChanged(let conflict) = failure.error.reason else { return nil }
                return conflict.server
            }
            let gone = sent.zonesGone.contains { $0.zoneID == zone && $0.reason != .encryptedDataReset }
            let reset = sent.zonesGone.contains { $0.zoneID == zone && $0.reason == .encryptedDataReset }
            // Attached files the store now has: no longer to send (unless another was attached
            // meanwhile), and kept as the downloaded copy.
            let landed = uploaded.withLock { uploads in
                sent.savedRecords.compactMap { record -> (id: String, file: String, asset: AssetReference)? in
                    guard let upload = uploads.removeValue(forKey: record.recordID), record.fields["attachment"] == .asset(upload.asset) else {
                        return nil
                    }
                    return (record.recordID.recordName, upload.file, upload.asset)
                }
            }
            let merged = try await database.write { db in
                for record in sent.savedRecords {
                    try db.execute(
                        sql: "UPDATE note SET changeTag = ?, baseTitle = ?, baseBody = ?, attachment = ? WHERE id = ?",
                        arguments: [
                            record.changeTag, Self.text(record, "title"), Self.text(record, "body"), Self.attachment(record),
                            record.recordID.recordName,
                        ])
                }
                for upload in landed {
                    try db.execute(
                        sql: "UPDATE note SET attachmentFile = NULL WHERE id = ? AND attachmentFile = ?", arguments: [upload.id, upload.file])
                }
                // A refused save: the server's version is taken in as a fetched one, merged with
                // the note as it is now (edited or deleted again while the save was out), not
                // with the version that was sent.
                var merged: [RecordID] = []
                for server in servers where try Self.applyFetched(server, db: db) { merged.append(server.recordID) }
                for id in sent.deletedRecordIDs + sent.failedRecordDeletes.map(\.recordID) {
                    try db.execute(sql: "DELETE FROM deletedNote WHERE id = ?", arguments: [id.recordName])
                }
                if gone { try Self.dropAll(db) }
                return merged
            }
            for upload in landed {
                try Self.move("\(attachmentsDirectory)/\(upload.file)", to: "\(attachmentsDirectory)/\(upload.asset.sha256)")
            }
            // The merged notes carry the server's change tag now: send them again.
            if !merged.isEmpty {
                try await syncEngine.add(pendingRecordZoneChanges: merged.map { .saveRecord($0) })
            }
            if reset { try await uploadAgain(syncEngine) }
        default:
            break
        }
    }

    /// The zone is gone: its notes, and the marks kept for it. A deletion made here went
    /// with it (the engine drops its pending changes); kept, it would hide the note for ever
    /// if the zone came back with it.
    static func dropAll(_ db: Database) throws {
        try db.execute(sql: "DELETE FROM note")
        try db.execute(sql: "DELETE FROM deletedNote")
        try db.execute(sql: "DELETE FROM unseen")
    }

    /// After an encrypted-data reset the store has lost the zone's records and this database
    /// holds them: every note goes up again as a new record, into the zone created again.
    func uploadAgain(_ engine: RecordSyncEngine) async throws {
        let directory = attachmentsDirectory
        let ids = try await database.write { db in
            try db.execute(sql: "UPDATE note SET changeTag = NULL, baseTitle = NULL, baseBody = NULL")
            // Attachments go up again too, from the copies downloaded or sent from here; one
            // this device never had is gone with the store's copy, and the note says so.
            for row in try Row.fetchAll(db, sql: "SELECT id, attachment FROM note WHERE attachment IS NOT NULL AND attachmentFile IS NULL") {
                guard let text: String = row["attachment"], let asset = try AssetText.decode(text) else { continue }
                if FileManager.default.fileExists(atPath: "\(directory)/\(asset.sha256)") {
                    try db.execute(
                        sql: "UPDATE note SET attachment = NULL, attachmentFile = ? WHERE id = ?", arguments: [asset.sha256, row["id"] as String])
                } else {
                    try db.execute(
                        sql: "UPDATE note SET attachment = NULL, attachmentProblem = ? WHERE id = ?",
                        arguments: [
                            "the store lost the attachment when its encrypted data was reset, and this device had no copy of it", row["id"] as String,
                        ])
                }
            }
            try db.execute(sql: "DELETE FROM unseen")
            return try String.fetchAll(db, sql: "SELECT id FROM note")
        }
        try await engine.add(pendingDatabaseChanges: [.saveZone(zoneToSave)])
        try await engine.add(pendingRecordZoneChanges: ids.map { .saveRecord(try recordID($0)) })
    }

    /// A field-by-field three-way merge: a field this side changed since the ancestor keeps
    /// this side's value, any other takes the server's. The server's change tag is kept.
    static func merge(server: Record, client: Record, ancestor: Record?) -> Record {
        var result = server
        for (key, value) in client.fields where ancestor?.fields[key] != value {
            result.fields[key] = value
        }
        return result
    }

    /// Takes in a fetched version. A note edited here since its last sync is merged onto it
    /// (its last synced fields are the ancestor); returns true then, as it must be sent again.
    static func applyFetched(_ server: Record, db: Database) throws -> Bool {
        let row = try Row.fetchOne(
            db, sql: "SELECT title, body, attachment, attachmentFile, changeTag, baseTitle, baseBody FROM note WHERE id = ?",
            arguments: [server.recordID.recordName])
        guard let row else {
            let deletedHere = try Bool.fetchOne(db, sql: "SELECT 1 FROM deletedNote WHERE id = ?", arguments: [server.recordID.recordName]) ?? false
            if !deletedHere { try store(server, base: server, db: db) }
            return false
        }
        // The version this note already follows (its own save, coming back): nothing new.
        if row["changeTag"] as String? == server.changeTag { return false }
        let local = try Record(
            recordID: server.recordID, recordType: recordType, fields: fields(title: row["title"], body: row["body"], attachment: row["attachment"]))
        let baseTitle: String? = row["baseTitle"], baseBody: String? = row["baseBody"], attachmentFile: String? = row["attachmentFile"]
        // (A file attached here and not sent yet stays: it goes with the merged note.)
        guard baseTitle != row["title"] || baseBody != row["body"] || attachmentFile != nil else {
            try store(server, base: server, db: db)
            return false
        }
        let ancestor = try baseTitle.map { t in
            try Record(
                recordID: server.recordID, recordType: recordType, fields: fields(title: t, body: baseBody ?? "", attachment: row["attachment"]))
        }
        try store(merge(server: server, client: local, ancestor: ancestor), base: server, db: db)
        return true
    }

    /// Writes a note with the change tag and fields of `base`, the store's version it now follows.
    static func store(_ record: Record, base: Record, db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO note (id, title, body, attachment, changeTag, baseTitle, baseBody) VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(id) DO UPDATE SET title = excluded.title, body = excluded.body, attachment = excluded.attachment,
                    changeTag = excluded.changeTag, baseTitle = excluded.baseTitle, baseBody = excluded.baseBody
                """,
            arguments: [
                record.recordID.recordName, text(record, "title"), text(record, "body"), attachment(base),
                base.changeTag, text(base, "title"), text(base, "body"),
            ])
    }

    /// A note's fields as a record holds them.
    static func fields(title: String, body: String, attachment: String?) throws -> [String: FieldValue] {
        var fields: [String: FieldValue] = ["title": .string(title), "body": .string(body)]
        if let attachment, let asset = try AssetText.decode(attachment) { fields["attachment"] = .asset(asset) }
        return fields
    }

    /// A record's attachment as the database keeps it; nil when it has none (or another type
    /// is in the field, written by another program).
    static func attachment(_ record: Record) -> String? {
        if case .asset(let asset)? = record.fields["attachment"] { AssetText.encode(asset) } else { nil }
    }

    /// A text field, empty when missing or of another type (written by another program).
    static func text(_ record: Record, _ key: String) -> String {
        if case .string(let value)? = record.fields[key] { value } else { "" }
    }
}

/// An asset reference in one database column: "oid size sha256".
enum AssetText {
    static func encode(_ asset: AssetReference) -> String { "\(asset.oid) \(asset.size) \(asset.sha256)" }

    static func decode(_ text: String) throws -> AssetReference? {
        let parts = text.split(separator: " ")
        guard parts.count == 3, let size = Int64(parts[1]) else { return nil }
        return try AssetReference(oid: String(parts[0]), size: size, sha256: String(parts[2]))
    }
}
