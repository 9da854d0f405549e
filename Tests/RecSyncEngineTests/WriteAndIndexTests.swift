import Foundation
import RecSyncEngineFixtures
import RecSyncModel
import RecSyncTestSupport
import RecSyncWorkspace
import Testing

@testable import RecSyncEngine

/// What a killed write batch leaves of the files it created in place, and how a pull or
/// status clears it up (the batch itself: RecSyncWorkspaceTests/WriteBatchTests).
@Suite struct InPlaceWriteTests {
    @Test func whatAKilledBatchCreatedIsTakenBackAndTheNextPullWritesIt() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        for name in ["done", "cut", "empty", "edited"] { try laptop.write("notes", name, #"{"v": "\#(name)"}"#) }
        _ = try await laptop.push()
        let phone = try f.device("phone")
        let dir = "\(phone.workspace.root)/private/notes"
        // As a batch killed half-way through creating files leaves them: what it meant to write
        // (by hash in the registry) and what reached the disk.
        let meant = Array(#"{"v": "whatever it was"}"#.utf8)
        let side = Array(#"{"recordName": "done"}"#.utf8)
        try writeFile("\(dir)/done.json", String(decoding: meant, as: UTF8.self))
        try writeFile("\(dir)/cut.json", String(decoding: meant.prefix(7), as: UTF8.self))
        try writeFile("\(dir)/empty.json", "")
        try writeFile("\(dir)/.system/done.json", String(decoding: side.prefix(5), as: UTF8.self))
        try writeFile("\(dir)/.system/cut.json", #"{"recordType": "Note"}"#)  // a type note from before
        let h = ContentHash.of(meant)
        try writeFile(
            phone.workspace.tempRegistry,
            """
            \(dir)
            c\t\(h)\t\(dir)/done.json
            c\t\(h)\t\(dir)/cut.json
            c\t\(h)\t\(dir)/empty.json
            c\t\(h)\t\(dir)/never-made.json
            s\t\(ContentHash.of(side))\t\(dir)/.system/done.json
            s\t\(h)\t\(dir)/.system/cut.json

            """)
        let pulled = try await phone.pull()
        // The cut-short file may be someone's: kept aside, and the store's version written.
        #expect(pulled.lostAndFound.count == 1)
        #expect(pulled.lostAndFound.first?.hasSuffix("private/notes/cut.json") == true)
        for name in ["done", "cut", "empty", "edited"] {
            #expect(try phone.fields("notes", name) == laptop.fields("notes", name))
            #expect(FileManager.default.fileExists(atPath: "\(dir)/.system/\(name).json"))
        }
        #expect(try await phone.status().isClean)
        #expect(!FileManager.default.fileExists(atPath: phone.workspace.tempRegistry))
    }

    @Test func statusClearsUpAfterAKilledPullInsteadOfReportingNewRecords() async throws {
        let f = EngineFixture()
        let laptop = try f.device("laptop")
        try laptop.write("notes", "r", #"{"v": 1}"#)
        _ = try await laptop.push()
        let phone = try f.device("phone")
        _ = try await phone.pull()
        let dir = "\(phone.workspace.root)/private/notes"
        let meant = Array(#"{"v": 2}"#.utf8)
        try writeFile("\(dir)/s.json", String(decoding: meant, as: UTF8.self))
        try writeFile(phone.workspace.tempRegistry, "c\t\(ContentHash.of(meant))\t\(dir)/s.json\n")
        let status = try await phone.status()
        #expect(status.isClean)
        #expect(readFile("\(dir)/s.json") == nil)
    }
}

/// The zone index: a sorted base found by binary search, plus a journal of changes.
@Suite struct SideBySideTests {
    @Test func aFailureStopsWhatHasNotStartedAndResultsKeepTheirPlaces() async throws {
        let results = await SyncEngine.sideBySide(Array(0..<10), workers: 2) { (i: Int) async throws(RecSyncError) -> Int in
            if i == 1 { throw .internalError("item 1 fails") }
            try? await Task.sleep(nanoseconds: 50_000_000)
            return i * 10
        }
        #expect(results.count == 10)
        guard case .failure(let error)? = results[1] else {
            Issue.record("item 1 should have failed, got \(String(describing: results[1]))")
            return
        }
        #expect(error.message.contains("item 1 fails"))
        // Item 0 was under way and finished; nothing was started after the failure.
        #expect(try results[0]?.get() == 0)
        #expect(results[2...].allSatisfy { $0 == nil })
    }

    @Test func everyItemRunsOnceInItsPlace() async throws {
        let results = await SyncEngine.sideBySide(Array(0..<25), workers: 3) { (i: Int) async throws(RecSyncError) -> Int in i * i }
        #expect(try results.map { try $0?.get() } == (0..<25).map { $0 * $0 })
    }
}
