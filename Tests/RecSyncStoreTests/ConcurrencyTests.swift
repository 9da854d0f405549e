import Foundation
import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

/// Several writers on one store at once: nothing accepted is lost, every refusal is reported.
@Suite(.ownThreads) struct ConcurrencyTests {
    let zone = Build.zone("counters", owner: "alice")

    /// The current tag of every record in the zone.
    func finalTags(_ store: any RemoteStore) async throws -> [String: String] {
        let all = try await store.allZoneChanges(zone, since: nil)
        return Dictionary(uniqueKeysWithValues: all.records.map { ($0.recordID.recordName, $0.changeTag ?? "") })
    }

    @Test(arguments: StoreKind.allCases)
    func separateHandlesInOneProcess(kind: StoreKind) async throws {
        let fixture = try StoreFixture(kind)
        let owner = try fixture.store(as: "alice")
        try await owner.createZones([zone])
        let writers = ["alice", "alice2", "alice3", "alice4"]
        // Every writer writes into alice's zone through its own handle (all as alice).
        let handles = try writers.map { _ in try fixture.store(as: "alice") }
        let log = await withTaskGroup(of: [WriteAttempt].self) { group in
            for (i, handle) in handles.enumerated() {
                group.addTask {
                    await StressWriter.run(store: handle, zone: zone, writer: writers[i], iterations: 25, sharedRecords: 3, seed: UInt64(i + 1))
                }
            }
            var all: [WriteAttempt] = []
            for await part in group { all += part }
            return all
        }
        #expect(log.count == 100)
        print(
            """
            [\(kind)] in-process writers: \(log.filter { $0.outcome == .saved }.count) saved,\
             \(log.filter { $0.outcome == .conflict }.count) conflicts,\
             \(log.filter { $0.outcome == .unknownItem }.count) unknown
            """
        )
        // Writers yield between reading and writing, so overlapping records do collide.
        #expect(log.contains { $0.outcome == .conflict })
        #expect(log.filter { $0.outcome == .failed }.isEmpty, "no attempt may fail outright: \(log.filter { $0.outcome == .failed })")
        let problems = StressWriter.verify(log, finalTags: try await finalTags(owner))
        #expect(problems.isEmpty, "\(problems)")
        if kind == .git { try checkGitHistory(fixture.path, expectedCommits: 2 + log.filter { $0.outcome == .saved }.count) }
    }

    @Test func separateProcessesOnOneGitStore() async throws {
        let fixture = try StoreFixture(.git)
        let owner = try fixture.store(as: "alice")
        try await owner.createZones([zone])
        let writer = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent(
            "recsync-store-writer"
        ).path
        try #require(FileManager.default.isExecutableFile(atPath: writer), "build the recsync-store-writer product first")

        var processes: [(Process, Pipe)] = []
        for n in 0..<3 {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: writer)
            p.arguments = [fixture.path, "alice", "alice", "counters", "30", "3", "\(n + 10)"]
            let out = Pipe()
            p.standardOutput = out
            p.standardError = FileHandle.standardError
            try p.run()
            processes.append((p, out))
        }
        var log: [WriteAttempt] = []
        for (p, out) in processes {
            let data = out.fileHandleForReading.readDataToEndOfFile()
            p.waitUntilExit()
            #expect(p.terminationStatus == 0)
            for line in data.split(separator: UInt8(ascii: "\n")) {
                var entry = try JSONDecoder().decode(WriteAttempt.self, from: Data(line))
                entry.writer += "-pid\(p.processIdentifier)"
                log.append(entry)
            }
        }
        #expect(log.count == 90)
        print("process writers: \(log.filter { $0.outcome == .saved }.count) saved, \(log.filter { $0.outcome == .conflict }.count) conflicts")
        #expect(log.contains { $0.outcome == .conflict })
        #expect(log.filter { $0.outcome == .failed }.isEmpty, "\(log.filter { $0.outcome == .failed })")
        let problems = StressWriter.verify(log, finalTags: try await finalTags(owner))
        #expect(problems.isEmpty, "\(problems)")
        try checkGitHistory(fixture.path, expectedCommits: 2 + log.filter { $0.outcome == .saved }.count)
    }

    /// Linear history with one commit per accepted write, and a clean `git fsck`.
    func checkGitHistory(_ path: String, expectedCommits: Int) throws {
        let merges = try GitCLI.run(["rev-list", "--min-parents=2", "refs/heads/main"], in: path)
        #expect(merges.isEmpty, "history must be linear")
        let count = try GitCLI.run(["rev-list", "--count", "refs/heads/main"], in: path).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(Int(count) == expectedCommits)
        try GitCLI.run(["fsck", "--strict", "--no-dangling"], in: path)
    }
}
