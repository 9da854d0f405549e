import ArgumentParser

/// When output is coloured (`--color`).
public enum ColourMode: String, ExpressibleByArgument, CaseIterable, Sendable {
    /// On a terminal, unless `NO_COLOR` is set or `TERM` is `dumb`.
    case auto
    /// Always, even into a pipe or with `NO_COLOR` (`less -R`, a CI log that renders colour).
    case always
    /// Never.
    case never

    /// Whether a stream takes colour codes: `isTerminal` says whether it is a terminal.
    public func colours(isTerminal: Bool, environment: [String: String]) -> Bool {
        switch self {
        case .always: return true
        case .never: return false
        case .auto:
            let noColour = !(environment["NO_COLOR"] ?? "").isEmpty
            return isTerminal && !noColour && environment["TERM"] != "dumb"
        }
    }
}

/// The options every `recsync` command takes.
public struct GlobalOptions: ParsableArguments, Sendable {
    @Option(name: .customShort("C"), help: ArgumentHelp("Run as if recsync was started in <dir>.", valueName: "dir"), completion: .directory)
    public var directory: String?

    @Flag(name: .shortAndLong, help: "Print only errors (and what --json asks for).")
    public var quiet = false

    @Flag(name: .shortAndLong, help: "Print more detail (records saved, store commits, commit messages).")
    public var verbose = false

    @Flag(help: "Print one JSON document on stdout (always with \"version\": 1) instead of text.")
    public var json = false

    @Option(
        name: .customLong("color"),
        help: ArgumentHelp(
            "When to colour the output: auto (on a terminal, unless NO_COLOR is set or TERM is dumb), always, never.", valueName: "when"))
    public var color: ColourMode = .auto

    public init() {}

    public func validate() throws {
        if quiet && verbose { throw ValidationError("--quiet and --verbose cannot be used together") }
    }
}
