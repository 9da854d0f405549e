import RecSyncEngine
import RecSyncModel
import RecSyncStore
import RecSyncWorkspace

/// Prints what a pull or push did, as text or JSON, and decides the exit status.
struct SyncOutput {
    let console: Console
    let workspace: Workspace

    // MARK: Events

    /// The progress callback, when stderr is a terminal: records fetched and sent update the
    /// one progress line (`ProgressLine`). Zones removed, conflicts, expired tokens and
    /// warnings are in the report printed at the end, once.
    var events: @Sendable (SyncEvent) -> Void {
        let console = console
        guard console.showsProgress else { return { _ in } }
        return { event in ProgressLine.shared.record(event, command: console.command) }
    }

    /// One line on stderr for each pause of `--retry` or `--wait` (not on stdout: with --json
    /// it holds only the final document).
    var retryWait: (RetryWait) -> Void {
        let console = console
        return { wait in
            let count = wait.retries.map { "retry \(wait.retry) of \($0)" } ?? "waiting for the store, retry \(wait.retry)"
            console.warning("\(wait.error.message); trying again in \(String(format: "%.1f", wait.pause)) s (\(count))")
        }
    }

    /// "3 minutes ago": how long before `now` the time `then` was (milliseconds since the epoch).
    static func ago(_ then: Int64, now: Int64) -> String {
        let seconds = (now - then) / 1000
        func count(_ n: Int64, _ unit: String) -> String { "\(n) \(unit)\(n == 1 ? "" : "s") ago" }
        switch seconds {
        case ..<0: return "in the future (this machine's clock was turned back)"
        case ..<10: return "just now"
        case ..<60: return count(seconds, "second")
        case ..<3600: return count(seconds / 60, "minute")
        case ..<(2 * 86_400): return count(seconds / 3600, "hour")
        default: return count(seconds / 86_400, "day")
        }
    }

    // MARK: Pull

    /// Prints a pull report; returns the exit status (conflicts pending → 2).
    func pull(_ report: PullReport, command: String = "pull") throws(RecSyncError) -> Int32 {
        let pending = try workspace.allConflicts().map(\.recordID).sorted()
        for w in report.warnings { console.warning(w) }
        if console.json {
            console.document([
                "zonesChanged": .array(report.zonesChanged.map(zoneJSON)),
                "zonesSkipped": .array(report.zonesSkipped.map(zoneJSON)),
                "zonesRemoved": .array(report.zonesRemoved.map(zoneRemovalJSON)),
                "recordsWritten": .int(Int64(report.recordsWritten)),
                "recordsDeleted": .int(Int64(report.recordsDeleted)),
                "conflicts": .array(report.conflicts.map(recordJSON)),
                "conflictsPending": .array(pending.map(recordJSON)),
                "lostAndFound": .array(report.lostAndFound.map(JSONValue.string)),
                "expiredTokens": .array(report.expiredTokens.map(JSONValue.string)),
                "warnings": .array(report.warnings.map(JSONValue.string)),
            ])
            return pending.isEmpty ? ExitCodes.success : ExitCodes.conflictsPending
        }
        let nothing = report.zonesChanged.isEmpty && report.zonesRemoved.isEmpty && report.conflicts.isEmpty
        if command == "clone" {
            console.info("cloned \(plural(report.zonesChanged.count, "zone")), \(plural(report.recordsWritten, "record"))")
        } else if nothing {
            console.info("already up to date")
        } else {
            var parts: [String] = []
            if !report.zonesChanged.isEmpty {
                parts.append(
                    """
                    pulled \(plural(report.zonesChanged.count, "zone")): \(plural(report.recordsWritten, "record"))\
                     written, \(report.recordsDeleted) deleted
                    """
                )
            }
            if !report.zonesRemoved.isEmpty { parts.append("\(plural(report.zonesRemoved.count, "zone")) removed") }
            if !report.conflicts.isEmpty {
                parts.append(
                    "\(plural(report.conflicts.count, "conflict")): "
                        + report.conflicts.map { workspace.relative(workspace.recordPath($0)) }.joined(separator: ", "))
            }
            console.info(parts.joined(separator: "; "))
        }
        for d in report.zonesRemoved {
            if d.keepsRecordsForUpload(by: workspace.user) {
                console.info(
                    """
                    kept \(workspace.relative(workspace.zoneDirectory(d.zoneID)))/ (zone encryptedDataReset on the\
                     store): the next push creates it and uploads its records again
                    """
                )
            } else if d.reason == .encryptedDataReset {
                console.info(
                    """
                    removed \(workspace.relative(workspace.zoneDirectory(d.zoneID)))/ (its owner\
                     \(d.zoneID.ownerName) reset their encrypted data, which drops the zone; it comes back if they\
                     share it again)
                    """
                )
            } else {
                console.info("removed \(workspace.relative(workspace.zoneDirectory(d.zoneID)))/ (\(why(d)))")
            }
        }
        for path in report.lostAndFound {
            console.out("unpushed edits of a removed zone were saved in \(path)/")
        }
        for what in report.expiredTokens {
            console.info(
                """
                the \(what) token was no longer valid (the store's history was rewritten, or the zone deleted\
                 and created again); fetched again in full
                """
            )
        }
        if !report.lostAndFound.isEmpty {
            console.hint("look through lost+found and copy back what you still need (into a zone that exists)")
        }
        printPending(pending)
        return pending.isEmpty ? ExitCodes.success : ExitCodes.conflictsPending
    }

