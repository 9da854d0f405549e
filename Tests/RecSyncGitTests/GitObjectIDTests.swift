import Foundation
import Glibc
import RecSyncTestSupport
import Testing

@testable import RecSyncGit

/// `GitOID` and `BlobDigest`: object IDs as text, and the digests of contents, checked
/// against the real `git hash-object` and `sha256sum`.
@Suite struct GitObjectIDTests {
    /// What `git hash-object` says of the file at `path`.
    func gitHash(_ path: String, in dir: TempDirectory) throws -> String {
        try GitCLI.run(["hash-object", "--no-filters", path], in: dir.path).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func sha256sum(_ path: String, in dir: TempDirectory) throws -> String {
        String(try Subprocess.run("/usr/bin/sha256sum", [path], in: dir.path).prefix(64))
    }

    func contents(_ count: Int, seed: UInt8 = 7) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }
    }

    @Test func hexRoundTripsAndUppercaseIsReadAsLowercase() throws {
        let hex = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
        let oid = try #require(GitOID(hex: hex))
        #expect(oid.hex == hex && oid.description == hex && !oid.isZero)
        #expect(GitOID(hex: hex.uppercased()) == oid)
        #expect(try #require(GitOID(hex: String(repeating: "0", count: 40))) == .zero)
        #expect(GitOID.zero.isZero && GitOID.zero.hex == String(repeating: "0", count: 40))
    }

    @Test(arguments: [
        "", "e69de29bb2d1d6434b8b29ae775ad8c2e48c539", "e69de29bb2d1d6434b8b29ae775ad8c2e48c53911",
        "g69de29bb2d1d6434b8b29ae775ad8c2e48c5391", " e69de29bb2d1d6434b8b29ae775ad8c2e48c539", "e69de29bb2d1d6434b8b29ae775ad8c2e48c539\n",
        "e69de29bb2d1d6434b8b29ae775ad8c2e48c53é", "0x9de29bb2d1d6434b8b29ae775ad8c2e48c5391",
    ])
    func textThatIsNotFortyHexDigitsIsNoObjectID(text: String) {
        #expect(GitOID(hex: text) == nil)
    }

    @Test func objectIDsOrderAndHashByTheirBytes() throws {
        let low = try #require(GitOID(hex: "0000000000000000000000000000000000000001"))
        let high = try #require(GitOID(hex: "1000000000000000000000000000000000000000"))
        let last = try #require(GitOID(hex: "ffffffffffffffffffffffffffffffffffffffff"))
        #expect(low < high && high < last && !(last < low))
        #expect([last, low, high].sorted() == [low, high, last])
        #expect(Set([low, high, low, last, high]).count == 3)
        // Each of the 20 bytes takes part in equality, the last one included.
        let almost = try #require(GitOID(hex: "fffffffffffffffffffffffffffffffffffffffe"))
        #expect(almost != last)
    }

    @Test(arguments: [0, 1, 4096, (1 << 20) - 1, (1 << 20) + 3])
    func aDigestOfBytesIsWhatGitAndSha256sumSay(count: Int) throws {
        let dir = TempDirectory("blob-digest")
        let bytes = contents(count)
        let path = dir.file("content")
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let digest = BlobDigest.of(bytes)
        #expect(digest.oid.hex == (try gitHash(path, in: dir)))
        #expect(digest.size == Int64(count))
        #expect(digest.sha256 == (try sha256sum(path, in: dir)))
        #expect(try GitOID.blob(of: bytes) == digest.oid)
    }

    @Test func aDigestReadFromAFileSpanningChunksEqualsTheDigestOfItsBytes() throws {
        let dir = TempDirectory("blob-digest-fd")
        let bytes = contents(BlobDigest.chunkSize * 2 + 12_345, seed: 3)
        let path = dir.file("large")
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let fd = open(path, O_RDONLY)
        try #require(fd >= 0)
        defer { close(fd) }
        let digest = try BlobDigest.of(fd: fd, size: Int64(bytes.count), path: path)
        #expect(digest == BlobDigest.of(bytes))
        #expect(digest.oid.hex == (try gitHash(path, in: dir)))
    }

    @Test func aFileLongerOrShorterThanItsSizeIsRefused() throws {
        let dir = TempDirectory("blob-digest-size")
        let path = dir.file("file")
        try Data(contents(5000)).write(to: URL(fileURLWithPath: path))
        func digest(size: Int64) throws(GitError) -> BlobDigest {
            let fd = open(path, O_RDONLY)
            defer { close(fd) }
            return try BlobDigest.of(fd: fd, size: size, path: path)
        }
        let grew = #expect(throws: GitError.self) { try digest(size: 4999) }
        #expect(grew?.message.contains("grew while it was read") == true, "\(String(describing: grew))")
        let shrank = #expect(throws: GitError.self) { try digest(size: 5001) }
        #expect(shrank?.message.contains("became shorter") == true, "\(String(describing: shrank))")
        #expect(try digest(size: 5000).size == 5000)
    }

    @Test func readChunksHandsOnEveryByteAndTheBodysOwnError() throws {
        let dir = TempDirectory("blob-chunks")
        let bytes = contents(BlobDigest.chunkSize + 10)
        let path = dir.file("file")
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let fd = open(path, O_RDONLY)
        try #require(fd >= 0)
        defer { close(fd) }
        var seen: [UInt8] = []
        var chunks = 0
        try BlobDigest.readChunks(fd: fd, size: Int64(bytes.count), path: path) { chunk in
            #expect(chunk.count <= BlobDigest.chunkSize)
            seen += chunk
            chunks += 1
        }
        #expect(seen == bytes && chunks == 2)
        // The body's error comes out as it was thrown, not as a read failure.
        _ = lseek(fd, 0, SEEK_SET)
        let mine = GitError(function: "mine", code: -42, message: "stopped by the body")
        let thrown = #expect(throws: GitError.self) {
            try BlobDigest.readChunks(fd: fd, size: Int64(bytes.count), path: path) { (_) throws(GitError) in throw mine }
        }
        #expect(thrown == mine)
    }
}
