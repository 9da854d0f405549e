import Foundation
import NotesService
import RecSyncModel
import RecSyncStore
import Testing

/// Two copies of the notes service (a laptop and a phone, each with its own SQLite file)
/// syncing through a real git store in a temporary directory, through the public API only.
@Suite struct NotesServiceTests {
    let directory: String
    let storePath: String

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("notes-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        storePath = directory + "/store.git"
        try NotesService.createStore(at: storePath, user: "alice")
    }

    func device(_ name: String) async throws -> NotesService {
        let db = "\(directory)/\(name).sqlite"
        return try await NotesService(
            databasePath: db, store: NotesService.openStore(storePath, user: "alice", databasePath: db, device: name), automaticallySync: false)
    }

    @Test func twoDevicesSyncAddsEditsConflictsAndDeletes() async throws {
        let laptop = try await device("laptop")
        let phone = try await device("phone")
        let groceries = try await laptop.add(title: "Groceries", body: "milk")
        try await laptop.add(title: "Trip", body: "Porto")
        try await laptop.sync()
        #expect(try await laptop.pendingChanges() == 0)

        try await phone.sync()
        #expect(try await phone.notes().map(\.title) == ["Groceries", "Trip"])

        // Both edit the same note, different fields: the second to sync merges, nothing is lost.
        try await laptop.edit(groceries, title: "Shopping")
        try await phone.edit(groceries, body: "milk, eggs")
        try await laptop.sync()
        try await phone.sync()
        try await laptop.sync()
        let merged = Note(id: groceries, title: "Shopping", body: "milk, eggs")
        #expect(try await laptop.notes().first { $0.id == groceries } == merged)
        #expect(try await phone.notes().first { $0.id == groceries } == merged)

        // A delete on one reaches the other.
        try await phone.delete(groceries)
        try await phone.sync()
        try await laptop.sync()
        #expect(try await laptop.notes().map(\.title) == ["Trip"])
        #expect(try await laptop.notes() == phone.notes())
    }

    @Test func aDatabaseMovedToAnotherStoreUploadsItsNotesAndAnotherUserSeesNone() async throws {
        let laptop = try await device("laptop")
        try await laptop.add(title: "Synced", body: "")
        try await laptop.sync()
        try await laptop.add(title: "Not yet sent", body: "")

        // The same database, opened against a new store by the same user: everything goes up.
        let newStore = directory + "/new.git"
        try NotesService.createStore(at: newStore, user: "alice")
        let db = "\(directory)/laptop.sqlite"
        let moved = try await NotesService(
            databasePath: db, store: NotesService.openStore(newStore, user: "alice", databasePath: db, device: "laptop"), automaticallySync: false)
        try await moved.sync()
        #expect(try await moved.pendingChanges() == 0)
        let fresh = "\(directory)/fresh.sqlite"
        let reader = try await NotesService(
            databasePath: fresh, store: NotesService.openStore(newStore, user: "alice", databasePath: fresh, device: "fresh"),
            automaticallySync: false)
        try await reader.sync()
        #expect(try await reader.notes().map(\.title).sorted() == ["Not yet sent", "Synced"])

        // Opened as another user, the database no longer shows alice's notes.
        let asBob = try await NotesService(
            databasePath: db, store: NotesService.openStore(newStore, user: "bob", databasePath: db, device: "laptop"), automaticallySync: false)
        try await asBob.sync()
        #expect(try await asBob.notes().isEmpty)
    }

    @Test func withAutomaticSyncANoteReachesTheOtherDeviceWithoutASyncCall() async throws {
        func open(_ name: String) async throws -> NotesService {
            let db = "\(directory)/\(name).sqlite"
            return try await NotesService(databasePath: db, store: NotesService.openStore(storePath, user: "alice", databasePath: db, device: name))
        }
        let laptop = try await open("laptop")
        let phone = try await open("phone")
        try await laptop.add(title: "Groceries", body: "milk")
        // Sent shortly after it was added; the phone fetches when the store moves.
        let end = ContinuousClock.now + .seconds(60)
        while try await phone.notes().isEmpty, ContinuousClock.now < end {
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(try await phone.notes().map(\.title) == ["Groceries"])
        #expect(try await laptop.pendingChanges() == 0)
    }

    @Test func aRestartedServiceKeepsItsStateAndItsUnsentNotes() async throws {
        do {
            let laptop = try await device("laptop")
            try await laptop.add(title: "Sent", body: "")
            try await laptop.sync()
            try await laptop.add(title: "Not yet sent", body: "")
        }
        // The process ends; a new one opens the same database.
        let laptop = try await device("laptop")
        #expect(try await laptop.pendingChanges() == 1, "the pending save survived in the database")
        try await laptop.sync()
        let phone = try await device("phone")
        try await phone.sync()
        #expect(try await phone.notes().map(\.title) == ["Not yet sent", "Sent"])
    }

    /// A note with an attachment, in a zone that seals its body: the phone gets the body and
    /// the file byte for byte; the store holds the body as ciphertext only, the attachment
    /// as an asset. An edit of the attachment on one device and of the title on the other
    /// merge.
    @Test func anAttachmentAndASealedBodyReachTheOtherDevice() async throws {
        let keys = directory + "/keys"
        func sealed(_ name: String) async throws -> NotesService {
            let db = "\(directory)/\(name).sqlite"
            let store = try await NotesService.openEncryptedStore(storePath, user: "alice", databasePath: db, device: name, keyDirectory: keys)
            return try await NotesService(databasePath: db, store: store, automaticallySync: false, sealedFields: ["body"])
        }
        let laptop = try await sealed("laptop")
        let phone = try await sealed("phone")
        let secret = "the body nobody else may read"
        let scan = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 / 7) }
        let scanPath = directory + "/scan.bin"
        #expect(FileManager.default.createFile(atPath: scanPath, contents: Data(scan)))
        let id = try await laptop.add(title: "Scan", body: secret)
        try await laptop.attach(id, fileAt: scanPath)
        try await laptop.sync()
        #expect(try await laptop.pendingChanges() == 0)

