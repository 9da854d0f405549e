import Foundation
import RecSyncModel
import RecSyncSystem
import RecSyncWorkspace
import Synchronization

/// Where a command's output goes: results on stdout, errors on stderr, progress on stderr only
/// when it is a terminal, colour as `--color` says (by default only on a terminal, never with
/// `NO_COLOR` or `TERM=dumb`).
public struct Console: Sendable {
    public enum Colour: String, Sendable {
        case red = "31", green = "32", yellow = "33", cyan = "36", bold = "1"
    }

    public let quiet: Bool
    public let verbose: Bool
    public let json: Bool
    /// The command's words (`zone delete`): every JSON document and line names it.
    public let command: String
    /// The progress line is drawn on stderr (a terminal, and not quiet): `ProgressLine`.
    public let showsProgress: Bool
    /// Colour codes on stdout.
    public let colours: Bool
    let coloursOnStderr: Bool

    public init(_ options: GlobalOptions, command: String, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.command = command
        quiet = options.quiet
        verbose = options.verbose
        json = options.json
        let stderrTTY = StandardStream.error.isTerminal
        showsProgress = stderrTTY && !options.quiet
        colours = options.color.colours(isTerminal: StandardStream.output.isTerminal, environment: environment)
        coloursOnStderr = options.color.colours(isTerminal: stderrTTY, environment: environment)
    }

    /// A line of the command's result (text mode only; silent with --json).
    public func out(_ line: String) {
        guard !json else { return }
        Self.write(line + "\n", to: .output)
    }

    /// Bytes of the command's result, as they are (text mode only).
    public func out(bytes: [UInt8]) {
        guard !json else { return }
        ProgressLine.shared.clear()
        if StandardStream.output.write(bytes) != nil { Self.stdoutFailed.store(true, ordering: .relaxed) }
    }

    /// A line of information a script does not need (silent with --quiet or --json).
    public func info(_ line: String) {
        guard !quiet else { return }
        out(line)
    }

    /// A line of information on stderr, for commands whose stdout is a feed (silent with --quiet).
    public func note(_ line: String) {
        guard !quiet else { return }
        Self.write(line + "\n", to: .error)
    }

    /// A line shown with --verbose only.
    public func detail(_ line: String) {
        guard verbose else { return }
        out(line)
    }

    /// What to do next: on stderr, so that stdout stays the result a script parses (silent
    /// with --quiet or --json).
    public func hint(_ line: String) {
        guard !quiet && !json else { return }
        let prefix = coloursOnStderr ? "\u{1B}[33mhint:\u{1B}[0m " : "hint: "
        Self.write(prefix + line + "\n", to: .error)
    }

    /// A warning on stderr (not silenced by --json: stdout stays one document).
    public func warning(_ message: String) {
        guard !quiet else { return }
        let prefix = coloursOnStderr ? "\u{1B}[33mrecsync: warning:\u{1B}[0m " : "recsync: warning: "
        Self.write(prefix + message + "\n", to: .error)
    }

    /// An error on stderr as `recsync: <message>`.
    public func error(_ message: String) {
        let prefix = coloursOnStderr ? "\u{1B}[31mrecsync:\u{1B}[0m " : "recsync: "
        Self.write(prefix + message + "\n", to: .error)
    }

    /// The one JSON document of a `--json` run, with `"version": 1` and `"command"` added
    /// (docs/json.md).
    public func document(_ members: [String: JSONValue]) {
        guard json else { return }
        var object = members
        object["version"] = .int(1)
        object["command"] = .string(command)
        Self.write(String(decoding: JSON.serialize(.object(object), pretty: true), as: UTF8.self), to: .output)
    }

    /// One line of a JSON-lines feed, with `"version": 1` and `"command"` added (written
    /// whatever the mode).
    public func jsonLine(_ members: [String: JSONValue]) {
        var object = members
        object["version"] = .int(1)
        object["command"] = .string(command)
        Self.write(String(decoding: JSON.serialize(.object(object), pretty: false), as: UTF8.self) + "\n", to: .output)
    }

    /// Text in a colour, when stdout takes colours.
    public func paint(_ text: String, _ colour: Colour) -> String {
        colours ? "\u{1B}[\(colour.rawValue)m\(text)\u{1B}[0m" : text
    }

    /// Set once a line could not be written to stdout (a full disk, a closed descriptor): a
    /// command whose output is what it delivers (`notifications --ack`) must not go on as if
    /// it had been read.
    static let stdoutFailed = Atomic<Bool>(false)
    public static var outputFailed: Bool { stdoutFailed.load(ordering: .relaxed) }

    /// Writes through `StandardStream`, which never traps (FileHandle.write does, on ENOSPC
    /// or EPIPE).
    static func write(_ text: String, to stream: StandardStream) {
        ProgressLine.shared.clear()
        if stream.write(text) != nil, stream == .output {
            stdoutFailed.store(true, ordering: .relaxed)
        }
    }
}
