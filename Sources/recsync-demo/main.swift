// The store-level demo: a local git store in a temp dir, two devices of one user, edits on
// both, a fetch of changes on each, a conflict with its three copies, and its resolution.
// (The workspace and the `recsync` command arrive with the next issue; this shows the core.)
import Foundation
import RecSyncModel
import RecSyncStore

func say(_ text: String) { print(text) }

func fields(_ r: Record) -> String {
    String(decoding: JSON.serialize(.object(r.fields.mapValues(WorkspaceEncoding.json(from:))), pretty: false), as: UTF8.self)
}

func run() async throws {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("recsync-demo-\(UUID().uuidString.prefix(8))").path
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let storePath = "\(dir)/store.git"
    let alice = try StoreActor(userRecordName: "alice")
    let manifest = try GitStore.create(at: storePath, actor: alice)
    say("created store \(manifest.storeID) at \(storePath)")

    let phone = try GitStore(path: storePath, actor: alice)
    let laptop = try GitStore(path: storePath, actor: alice)
    let notes = try ZoneID(zoneName: "notes", ownerName: "alice")
    _ = try await phone.modifyRecordZones([.save(RecordZone(zoneID: notes, defaultRecordType: "Note"))])
    say("phone: created zone \(notes)")

    let r = try Record(recordID: RecordID(recordName: "shopping", zoneID: notes), recordType: "Note",
                       fields: ["title": .string("Shopping"), "items": .list([.string("milk")])])
    let saved = try await phone.modifyRecords(saving: [r]).saveResults[0].result.get()
    say("phone: saved 'shopping' -> change tag \(saved.changeTag!.prefix(12))")

    // The laptop catches up from nothing: database changes, then zone changes.
    let db = try await laptop.databaseChanges(scope: .private, since: nil)
    say("laptop: database changes -> zones \(db.modifications.map(\.description))")
    let zoneChanges = try await laptop.recordZoneChanges(zone: notes, since: nil)
    var laptopCopy = try zoneChanges.modifications[0].result.get()
    say("laptop: zone changes -> \(laptopCopy.recordID.recordName): \(fields(laptopCopy))")

    // Both devices edit the same record from the same version.
    var phoneCopy = saved
    phoneCopy.fields["items"] = .list([.string("milk"), .string("eggs")])
    laptopCopy.fields["title"] = .string("Weekly shopping")
    let phoneResult = try await phone.modifyRecords(saving: [phoneCopy]).saveResults[0].result.get()
    say("phone: pushed items -> tag \(phoneResult.changeTag!.prefix(12))")
    let laptopResult = try await laptop.modifyRecords(saving: [laptopCopy]).saveResults[0].result
    guard case .failure(.serverRecordChanged(let conflict)) = laptopResult else {
        say("laptop: expected a conflict but got \(laptopResult)")
        exit(1)
    }
    say("laptop: push refused, serverRecordChanged:")
    say("  server:   \(fields(conflict.server!))")
    say("  client:   \(fields(conflict.client!))")
    say("  ancestor: \(fields(conflict.ancestor!))")

    // Merge into the server copy (each side changed a different field) and save again.
    var merged = conflict.server!
    merged.fields["title"] = laptopCopy.fields["title"]
    let final = try await laptop.modifyRecords(saving: [merged]).saveResults[0].result.get()
    say("laptop: merged and pushed -> \(fields(final))")

    let incremental = try await phone.recordZoneChanges(zone: notes, since: zoneChanges.changeToken)
    say("phone: incremental fetch -> \(incremental.modifications.count) change(s): \(try fields(incremental.modifications[0].result.get()))")

    say("\nthe store is a git repository; its history is the change log:")
    for commit in try await phone.log() {
        say("  \(commit.commit.prefix(7)) \(commit.message.prefix(while: { $0 != "\n" }))")
    }
}

do {
    try await run()
} catch {
    FileHandle.standardError.write(Data("recsync-demo: \(error)\n".utf8))
    exit(1)
}
