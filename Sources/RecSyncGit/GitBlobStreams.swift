import CLibGit2
import Crypto
import Glibc
import RecSyncModel
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
    public static let chunkSize = ContentDigest.chunkSize

    /// The digest of an open file's content from its current offset to its end
    /// (`ContentDigest.of(fd:size:path:)`, with the blob ID as a `GitOID`).
    public static func of(fd: Int32, size: Int64, path: String) throws(GitError) -> BlobDigest {
        let digest: ContentDigest
        do { digest = try ContentDigest.of(fd: fd, size: size, path: path) } catch {
            throw GitError(function: "read", code: -1, message: error.message)
        }
        return try BlobDigest(digest, path: path)
    }

    /// The digest of bytes in memory (small contents; tests).
    public static func of(_ bytes: [UInt8]) -> BlobDigest {
        let digest = ContentDigest.of(bytes)
        return BlobDigest(oid: GitOID(hex: digest.blobID) ?? .zero, size: digest.size, sha256: digest.sha256)
    }

    init(_ digest: ContentDigest, path: String) throws(GitError) {
        guard let oid = GitOID(hex: digest.blobID) else {
            throw GitError(function: "SHA1", code: -1, message: "the blob ID of \(path) could not be formed")
        }
        self.init(oid: oid, size: digest.size, sha256: digest.sha256)
    }

    /// Reads exactly `size` bytes from `fd` in chunks, then checks that nothing follows
    /// (`ContentDigest.readChunks`); `body`'s own error comes out as it was thrown.
    public static func readChunks(fd: Int32, size: Int64, path: String, _ body: (UnsafeRawBufferPointer) throws(GitError) -> Void) throws(GitError) {
        var failure: GitError?
        do throws(RecSyncError) {
            try ContentDigest.readChunks(fd: fd, size: size, path: path) { (chunk) throws(RecSyncError) in
                do throws(GitError) { try body(chunk) } catch {
                    failure = error
                    throw .operationCancelled("reading \(path)")
                }
            }
        } catch {
            if let failure { throw failure }
            throw GitError(function: "read", code: -1, message: error.message)
        }
    }

    static func hex<D: Sequence>(_ digest: D) -> String where D.Element == UInt8 {
        ContentDigest.hex(digest)
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
