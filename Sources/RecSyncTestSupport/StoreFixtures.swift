import Foundation
import RecSyncModel
import RecSyncStore
import Synchronization

/// A directory under the system temp dir, named after the test, removed when released.
public final class TempDirectory: Sendable {
    public let path: String

    /// `base`: where to make it (default: the system temp dir).
    public init(_ name: String = "test", in base: String? = nil) {
        let safe = name.map { $0.isLetter || $0.isNumber ? $0 : "-" }
        let base = base ?? FileManager.default.temporaryDirectory.path
        path = "\(base)/recsync-\(String(safe).prefix(60))-\(UUID().uuidString.prefix(8))"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    public func file(_ relative: String) -> String { "\(path)/\(relative)" }

    deinit {
        if ProcessInfo.processInfo.environment["RECSYNC_KEEP_TEMP"] == nil {
            try? FileManager.default.removeItem(atPath: path)
        }
    }
}

/// A clock for tests: starts at 2026-01-01T00:00:00Z and moves one second per reading.
public final class FixedClock: Sendable {
    private let now: Atomic<Int64>

    public init(start: Int64 = 1_767_225_600_000) { now = Atomic(start) }

    public var read: @Sendable () -> Int64 {
        { [self] in now.add(1000, ordering: .relaxed).newValue }
    }
}

/// Which store implementation a contract test runs against.
public enum StoreKind: String, CaseIterable, Sendable, CustomStringConvertible {
    case memory
    case git
    /// A git store served by `git daemon` on loopback, each handle a device with its own
    /// mirror. Not in `allCases` (every test would start a server): network tests pick it.
    case network
    /// A git store on a path, of format 2: each zone on a ref of its own (docs/zone-refs.md).
    case zoneRefs

    public static var allCases: [StoreKind] { [.memory, .git, .zoneRefs] }

    public var description: String { rawValue }
}

/// A fresh store of either kind, and handles on it for any user.
public final class StoreFixture: Sendable {
    public let kind: StoreKind
    public let directory: TempDirectory
    public let storage: MemoryStorage
    public let clock = FixedClock()
    /// The server of a `.network` store.
    public let daemon: GitDaemon?
    private let devices = Atomic<Int>(0)

    /// The git store's path (a bare repository) when `kind` is `.git`, or the served
    /// repository when it is `.network`.
    public var path: String { kind == .network ? directory.file("served/store.git") : directory.file("store.git") }

    /// `base`: where to make its directory (default: the system temp dir).
    public init(_ kind: StoreKind, name: String = #function, in base: String? = nil) throws(RecSyncError) {
        self.kind = kind
        directory = TempDirectory(name, in: base)
        storage = MemoryStorage()
        let path = kind == .network ? directory.file("served/store.git") : directory.file("store.git")
        if kind != .memory {
            try GitStore.create(
                at: path, actor: StoreActor(userRecordName: "admin", clock: clock.read),
                format: kind == .zoneRefs ? StoreLayout.zoneRefsFormat : StoreLayout.formatVersion)
        }
        if kind == .network {
            do { daemon = try GitDaemon(basePath: directory.file("served")) } catch {
                throw .networkUnavailable("cannot start git daemon for the test: \(error)")
            }
        } else {
            daemon = nil
        }
    }

    /// Network settings that use nothing of the user running the tests (no keys, no agent,
    /// no credential helpers).
    public var isolatedNetworkOptions: NetworkOptions {
        NetworkOptions(sshDirectory: directory.file("no-ssh-keys"), knownHostsFiles: [directory.file("no-known-hosts")])
    }

    /// A new device on a `.network` store: its own mirror, acting as `user`.
    public func device(as user: String, deviceID: String? = nil, options: NetworkOptions? = nil) throws(RecSyncError) -> GitStore {
        let n = devices.add(1, ordering: .relaxed).newValue
        return try reopen(directory.file("device-\(n)/mirror"), as: user, deviceID: deviceID, options: options)
    }