    // MARK: Push

    /// Prints a push report; returns the exit status (conflicts → 2, records refused → 1).
    func push(_ report: PushReport) throws(RecSyncError) -> Int32 {
        let pending = try workspace.allConflicts().map(\.recordID).sorted()
        // Records held back for a pending conflict are in notSent too: conflicts decide first.
        let status = !pending.isEmpty ? ExitCodes.conflictsPending : report.notSent.isEmpty ? ExitCodes.success : ExitCodes.error
        for path in report.untracked { console.warning("\(path) was not sent: \(Self.untrackedReason)") }
        if console.json {
            var doc: [String: JSONValue] = [
                "zonesCreated": .array(report.zonesCreated.map(zoneJSON)),
                "saved": .array(report.saved.map(recordJSON)),
                "deleted": .array(report.deleted.map(recordJSON)),
                "conflicts": .array(report.conflicts.map(recordJSON)),
                "conflictsPending": .array(pending.map(recordJSON)),
                "notSent": .array(report.notSent.map(Self.problemJSON)),
                "hints": .array(report.remedies.map { .string(CommandError.hint($0)) }),
                "untracked": .array(report.untracked.map(Self.untrackedJSON)),
                "zonesRemoved": .array(report.zonesRemoved.map(zoneRemovalJSON)),
                "lostAndFound": .array(report.lostAndFound.map(JSONValue.string)),
                "overwritten": .array(
                    report.overwritten.map { o in
                        var object = Self.recordObject(o.recordID, workspace: workspace)
                        object["changeTag"] = o.changeTag.map(JSONValue.string) ?? .null
                        object["knownTag"] = o.knownTag.map(JSONValue.string) ?? .null
                        return .object(object)
                    }),
            ]
            doc["commit"] = report.commit.map(JSONValue.string) ?? .null
            console.document(doc)
            return status
        }
        if report.saved.isEmpty && report.deleted.isEmpty && report.zonesCreated.isEmpty && report.conflicts.isEmpty && report.notSent.isEmpty
            && report.zonesRemoved.isEmpty
        {
            console.info("nothing to push")
        } else {
            var parts: [String] = []
            if !report.zonesCreated.isEmpty {
                parts.append(
                    "created " + plural(report.zonesCreated.count, "zone") + " (" + report.zonesCreated.map(\.zoneName).joined(separator: ", ") + ")")
            }
            parts.append("\(plural(report.saved.count, "record")) saved, \(report.deleted.count) deleted")
            if !report.conflicts.isEmpty { parts.append(plural(report.conflicts.count, "conflict")) }
            console.info("pushed: " + parts.joined(separator: "; "))
        }
        for o in report.overwritten {
            let path = workspace.relative(workspace.recordPath(o.recordID))
            if let tag = o.changeTag {
                let what = o.knownTag == nil ? "a version you never pulled" : "a version you had not pulled"
                console.out("overwrote \(path): the store held \(what) (tag \(tag.prefix(12)))")
            } else {
                console.out("brought back \(path): it was deleted on the store since you last pulled it")
            }
        }
        for id in report.saved { console.detail("  saved \(workspace.relative(workspace.recordPath(id)))") }
        for id in report.deleted { console.detail("  deleted \(workspace.relative(workspace.recordPath(id)))") }
        if let commit = report.commit { console.detail("store commit \(commit)") }
        for id in report.conflicts {
            console.out("conflict: \(workspace.relative(workspace.recordPath(id))) changed on the store since you last pulled it")
        }
        for d in report.zonesRemoved where !d.keepsRecordsForUpload(by: workspace.user) {
            console.info("removed \(workspace.relative(workspace.zoneDirectory(d.zoneID)))/ (\(why(d)))")
        }
        for path in report.lostAndFound {
            console.out("unpushed edits of a removed zone were saved in \(path)/")
        }
        for line in report.notSent { console.out("not sent: \(line)") }
        for remedy in report.remedies { console.hint(CommandError.hint(remedy)) }
        printPending(pending)
        return status
    }

