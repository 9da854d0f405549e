import ArgumentParser
import RecSyncEngine
import RecSyncModel
import RecSyncStore

/// `recsync status`: local changes, new zones, conflicts and problems.
struct StatusCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show local changes since the last sync, new zones, conflicts and problems.",
        discussion: """
            One line per item: A new record, M modified, D deleted, Z new zone (created on push), \
            U zone to upload again after an encrypted-data reset (on push), \
            C conflict pending, ! a file that cannot be pushed (with the problem), \
            ? a file that is not a record (a warning: push leaves it alone; hide it with \
            .recsyncignore, gitignore syntax; editor droppings such as *~, *.swp, .#* are \
            always ignored).

            On stderr, when the workspace last pulled from or pushed to its store ("last \
            contact with the store: 3 minutes ago"). A store that cannot be reached does not stop \
            status: it says so on stderr and shows what the workspace alone tells (a file the \
            stat index cannot vouch for counts as modified).

            EXAMPLES
              recsync status
              recsync status --exit-code --quiet || echo "something to push"
              recsync status --json | jq -r '.changes[] | "\\(.kind) \\(.path)"'
            """)

    @OptionGroup var global: GlobalOptions
    @Flag(
        name: .customLong("exit-code"),
        help:
            """
            Exit 2 when conflicts are pending, else 1 when there is something to push or a file that cannot\
             be pushed, else 0 (as 'git diff --exit-code').
            """
    )
    var exitCode = false

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let ws = try context.workspace()
        let report: StatusReport
        do { report = try await context.engine().status() } catch let error where SyncEngine.isUnreachable(error) {
            report = try await SyncEngine.offlineStatus(workspace: ws, storeError: error)
        }
        let console = context.console
        if let storeError = report.storeError {
            console.warning("\(storeError); this status is from the workspace alone")
        }
        if console.json {
            console.document([
                "changes": .array(
                    report.changes.map { c in
                        var o = SyncOutput.recordObject(c.recordID, workspace: ws)
                        o["kind"] = .string(c.kind.rawValue)
                        o["path"] = .string(c.path)
                        return .object(o)
                    }),
                "newZones": .array(
                    report.newZones.map {
                        .object(["zone": .string($0.zoneName), "owner": .string($0.ownerName), "path": .string(ws.relative(ws.zoneDirectory($0)))])
                    }),
                "zonesToUploadAgain": .array(
                    report.zonesToUploadAgain.map {
                        .object(["zone": .string($0.zoneName), "owner": .string($0.ownerName), "path": .string(ws.relative(ws.zoneDirectory($0)))])
                    }),
                "conflicts": .array(report.conflicts.map { .object(SyncOutput.recordObject($0, workspace: ws)) }),
                "problems": .array(report.problems.map(SyncOutput.problemJSON)),
                "untracked": .array(report.untracked.map(SyncOutput.untrackedJSON)),
                "clean": .bool(report.isClean),
                "lastContact": report.lastContact.map { .int($0) } ?? .null,
                "storeChecked": .bool(report.storeError == nil),
            ])
            return status(of: report)
        }
        // The lines are a report for people: --quiet leaves only the exit status (--exit-code).
        for zone in report.newZones { console.info(console.paint("Z", .green) + " " + ws.relative(ws.zoneDirectory(zone)) + "/") }
        for zone in report.zonesToUploadAgain {
            console.info(
                console.paint("U", .yellow) + " " + ws.relative(ws.zoneDirectory(zone))
                    + "/ (encrypted data reset on the store: the next push creates it and uploads its records again)")
        }
        // A record in conflict is shown once, as a conflict.
        for change in report.changes where !report.conflicts.contains(change.recordID) {
            let letter =
                switch change.kind {
                case .new: console.paint("A", .green)
                case .modified: console.paint("M", .yellow)
                case .deleted: console.paint("D", .red)
                }
            console.info("\(letter) \(change.path)")
        }
        for id in report.conflicts { console.info(console.paint("C", .red) + " " + ws.relative(ws.recordPath(id))) }
        for problem in report.problems { console.info(console.paint("!", .red) + " \(problem)") }
        for path in report.untracked { console.info(console.paint("?", .yellow) + " \(path) (\(SyncOutput.untrackedReason))") }
        // On stderr, as hints are: stdout is only the lines above, for a script to parse.
        if let contact = report.lastContact {
            let when = Timestamps.iso8601(contact / 1000 * 1000).replacingOccurrences(of: ".000Z", with: "Z")
            console.note("last contact with the store: \(SyncOutput.ago(contact, now: StoreActor.systemClock())) (\(when))")
        } else {
            console.note("last contact with the store: never (no pull or push yet)")
        }
        if report.isClean {
            console.info("nothing to push; the workspace matches what was last synced")
        } else if !report.conflicts.isEmpty {
            console.hint("settle conflicts with 'recsync resolve --ours|--theirs|--merge [RECORD...]' ('recsync diff' shows both sides)")
        } else if !report.problems.isEmpty {
            console.hint("fix the files marked '!' before pushing")
        } else {
            console.hint("'recsync diff' shows the field changes; 'recsync push' sends them")
        }
        return status(of: report)
    }

    /// With --exit-code, what the workspace holds as the exit status.
    func status(of report: StatusReport) -> Int32 {
        guard exitCode else { return ExitCodes.success }
        if !report.conflicts.isEmpty { return ExitCodes.conflictsPending }
        return report.hasSomethingToPush || !report.problems.isEmpty ? ExitCodes.error : ExitCodes.success
    }
}