        try await phone.sync()
        #expect(try await phone.notes() == [Note(id: id, title: "Scan", body: secret)])
        let file = try #require(try await phone.attachmentFile(of: id))
        #expect(FileManager.default.contents(atPath: file) == Data(scan))
        #expect(try await phone.attachmentFile(of: id) == file, "downloaded once")

        // Underneath, as any reader of the store sees it.
        let raw = try NotesService.openStore(storePath, user: "alice", databasePath: directory + "/raw.sqlite", device: "raw")
        let record = try await raw.fetchRecords([RecordID(recordName: id, zoneID: laptop.zoneID)])[0].result.get()
        guard case .encrypted? = record.fields["body"] else {
            Issue.record("the body is not sealed: \(String(describing: record.fields["body"]))"); return
        }
        #expect(record.fields["title"] == .string("Scan"))
        guard case .asset(let asset)? = record.fields["attachment"] else { Issue.record("no attachment: \(record.fields)"); return }
        #expect(asset.size == Int64(scan.count))

        // A new attachment on the phone, a new title on the laptop: both stay.
        let photo = Array("a photo".utf8)
        let photoPath = directory + "/photo.txt"
        #expect(FileManager.default.createFile(atPath: photoPath, contents: Data(photo)))
        try await phone.attach(id, fileAt: photoPath)
        try await laptop.edit(id, title: "Scan, renamed")
        try await phone.sync()
        try await laptop.sync()
        try await phone.sync()
        for device in [laptop, phone] {
            #expect(try await device.notes() == [Note(id: id, title: "Scan, renamed", body: secret)])
            let file = try #require(try await device.attachmentFile(of: id))
            #expect(FileManager.default.contents(atPath: file) == Data(photo))
        }
    }

    /// A file attached again replaces the first (whose copy goes); a file that can no longer
    /// be sent (its copy lost) does not hold up the note or the sync, and says why; attaching
    /// one again sends it.
    @Test func anAttachmentThatCannotGoDoesNotHoldUpTheNote() async throws {
        let laptop = try await device("laptop")
        let id = try await laptop.add(title: "Scan", body: "")
        let first = directory + "/first.txt", second = directory + "/second.txt"
        #expect(FileManager.default.createFile(atPath: first, contents: Data("first".utf8)))
        #expect(FileManager.default.createFile(atPath: second, contents: Data("second".utf8)))
        try await laptop.attach(id, fileAt: first)
        try await laptop.attach(id, fileAt: second)
        let local = try #require(try await laptop.attachmentFile(of: id))
        #expect(FileManager.default.contents(atPath: local) == Data("second".utf8))
        let attachments = directory + "/laptop.sqlite.attachments"
        #expect(try FileManager.default.contentsOfDirectory(atPath: attachments) == [(local as NSString).lastPathComponent], "the first copy went")

        try FileManager.default.removeItem(atPath: local)
        try await laptop.sync()
        #expect(try await laptop.pendingChanges() == 0)
        #expect(try await laptop.attachmentProblem(of: id)?.contains("cannot open") == true)
        let phone = try await device("phone")
        try await phone.sync()
        #expect(try await phone.notes().map(\.title) == ["Scan"])
        #expect(try await phone.attachmentFile(of: id) == nil)

        try await laptop.attach(id, fileAt: first)
        #expect(try await laptop.attachmentProblem(of: id) == nil)
        try await laptop.sync()
        try await phone.sync()
        let received = try #require(try await phone.attachmentFile(of: id))
        #expect(FileManager.default.contents(atPath: received) == Data("first".utf8))
    }
}
