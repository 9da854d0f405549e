import Foundation
import RecSyncTestSupport
import RecSyncTestTraits
import Synchronization
import Testing

@testable import RecSyncGit

/// `GitRepository.consolidatePacks`: a mirror's many small packs merged into one, checked by git.
@Suite(.ownThreads) struct GitPacksTests {
    func pack(_ size: Int, _ name: String = UUID().uuidString) -> GitPackFile { GitPackFile(base: name, size: size) }

    @Test func aGeometricRepackMergesTheSmallPacksAndLeavesTheLargeOnes() {
        // Twenty pushes' packs beside a clone's: the pushes merge, the clone's pack stays.
        let clone = pack(10_000_000, "clone")
        let pushes = (0..<20).map { pack(3_000 + $0, "push\($0)") }
        #expect(Set(GitRepository.packsToMerge(pushes + [clone], largest: 64 << 20)) == Set(pushes))
        // Once the merged packs outgrow half the clone's, it joins them.
        let grown = (0..<20).map { pack(300_000 + $0, "grown\($0)") }
        #expect(Set(GitRepository.packsToMerge(grown + [clone], largest: 64 << 20)) == Set(grown + [clone]))
        // ... unless it is over the size that is never rewritten.
        #expect(Set(GitRepository.packsToMerge(grown + [clone], largest: 5_000_000)) == Set(grown))
        // Packs that already double from one to the next stay apart.
        #expect(GitRepository.packsToMerge([pack(1), pack(3), pack(9), pack(27)], largest: 100).isEmpty)
        #expect(GitRepository.packsToMerge([pack(5)], largest: 100).isEmpty)
        // A small pack above a stable one pulls everything below it in.
        #expect(GitRepository.packsToMerge([pack(1), pack(3), pack(9), pack(10)], largest: 100).count == 4)
    }

    @Test func manySmallPacksBecomeOneAndGitFindsEveryObject() throws {
        let dir = TempDirectory("git-packs")
        let repo = dir.file("repo.git")
        let work = dir.file("work")
        try GitCLI.run(["init", "-q", "--bare", repo], in: dir.path)
        try GitCLI.run(["init", "-q", work], in: dir.path)
        // Forty commits, each pushed: receive-pack keeps each push as a pack of its own.
        try GitCLI.run(["-C", repo, "config", "receive.unpackLimit", "1"], in: dir.path)
        for i in 0..<40 {
            try Data("content \(i)\n".utf8).write(to: URL(fileURLWithPath: "\(work)/f\(i % 7).txt"))
            try GitCLI.run(["-C", work, "add", "-A"], in: dir.path)
            try GitCLI.run(["-C", work, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "c\(i)"], in: dir.path)
            try GitCLI.run(["-C", work, "push", "-q", repo, "HEAD:refs/heads/main"], in: dir.path)
        }
        let objectsBefore = try GitCLI.run(["-C", repo, "cat-file", "--batch-all-objects", "--batch-check"], in: dir.path)
        let git = try GitRepository.open(at: repo)
        #expect(try git.packFiles().count == 40)
        // Within the limit: nothing happens.
        #expect(try git.consolidatePacks(whenMoreThan: 40, largest: 64 << 20).isEmpty)
        let merged = try git.consolidatePacks(whenMoreThan: 10, largest: 64 << 20)
        #expect(merged.count >= 30, "merged \(merged.count) of 40 packs")
        #expect(try git.packFiles().count == 40 - merged.count + 1)
        // Every object is still there, git agrees the repository is whole, and the handle
        // that merged reads the history through the new pack.
        #expect(try GitCLI.run(["-C", repo, "cat-file", "--batch-all-objects", "--batch-check"], in: dir.path) == objectsBefore)
        try GitCLI.run(["-C", repo, "fsck", "--strict", "--no-dangling"], in: dir.path)
        let head = try #require(try git.referenceTarget("refs/heads/main"))
        #expect(try git.commit(head).message.hasPrefix("c39"))
        #expect(try GitCLI.run(["-C", repo, "rev-list", "--count", "main"], in: dir.path).trimmingCharacters(in: .whitespacesAndNewlines) == "40")
        // A pack kept with a .keep file is never merged.
        let keptPack = try #require(try git.packFiles().max { $0.size < $1.size })
        try Data().write(to: URL(fileURLWithPath: keptPack.base + ".keep"))
        #expect(try git.packFiles().contains(keptPack) == false)
    }

    @Test func packsAnotherProcessMergedFirstAreLeftToIt() throws {
        let (dir, repo) = try Self.repository(packs: 12)
        defer { _ = dir }
        let git = try GitRepository.open(at: repo)
        let packs = try git.packFiles()
        let objectsBefore = try GitCLI.run(["-C", repo, "cat-file", "--batch-all-objects", "--batch-check"], in: dir.path)
        // Between this process listing the packs and reading them, another merged one away
        // (its index goes first): this merge stands back, and removes nothing.
        let gone = packs[5]
        try FileManager.default.moveItem(atPath: gone.base + ".idx", toPath: dir.file("moved.idx"))
        #expect(try git.merge(packs).isEmpty)
        try FileManager.default.moveItem(atPath: dir.file("moved.idx"), toPath: gone.base + ".idx")
        #expect(Set(try git.packFiles()) == Set(packs))
        #expect(try GitCLI.run(["-C", repo, "cat-file", "--batch-all-objects", "--batch-check"], in: dir.path) == objectsBefore)
    }

    @Test func twoHandlesMergingAtOnceBothSucceedAndLoseNothing() throws {
        for _ in 0..<4 {
            let (dir, repo) = try Self.repository(packs: 40)
            let objectsBefore = try GitCLI.run(["-C", repo, "cat-file", "--batch-all-objects", "--batch-check"], in: dir.path)
            let failures = Mutex<[String]>([])
            // Two handles of their own, as two processes sharing a mirror would have.
            DispatchQueue.concurrentPerform(iterations: 2) { _ in
                do { _ = try GitRepository.open(at: repo).consolidatePacks(whenMoreThan: 10, largest: 64 << 20) } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
            #expect(failures.withLock { $0 }.isEmpty)
            #expect(try GitCLI.run(["-C", repo, "cat-file", "--batch-all-objects", "--batch-check"], in: dir.path) == objectsBefore)
            try GitCLI.run(["-C", repo, "fsck", "--strict", "--no-dangling"], in: dir.path)
            #expect(try GitRepository.open(at: repo).packFiles().count <= 3)
        }
    }

    /// A bare repository whose objects lie in `packs` packs of one blob each.
    static func repository(packs: Int) throws -> (TempDirectory, String) {
        let dir = TempDirectory("git-packs")
        let repo = dir.file("repo.git")
        try GitCLI.run(["init", "-q", "--bare", repo], in: dir.path)
        for i in 0..<packs {
            let oid = try GitCLI.run(["-C", repo, "hash-object", "-w", "--stdin"], in: dir.path, input: "blob \(i)\n")
                .trimmingCharacters(in: .whitespacesAndNewlines)
            _ = try GitCLI.run(["-C", repo, "pack-objects", "-q", "objects/pack/pack"], in: dir.path, input: oid + "\n")
        }
        _ = try GitCLI.run(["-C", repo, "prune-packed"], in: dir.path)
        return (dir, repo)
    }
}
