import CLibGit2
import Crypto
import Glibc
import RecSyncSystem

/// What identifies a file's content: its git blob ID, its length, and its SHA-256 (hex).
public struct BlobDigest: Sendable, Hashable {
    public let oid: GitOID
    public let size: Int64
    public let sha256: String

    public init(oid: GitOID, size: Int64, sha256: String) {
        self.oid = oid
        self.size = size
        self.sha256 = sha256
    }

    /// How much of a file is read or written at once: large files are never held whole.
    public static let chunkSize = 1 << 20

    /// The digest of an open file's content from its current offset to its end, read in
    /// chunks, computed without a repository (the blob ID is SHA-1 of `blob <size>\0` and
    /// the content, as git computes it). `size` is the length `fstat` gave; a file that
    /// grows or shrinks meanwhile is an error, not a wrong digest.
    public static func of(fd: Int32, size: Int64, path: String) throws(GitError) -> BlobDigest {
        var sha1 = Insecure.SHA1()
        sha1.update(data: Array("blob \(size)\0".utf8))
        var sha256 = SHA256()
        try readChunks(fd: fd, size: size, path: path) { chunk in
            sha1.update(bufferPointer: chunk)
            sha256.update(bufferPointer: chunk)
        }
        let oidHex = sha1.finalize().map { hexByte($0) }.joined()
        guard let oid = GitOID(hex: oidHex) else {
            throw GitError(function: "SHA1", code: -1, message: "the blob ID of \(path) could not be formed")
        }
        return BlobDigest(oid: oid, size: size, sha256: hex(sha256.finalize()))
    }

    /// The digest of bytes in memory (small contents; tests).
    public static func of(_ bytes: [UInt8]) -> BlobDigest {
        var sha1 = Insecure.SHA1()
        sha1.update(data: Array("blob \(bytes.count)\0".utf8))
        sha1.update(data: bytes)
        let oid = GitOID(hex: hex(sha1.finalize())) ?? .zero
        return BlobDigest(oid: oid, size: Int64(bytes.count), sha256: hex(SHA256.hash(data: bytes)))
    }

    /// Reads exactly `size` bytes from `fd` in chunks, then checks that nothing follows.
    public static func readChunks(fd: Int32, size: Int64, path: String, _ body: (UnsafeRawBufferPointer) throws(GitError) -> Void) throws(GitError) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        var left = size
        while left > 0 {
            let want = Int(min(Int64(chunkSize), left))
            let n: Int
            switch Syscall.attempt({ read(fd, buffer.baseAddress, want) }) {
            case .success(let count): n = count
            case .failure(let failure):
                throw GitError(function: "read", code: -1, message: "cannot read \(path): \(String(cString: strerror(failure.code)))")
            }
            if n == 0 {
                throw GitError(
                    function: "read", code: -1,
                    message: "\(path) became shorter while it was read (it is being written); try again when it is finished")
            }
            try body(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            left -= Int64(n)
        }
        var probe: UInt8 = 0
        if read(fd, &probe, 1) > 0 {
            throw GitError(function: "read", code: -1, message: "\(path) grew while it was read (it is being written); try again when it is finished")
        }
    }

    static func hex<D: Sequence>(_ digest: D) -> String where D.Element == UInt8 {
        digest.map { hexByte($0) }.joined()
    }

    static func hexByte(_ b: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(b >> 4)], digits[Int(b & 0xF)]])
    }
}

extension GitRepository {
    /// The size of a blob from its header (a packed object is not inflated); nil when the
    /// object is missing or not a blob.
    public func blobSize(_ oid: GitOID) throws(GitError) -> Int64? {
        var odb: OpaquePointer?
        try check("git_repository_odb", git_repository_odb(&odb, pointer))
        defer { git_odb_free(odb) }
        var raw = oid.raw
        var size = 0
        var type = GIT_OBJECT_ANY
        let result = git_odb_read_header(&size, &type, odb, &raw)
        if result == GIT_ENOTFOUND.rawValue { git_error_clear(); return nil }
        try check("git_odb_read_header", result)
        return type == GIT_OBJECT_BLOB ? Int64(size) : nil
    }

