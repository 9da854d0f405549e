import Foundation
import RecSyncTestSupport
import Testing

/// A temp directory with a store and the built `recsync`, for end-to-end scenarios.
///
/// Every call states the exit status it expects and fails the test with the full output
/// otherwise, so scenarios read as a list of commands.
final class CLIFixture: Sendable {
    let directory: TempDirectory
    let recsync: CLIRunner
    var storePath: String { directory.file("store.git") }

    init(_ name: String = #function, user: String = "alice") throws {
        directory = TempDirectory("cli-\(name)")
        try FileManager.default.createDirectory(atPath: directory.file("home"), withIntermediateDirectories: true)
        recsync = CLIRunner(user: user, home: directory.file("home"))
    }

    /// Creates the store and returns the fixture (for `try CLIFixture().withStore()`).
    func withStore() throws -> CLIFixture {
        try run(["store", "init", "store.git"])
        return self
    }

    /// The path of a workspace (a directory under the fixture).
    func ws(_ name: String) -> String { directory.file(name) }

    /// Clones the store into `name`.
    @discardableResult
    func clone(_ name: String) throws -> String {
        try run(["clone", "store.git", name])
        return ws(name)
    }

    /// Runs recsync in `dir` (a workspace name, or the fixture's root) expecting `status`.
    @discardableResult
    func run(
        _ arguments: [String], in dir: String? = nil, input: String? = nil, environment: [String: String] = [:], expect status: Int32 = 0,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> ProcessOutput {
        let output = try recsync.run(arguments, in: dir.map(ws) ?? directory.path, input: input, environment: environment)
        #expect(output.status == status, "recsync \(arguments.joined(separator: " ")) in \(dir ?? "."):\n\(output)", sourceLocation: sourceLocation)
        return output
    }

    /// A store, workspaces `a` (subscribed to zone notes) and `b`, and one change `b` pushed
    /// that `a` has not been told of.
    static func withOneChangePending(_ name: String = #function) throws -> CLIFixture {
        let f = try CLIFixture(name).withStore()
        try f.clone("a")
        try f.run(["zone", "create", "notes"], in: "a")
        try f.clone("b")
        try f.run(["subscribe", "--zone", "notes"], in: "a")
        try f.put("notes/x", #"{"v": 1}"#, in: "b")
        try f.run(["push"], in: "b")
        return f
    }

    /// Runs recsync in `dir` with its stdout on a file (such as /dev/full) and stderr
    /// discarded; the process, once it has exited.
    func runWritingTo(_ stdoutPath: String, _ arguments: [String], in dir: String) throws -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: recsync.executable)
        p.arguments = arguments
        p.currentDirectoryURL = URL(fileURLWithPath: ws(dir))
        p.environment = recsync.environment
        p.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: stdoutPath))
        p.standardError = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        return p
    }

    /// `recsync put RECORD` with the fields as JSON text.
    func put(_ record: String, _ json: String, in dir: String, type: String? = nil) throws {
        try run(["put", record] + (type.map { ["--type", $0] } ?? []), in: dir, input: json)
    }

    /// The JSON document of a `--json` run.
    func json(_ arguments: [String], in dir: String?, expect status: Int32 = 0, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String:
        Any]
    {
        let output = try run(arguments + ["--json"], in: dir, expect: status, sourceLocation: sourceLocation)
        let object = try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any]
        let doc = try #require(object, "not a JSON object: \(output.stdout)", sourceLocation: sourceLocation)
        #expect(doc["version"] as? Int == 1, sourceLocation: sourceLocation)
        return doc
    }

    /// A record file's fields, parsed.
    func fields(_ dir: String, _ path: String) throws -> [String: Any]? {
        guard let data = FileManager.default.contents(atPath: "\(ws(dir))/\(path)") else { return nil }
        return try JSONSerialization.jsonObject(with: data) as? [String: Any]
    }

    /// The store's head commit, read with the real git.
    func storeHead() throws -> String {
        try GitCLI.run(["rev-parse", "refs/heads/main"], in: storePath).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Record files and sidecars of a workspace (what converged workspaces agree on).
    func records(_ dir: String) -> [String: [UInt8]] { TreeSnapshot.records(ws(dir)) }
}

/// The record paths a JSON report lists under `key`.
func paths(_ doc: [String: Any], _ key: String) -> [String] {
    ((doc[key] as? [[String: Any]]) ?? []).compactMap { $0["path"] as? String }.sorted()
}
