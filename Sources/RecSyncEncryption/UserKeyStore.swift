import Crypto
import Glibc
import RecSyncModel
import RecSyncSystem

/// Where a user's private key lives on this machine: `$XDG_CONFIG_HOME/recsync/keys/`
/// (default `~/.config/recsync/keys/`), one file per user, mode 0600 in a 0700 directory.
///
/// Never inside a workspace or a store: a workspace can itself be a git repository, and the
/// store is what the key protects against.
public struct UserKeyStore: Sendable {
    /// The directory holding the key files.
    public let directory: String

    public init(directory: String) {
        self.directory = directory
    }

    /// The key directory an environment names: `XDG_CONFIG_HOME`, else `HOME/.config`.
    public init(environment: [String: String]) throws(RecSyncError) {
        if let xdg = environment["XDG_CONFIG_HOME"], xdg.hasPrefix("/") {
            directory = "\(xdg)/recsync/keys"
        } else if let home = environment["HOME"], home.hasPrefix("/") {
            directory = "\(home)/.config/recsync/keys"
        } else {
            throw .invalidArguments("cannot tell where to keep encryption keys: set HOME or XDG_CONFIG_HOME to an absolute path")
        }
    }

    /// The key file of a user.
    public func path(for user: String) -> String { "\(directory)/\(NameEscaping.escape(user)).key" }

    /// Where `keys reset` keeps a user's new key until it takes the place of the old one.
    public func pendingPath(for user: String) -> String { "\(path(for: user)).reset" }

    /// The user's private key on this machine; nil when there is none. A file others may
    /// read or write, or in a directory others own or may write, is refused, not used.
    public func load(_ user: String) throws(RecSyncError) -> Curve25519.KeyAgreement.PrivateKey? {
        try load(path(for: user), user: user)
    }

    /// What a user's key file and the key directory look like (`lstat` of both): whatever
    /// `load` checks (kind, owner, mode) or reads (the content) changes it, since a `chmod`
    /// or `chown` moves the change time. A key loaded while this stays the same may be used
    /// again without loading it. Nil when the file is not there.
    public func stamp(of user: String) -> KeyFileStamp? {
        var file = stat(), dir = stat()
        guard lstat(path(for: user), &file) == 0, lstat(directory, &dir) == 0 else { return nil }
        func fields(_ st: stat) -> [Int64] {
            [
                Int64(bitPattern: UInt64(st.st_ino)), Int64(st.st_size), Int64(st.st_mode), Int64(st.st_uid),
                Int64(st.st_mtim.tv_sec), Int64(st.st_mtim.tv_nsec), Int64(st.st_ctim.tv_sec), Int64(st.st_ctim.tv_nsec),
            ]
        }
        return KeyFileStamp(values: fields(file) + fields(dir))
    }

    /// The new key a `keys reset` cut short left (see `savePending`); nil when there is none.
    public func loadPending(_ user: String) throws(RecSyncError) -> Curve25519.KeyAgreement.PrivateKey? {
        try load(pendingPath(for: user), user: user)
    }

    /// Reads a key file: opened without following a link or waiting on a FIFO, and checked
    /// on the open descriptor (a regular file of the current user that only they can read),
    /// so that what is checked is what is read.
    func load(_ file: String, user: String) throws(RecSyncError) -> Curve25519.KeyAgreement.PrivateKey? {
        guard try checkDirectory() else { return nil }
        let fd = open(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            switch errno {
            case ENOENT: return nil
            case ELOOP:
                throw .fileSystem(
                    path: file,
                    message:
                        """
                        the key file is a symbolic link, which recsync does not follow; put the key file itself there\
                         (import it), or reset the key if it is lost
                        """
                ).suggesting(.importKey, .resetKeys)
            default: throw .fileSystem(path: file, message: "cannot open the key file: \(String(cString: strerror(errno)))")
            }
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            throw .fileSystem(path: file, message: "cannot read the key file: \(String(cString: strerror(errno)))")
        }
        guard st.st_mode & S_IFMT == S_IFREG else {
            throw .fileSystem(
                path: file, message: "the key file is not a regular file; remove it, then import the key or reset it"
            ).suggesting(.importKey, .resetKeys)
        }
        guard st.st_uid == getuid() else {
            throw .permissionFailure(
                """
                \(file) belongs to another user (uid \(st.st_uid)); recsync uses only your own key files: remove\
                 it, then import the key or reset it
                """
            ).suggesting(.importKey, .resetKeys)
        }
        guard st.st_mode & 0o077 == 0 else {
            throw .permissionFailure(
                """
                \(file) can be read or written by other users (mode \(String(st.st_mode & 0o777, radix: 8)));\
                 run 'chmod 600 \(file)' if nobody else could have read it, else reset the key
                """
            ).suggesting(.resetKeys)
        }
        return try Self.decode(try Self.read(fd, path: file), user: user, path: file)
    }

