import ArgumentParser
import RecSyncModel
import RecSyncStore
import RecSyncWorkspace

/// `recsync show RECORD[@REV]`: a record's fields as a store revision holds them.
struct ShowCommand: RecSyncSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Print a record's fields (canonical plain JSON) as the store holds them at a revision.",
        discussion: """
            REV is a store commit, full or abbreviated, as 'recsync log' prints it; '~N' is \
            the record's Nth version back from its newest one in the store ('~1', or '~', the \
            one before it; '~0' the newest); no @REV (or an empty one) is the store's current \
            version. A record that did not exist at the revision is an error (unknownItem). \
            A record whose name itself ends in '@' and a hash-like word is named with a \
            trailing '@' (todo/x@cafe@). The store is read as last fetched: pull first to see \
            newer commits of a network store.

            EXAMPLES
              recsync show todo/milk
              recsync show todo/milk@~1
              recsync show private/todo/milk.json@3f2a9c1e
              recsync show --json todo/milk@~2
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("The record, and optionally @REV.", discussion: RecordReference.help), completion: Completions.records)
    var record: String

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let ws = try context.workspace()
        let (reference, revision) = StoreRevision.split(record)
        let id = try RecordReference.record(reference, in: ws, from: context.directory)
        let store = try context.history(for: ws)
        let found: RecordAtRevision
        do { found = try await store.record(id, at: revision) } catch {
            guard case .unknownItem(let missing) = error.reason else { throw error }
            let at = revision == .current ? "in the store's current version" : "at revision '\(revision.text)'"
            context.console.hint("'\(missing)' did not exist \(at); 'recsync log \(reference)' lists its versions")
            throw .unknownItem(missing)
        }
        let console = context.console
        if console.json {
            var o = SyncOutput.recordObject(id, workspace: ws)
            o["commit"] = .string(found.commit.commit)
            o["time"] = .int(found.commit.time * 1000)
            o["recordType"] = .string(found.record.recordType)
            o["changeTag"] = found.record.changeTag.map(JSONValue.string) ?? .null
            o["fields"] = .object(found.record.fields.mapValues(WorkspaceEncoding.json(from:)))
            console.document(o)
        } else {
            console.out(bytes: WorkspaceEncoding.encodeFields(found.record.fields))
        }
        return ExitCodes.success
    }
}
