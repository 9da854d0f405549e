import Foundation
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

/// A lock a killed writer left in a store is removed by the next write on a local file system
/// (nobody has it open: its writer is gone), and by `recsync store doctor`; a lock a live
/// writer holds is left alone.
@Suite(.ownThreads) struct StoreDoctorTests {
    @Test func aLockAKilledWriterLeftIsRemovedByTheNextPush() throws {
        let f = try CLIFixture().withStore()
        try f.clone("laptop")
        try f.put("notes/r1", #"{"title": "one"}"#, in: "laptop", type: "Note")
        try f.run(["push"], in: "laptop")
        let lock = f.storePath + "/refs/heads/main.lock"

        // What a push killed while moving the head leaves: refs/heads/main.lock, just written
        // (the kill was a moment ago) and open in no process.
        for (n, age) in [(2, 0.0), (3, 3600.0)] {
            let head = try f.storeHead()
            try writeFile(lock, head + "\n")
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -age)], ofItemAtPath: lock)
            try f.put("notes/r\(n)", #"{"title": "more"}"#, in: "laptop")
            let pushed = try f.run(["push"], in: "laptop")
            #expect(pushed.stderr.contains("removed \(lock)") && pushed.stderr.contains("gone"), "\(pushed)")
            #expect(!FileManager.default.fileExists(atPath: lock))
            #expect(try f.storeHead() != head, "the push landed")
        }
        // Nothing moved aside is left in the store.
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: f.storePath).filter { $0.contains("lock") }
        #expect(leftovers.isEmpty, "\(leftovers)")

        // A lock a process has open is a write under way, however old: the push waits for it
        // (its attempts run out), fails with nothing written, and leaves the lock alone.
        let head = try f.storeHead()
        try writeFile(lock, "\n")
        let held = try #require(FileHandle(forWritingAtPath: lock))
        defer { try? held.close() }
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -3600)], ofItemAtPath: lock)
        try f.put("notes/r4", #"{"title": "four"}"#, in: "laptop")
        let blocked = try f.run(["push"], in: "laptop", expect: 1)
        #expect(blocked.stderr.contains("busy"), "\(blocked)")
        #expect(try f.storeHead() == head)
        #expect(FileManager.default.fileExists(atPath: lock))
        let live = try f.run(["store", "doctor", "store.git"])
        #expect(live.stdout.contains("write under way") && live.stdout.contains("process has it open"), "\(live)")
        #expect(FileManager.default.fileExists(atPath: lock))
        try held.close()
        try f.run(["push"], in: "laptop")
        #expect(try f.storeHead() != head)
    }

    @Test func doctorNamesAndRemovesAStaleLockButKeepsALiveOne() throws {
        let f = try CLIFixture().withStore()
        try f.clone("laptop")
        let lock = f.storePath + "/refs/heads/main.lock"
        try writeFile(lock, try f.storeHead() + "\n")
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -3600)], ofItemAtPath: lock)

        // --check reports it and removes nothing.
        let checked = try f.run(["store", "doctor", "--check", "store.git"], expect: 1)
        #expect(checked.stdout.contains(lock) && checked.stdout.contains("stale"), "\(checked)")
        #expect(FileManager.default.fileExists(atPath: lock))

        // doctor in the workspace finds the store and removes the lock.
        let doctored = try f.run(["store", "doctor"], in: "laptop")
        #expect(doctored.stdout.contains("removed \(lock)"), "\(doctored)")
        #expect(!FileManager.default.fileExists(atPath: lock))

        // A fresh one nobody has open may be a writer between closing and renaming it: kept.
        // (Dated ahead, so that it is still fresh however slowly the doctor starts.)
        try writeFile(lock, "\n")
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: 60)], ofItemAtPath: lock)
        let fresh = try f.run(["store", "doctor", "store.git"])
        #expect(fresh.stdout.contains("write under way"), "\(fresh)")
        #expect(FileManager.default.fileExists(atPath: lock))
        try FileManager.default.removeItem(atPath: lock)
    }
}
