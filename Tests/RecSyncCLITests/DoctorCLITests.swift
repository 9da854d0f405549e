import Foundation
import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

/// `recsync doctor` (and `fsck`): what it finds in a workspace and a store, and what --fix
/// repairs — never a file that holds data.
@Suite(.ownThreads) struct DoctorCLITests {
    func findings(_ doc: [String: Any]) -> [(kind: String, path: String, fixed: Bool)] {
        (doc["findings"] as? [[String: Any]] ?? []).map { ($0["kind"] as? String ?? "", $0["path"] as? String ?? "", $0["fixed"] as? Bool ?? false) }
    }

    @Test func findsAndRepairsWhatIsSafe() throws {
        let f = try CLIFixture().withStore()
        try f.clone("w")
        try f.put("notes/a", #"{"n": 1}"#, in: "w")
        try f.put("notes/b", #"{"n": 2}"#, in: "w")
        try f.run(["push"], in: "w")
        #expect(try f.run(["doctor"], in: "w").stdout.contains("no problems found"))

        // A killed sync's temp file, a stale index entry (file and sidecar gone), a damaged
        // sidecar, a synced file whose sidecar is gone; a deleted record (sidecar, no file) is fine.
        let zone = f.ws("w") + "/private/notes"
        try writeFile(zone + "/.b.json.tmp-recsync-1", "half")
        try writeFile(zone + "/.system/zzz.json", "{\"recordName\": 3}\n")
        try FileManager.default.removeItem(atPath: zone + "/a.json")
        try FileManager.default.removeItem(atPath: zone + "/.system/a.json")
        try FileManager.default.removeItem(atPath: zone + "/b.json")  // a deletion waiting for a push
        try f.put("notes/c", #"{"n": 3}"#, in: "w")
        let before = findings(try f.json(["doctor"], in: "w", expect: 1))
        let kinds = Set(before.map(\.kind))
        #expect(kinds.isSuperset(of: ["batchLeftover", "damagedSidecar", "staleIndexEntry"]), "\(before)")
        #expect(!before.contains { $0.path.hasSuffix("c.json") || $0.path.hasSuffix("b.json") }, "\(before)")

        let fixed = findings(try f.json(["fsck", "--fix"], in: "w", expect: 1))
        #expect(fixed.filter(\.fixed).map(\.kind).sorted() == ["batchLeftover", "staleIndexEntry"], "\(fixed)")
        #expect(!FileManager.default.fileExists(atPath: zone + "/.b.json.tmp-recsync-1"))
        // What holds data is only reported: the damaged sidecar is still there.
        #expect(FileManager.default.fileExists(atPath: zone + "/.system/zzz.json"))
        let after = findings(try f.json(["doctor"], in: "w", expect: 1))
        #expect(after.map(\.kind) == ["damagedSidecar"], "\(after)")
        try FileManager.default.removeItem(atPath: zone + "/.system/zzz.json")
        try f.run(["doctor"], in: "w")
    }

    /// A sidecar beside its record file that does not decode, or is a link, is found by
    /// doctor (status too), and only reported: --fix leaves it, and says what to do.
    @Test func aDamagedOrLinkedSidecarBesideItsFileIsFound() throws {
        let f = try CLIFixture().withStore()
        try f.clone("w")
        try f.put("notes/a", #"{"n": 1}"#, in: "w")
        try f.run(["push"], in: "w")
        let sidecar = f.ws("w") + "/private/notes/.system/a.json"
        try writeFile(sidecar, "garbage\n")
        for arguments in [["doctor"], ["doctor", "--fix"]] {
            let doc = try f.json(arguments, in: "w", expect: 1)
            #expect(findings(doc).map { "\($0.kind) \($0.path) \($0.fixed)" } == ["damagedSidecar private/notes/.system/a.json false"], "\(doc)")
            let detail = (doc["findings"] as? [[String: Any]])?.first?["detail"] as? String ?? ""
            #expect(
                detail.contains("a conflict with the store's version") && (doc["findings"] as? [[String: Any]])?.first?["fixable"] as? Bool == false,
                "\(doc)")
        }
        #expect(try String(contentsOfFile: sidecar, encoding: .utf8) == "garbage\n", "--fix leaves it")

        try FileManager.default.removeItem(atPath: sidecar)
        try FileManager.default.createSymbolicLink(atPath: sidecar, withDestinationPath: "/nonexistent")
        #expect(findings(try f.json(["doctor"], in: "w", expect: 1)).map(\.kind) == ["damagedSidecar"])
        let status = try f.json(["status"], in: "w")
        #expect(paths(status, "problems") == ["private/notes/.system/a.json"], "\(status)")
        try f.run(["push", "-n"], in: "w", expect: 1)
    }

    @Test func findsWhatTheStoreCannotDeliver() throws {
        let f = try CLIFixture().withStore()
        try f.clone("w")
        try f.put("notes/a", #"{"n": 1}"#, in: "w")
        try f.run(["push"], in: "w")
        let zone = try ZoneID(zoneName: "notes", ownerName: "alice")
        let broken = try RecordID(recordName: "broken", zoneID: zone)
        try GitCLI.commitFiles(
            [
                (StoreLayout.recordPath(broken), Array("{not json".utf8)),
                ("zones/alice/notes/records/zz/stray.txt", Array("x".utf8)),
            ], toStore: f.storePath)
        // A lock a killed writer left long ago.
        let lock = f.storePath + "/refs/heads/main.lock"
        try writeFile(lock, "")
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -86_400)], ofItemAtPath: lock)

        let found = findings(try f.json(["doctor"], in: "w", expect: 1))
        #expect(found.contains { $0.kind == "undecodableRecord" && $0.path == "alice/notes/broken" }, "\(found)")
        #expect(found.contains { $0.kind == "storeEntry" && $0.path.hasSuffix("records/zz") }, "\(found)")
        #expect(found.contains { $0.kind == "staleStoreLock" && !$0.fixed }, "\(found)")
        #expect(FileManager.default.fileExists(atPath: lock))
        let fixed = findings(try f.json(["doctor", "--fix"], in: "w", expect: 1))
        #expect(fixed.contains { $0.kind == "staleStoreLock" && $0.fixed }, "\(fixed)")
        #expect(!FileManager.default.fileExists(atPath: lock))
    }

    @Test func anUnreadableStoreIsAFindingNotACrash() throws {
        let f = try CLIFixture().withStore()
        try f.clone("w")
        try FileManager.default.moveItem(atPath: f.storePath, toPath: f.storePath + ".moved")
        let found = findings(try f.json(["doctor"], in: "w", expect: 1))
        #expect(found.contains { $0.kind == "storeUnreadable" }, "\(found)")
    }
}
