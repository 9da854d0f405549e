import Foundation
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

/// Help output (snapshots) and the committed completion scripts match the command definitions.
///
/// `RECORD_SNAPSHOTS=1 swift test --filter RecSyncCLITests` rewrites the help snapshots;
/// `make generated` rewrites the completions and the man page.
@Suite(.ownThreads) struct GeneratedFilesTests {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
    static let snapshots = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Snapshots").path

    let home = TempDirectory("generated-home")
    var recsync: CLIRunner { CLIRunner(home: home.path) }

    /// Compares `actual` with a committed file; with RECORD_SNAPSHOTS set, writes it instead.
    func assertSnapshot(_ actual: String, file: String, regenerate: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        if ProcessInfo.processInfo.environment["RECORD_SNAPSHOTS"] != nil {
            try writeFile(file, actual)
            return
        }
        let expected = try #require(readFile(file), "\(file) is missing; \(regenerate)", sourceLocation: sourceLocation)
        #expect(actual == expected, "\(file) is stale; \(regenerate)", sourceLocation: sourceLocation)
    }

    @Test(arguments: [
        ["--help"], ["help", "status"], ["push", "--help"], ["resolve", "--help"],
        ["changes", "--help"], ["zone", "create", "--help"], ["put", "--help"],
    ])
    func helpMatchesSnapshot(_ arguments: [String]) throws {
        let output = try recsync.run(arguments, in: home.path)
        #expect(output.status == 0, "\(output)")
        let name = arguments.filter { $0 != "--help" && $0 != "help" }.joined(separator: "-")
        try assertSnapshot(
            output.stdout, file: "\(Self.snapshots)/help-\(name.isEmpty ? "recsync" : name).txt",
            regenerate: "re-record with RECORD_SNAPSHOTS=1 swift test --filter RecSyncCLITests")
    }

    /// Every subcommand's help ends with EXAMPLES.
    @Test func everySubcommandHasExamples() throws {
        for command in JSONSchemaTests.leafCommands() {
            let output = try recsync.run(["help"] + command.split(separator: " ").map(String.init), in: home.path)
            #expect(output.status == 0 && output.stdout.contains("\nEXAMPLES\n"), "'recsync help \(command)' has no EXAMPLES")
        }
    }

    @Test(arguments: [("bash", "recsync.bash"), ("zsh", "_recsync"), ("fish", "recsync.fish")])
    func completionScriptIsCurrent(_ shell: String, _ file: String) throws {
        let output = try recsync.run(["--generate-completion-script", shell], in: home.path)
        #expect(output.status == 0, "\(output)")
        let path = "\(Self.packageRoot)/completions/\(file)"
        let expected = try #require(readFile(path), "\(path) is missing; run 'make generated'")
        #expect(output.stdout == expected, "\(path) is stale; run 'make generated'")
    }
}

/// The committed man page has the sections a reader looks for and renders without a warning.
@Suite(.ownThreads) struct ManPageTests {
    let page = GeneratedFilesTests.packageRoot + "/man/recsync.1"

    @Test func hasEnvironmentFilesExitStatusAndExamples() throws {
        let text = try #require(readFile(page), "\(page) is missing; run 'make generated'")
        for section in [".Sh ENVIRONMENT", ".Sh FILES", ".Sh EXIT STATUS", ".Sh EXAMPLES", ".Sh SEE ALSO"] {
            #expect(text.contains("\n\(section)\n"), "\(section) is missing from the man page")
        }
        for variable in ["RECSYNC_USER", "RECSYNC_TOKEN", "RECSYNC_USERNAME", "RECSYNC_SSH_KNOWN_HOSTS", "NO_COLOR"] {
            #expect(text.contains(".It Ev \(variable)\n"), "ENVIRONMENT does not describe \(variable)")
        }
        // The plugin's generic exit status and blank lines (mdoc warnings) were replaced.
        #expect(!text.contains(".Ex -std"))
        #expect(!text.contains("\n\n"))
    }

    /// The global options are described once, in OPTIONS, not again under each command.
    @Test func globalOptionsAreDescribedOnceInOptions() throws {
        let text = try #require(readFile(page), "\(page) is missing; run 'make generated'")
        let sections = text.components(separatedBy: "\n.Sh ")
        let options = try #require(sections.first { $0.hasPrefix("OPTIONS\n") }, "the man page has no OPTIONS")
        let commands = try #require(sections.first { $0.hasPrefix("COMMANDS\n") }, "the man page has no COMMANDS")
        #expect(commands.contains("the global options"))
        for entry in [
            ".It Fl C Ar dir", ".It Fl q , -quiet", ".It Fl v , -verbose", ".It Fl -json", ".It Fl -color Ar when", ".It Fl -version",
            ".It Fl h , -help",
        ] {
            #expect(options.components(separatedBy: entry + "\n").count == 2, "OPTIONS does not describe '\(entry)' once")
            #expect(!commands.contains(entry + "\n"), "a command repeats '\(entry)'")
        }
        // The commands' own options are still there.
        #expect(commands.contains(".It Fl -user Ar user\n") && commands.contains(".It Em list\n"))
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/man"), "man is not installed"))
    func rendersWithoutWarnings() throws {
        let output = try Subprocess.capture(
            "/usr/bin/man", ["-l", page], in: GeneratedFilesTests.packageRoot,
            environment: ["PATH": "/usr/bin:/bin", "MANWIDTH": "80", "LANG": "C.UTF-8"])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stderr.isEmpty, "man -l man/recsync.1 warns:\n\(output.stderr)")
        #expect(output.stdout.contains("EXAMPLES"))
    }
}