    /// Whether the key directory exists; refuses one that is not a directory, belongs to
    /// another user, or others may write to (they could swap the key file in it).
    func checkDirectory() throws(RecSyncError) -> Bool {
        var st = stat()
        guard lstat(directory, &st) == 0 else {
            if errno == ENOENT || errno == ENOTDIR { return false }
            throw .fileSystem(path: directory, message: "cannot look at the key directory: \(String(cString: strerror(errno)))")
        }
        guard st.st_mode & S_IFMT == S_IFDIR else {
            throw .fileSystem(
                path: directory,
                message:
                    "the key directory is not a directory (a link or a file); remove it, then import your key or make one"
            ).suggesting(.importKey, .makeKey)
        }
        guard st.st_uid == getuid() else {
            throw .permissionFailure(
                """
                the key directory \(directory) belongs to another user (uid \(st.st_uid)); recsync uses only a\
                 key directory of your own: set XDG_CONFIG_HOME to a directory of yours
                """
            )
        }
        guard st.st_mode & 0o022 == 0 else {
            throw .permissionFailure(
                """
                the key directory \(directory) can be written by other users (mode\
                 \(String(st.st_mode & 0o777, radix: 8))), who could swap your key file; run 'chmod 700\
                 \(directory)', then check your key's fingerprint
                """
            ).suggesting(.compareKeyFingerprints)
        }
        return true
    }

    /// Writes a user's private key (temp file 0600 → fsync → rename → fsync directory),
    /// replacing any there.
    public func save(_ key: Curve25519.KeyAgreement.PrivateKey, for user: String) throws(RecSyncError) {
        try makeDirectory()
        try Self.write(Self.encode(key, user: user), to: path(for: user), in: directory)
    }

    /// Writes the new key of a `keys reset` beside the current one, durably, before the store
    /// is changed.
    public func savePending(_ key: Curve25519.KeyAgreement.PrivateKey, for user: String) throws(RecSyncError) {
        try makeDirectory()
        try Self.write(Self.encode(key, user: user), to: pendingPath(for: user), in: directory)
    }

    /// Puts the pending key of a reset in place of the current one (rename → fsync directory).
    public func promotePending(_ user: String) throws(RecSyncError) {
        let file = path(for: user)
        guard rename(pendingPath(for: user), file) == 0 else {
            throw .fileSystem(
                path: file,
                message:
                    """
                    cannot put the new key in place (from \(pendingPath(for: user))):\
                     \(String(cString: strerror(errno))); reset the key again, which carries on with the same new\
                     key
                    """
            )
        }
        Self.syncDirectory(directory)
    }

    /// A key file's content: `{"userRecordName", "algorithm": "X25519", "privateKey": base64}`.
    public static func encode(_ key: Curve25519.KeyAgreement.PrivateKey, user: String) -> [UInt8] {
        JSON.serialize(
            .object([
                "userRecordName": .string(user), "algorithm": .string("X25519"),
                "privateKey": .string(Base64.encode(Array(key.rawRepresentation))),
            ]), pretty: true)
    }

    /// Reads a key file's content (also what `keys import` reads).
    public static func decode(_ bytes: [UInt8], user: String, path: String) throws(RecSyncError) -> Curve25519.KeyAgreement.PrivateKey {
        let json: JSONValue
        do { json = try JSON.parse(bytes) } catch {
            throw .fileSystem(path: path, message: "not a recsync key file (\(error.message))")
        }
        guard case .object(let o) = json, case .string("X25519")? = o["algorithm"], case .string(let text)? = o["privateKey"],
            let raw = Base64.decode(text), raw.count == 32
        else { throw .fileSystem(path: path, message: "not a recsync key file: it needs 'algorithm' X25519 and a base64 32-byte 'privateKey'") }
        if case .string(let owner)? = o["userRecordName"], owner != user {
            throw .keyUnavailable("\(path) holds the key of \(owner), not of \(user)")
        }
        do { return try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: raw) } catch {
            throw .fileSystem(path: path, message: "the private key in it is not a valid X25519 key")
        }
    }

    func makeDirectory() throws(RecSyncError) {
        var path = ""
        for part in directory.split(separator: "/") {
            path += "/\(part)"
            if mkdir(path, path == directory ? 0o700 : 0o755) != 0, errno != EEXIST {
                throw .fileSystem(path: path, message: "cannot create the key directory: \(String(cString: strerror(errno)))")
            }
        }
        var st = stat()
        guard lstat(directory, &st) == 0, st.st_mode & S_IFMT == S_IFDIR else {
            throw .fileSystem(path: directory, message: "the key directory is not a directory")
        }
        if st.st_mode & 0o077 != 0, chmod(directory, 0o700) != 0 {
            throw .fileSystem(path: directory, message: "cannot make the key directory private (chmod 700): \(String(cString: strerror(errno)))")
        }
    }

    static func read(_ fd: Int32, path file: String) throws(RecSyncError) -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = try buffer.withUnsafeMutableBytes { b in Syscall.attempt { Glibc.read(fd, b.baseAddress, b.count) } }
                .get("read", path: file, "cannot read the key file")
            if n == 0 { break }
            out += buffer[0..<n]
            if out.count > 65536 { throw .fileSystem(path: file, message: "too large to be a key file") }
        }
        return out
    }

    /// Writes a key file durably and private to its owner (temp file, fsync, rename, fsync of
    /// the directory: `FileIO.writeAtomically`).
    static func write(_ bytes: [UInt8], to file: String, in directory: String) throws(RecSyncError) {
        try FileIO.writeAtomically(file, bytes, mode: 0o600)
    }

    /// Makes a rename in `directory` durable (best effort: some file systems refuse it).
    static func syncDirectory(_ directory: String) {
        let dfd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 {
            _ = fsync(dfd)
            close(dfd)
        }
    }
}

/// See `UserKeyStore.stamp(of:)`.
public struct KeyFileStamp: Sendable, Hashable {
    let values: [Int64]
}
