import ArgumentParser
import RecSyncModel
import RecSyncStore

/// `recsync store doctor [PATH]`: finds lock files crashed writers left, removes stale ones.
struct StoreDoctorCommand: RecSyncSubcommand {
    static var commandPath: String { "store " + (configuration.commandName ?? "") }
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Find and remove lock files that killed writers left in a store.",
        discussion:
            """
            A lock is removed only when it is older than any write takes and no process has it open. Without\
             PATH, the current workspace's store (for a network store, its mirror in .recsync/mirror).\
             'recsync doctor' runs this and checks the store's content and the workspace too.\n\nEXAMPLES\n \
             recsync store doctor --check\n  recsync store doctor ~/stores/notes.git
            """
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The store's path (default: the current workspace's store).", completion: .directory)
    var path: String?

    @Flag(help: "Only report; remove nothing.")
    var check = false

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let target: String
        let findings: [StoreLockFinding]
        if let path {
            target = try StoreLocation.storePath(path, relativeTo: context.directory)
            findings = try StoreLocation.doctor(at: target, removeStale: !check)
        } else {
            let ws = try context.workspace()
            guard !ws.config.remote.isEmpty else {
                throw .noRemote()
            }
            (target, findings) = try StoreLocation.doctor(remote: ws.config.remote, mirror: ws.mirrorPath, relativeTo: ws.root, removeStale: !check)
        }
        context.console.document([
            "path": .string(target),
            "locks": .array(
                findings.map { .object(["path": .string($0.path), "verdict": .string($0.verdict.rawValue), "ageSeconds": .int(Int64($0.age))]) }),
        ])
        for finding in findings { context.console.info(finding.message) }
        if findings.isEmpty { context.console.info("no lock files in \(target): nothing blocks writes") }
        return findings.contains { $0.verdict == .stale } ? ExitCodes.error : ExitCodes.success
    }
}