    func printPending(_ pending: [RecordID]) {
        guard !pending.isEmpty else { return }
        console.out("\(plural(pending.count, "conflict")) pending:")
        for id in pending { console.out("  " + console.paint("C", .red) + " " + workspace.relative(workspace.recordPath(id))) }
        console.hint("see both sides with 'recsync diff', settle with 'recsync resolve --ours|--theirs|--merge [RECORD...]', then 'recsync push'")
    }

    // MARK: Dry runs

    /// Prints what a push would do; 1 when files would stop it, else 0.
    func pushPlan(_ plan: PushPlan, force: Bool) -> Int32 {
        // The status the push would end with: conflicts (unless forced) before refusals.
        let status = !force && !plan.conflicts.isEmpty ? ExitCodes.conflictsPending : plan.problems.isEmpty ? ExitCodes.success : ExitCodes.error
        if console.json {
            console.document([
                "dryRun": .bool(true),
                "zonesToCreate": .array(plan.zonesToCreate.map(zoneJSON)),
                "changes": .array(
                    plan.changes.map { c in
                        var o = Self.recordObject(c.recordID, workspace: workspace)
                        o["kind"] = .string(c.kind.rawValue)
                        return .object(o)
                    }),
                "conflicts": .array(plan.conflicts.map(recordJSON)),
                "heldBack": .array(plan.heldBack(force: force).map(recordJSON)),
                "deletedOnStore": .array(plan.deletedOnStore.map(recordJSON)),
                "conflictsChecked": .bool(plan.conflictsChecked),
                "conflictsPending": .array(plan.conflictsPending.map(recordJSON)),
                "zonesRemoved": .array(plan.zonesRemoved.map(zoneRemovalJSON)),
                "problems": .array(plan.problems.map(Self.problemJSON)),
                "untracked": .array(plan.untracked.map(Self.untrackedJSON)),
            ])
            return status
        }
        for d in plan.zonesRemoved { console.out("would remove \(workspace.relative(workspace.zoneDirectory(d.zoneID)))/ (\(why(d)))") }
        for z in plan.zonesToCreate { console.out("would create zone \(z.zoneName)") }
        // A record that would conflict is not sent (unless forced): it is listed once, below.
        let conflicting = force ? [] : Set(plan.conflicts)
        let heldBack = Set(plan.heldBack(force: force))
        for c in plan.changes where !conflicting.contains(c.recordID) && !heldBack.contains(c.recordID) {
            let letter =
                switch c.kind {
                case .new: "A";
                case .modified: "M";
                case .deleted: "D"
                }
            console.out("would send \(letter) \(c.path)")
        }
        let deletedOnStore = Set(plan.deletedOnStore)
        for id in plan.conflicts {
            let path = workspace.relative(workspace.recordPath(id))
            if deletedOnStore.contains(id) {
                console.out(
                    force
                        ? "would bring back \(path): it was deleted on the store since you last pulled it"
                        : "would conflict: \(path) was deleted on the store since you last pulled it")
            } else {
                console.out(
                    force
                        ? "would overwrite \(path): the store holds a version you have not pulled"
                        : "would conflict: \(path) changed on the store since you last pulled it")
            }
        }
        for id in heldBack.sorted() {
            console.out("held back: \(workspace.relative(workspace.recordPath(id))) (a record of its zone would conflict, and a zone lands whole)")
        }
        for id in plan.conflictsPending { console.out("held back: \(workspace.relative(workspace.recordPath(id))) (conflict pending)") }
        for p in plan.problems { console.out("would not send: \(p) (its zone is held back; the others go)") }
        if let why = plan.storeError { console.warning("could not ask the store (\(why)); conflicts were not checked") }
        if plan.changes.isEmpty && plan.zonesToCreate.isEmpty && plan.problems.isEmpty { console.info("nothing to push") }
        return status
    }

