import Glibc
import RecSyncModel

/// One of the process's standard streams, written and read through the system-call layer:
/// EINTR is retried, and a write that cannot finish (a closed pipe, a full disk) returns the
/// `errno` that stopped it instead of trapping, as Foundation's `FileHandle.write` does.
public struct StandardStream: Sendable, Hashable {
    public let fd: Int32

    public init(fd: Int32) { self.fd = fd }

    public static let input = StandardStream(fd: STDIN_FILENO)
    public static let output = StandardStream(fd: STDOUT_FILENO)
    public static let error = StandardStream(fd: STDERR_FILENO)

    /// What an `errno` a write returned means, for a message.
    public static func describe(_ code: Int32) -> String { String(cString: strerror(code)) }

    /// Whether the stream is a terminal.
    public var isTerminal: Bool { isatty(fd) == 1 }

    /// Writes all of `bytes`; nil, or the `errno` that stopped it.
    @discardableResult
    public func write(_ bytes: [UInt8]) -> Int32? { FileIO.writeFully(fd, bytes) }

    /// Writes `text` as UTF-8; nil, or the `errno` that stopped it.
    @discardableResult
    public func write(_ text: String) -> Int32? { write(Array(text.utf8)) }

    /// One line, without its newline; nil at the end of the input (or when it cannot be read).
    public func readLine() -> String? {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            guard case .success(1) = Syscall.attempt({ read(fd, &byte, 1) }) else {
                return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
            }
            if byte == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(byte)
        }
    }
}

extension StandardStream {
    /// The rest of the stream, up to `limit` bytes (more is an error naming `shownAs`).
    public func readAll(limit: Int = 64 << 20, shownAs shown: String = "stdin") throws(RecSyncError) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let n = try chunk.withUnsafeMutableBytes { buffer in
                Syscall.attempt { read(fd, buffer.baseAddress, buffer.count) }
            }.get("read", path: shown, "cannot read")
            if n == 0 { return bytes }
            bytes += chunk[..<n]
            if bytes.count > limit {
                throw .limitExceeded("\(shown): more than \(limit) bytes; give a smaller input")
            }
        }
    }
}

/// A file the user named as input (`import FILE`, `put --file`, `keys import`): a regular file
/// read whole, never a FIFO waited on, up to a limit.
public enum InputFile {
    /// The file's bytes; nil when there is no such file.
    public static func read(_ path: String, limit: Int = 512 << 20) throws(RecSyncError) -> [UInt8]? {
        try FileIO.read(path, limit: limit)
    }

    /// Whether `path` is a directory.
    public static func isDirectory(_ path: String) -> Bool { FileIO.isDirectory(path) }
}
