import Foundation
import RecSyncTestSupport
import Testing

/// Help output (snapshots) and the committed completion scripts match the command definitions.
///
/// `RECORD_SNAPSHOTS=1 swift test --filter RecSyncCLITests` rewrites the help snapshots;
/// `make generated` rewrites the completions and the man page.
@Suite struct GeneratedFilesTests {
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
        try assertSnapshot(output.stdout, file: "\(Self.snapshots)/help-\(name.isEmpty ? "recsync" : name).txt",
                           regenerate: "re-record with RECORD_SNAPSHOTS=1 swift test --filter RecSyncCLITests")
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
