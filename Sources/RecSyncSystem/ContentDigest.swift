import Crypto
import Glibc
import RecSyncModel

/// What identifies a file's content, as an `AssetReference` names it: its blob ID (SHA-1 of
/// `blob <size>\0` and the content, as git computes it), its length, and its SHA-256 (hex),
/// computed in chunks without a repository. The workspace hashes asset files with it, and
/// the git wrapper builds on it, so the two cannot disagree.
package struct ContentDigest: Sendable, Hashable {
    package let blobID: String
    package let size: Int64
    package let sha256: String

    /// How much of a file is read at once: large files are never held whole.
    package static let chunkSize = 1 << 20

    /// The digest of an open file's content from its current offset to its end. `size` is the
    /// length `fstat` gave; a file that grows or shrinks meanwhile is an error naming `path`,
    /// not a wrong digest.
    package static func of(fd: Int32, size: Int64, path: String) throws(RecSyncError) -> ContentDigest {
        var sha1 = Insecure.SHA1()
        sha1.update(data: Array("blob \(size)\0".utf8))
        var sha256 = SHA256()
        try readChunks(fd: fd, size: size, path: path) { chunk in
            sha1.update(bufferPointer: chunk)
            sha256.update(bufferPointer: chunk)
        }
        return ContentDigest(blobID: hex(sha1.finalize()), size: size, sha256: hex(sha256.finalize()))
    }

    /// The digest of bytes in memory (small contents; tests).
    package static func of(_ bytes: [UInt8]) -> ContentDigest {
        var sha1 = Insecure.SHA1()
        sha1.update(data: Array("blob \(bytes.count)\0".utf8))
        sha1.update(data: bytes)
        return ContentDigest(blobID: hex(sha1.finalize()), size: Int64(bytes.count), sha256: hex(SHA256.hash(data: bytes)))
    }

    /// Reads exactly `size` bytes from `fd` in chunks, then checks that nothing follows.
    package static func readChunks(
        fd: Int32, size: Int64, path: String, _ body: (UnsafeRawBufferPointer) throws(RecSyncError) -> Void
    ) throws(RecSyncError) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        var left = size
        while left > 0 {
            let want = Int(min(Int64(chunkSize), left))
            let n = try Syscall.attempt({ read(fd, buffer.baseAddress, want) }).get("read", path: path, "cannot read")
            if n == 0 {
                throw .fileSystem(path: path, message: "became shorter while it was read (it is being written); try again when it is finished")
            }
            try body(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            left -= Int64(n)
        }
        var probe: UInt8 = 0
        if case .success(let n) = Syscall.attempt({ read(fd, &probe, 1) }), n > 0 {
            throw .fileSystem(path: path, message: "grew while it was read (it is being written); try again when it is finished")
        }
    }

    package static func hex<D: Sequence>(_ digest: D) -> String where D.Element == UInt8 {
        let digits = Array("0123456789abcdef")
        return String(digest.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0xF)]] })
    }
}