    /// Stores the content of an open file as a blob, streaming: read in chunks into the
    /// object database's write stream (a loose object written beside and renamed into
    /// place), hashed with SHA-256 on the way. The file is never held whole in memory.
    public func createBlob(fromFD fd: Int32, size: Int64, path: String) throws(GitError) -> BlobDigest {
        var odb: OpaquePointer?
        try check("git_repository_odb", git_repository_odb(&odb, pointer))
        defer { git_odb_free(odb) }
        var stream: UnsafeMutablePointer<git_odb_stream>?
        try check("git_odb_open_wstream", git_odb_open_wstream(&stream, odb, git_object_size_t(size), GIT_OBJECT_BLOB))
        defer { git_odb_stream_free(stream) }
        var sha256 = SHA256()
        try BlobDigest.readChunks(fd: fd, size: size, path: path) { (chunk) throws(GitError) in
            sha256.update(bufferPointer: chunk)
            let result = git_odb_stream_write(stream, chunk.baseAddress?.assumingMemoryBound(to: CChar.self), chunk.count)
            try check("git_odb_stream_write", result)
        }
        var oid = git_oid()
        try check("git_odb_stream_finalize_write", git_odb_stream_finalize_write(&oid, stream))
        return BlobDigest(oid: GitOID(raw: oid), size: size, sha256: BlobDigest.hex(sha256.finalize()))
    }

    /// Writes a blob's content to an open file and returns its digest.
    public func writeBlob(_ oid: GitOID, toFD fd: Int32, path: String) throws(GitError) -> BlobDigest {
        try readBlob(oid) { (chunk) throws(GitError) in try Self.writeAll(fd, chunk, path: path) }
    }

    /// A blob's digest (its SHA-256 computed from its content), read in chunks as
    /// `writeBlob` reads it, written nowhere.
    public func digestBlob(_ oid: GitOID) throws(GitError) -> BlobDigest {
        try readBlob(oid) { _ in }
    }

    /// Hands a blob's content to `body` in chunks, hashing it on the way.
    ///
    /// A loose object is read through the object database's read stream, in chunks. libgit2
    /// 1.5 has no read stream for packed objects (`git_odb_open_rstream` fails for them):
    /// a packed blob is inflated whole once (`git_odb_read`, through small pack windows:
    /// `GitPackWindows.whileReadingLargeObject`), then passed on in chunks.
    func readBlob(_ oid: GitOID, _ body: (UnsafeRawBufferPointer) throws(GitError) -> Void) throws(GitError) -> BlobDigest {
        var odb: OpaquePointer?
        try check("git_repository_odb", git_repository_odb(&odb, pointer))
        defer { git_odb_free(odb) }
        var raw = oid.raw
        var sha256 = SHA256()
        var stream: UnsafeMutablePointer<git_odb_stream>?
        var length = 0
        var type = GIT_OBJECT_ANY
        if git_odb_open_rstream(&stream, &length, &type, odb, &raw) == 0, let stream {
            defer { git_odb_stream_free(stream) }
            guard type == GIT_OBJECT_BLOB else {
                throw GitError(function: "git_odb_open_rstream", code: -1, message: "object \(oid) is not a blob")
            }
            let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: BlobDigest.chunkSize)
            defer { buffer.deallocate() }
            var total = 0
            while true {
                let n = git_odb_stream_read(stream, buffer, BlobDigest.chunkSize)
                try check("git_odb_stream_read", n)
                if n == 0 { break }
                let chunk = UnsafeRawBufferPointer(start: buffer, count: Int(n))
                sha256.update(bufferPointer: chunk)
                try body(chunk)
                total += Int(n)
            }
            guard total == length else {
                throw GitError(function: "git_odb_stream_read", code: -1, message: "object \(oid) ended after \(total) of \(length) bytes")
            }
            return BlobDigest(oid: oid, size: Int64(length), sha256: BlobDigest.hex(sha256.finalize()))
        }
        git_error_clear()
        var object: OpaquePointer?
        try GitPackWindows.whileReadingLargeObject { () throws(GitError) in try check("git_odb_read", git_odb_read(&object, odb, &raw)) }
        defer { git_odb_object_free(object) }
        guard git_odb_object_type(object) == GIT_OBJECT_BLOB else {
            throw GitError(function: "git_odb_read", code: -1, message: "object \(oid) is not a blob")
        }
        let size = git_odb_object_size(object)
        if size > 0, let data = git_odb_object_data(object) {
            var offset = 0
            while offset < size {
                let chunk = UnsafeRawBufferPointer(start: data + offset, count: min(BlobDigest.chunkSize, size - offset))
                sha256.update(bufferPointer: chunk)
                try body(chunk)
                offset += chunk.count
            }
        }
        return BlobDigest(oid: oid, size: Int64(size), sha256: BlobDigest.hex(sha256.finalize()))
    }

    public static func writeAll(_ fd: Int32, _ chunk: UnsafeRawBufferPointer, path: String) throws(GitError) {
        var offset = 0
        while offset < chunk.count {
            switch Syscall.attempt({ write(fd, chunk.baseAddress! + offset, chunk.count - offset) }) {
            case .success(let n): offset += n
            case .failure(let failure):
                throw GitError(function: "write", code: -1, message: "cannot write \(path): \(String(cString: strerror(failure.code)))")
            }
        }
    }
}