    /// A handle on a device's existing mirror (`GitStore.path`), as a later process of that
    /// device opens it; `lookingNow: false` leaves the first fetch to the first call.
    public func reopen(_ mirror: String, as user: String, deviceID: String? = nil, options: NetworkOptions? = nil, lookingNow: Bool = true)
        throws(RecSyncError) -> GitStore
    {
        guard let daemon else { throw .invalidArguments("a device needs a .network fixture") }
        let actor = try StoreActor(userRecordName: user, deviceID: deviceID, clock: clock.read)
        return try GitStore.open(
            remote: daemon.url("store.git"), mirror: mirror, actor: actor, options: options ?? isolatedNetworkOptions, lookingNow: lookingNow)
    }

    /// A handle acting as `user`, from the client `deviceID` (nil: the user's shared slot).
    public func store(as user: String, deviceID: String? = nil) throws(RecSyncError) -> any RemoteStore {
        let actor = try StoreActor(userRecordName: user, deviceID: deviceID, clock: clock.read)
        switch kind {
        case .memory: return MemoryStore(storage: storage, actor: actor)
        case .git: return try GitStore(path: path, actor: actor)
        case .zoneRefs: return try GitStore(path: path, actor: actor, acceptingZoneRefs: true)
        case .network: return try device(as: user, deviceID: deviceID)
        }
    }

    /// Rewrites the store's history so that every earlier commit is gone from it (the way a
    /// force-push of rewritten history does): for git, with the real `git`.
    public func rewriteHistory() throws {
        switch kind {
        case .memory:
            storage.rewriteHistory()
        case .git, .network, .zoneRefs:
            let refs = try GitCLI.run(["for-each-ref", "--format=%(refname)", "refs/heads/main", "refs/recsync/zones/"], in: path)
            for ref in refs.split(separator: "\n").map(String.init) {
                let tree = try GitCLI.run(["rev-parse", "\(ref)^{tree}"], in: path).trimmingCharacters(in: .whitespacesAndNewlines)
                let commit = try GitCLI.run(["commit-tree", tree, "-m", "rewritten history"], in: path).trimmingCharacters(
                    in: .whitespacesAndNewlines)
                _ = try GitCLI.run(["update-ref", ref, commit], in: path)
            }
        }
    }
}

/// Runs the real `git` for interoperability checks, in a hermetic environment.
public enum GitCLI {
    public struct Failure: Error, CustomStringConvertible {
        public let arguments: [String]
        public let status: Int32
        public let output: String
        public var description: String { "git \(arguments.joined(separator: " ")) exited \(status): \(output)" }
    }

    @discardableResult
    public static func run(_ arguments: [String], in directory: String, input: String? = nil, stdinFile: String? = nil) throws -> String {
        try Subprocess.run("/usr/bin/git", arguments, in: directory, environment: hermeticEnvironment, input: input, stdinFile: stdinFile)
    }

