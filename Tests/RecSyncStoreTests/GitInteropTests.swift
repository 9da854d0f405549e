import Foundation
import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

/// A git store is an ordinary repository: plain git reads it, and recsync copes with what
/// plain git writes into it.
@Suite(.ownThreads) struct GitInteropTests {
    let notes = Build.zone("notes")

    @Test func plainGitReadsTheStore() async throws {
        let fixture = try StoreFixture(.git)
        let alice = try fixture.store(as: "alice")
        try await alice.createZones([notes], defaultRecordType: "Note")
        let saved = try await alice.save([
            Build.record("hello", in: notes, ["title": .string("Hi"), "when": .timestamp(1_767_225_600_000)]),
            Build.record(".hidden/with slash%", in: notes, ["n": .int64(1)]),
        ])
        try GitCLI.run(["fsck", "--strict", "--no-dangling"], in: fixture.path)

        let log = try GitCLI.run(["log", "--format=%an <%ae>|%s", "refs/heads/main"], in: fixture.path)
        let lines = log.split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        #expect(lines[0] == "alice <alice@recsync.invalid>|alice: saved 2 in notes: .hidden/with slash%, hello")
        #expect(lines[1] == "alice <alice@recsync.invalid>|alice: created alice/notes")

        // The change tag is the blob's OID, and the blob is the record's store encoding.
        let path = StoreLayout.recordPath(saved[0].recordID)
        let oid = try GitCLI.run(["rev-parse", "refs/heads/main:\(path)"], in: fixture.path).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(oid == saved[0].changeTag)
        let shown = try GitCLI.run(["show", "refs/heads/main:\(path)"], in: fixture.path)
        var bare = saved[0]
        bare.changeTag = nil
        #expect(shown == String(decoding: StoreEncoding.encode(bare), as: UTF8.self))
        // Awkward names are escaped into safe tree entries.
        let escapedPath = StoreLayout.recordPath(saved[1].recordID)
        #expect(escapedPath.hasSuffix("/%2Ehidden%2Fwith slash%25"))
        #expect(try GitCLI.run(["cat-file", "-t", "refs/heads/main:\(escapedPath)"], in: fixture.path) == "blob\n")
        let manifest = try GitCLI.run(["show", "refs/heads/main:recsync.json"], in: fixture.path)
        #expect(manifest.contains("\"storeID\": \"\(alice.storeID)\""))
    }

