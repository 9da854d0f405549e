import ArgumentParser
import Foundation
import RecSyncModel
import RecSyncStore

/// `recsync store compact --before DATE | --keep-last N [STORE]`: folds old history into one commit.
struct StoreCompactCommand: RecSyncSubcommand {
    static var commandPath: String { "store " + (configuration.commandName ?? "") }
    static let configuration = CommandConfiguration(
        commandName: "compact",
        abstract: "Fold the store's old history into one commit, keeping every record.",
        discussion: """
            The history up to a horizon becomes one root commit holding the store as it was \
            at the horizon: every live record, zone, share and tombstone is kept. The commits \
            after it are replayed on top with their trees, authors, messages and times; a last \
            commit adds compaction.json, which maps the replayed commits to their new IDs so \
            that change tokens naming them keep working. Tokens from before the horizon expire: \
            those workspaces fetch everything again on their next pull, keeping their unpushed \
            edits. --keep-last N keeps the N newest commits (the horizon is the parent of the \
            Nth newest); --before DATE keeps the commits made at or after DATE (the horizon is \
            the newest commit older than DATE). With --drop-tombstones, tombstones of zones \
            deleted at or before the horizon are dropped too (purged and reset zones keep \
            theirs: they tell workspaces not to upload, or to upload again); a workspace that \
            never pulled since may then upload such a zone again.

            The store's main branch moves by compare-and-swap: a local store only if no one \
            wrote meanwhile, a network store by a force push that the server accepts only over \
            the head recsync read (other writers' pushes stay non-force; theirs are refused \
            and recomputed on the new history). If someone wrote meanwhile, the compaction is \
            computed again. The old commits stay in the repository until 'git gc' removes them \
            (run 'git gc --prune=now' where the store lives). Without STORE, the current \
            workspace's store. On a terminal recsync asks you to type 'compact'; scripts pass \
            --yes.

            EXAMPLES
              recsync store compact --keep-last 1000
              recsync store compact --before 2026-01-01 ~/stores/notes.git --yes
              recsync store compact --before 2026-06-30T12:00:00Z --drop-tombstones --json --yes
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The store: a path or URL (default: the current workspace's store).", completion: .directory)
    var store: String?

    @Option(help: ArgumentHelp("Keep the commits made at or after DATE (ISO 8601: 2026-01-01, or 2026-01-01T12:00:00Z).", valueName: "date"))
    var before: String?

    @Option(help: ArgumentHelp("Keep the N newest commits.", valueName: "n"))
    var keepLast: Int?

    @Flag(help: "Also drop the tombstones of zones deleted at or before the horizon (never those of purged or reset zones).")
    var dropTombstones = false

    @Flag(name: .shortAndLong, help: "Do not ask: for scripts (without a terminal, recsync refuses unless --yes is given).")
    var yes = false

    @Option(help: "With STORE: who compacts (default: $RECSYNC_USER, else your login name). Without STORE it is the workspace's user.")
    var user: String?

    func validate() throws {
        switch (before, keepLast) {
        case (nil, nil), (.some, .some): throw ValidationError("give exactly one of --before DATE and --keep-last N")
        case (_, let n?) where n < 1: throw ValidationError("--keep-last must be at least 1")
        case (let date?, _) where Self.parseDate(date) == nil:
            throw ValidationError("--before '\(date)' is not an ISO 8601 date (2026-01-01) or date-time with a zone (2026-01-01T12:00:00Z)")
        default: break
        }
        if user != nil && store == nil {
            throw ValidationError("--user goes with STORE: in a workspace, the workspace's user compacts")
        }
    }

    /// Milliseconds since the epoch of `YYYY-MM-DD` (midnight UTC) or a full ISO 8601 date-time.
    static func parseDate(_ text: String) -> Int64? {
        Timestamps.parseISO8601(text.count == 10 ? text + "T00:00:00Z" : text)
    }

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let horizon: CompactionHorizon
        if let keepLast {
            horizon = .keepLast(keepLast)
        } else {
            let ms = Self.parseDate(before ?? "") ?? 0
            horizon = .before(Date(timeIntervalSince1970: TimeInterval(ms) / 1000))
        }
        let what =
            keepLast.map { "rewrite the store's history, keeping only the \($0) newest commits" }
            ?? "rewrite the store's history before \(before ?? "")"
        let target = try StoreTarget.resolve(store, user: user, context: context)
        try Confirmation.require(what, typing: "compact", yes: yes)
        let report = try await StoreLocation.compact(
            target.location, relativeTo: target.base, actor: target.actor, mirror: target.mirror, horizon: horizon,
            dropDeletedTombstones: dropTombstones)
        show(report, store: target.shown, context: context)
        return ExitCodes.success
    }

    private func show(_ report: CompactionReport, store: String, context: CommandContext) {
        context.console.document([
            "store": .string(store),
            "compacted": .bool(report.compacted),
            "oldHead": .string(report.oldHead),
            "newHead": .string(report.newHead),
            "horizon": report.horizon.map { .string($0) } ?? .null,
            "horizonTime": report.horizonTime.map { .int($0) } ?? .null,
            "newRoot": report.newRoot.map { .string($0) } ?? .null,
            "commitsBefore": .int(Int64(report.commitsBefore)),
            "commitsAfter": .int(Int64(report.commitsAfter)),
            "commitsFolded": .int(Int64(report.commitsFolded)),
            "commitsReplayed": .int(Int64(report.commitsReplayed)),
            "tombstonesDropped": .array(report.tombstonesDropped.map { .object(["zone": .string($0.zoneName), "owner": .string($0.ownerName)]) }),
            "tokenMapEntries": .int(Int64(report.tokenMapEntries)),
            "attempts": .int(Int64(report.attempts)),
            "writersHeldOff": .bool(report.writersHeldOff),
            "leasesLeft": .array(report.leasesLeft.map { .string($0) }),
        ])
        if !report.leasesLeft.isEmpty {
            context.console.warning(
                """
                \(store) would not let recsync remove the compaction's lease\
                 (\(report.leasesLeft.joined(separator: ", "))); it stops holding writers at its deadline, but\
                 stays listed until someone allowed to delete references removes it: git push \(store)\
                 \(report.leasesLeft.map { ":\($0)" }.joined(separator: " "))
                """
            )
        }
        guard report.compacted, let horizon = report.horizon, let time = report.horizonTime else {
            context.console.info(
                """
                nothing to compact in \(store): its \(report.commitsBefore) commits are all after the horizon\
                 (or the history before it is already one commit); nothing was changed
                """
            )
            return
        }
        context.console.info(
            """
            compacted \(store): \(report.commitsBefore) commits → \(report.commitsAfter);\
             \(report.commitsFolded) up to \(horizon.prefix(12)) (\(Timestamps.iso8601(time))) folded into\
             one, \(report.commitsReplayed) replayed
            """
        )
        if !report.tombstonesDropped.isEmpty {
            context.console.info(
                """
                dropped the tombstones of \(report.tombstonesDropped.count) deleted zones:\
                 \(report.tombstonesDropped.map(\.description).joined(separator: ", "))
                """
            )
        }
        context.console.hint(
            """
            workspaces with change tokens from before \(Timestamps.iso8601(time)) fetch everything again on\
             their next pull (keeping unpushed edits); the old commits take space until 'git gc --prune=now'\
             runs where the store lives
            """
        )
    }
}
