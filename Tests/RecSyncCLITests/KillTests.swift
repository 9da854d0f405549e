import Foundation
import RecSyncEngine
import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import RecSyncTestTraits
import RecSyncWorkspace
import Testing

/// `recsync pull` killed with SIGKILL at several points: the next pull always completes, and
/// the workspace then equals a fresh clone (records, sidecars and tokens).
@Suite(.ownThreads) struct KillTests {
    static var binary: String {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent("recsync").path
    }

    /// What must be equal after a completed pull: records, sidecars, tokens.
    static func state(_ root: String) -> [String: [UInt8]] {
        TreeSnapshot.files(root) { rel in
            rel.hasPrefix(".recsync/") && !rel.hasPrefix(".recsync/tokens/")
        }
    }

    /// How many record files the zone directories hold so far.
    static func recordFiles(_ root: String, _ zones: [ZoneID]) -> Int {
        zones.reduce(0) { n, zone in
            n
                + ((try? FileManager.default.contentsOfDirectory(atPath: "\(root)/private/\(zone.zoneName)")) ?? []).filter { $0.hasSuffix(".json") }
                .count
        }
    }

    /// `format`: the store's, set for the binary (format 2 is read only with its switch).
    static func run(_ arguments: [String], format: Int = StoreLayout.formatVersion) throws -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: binary)
        p.arguments = arguments
        p.environment = ["PATH": "/usr/bin:/bin", "NO_COLOR": "1", "RECSYNC_USER": "alice", "HOME": FileManager.default.temporaryDirectory.path]
        if format == StoreLayout.zoneRefsFormat { p.environment?["RECSYNC_EXPERIMENTAL_STORE_FORMAT"] = String(format) }
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        return p
    }

    /// A temp directory holding a new git store acting as alice, for the built binary to pull.
    static func aliceStore(_ name: String, format: Int = StoreLayout.formatVersion) throws -> (TempDirectory, String, GitStore) {
        try #require(FileManager.default.isExecutableFile(atPath: binary), "the recsync executable is built with the tests")
        let dir = TempDirectory(name)
        let storePath = dir.file("store.git")
        let actor = try StoreActor(userRecordName: "alice")
        try GitStore.create(at: storePath, actor: actor, format: format)
        return (dir, storePath, try GitStore(path: storePath, actor: actor, acceptingZoneRefs: format == StoreLayout.zoneRefsFormat))
    }

    /// On both store formats (format 2: each zone on a ref of its own).
    @Test(arguments: [StoreLayout.formatVersion, StoreLayout.zoneRefsFormat])
    func killedPullsResumeToTheSameState(format: Int) async throws {
        let (dir, storePath, store) = try Self.aliceStore("\(#function)-\(format)", format: format)
        let zones = [Build.zone("alpha"), Build.zone("beta"), Build.zone("gamma")]
        try await store.createZones(zones)
        try await store.save((0..<3000).map { RecordGenerator.realisticRecord(index: $0, zoneID: zones[$0 % 3]) })

        // The reference: one uninterrupted pull by the same binary.
        let reference = dir.file("reference")
        _ = try Workspace.create(at: reference, config: WorkspaceConfig(user: "alice", remote: storePath))
        let start = Date()
        let full = try Self.run(["-C", reference, "pull"], format: format)
        full.waitUntilExit()
        let duration = Date().timeIntervalSince(start)
        #expect(full.terminationStatus == 0)
        let expected = Self.state(reference)
        #expect(expected.keys.filter { $0.hasSuffix(".json") && !$0.contains(".system") && !$0.hasPrefix(".recsync") }.count == 3000)

        var killedMidway = 0
        for fraction in [0.1, 0.3, 0.5, 0.7, 0.9] {
            let ws = dir.file("ws-\(fraction)")
            _ = try Workspace.create(at: ws, config: WorkspaceConfig(user: "alice", remote: storePath))
            // Kill it once when about `fraction` of the record files are written (a pull's speed
            // varies too much with the machine's load for a delay to land reliably), and then
            // once more, after a delay, during the pull that resumes. Watched and waited for by
            // blocking this thread, not by a sleeping task: with the test runner's two threads
            // held by other tests, a task may not run again before the pull is done (a loaded
            // run once saw no kill land in ten).
            for attempt in 0..<2 {
                let p = try Self.run(["-C", ws, "pull"], format: format)
                if attempt == 0 {
                    let deadline = Date().addingTimeInterval(duration * 4 + 5)
                    while p.isRunning && Date() < deadline && Self.recordFiles(ws, zones) < Int(3000 * fraction) {
                        usleep(2_000)
                    }
                } else {
                    usleep(UInt32(duration * fraction * 0.5 * 1e6))
                }
                if p.isRunning { killedMidway += 1 }
                kill(p.processIdentifier, SIGKILL)
                p.waitUntilExit()
            }
            let resume = try Self.run(["-C", ws, "pull"], format: format)
            resume.waitUntilExit()
            #expect(resume.terminationStatus == 0, "the pull after a kill completes (fraction \(fraction))")
            let state = Self.state(ws)
            #expect(state.keys.sorted() == expected.keys.sorted(), "same files after kills at \(fraction)")
            let differing = state.keys.filter { state[$0] != expected[$0] }.sorted()
            #expect(differing.isEmpty, "files differ after kills at \(fraction): \(differing.prefix(5))")
            #expect(!FileManager.default.fileExists(atPath: "\(ws)/.recsync/conflicts"), "no conflicts invented")
        }
        // At least one kill must land while a pull runs, or the test proved nothing. How many
        // land depends on the machine's load (the reference pull's time sets the delays; two of
        // ten landed in one loaded run), so more is not asked for.
        #expect(killedMidway >= 1, "a kill must land while the pull runs (pull took \(duration) s)")
    }

    /// A pull killed while it streams assets leaves no half asset: what is in place is whole,
    /// the next pull completes, and nothing is left that a push would send.
    @Test func aPullKilledMidAssetLeavesNoHalfAssetToPush() async throws {
        let (dir, storePath, store) = try Self.aliceStore(#function)
        let zone = Build.zone("media")
        try await store.createZones([zone])
        var expected: [String: [UInt8]] = [:]
        var records: [Record] = []
        for i in 0..<6 {
            let bytes = [UInt8](repeating: UInt8(i + 1), count: 8 << 20)
            let source = dir.file("source-\(i)")
            try Data(bytes).write(to: URL(fileURLWithPath: source))
            let asset = try await store.uploadAsset(fileAt: source, for: Build.id("r\(i)", in: zone), field: "file")
            records.append(Build.record("r\(i)", in: zone, ["file": .asset(asset), "n": .int64(Int64(i))]))
            expected["private/media/r\(i).assets/file"] = bytes
        }
        try await store.save(records)

        // Killed as soon as the first asset directory appears: an asset is being streamed.
        // Watched by a blocking loop, not a sleeping task: with the test runner's two
        // threads held by other tests, a task may not run again before the pull is done.
        // A pull that still finished first is run again in a new workspace (three tries).
        var ws = ""
        var landed = false
        for attempt in 0..<3 where !landed {
            ws = dir.file("ws-\(attempt)")
            _ = try Workspace.create(at: ws, config: WorkspaceConfig(user: "alice", remote: storePath))
            let p = try Self.run(["-C", ws, "pull"])
            let deadline = Date().addingTimeInterval(120)
            let media = "\(ws)/private/media"
            while p.isRunning && Date() < deadline,
                ((try? FileManager.default.contentsOfDirectory(atPath: media)) ?? []).allSatisfy({ !$0.hasSuffix(".assets") })
            {
                usleep(200)
            }
            landed = p.isRunning
            kill(p.processIdentifier, SIGKILL)
            p.waitUntilExit()
        }
        #expect(landed, "the kill must land while the pull runs")

        func assetFiles() -> [String: [UInt8]] {
            TreeSnapshot.files(ws, exclude: { rel in !(rel.hasPrefix("private/media/") && rel.contains(".assets/")) })
        }
        // Whatever the killed pull put in place is whole; a temporary file may be left, hidden.
        for (path, bytes) in assetFiles() where !path.contains("/.tmp-") {
            #expect(bytes == expected[path], "\(path) is in place but not the whole asset (\(bytes.count) bytes)")
        }
        // The workspace has nothing to push, before the pull resumes and after.
        let before = try Self.run(["-C", ws, "status", "--exit-code", "--quiet"])
        before.waitUntilExit()
        #expect(before.terminationStatus == 0, "a killed pull leaves nothing to push")
        let resume = try Self.run(["-C", ws, "pull"])
        resume.waitUntilExit()
        #expect(resume.terminationStatus == 0)
        #expect(assetFiles() == expected, "every asset whole and no temporary file left")
        let after = try Self.run(["-C", ws, "status", "--exit-code", "--quiet"])
        after.waitUntilExit()
        #expect(after.terminationStatus == 0)
    }

    /// A clone killed before it wrote the workspace's config leaves `.recsync/` with its
    /// `.gitignore` and a temporary file: running the same clone again works (it said the
    /// directory was not empty). One killed later is a workspace: the error says to pull.
    @Test func aCloneKilledEarlyCanBeRunAgain() throws {
        let f = try CLIFixture().withStore()
        let half = f.directory.file("half/.recsync")
        try FileManager.default.createDirectory(atPath: half, withIntermediateDirectories: true)
        try writeFile(half + "/.gitignore", "# machine-specific state: not part of a snapshot\n")
        try writeFile(half + "/.tmp-4242-2", "{\"version\"")
        try f.run(["clone", "store.git", "half"])
        #expect(FileManager.default.fileExists(atPath: f.directory.file("half/.recsync/config")))
        #expect(!FileManager.default.fileExists(atPath: half + "/.tmp-4242-2"))
        let again = try f.run(["clone", "store.git", "half"], expect: 1)
        #expect(again.stderr.contains("is a recsync workspace already") && again.stderr.contains("pull"), "\(again)")
        // Anything else in the directory is the user's: refused as before, nothing removed.
        let other = f.directory.file("other/.recsync")
        try FileManager.default.createDirectory(atPath: other, withIntermediateDirectories: true)
        try writeFile(other + "/notes.txt", "mine")
        let refused = try f.run(["clone", "store.git", "other"], expect: 1)
        #expect(refused.stderr.contains("not empty"), "\(refused)")
        #expect(FileManager.default.fileExists(atPath: other + "/notes.txt"))
        // A `.recsync` that is a link to a directory of the user's is theirs too, even one that
        // holds only what a killed clone would leave.
        let theirs = f.directory.file("theirs")
        try FileManager.default.createDirectory(atPath: theirs, withIntermediateDirectories: true)
        try writeFile(theirs + "/.gitignore", "kept\n")
        try FileManager.default.createDirectory(atPath: f.directory.file("linked"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: f.directory.file("linked/.recsync"), withDestinationPath: theirs)
        let linked = try f.run(["clone", "store.git", "linked"], expect: 1)
        #expect(linked.stderr.contains("not empty"), "\(linked)")
        #expect(readFile(theirs + "/.gitignore") == "kept\n")
    }
}