    /// Commits files into a (bare) store's `main` with git's plumbing, never touching a file
    /// system: so a test can write entries no checkout could hold (a 257-byte name) or that a
    /// file system would fold together (NFC and NFD spellings of one name). A file where a
    /// directory is replaces the directory, and the reverse (`update-index --replace`). The
    /// commit goes on `ref`, which must exist: `main`, or a zone's own ref.
    @discardableResult
    public static func commitFiles(
        _ files: [(path: String, bytes: [UInt8])], removing removals: [String] = [], toStore store: String,
        message: String = "written with plain git",
        ref: String = "refs/heads/main"
    ) throws -> String {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("plumbing-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        var env = hermeticEnvironment
        env["GIT_INDEX_FILE"] = "\(scratch)/index"
        @discardableResult func git(_ arguments: [String], stdinFile: String? = nil) throws -> String {
            try Subprocess.run("/usr/bin/git", arguments, in: store, environment: env, stdinFile: stdinFile)
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        try git(["read-tree", ref])
        for (i, file) in files.enumerated() {
            let blobFile = "\(scratch)/blob\(i)"
            try Data(file.bytes).write(to: URL(fileURLWithPath: blobFile))
            let oid = try git(["hash-object", "-w", "--stdin"], stdinFile: blobFile)
            try git(["update-index", "--add", "--replace", "--cacheinfo", "100644,\(oid),\(file.path)"])
        }
        if !removals.isEmpty {
            // Mode 0 removes an entry; `--force-remove` would want a work tree.
            let listFile = "\(scratch)/removals"
            try Data(removals.map { "0 \(String(repeating: "0", count: 40))\t\($0)\n" }.joined().utf8).write(to: URL(fileURLWithPath: listFile))
            try git(["update-index", "--index-info"], stdinFile: listFile)
        }
        let tree = try git(["write-tree"])
        let commit = try git(["commit-tree", tree, "-p", ref, "-m", message])
        try git(["update-ref", ref, commit])
        return commit
    }

    /// A fixed identity and clock, no user or system config.
    public static var hermeticEnvironment: [String: String] {
        var env = ProcessInfo.processInfo.environment.filter { $0.key == "PATH" || $0.key == "HOME" || $0.key == "TMPDIR" }
        env["GIT_CONFIG_NOSYSTEM"] = "1"
        env["GIT_CONFIG_GLOBAL"] = "/dev/null"
        env["GIT_AUTHOR_NAME"] = "Plain Git"
        env["GIT_AUTHOR_EMAIL"] = "plain@git.invalid"
        env["GIT_COMMITTER_NAME"] = "Plain Git"
        env["GIT_COMMITTER_EMAIL"] = "plain@git.invalid"
        env["GIT_AUTHOR_DATE"] = "2026-01-02T00:00:00Z"
        env["GIT_COMMITTER_DATE"] = "2026-01-02T00:00:00Z"
        return env
    }
}

/// Runs a process to completion and returns its standard output (stderr folded in on failure).
public enum Subprocess {
    public static func run(
        _ executable: String, _ arguments: [String], in directory: String, environment: [String: String]? = nil, input: String? = nil,
        stdinFile: String? = nil
    ) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        if let environment { process.environment = environment }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let stdin = Pipe()
        if let stdinFile {
            process.standardInput = FileHandle(forReadingAtPath: stdinFile)
        } else {
            process.standardInput = stdin
        }
        try process.run()
        if let input { stdin.fileHandleForWriting.write(Data(input.utf8)) }
        try? stdin.fileHandleForWriting.close()
        // Read both pipes fully before waiting so a chatty child cannot block.
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let output = String(decoding: outData, as: UTF8.self)
        guard process.terminationStatus == 0 else {
            throw GitCLI.Failure(
                arguments: [executable] + arguments, status: process.terminationStatus, output: output + String(decoding: errData, as: UTF8.self))
        }
        return output
    }
}

/// Builders that keep tests short.
public enum Build {
    public static func zone(_ name: String, owner: String = "alice") -> ZoneID {
        must { () throws(RecSyncError) in try ZoneID(zoneName: name, ownerName: owner) }
    }

    public static func id(_ name: String, in zone: ZoneID) -> RecordID {
        must { () throws(RecSyncError) in try RecordID(recordName: name, zoneID: zone) }
    }

    public static func record(_ name: String, in zone: ZoneID, type: String = "Note", _ fields: [String: FieldValue] = [:], tag: String? = nil)
        -> Record
    {
        must { () throws(RecSyncError) in
            try Record(recordID: RecordID(recordName: name, zoneID: zone), recordType: type, fields: fields, changeTag: tag)
        }
    }

    public static func ref(_ name: String, _ action: ReferenceAction = .none) -> FieldValue {
        .reference(must { () throws(RecSyncError) in try Reference(recordName: name, action: action) })
    }

    static func must<T>(_ body: () throws(RecSyncError) -> T) -> T {
        do { return try body() } catch { preconditionFailure("test builder: \(error.message)") }
    }
}
