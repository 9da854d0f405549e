import Foundation
import RecSyncTestSupport
import Testing
import RecSyncTestTraits

/// A lock a killed writer left in a store is named by the write it blocks, and removed by
/// `recsync store doctor`; a lock a live writer holds is left alone.
@Suite(.ownThreads) struct StoreDoctorTests {
    @Test func aStaleHeadLockIsNamedAndRemovedButALiveOneIsKept() throws {
        let f = try CLIFixture().withStore()
        try f.clone("laptop")
        try f.put("notes/r1", #"{"title": "one"}"#, in: "laptop", type: "Note")
        try f.run(["push"], in: "laptop")
        let head = try f.storeHead()

        // What a push killed while moving the head leaves: refs/heads/main.lock, an hour old.
        let lock = f.storePath + "/refs/heads/main.lock"
        try writeFile(lock, head + "\n")
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -3600)], ofItemAtPath: lock)

        try f.put("notes/r2", #"{"title": "two"}"#, in: "laptop")
        let started = Date()
        let blocked = try f.run(["push"], in: "laptop", expect: 1)
        #expect(blocked.stderr.contains(lock) && blocked.stderr.contains("recsync store doctor") && blocked.stderr.contains("safe"), "\(blocked)")
        #expect(Date().timeIntervalSince(started) < 1.5, "named at once, not after 64 attempts")
        #expect(try f.storeHead() == head)

        // --check reports it and removes nothing.
        let checked = try f.run(["store", "doctor", "--check", "store.git"], expect: 1)
        #expect(checked.stdout.contains(lock) && checked.stdout.contains("stale"), "\(checked)")
        #expect(FileManager.default.fileExists(atPath: lock))

        // doctor in the workspace finds the store, removes the lock; the push then goes through.
        let doctored = try f.run(["store", "doctor"], in: "laptop")
        #expect(doctored.stdout.contains("removed \(lock)"), "\(doctored)")
        #expect(!FileManager.default.fileExists(atPath: lock))
        try f.run(["push"], in: "laptop")
        #expect(try f.storeHead() != head)

        // A lock a process has open is a write under way, however old: kept.
        try writeFile(lock, "\n")
        let held = try #require(FileHandle(forWritingAtPath: lock))
        defer { try? held.close() }
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -3600)], ofItemAtPath: lock)
        let live = try f.run(["store", "doctor", "store.git"])
        #expect(live.stdout.contains("write under way") && live.stdout.contains("process has it open"), "\(live)")
        #expect(FileManager.default.fileExists(atPath: lock))
        try held.close()

        // So is a fresh one nobody has open (a writer between closing and renaming it).
        try FileManager.default.setAttributes([.modificationDate: Date()], ofItemAtPath: lock)
        let fresh = try f.run(["store", "doctor", "store.git"])
        #expect(fresh.stdout.contains("write under way"), "\(fresh)")
        #expect(FileManager.default.fileExists(atPath: lock))
        try FileManager.default.removeItem(atPath: lock)
    }
}
