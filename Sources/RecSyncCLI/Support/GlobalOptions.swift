import ArgumentParser

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

    public init() {}

    public func validate() throws {
        if quiet && verbose { throw ValidationError("--quiet and --verbose cannot be used together") }
    }
}