    /// Prints what a pull would do.
    func pullPlan(_ plan: PullPlan) -> Int32 {
        for w in plan.warnings { console.warning(w) }
        if console.json {
            console.document([
                "dryRun": .bool(true),
                "zonesChanged": .array(plan.zonesChanged.map(zoneJSON)),
                "zonesRemoved": .array(plan.zonesRemoved.map(zoneRemovalJSON)),
                "recordsToWrite": .array(plan.recordsToWrite.map(recordJSON)),
                "recordsToDelete": .array(plan.recordsToDelete.map(recordJSON)),
                "conflicts": .array(plan.conflicts.map(recordJSON)),
                "expiredTokens": .array(plan.expiredTokens.map(JSONValue.string)),
                "warnings": .array(plan.warnings.map(JSONValue.string)),
            ])
            return ExitCodes.success
        }
        for d in plan.zonesRemoved { console.out("would remove \(workspace.relative(workspace.zoneDirectory(d.zoneID)))/ (\(why(d)))") }
        let conflicts = Set(plan.conflicts)
        for id in plan.recordsToWrite where !conflicts.contains(id) { console.out("would write \(workspace.relative(workspace.recordPath(id)))") }
        for id in plan.recordsToDelete where !conflicts.contains(id) { console.out("would delete \(workspace.relative(workspace.recordPath(id)))") }
        for id in plan.conflicts {
            console.out("would conflict: \(workspace.relative(workspace.recordPath(id))) (edited here, changed on the store)")
        }
        for what in plan.expiredTokens { console.out("would fetch again in full: the \(what) token expired") }
        if plan.zonesRemoved.isEmpty && plan.recordsToWrite.isEmpty && plan.recordsToDelete.isEmpty { console.info("already up to date") }
        return ExitCodes.success
    }

    /// Why a zone went, in words: a shared zone that is gone was deleted by its owner or is no
    /// longer shared with this user (the store tells a participant no more than that, as
    /// CloudKit's shared database does).
    func why(_ d: ZoneDeletion) -> String {
        guard d.zoneID.ownerName != workspace.user, d.reason == .deleted else { return "zone \(d.reason.rawValue) on the store" }
        return "\(d.zoneID.ownerName) stopped sharing it with you, or deleted it"
    }

    // MARK: JSON pieces

    func zoneObject(_ z: ZoneID) -> [String: JSONValue] {
        ["zone": .string(z.zoneName), "owner": .string(z.ownerName), "path": .string(workspace.relative(workspace.zoneDirectory(z)))]
    }

    func zoneJSON(_ z: ZoneID) -> JSONValue { .object(zoneObject(z)) }

    func zoneRemovalJSON(_ d: ZoneDeletion) -> JSONValue {
        var o = zoneObject(d.zoneID)
        o["reason"] = .string(d.reason.rawValue)
        return .object(o)
    }

    func recordJSON(_ id: RecordID) -> JSONValue { .object(Self.recordObject(id, workspace: workspace)) }

    /// A file and its problem as `{"path", "message"}` (docs/json.md's `problem`).
    static func problemJSON(_ problem: FileProblem) -> JSONValue {
        .object(["path": .string(problem.path), "message": .string(problem.message)])
    }

    /// A `path: message` line of the library (a push's `notSent`) as `{"path", "message"}` (docs/json.md's
    /// `problem`). The library builds these lines as path, colon, space, message; a line
    /// without that shape is all message.
    static func problemJSON(_ line: String) -> JSONValue {
        guard let split = line.range(of: ": ") else { return .object(["path": .string(""), "message": .string(line)]) }
        return .object(["path": .string(String(line[..<split.lowerBound])), "message": .string(String(line[split.upperBound...]))])
    }

    /// An untracked file as a `problem`.
    static func untrackedJSON(_ path: String) -> JSONValue {
        .object(["path": .string(path), "message": .string(SyncOutput.untrackedReason)])
    }

    static let untrackedReason = "not a record file; add it to .recsyncignore to hide it"

    static func recordObject(_ id: RecordID, workspace ws: Workspace) -> [String: JSONValue] {
        [
            "recordName": .string(id.recordName), "zone": .string(id.zoneID.zoneName), "owner": .string(id.zoneID.ownerName),
            "path": .string(ws.relative(ws.recordPath(id))),
        ]
    }
}

/// "1 record", "3 records".
func plural(_ n: Int, _ word: String) -> String { n == 1 ? "1 \(word)" : "\(n) \(word)s" }