    /// A commit's subject names what a small commit changed, so `git log --oneline` (and
    /// `recsync log`) tell commits apart.
    @Test func commitSubjectsNameTheRecordsOfSmallCommits() async throws {
        let fixture = try StoreFixture(.git)
        let alice = try fixture.store(as: "alice")
        let todo = Build.zone("todo"), work = Build.zone("work")
        try await alice.createZones([todo, work], defaultRecordType: "Note")
        let milk = try await alice.save([Build.record("milk", in: todo)])
        _ = try await alice.save(["a", "b", "c"].map { Build.record($0, in: todo) })
        _ = try await alice.save((1...6).map { Build.record("r\($0)", in: todo) })
        _ = try await alice.save([Build.record("x", in: todo), Build.record("y", in: work)])
        _ = try await alice.delete(milk)
        let subjects = try GitCLI.run(["log", "--format=%s", "-5", "refs/heads/main"], in: fixture.path).split(separator: "\n").map(String.init)
        #expect(
            subjects == [
                "alice: deleted todo/milk",
                "alice: saved 2 in todo, work",
                "alice: saved 6 in todo",
                "alice: saved 3 in todo: a, b, c",
                "alice: saved todo/milk",
            ])
        let body = try GitCLI.run(["log", "--format=%b", "-1", "refs/heads/main~2"], in: fixture.path)
        #expect(body.hasPrefix("alice/todo: saved 6: r1, r2, r3, r4, r5, … (1 more)\n"), "\(body)")
        // A name's control characters cannot break the message or reach a terminal.
        _ = try await alice.save([Build.record("a\nb", in: todo), Build.record("t\u{1B}[31m", in: todo)])
        let odd = try GitCLI.run(["log", "--format=%B", "-1", "refs/heads/main"], in: fixture.path)
        #expect(odd.hasPrefix("alice: saved 2 in todo: a%0Ab, t%1B[31m\n\nalice/todo: saved 2: a%0Ab, t%1B[31m\n"), "\(odd)")
    }

    @Test func contentCommittedWithPlainGitIsReadOrRefusedPerItem() async throws {
        let fixture = try StoreFixture(.git)
        let alice = try fixture.store(as: "alice")
        try await alice.createZones([notes])
        try await alice.save([Build.record("kept", in: notes)])
        let dbToken = try await alice.databaseChanges(scope: .private, since: nil).changeToken
        let zoneToken = try await alice.allZoneChanges(notes, since: nil).token

        // A person edits the store with plain git: clone, add files, push.
        let work = fixture.directory.file("work")
        try GitCLI.run(["clone", "-q", fixture.path, work], in: fixture.directory.path)
        let records = "\(work)/\(StoreLayout.recordsPath(notes))"
        func write(_ relative: String, _ text: String) throws {
            let url = URL(fileURLWithPath: "\(records)/\(relative)")
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try text.write(to: url, atomically: true, encoding: .utf8)
        }
        let byHand = Build.record("by-hand", in: notes, ["x": .int64(42)])
        try write(StoreLayout.recordKey("by-hand"), String(decoding: StoreEncoding.encode(byHand), as: UTF8.self))
        try write(StoreLayout.recordKey("broken"), "{ not json")
        let misplacedFanout = StoreLayout.fanout("misplaced") == "00" ? "01" : "00"
        try write("\(misplacedFanout)/misplaced", String(decoding: StoreEncoding.encode(Build.record("misplaced", in: notes)), as: UTF8.self))
        try write(StoreLayout.recordKey("liar"), String(decoding: StoreEncoding.encode(Build.record("someone-else", in: notes)), as: UTF8.self))
        try write("README", "not a fan-out directory")
        try write("\(StoreLayout.fanout("deep"))/deep/inner", "nested")
        try FileManager.default.createDirectory(atPath: "\(records)/\(StoreLayout.fanout("link"))", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: "\(records)/\(StoreLayout.recordKey("link"))", withDestinationPath: "/etc/passwd")
        try "stray".write(toFile: "\(work)/NOTES.txt", atomically: true, encoding: .utf8)
        try GitCLI.run(["add", "-A"], in: work)
        try GitCLI.run(["commit", "-q", "-m", "edited by hand"], in: work)
        try GitCLI.run(["push", "-q", "origin", "HEAD:main"], in: work)

        let db = try await alice.databaseChanges(scope: .private, since: dbToken)
        #expect(db.modifications == [notes])
        #expect(db.warnings.contains { $0.path == "NOTES.txt" })

        let changes = try await alice.recordZoneChanges(zone: notes, since: zoneToken)
        var good: [String] = []
        var bad: [String: RecSyncError] = [:]
        for item in changes.modifications {
            switch item.result {
            case .success(let r): good.append(r.recordID.recordName)
            case .failure(let e): bad[item.recordID.recordName] = e
            }
        }
        #expect(good == ["by-hand"])
        #expect(Set(bad.keys) == ["broken", "misplaced", "liar"])
        #expect(bad.values.allSatisfy { $0.code == .serverRejectedRequest })
        #expect(bad["misplaced"]?.message.contains("fan-out") == true)
        #expect(bad["liar"]?.message.contains("someone-else") == true)
        let warned = Set(changes.warnings.map { $0.path.split(separator: "/").last.map(String.init) ?? "" })
        #expect(warned.isSuperset(of: ["README", "deep", "link"]), "\(changes.warnings)")

        // recsync keeps writing next to the foreign content and leaves it alone.
        try await alice.save([Build.record("after", in: notes)])
        let ls = try GitCLI.run(["ls-tree", "-r", "--name-only", "refs/heads/main"], in: fixture.path)
        #expect(ls.contains("NOTES.txt") && ls.contains("\(StoreLayout.recordsPath(notes))/README"))
        try GitCLI.run(["fsck", "--no-dangling"], in: fixture.path)
    }

    /// A record deleted with plain git whose last version cannot be read: the deletion goes
    /// out with no record type (none can be known) and a warning naming the entry, not with
    /// a made-up type.
    @Test func aDeletionWhoseLastVersionIsUnreadableSaysSo() async throws {
        let fixture = try StoreFixture(.git)
        let alice = try fixture.store(as: "alice")
        try await alice.createZones([notes])
        let work = fixture.directory.file("work")
        try GitCLI.run(["clone", "-q", fixture.path, work], in: fixture.directory.path)
        let broken = "\(work)/\(StoreLayout.recordsPath(notes))/\(StoreLayout.recordKey("broken"))"
        try FileManager.default.createDirectory(atPath: (broken as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try "{ not json".write(toFile: broken, atomically: true, encoding: .utf8)
        try GitCLI.run(["add", "-A"], in: work)
        try GitCLI.run(["commit", "-q", "-m", "a broken record"], in: work)
        try GitCLI.run(["push", "-q", "origin", "HEAD:main"], in: work)
        // The broken record is one failed item of the page; the token goes past it.
        let token = try await alice.recordZoneChanges(zone: notes, since: nil).changeToken

        try GitCLI.run(["rm", "-q", broken], in: work)
        try GitCLI.run(["commit", "-q", "-m", "gone"], in: work)
        try GitCLI.run(["push", "-q", "origin", "HEAD:main"], in: work)
        let changes = try await alice.recordZoneChanges(zone: notes, since: token)
        #expect(changes.deletions.map(\.recordID.recordName) == ["broken"])
        #expect(changes.deletions.first?.recordType == "")
        #expect(
            changes.warnings.contains { $0.path.hasSuffix(StoreLayout.recordKey("broken")) && $0.message.contains("cannot be read") },
            "\(changes.warnings)")
    }

    /// A record entry that is not a blob (a commit's ID written there with plain git) is that
    /// record's failure alone, and its deletion later reads like any other: neither stops the
    /// zone's changes for anyone.
    @Test func anEntryThatIsNotABlobFailsAloneAndSoDoesItsDeletion() async throws {
        let fixture = try StoreFixture(.git)
        let alice = try fixture.store(as: "alice")
        try await alice.createZones([notes])
        _ = try await alice.save([Build.record("kept", in: notes)])
        let work = fixture.directory.file("work")
        try GitCLI.run(["clone", "-q", fixture.path, work], in: fixture.directory.path)
        let head = try GitCLI.run(["rev-parse", "HEAD"], in: work).trimmingCharacters(in: .whitespacesAndNewlines)
        let key = "\(StoreLayout.recordsPath(notes))/\(StoreLayout.recordKey("odd"))"
        try GitCLI.run(["update-index", "--add", "--cacheinfo", "100644,\(head),\(key)"], in: work)
        try GitCLI.run(["commit", "-q", "-m", "a commit where a record belongs"], in: work)
        // git push refuses to pack such a tree: its objects go over by copying, as a writer
        // with file access to the store could.
        func land() throws {
            _ = try Subprocess.run("/bin/cp", ["-rn", "\(work)/.git/objects/.", "\(fixture.path)/objects/"], in: work, environment: [:])
            let commit = try GitCLI.run(["rev-parse", "HEAD"], in: work).trimmingCharacters(in: .whitespacesAndNewlines)
            try GitCLI.run(["update-ref", "refs/heads/main", commit], in: fixture.path)
        }
        try land()

        let first = try await alice.recordZoneChanges(zone: notes, since: nil)
        let odd = try #require(first.modifications.first { $0.recordID.recordName == "odd" })
        guard case .failure(let error) = odd.result else {
            Issue.record("a commit read as a record")
            return
        }
        #expect(error.kind == .storeCorrupt, "\(error)")
        #expect(first.modifications.contains { $0.recordID.recordName == "kept" && (try? $0.result.get()) != nil })

        try GitCLI.run(["rm", "-q", "--cached", key], in: work)
        try GitCLI.run(["commit", "-q", "-m", "gone"], in: work)
        try land()
        let later = try await alice.recordZoneChanges(zone: notes, since: first.changeToken)
        #expect(later.deletions.map(\.recordID.recordName) == ["odd"])
    }

    /// A libgit2 call that fails reaches the caller with libgit2's own report (function,
    /// code, error class) behind the internal error, and in the error's JSON.
    @Test func aGitFailureCarriesTheLibrarysReport() async throws {
        let fixture = try StoreFixture(.git)
        let alice = try fixture.store(as: "alice")
        try await alice.createZones([notes])
        // Every object packed, and a file where each loose-object directory would go: git
        // cannot write a loose object.
        try GitCLI.run(["repack", "-a", "-d", "-q"], in: fixture.path)
        try GitCLI.run(["prune-packed"], in: fixture.path)
        for i in 0..<256 {
            let dir = "\(fixture.path)/objects/\(String(format: "%02x", i))"
            _ = rmdir(dir)
            if !FileManager.default.fileExists(atPath: dir) {
                #expect(FileManager.default.createFile(atPath: dir, contents: Data("not a directory".utf8)))
            }
        }
        do {
            _ = try await alice.save([Build.record("blocked", in: notes)])
            Issue.record("the save went through a blocked object directory")
        } catch let error as RecSyncError {
            guard case .internalError(_, let cause?) = error.reason else {
                Issue.record("not an internal error with a cause: \(error) (\(error.kind))")
                return
            }
            #expect(cause.library == "libgit2")
            #expect(cause.function.hasPrefix("git_"))
            #expect(cause.code < 0)
            #expect(cause.errorClass != nil)
            guard case .object(let o) = error.json, case .object(let c)? = o["cause"] else {
                Issue.record("no cause in \(error.json)")
                return
            }
            #expect(c["function"] == .string(cause.function))
            #expect(o["kind"] == .string("internalError"))
        }
    }

    /// A save whose file plain git blocked (a directory where the record's file belongs)
    /// fails naming that entry, not with libgit2's "cannot replace" or "D/F conflict", and
    /// writes nothing.
    @Test func aWriteBlockedByAnEntryPlainGitMadeNamesIt() async throws {
        let fixture = try StoreFixture(.git)
        let alice = try fixture.store(as: "alice")
        try await alice.createZones([notes])
        let blocked = StoreLayout.recordPath(try RecordID(recordName: "blocked", zoneID: notes))
        try GitCLI.commitFiles([("\(blocked)/inner", Array("x".utf8))], toStore: fixture.path)
        let head = try GitCLI.run(["rev-parse", "refs/heads/main"], in: fixture.path)
        let error = await caught { try await alice.save([Build.record("blocked", in: notes)]) }
        #expect(error?.code == .serverRejectedRequest)
        #expect(error?.message.hasPrefix("\(blocked) is a directory where recsync keeps a file") == true, "\(String(describing: error))")
        #expect(try GitCLI.run(["rev-parse", "refs/heads/main"], in: fixture.path) == head)
    }

    @Test func expiredAfterRewriteAndGarbageCollection() async throws {
        let fixture = try StoreFixture(.git)
        let alice = try fixture.store(as: "alice")
        try await alice.createZones([notes])
        try await alice.save([Build.record("a", in: notes)])
        let token = try await alice.recordZoneChanges(zone: notes, since: nil).changeToken
        try fixture.rewriteHistory()
        try GitCLI.run(["reflog", "expire", "--expire=now", "--all"], in: fixture.path)
        try GitCLI.run(["gc", "-q", "--prune=now"], in: fixture.path)
        #expect(await caught { try await alice.recordZoneChanges(zone: notes, since: token) }?.code == .changeTokenExpired)
        let fresh = try await alice.allZoneChanges(notes, since: nil)
        #expect(names(fresh.records) == ["a"])
    }

    @Test func largeModificationLandsAsOnePack() async throws {
        let fixture = try StoreFixture(.git)
        let alice = try fixture.store(as: "alice")
        try await alice.createZones([notes])
        let records = (0..<1500).map { RecordGenerator.realisticRecord(index: $0, zoneID: notes) }
        let before = try FileManager.default.contentsOfDirectory(atPath: "\(fixture.path)/objects/pack").filter { $0.hasSuffix(".pack") }
        let saved = try await alice.save(records)
        #expect(saved.count == 1500)
        let after = try FileManager.default.contentsOfDirectory(atPath: "\(fixture.path)/objects/pack").filter { $0.hasSuffix(".pack") }
        #expect(after.count == before.count + 1)
        try GitCLI.run(["fsck", "--strict", "--no-dangling"], in: fixture.path)
        let fetched = try await alice.allZoneChanges(notes, since: nil, limit: 1000)
        #expect(fetched.records.count == 1500 && fetched.pages == 2)
        #expect(Set(fetched.records.map(\.changeTag)) == Set(saved.map(\.changeTag)))

        // A second large modification packs only what is new, not the whole store again.
        let edits = saved.prefix(1200).map { r -> Record in
            var r = r
            r.fields["edited"] = .boolean(true)
            return r
        }
        try await alice.save(edits)
        let packs = try FileManager.default.contentsOfDirectory(atPath: "\(fixture.path)/objects/pack").filter { $0.hasSuffix(".idx") }
        #expect(packs.count == before.count + 2)
        let counts = try packs.map { idx in
            try GitCLI.run(["show-index"], in: fixture.path, input: nil, stdinFile: "\(fixture.path)/objects/pack/\(idx)").split(separator: "\n")
                .count
        }
        // 1200 blobs, the changed trees (root, zones, owner, zone, records, ≤256 fan-outs) and the commit.
        #expect(counts.contains { $0 > 1200 && $0 < 1200 + 300 }, "\(counts)")
        try GitCLI.run(["fsck", "--strict", "--no-dangling"], in: fixture.path)
    }

    @Test func openingSomethingThatIsNotAStoreSaysSo() throws {
        let dir = TempDirectory(#function)
        let actor = try StoreActor(userRecordName: "alice")
        #expect(throws: RecSyncError.self) { try GitStore(path: dir.file("missing"), actor: actor) }
        try GitCLI.run(["init", "-q", "--bare", "plain.git"], in: dir.path)
        do {
            _ = try GitStore(path: dir.file("plain.git"), actor: actor)
            Issue.record("a plain repository must not open as a store")
        } catch {
            #expect(error.message.contains("not a recsync store"))
        }
        try GitStore.create(at: dir.file("s.git"), actor: actor)
        #expect(throws: RecSyncError.self) { try GitStore.create(at: dir.file("s.git"), actor: actor) }
    }
}
