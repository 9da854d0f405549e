import Foundation

/// What a finished process printed, and how it exited.
public struct ProcessOutput: Sendable, CustomStringConvertible {
    public let status: Int32
    public let stdout: String
    public let stderr: String

    public var description: String { "exit \(status)\n--- stdout\n\(stdout)--- stderr\n\(stderr)" }

    /// The stdout lines, without the empty last one.
    public var lines: [String] { stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init).filter { !$0.isEmpty } }
}

extension Subprocess {
    /// Runs a process to completion and keeps stdout, stderr and the exit status apart.
    ///
    /// Output goes through temp files, so a chatty child never blocks on a full pipe; stdin
    /// is `input`, or empty.
    public static func capture(_ executable: String, _ arguments: [String], in directory: String, environment: [String: String], input: String? = nil)
        throws -> ProcessOutput
    {
        let scratch = TempDirectory("capture")
        let outPath = scratch.file("stdout"), errPath = scratch.file("stderr")
        _ = FileManager.default.createFile(atPath: outPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        process.environment = environment
        let out = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
        let err = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        defer { try? out.close(); try? err.close() }
        process.standardOutput = out
        process.standardError = err
        let stdin = Pipe()
        process.standardInput = stdin
        try process.run()
        if let input { stdin.fileHandleForWriting.write(Data(input.utf8)) }
        try? stdin.fileHandleForWriting.close()
        process.waitUntilExit()
        return ProcessOutput(
            status: process.terminationStatus,
            stdout: String(decoding: FileManager.default.contents(atPath: outPath) ?? Data(), as: UTF8.self),
            stderr: String(decoding: FileManager.default.contents(atPath: errPath) ?? Data(), as: UTF8.self))
    }
}

/// Runs the built `recsync` executable in a hermetic environment: a fixed user, no colour,
/// 80 columns, and a HOME of its own (nothing read from the real one).
public struct CLIRunner: Sendable {
    public let executable: String
    public let environment: [String: String]

    /// - Parameters:
    ///   - user: `RECSYNC_USER` (nil: unset, so `--user` or the login name decides).
    ///   - home: the HOME directory to use.
    public init(user: String? = "alice", home: String, executable: String = CLIRunner.builtProduct("recsync")) {
        self.executable = executable
        var env: [String: String] = [
            "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
            "HOME": home,
            "USER": "tester",
            "NO_COLOR": "1",
            "COLUMNS": "80",
            "LANG": "C.UTF-8",
            "TZ": "UTC",
        ]
        if let tmp = ProcessInfo.processInfo.environment["TMPDIR"] { env["TMPDIR"] = tmp }
        if let user { env["RECSYNC_USER"] = user }
        environment = env
    }

    /// An executable built beside the running test binary (`/proc/self/exe`'s directory).
    public static func builtProduct(_ name: String) -> String {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var dir = (exe as NSString).deletingLastPathComponent
        // On platforms with test bundles the binary sits in <dir>/X.xctest/Contents/MacOS.
        while dir.contains(".xctest") { dir = (dir as NSString).deletingLastPathComponent }
        return "\(dir)/\(name)"
    }

    /// Runs `recsync ARGS` in `directory`, with `input` on stdin.
    public func callAsFunction(_ arguments: String..., in directory: String, input: String? = nil) throws -> ProcessOutput {
        try run(arguments, in: directory, input: input)
    }

    public func run(_ arguments: [String], in directory: String, input: String? = nil, environment extra: [String: String] = [:]) throws
        -> ProcessOutput
    {
        try Subprocess.capture(executable, arguments, in: directory, environment: environment.merging(extra) { _, new in new }, input: input)
    }
}
