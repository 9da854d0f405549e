import RecSyncGit
import RecSyncModel

/// The DESIGN §2 tree in a git repository, read and written through libgit2.
final class GitBackend: StoreBackend {
    static let headRef = "refs/heads/main"
    /// Above this many written records, objects go to one pack file instead of loose objects
    /// (a network store's mirror: always, see `commit`).
    ///
    /// Every loose object is fsynced on its own (≈3 ms each here: 100 edits took 318 ms);
    /// a pack is one file and its index (100 edits: 22 ms). Below the threshold the handful
    /// of loose objects is cheaper than a pack, and fewer small packs pile up.
    static let bulkThreshold = 16

    let repository: GitRepository
    let manifest: StoreManifest
    /// Whether each zone has a ref of its own (store format 2, docs/zone-refs.md).
    let zonesHaveOwnRefs: Bool
    /// Where a zone's entries sit in a commit of the ref that holds it.
    let paths: ZonePaths
    /// Set when `repository` is the mirror of a network store: commits are pushed to it.
    let remote: RemoteMirror?
    /// Where the backend says what it did on its own (`GitStore.notices`).
    let notices = StoreNotices()
    /// Zone documents already read, by the OID of the zone's tree (which fixes its content)
    /// and its path:
    /// walking history commit by commit (subscriptions) lists the zones at every commit, and
    /// most zones are the same tree as at the commit before.
    private var zoneDocuments: [String: Result<RecordZone, RecSyncError>] = [:]
    /// The owner trees `zoneChanges` listed last (a commit's later side is the next one's
    /// earlier side).
    private var ownerTrees: [(tree: GitOID, entries: [GitTreeEntry])] = []
    /// The commit map of the last `compaction.json` read, by its blob.
    private var compactionMarker: (blob: GitOID, commits: [String: String])?

    /// `acceptingZoneRefs`: a store of format 2 (a ref per zone, being built) is opened too.
    init(repository: GitRepository, remote: RemoteMirror? = nil, acceptingZoneRefs: Bool = false) throws(RecSyncError) {
        self.repository = repository
        self.remote = remote
        remote?.notices = notices
        manifest = try Self.manifestAtHead(of: repository, acceptingZoneRefs: acceptingZoneRefs)
        zonesHaveOwnRefs = manifest.format == StoreLayout.zoneRefsFormat
        paths = ZonePaths(ownRefs: zonesHaveOwnRefs)
        if let remote, zonesHaveOwnRefs && !remote.fetchesZoneRefs {
            // The mirror fetched main to read the manifest; now the zones too.
            remote.fetchesZoneRefs = true
            try remote.fetch(into: repository)
        }
    }

    /// The `recsync.json` at the repository's head.
    static func manifestAtHead(of repository: GitRepository, acceptingZoneRefs: Bool = false) throws(RecSyncError) -> StoreManifest {
        let head: GitOID?
        do { head = try repository.referenceTarget(Self.headRef) } catch { throw Self.wrap(error, "reading the store's head") }
        guard let head else {
            throw .notAStore("\(repository.path) has no \(Self.headRef); it is not a recsync store").suggesting(.createStore(path: nil))
        }
        let entry: GitTreeEntry?
        do throws(GitError) {
            entry = try repository.entry(atPath: StoreLayout.manifestPath, inTree: repository.commit(head).tree)
        } catch { throw Self.wrap(error, "reading recsync.json") }
        guard let entry, entry.kind == .blob else {
            throw .notAStore("\(repository.path) has no recsync.json; it is a git repository but not a recsync store")
        }
        let bytes: [UInt8]
        do throws(GitError) { bytes = try repository.blob(entry.oid) } catch { throw Self.wrap(error, "reading recsync.json") }
        return try StoreManifest.decode(bytes, acceptingZoneRefs: acceptingZoneRefs)
    }

    /// A libgit2 failure as an internal error, made where the failing call was (not here).
    static func wrap(_ error: GitError, _ doing: String, function: String = #function, file: String = #fileID, line: Int = #line)
        -> RecSyncError
    {
        .internalError(
            "git failed while \(doing): \(error.function): \(error.message)", cause: error.failure, function: function, file: file, line: line)
    }

    private func git<T>(
        _ doing: @autoclosure () -> String, function: String = #function, file: String = #fileID, line: Int = #line,
        _ body: () throws(GitError) -> T
    ) throws(RecSyncError) -> T {
        do { return try body() } catch { throw Self.wrap(error, doing(), function: function, file: file, line: line) }
    }

    private func oid(_ commit: String) throws(RecSyncError) -> GitOID {
        guard let oid = GitOID(hex: commit) else { throw .badToken(.garbled) }
        return oid
    }

    /// The root tree of a commit.
    private func tree(_ commit: String) throws(RecSyncError) -> GitOID {
        let c = try oid(commit)
        return try git("reading commit \(commit)") { () throws(GitError) in try repository.commit(c).tree }
    }

    private func entry(_ path: String, at commit: String) throws(RecSyncError) -> GitTreeEntry? {
        let root = try tree(commit)
        return try git("reading \(path)") { () throws(GitError) in try repository.entry(atPath: path, inTree: root) }
    }

    /// Format 1: every zone is on the shared ref, `refs/heads/main`; format 2: each on
    /// `refs/recsync/zones/<owner>/<zone>` (`RefNames`).
    func ref(of zone: ZoneID) -> StoreRef { zonesHaveOwnRefs ? .zone(zone) : .shared }

    /// The git ref name of a ref.
    func refName(_ ref: StoreRef) -> String {
        switch ref {
        case .zone(let id) where zonesHaveOwnRefs: RefNames.refName(for: id)
        default: Self.headRef
        }
    }

    func zoneRefs(owner: String?) throws(RecSyncError) -> (refs: [ZoneRefState], warnings: [StoreWarning]) {
        guard zonesHaveOwnRefs else { return ([], []) }
        let prefix = owner.map(RefNames.ownerPrefix) ?? RefNames.zonesPrefix
        let found = try git("listing the zone refs") { () throws(GitError) in try repository.references(under: prefix) }
        var refs: [ZoneRefState] = []
        var warnings: [StoreWarning] = []
        for (name, target) in found {
            guard let parsed = RefNames.parseRefName(name) else {
                warnings.append(StoreWarning(path: name, message: "not a zone ref recsync wrote (its name does not decode); ignored"))
                continue
            }
            do throws(RecSyncError) {
                let zoneID = try zoneID(of: parsed, at: target)
                refs.append(ZoneRefState(zoneID: zoneID, suffix: parsed.suffix, head: target.hex))
            } catch {
                warnings.append(StoreWarning(path: name, message: "zone skipped: \(error.message)"))
            }
        }
        return (refs, warnings)
    }

    /// The zone a zone ref stands for: its name, or for a hashed component the names its
    /// `zone.json` gives (or, once the zone is gone, its `tombstone.json`), checked against the hash.
    private func zoneID(of ref: RefNames.ZoneRefName, at head: GitOID) throws(RecSyncError) -> ZoneID {
        if case .name(let owner) = ref.owner, case .name(let zone) = ref.zone { return try ZoneID(zoneName: zone, ownerName: owner) }
        var path = "\(StoreLayout.zoneRefDir)/\(StoreLayout.zoneFile)"
        var found = try entry(path, at: head.hex)
        if found == nil {
            path = StoreLayout.zoneRefTombstone
            found = try entry(path, at: head.hex)
        }
        guard let e = found, e.kind == .blob else {
            throw .storeCorrupt("\(ref.refName) has a hashed name and no zone.json or tombstone.json naming its zone")
        }
        let bytes = try git("reading \(path)") { () throws(GitError) in try repository.blob(e.oid) }
        let document: JSONValue
        do { document = try JSON.parse(bytes) } catch { throw .storeCorrupt("\(ref.refName): \(path) is not valid JSON (\(error.message))") }
        guard case .object(let o) = document, case .string(let zone)? = o["zoneName"], case .string(let owner)? = o["ownerName"]
        else { throw .storeCorrupt("\(ref.refName): \(path) does not name its zone") }
        let id = try ZoneID(zoneName: zone, ownerName: owner)
        guard ref.matches(id) else { throw .storeCorrupt("\(ref.refName): \(path) names zone '\(id)', which is not this ref's") }
        return id
    }

    func head(of ref: StoreRef) throws(RecSyncError) -> String? {
        if case .zone(let id) = ref, zonesHaveOwnRefs {
            let name = RefNames.refName(for: id)
            return try git("reading \(name)") { () throws(GitError) in try repository.referenceTarget(name) }?.hex
        }
        guard let head = try git("reading the head", { () throws(GitError) in try repository.referenceTarget(Self.headRef) }) else {
            throw .storeCorrupt("the store's \(Self.headRef) is gone; restore it from a clone")
        }
        return head.hex
    }

    func commitInfo(_ commit: String) throws(RecSyncError) -> (parent: String?, message: String) {
        let c = try oid(commit)
        let found = try git("reading commit \(commit)") { () throws(GitError) in try repository.commit(c) }
        return (found.parents.first?.hex, found.message)
    }

    func isInHistory(_ commit: String, head: String) throws(RecSyncError) -> Bool {
        guard let c = GitOID(hex: commit) else { return false }
        let h = try oid(head)
        return try git("checking history") { () throws(GitError) in
            guard try repository.contains(c) else { return false }
            return try repository.isDescendantOrEqual(h, of: c)
        }
    }

    func rewrittenCommit(_ commit: String, head: String) throws(RecSyncError) -> String? {
        guard let e = try entry(CompactionMarker.path, at: head), e.kind == .blob else { return nil }
        if let known = compactionMarker, known.blob == e.oid { return known.commits[commit] }
        let bytes = try git("reading \(CompactionMarker.path)") { () throws(GitError) in try repository.blob(e.oid) }
        // An unreadable marker replays nothing: tokens expire, and clients refetch from nil.
        let commits = CompactionMarker.decode(bytes)?.commits ?? [:]
        compactionMarker = (e.oid, commits)
        return commits[commit]
    }

    /// The last head of format 1 of a store upgraded to a ref per zone (`upgrade.json` on
    /// main); nil for a store made with a ref per zone, or of format 1.
    func upgradedFrom() throws(RecSyncError) -> String? {
        guard zonesHaveOwnRefs, let main = try head(of: .shared), let e = try entry(UpgradeMarker.path, at: main), e.kind == .blob else {
            return nil
        }
        let bytes = try git("reading \(UpgradeMarker.path)") { () throws(GitError) in try repository.blob(e.oid) }
        return UpgradeMarker.decodeFrom(bytes)
    }

    func commitBeforeUpgrade(_ commit: String) throws(RecSyncError) -> String? {
        guard let from = try upgradedFrom() else { return nil }
        if try isInHistory(commit, head: from) { return commit }
        if let replayed = try rewrittenCommit(commit, head: from), try isInHistory(replayed, head: from) { return replayed }
        return nil
    }

    /// A format-1 read that found no `zones` directory at `commit`: when the commit holds a file
    /// there, as format 2's main does, the store was upgraded after this client opened it.
    /// That is refused as the manifest there says, not read as a store without zones (which
    /// would look like every zone deleted).
    private func requireFormatOneZones(at commit: String) throws(RecSyncError) {
        guard !zonesHaveOwnRefs, let e = try entry(StoreLayout.zonesDir, at: commit), e.kind != .tree else { return }
        if let m = try entry(StoreLayout.manifestPath, at: commit), m.kind == .blob {
            _ = try StoreManifest.decode(try git("reading recsync.json") { () throws(GitError) in try repository.blob(m.oid) })
        }
        throw .storeCorrupt(
            "'\(StoreLayout.zonesDir)' at the top of the store's \(Self.headRef) is a file, not the directory of zones; restore it from a clone")
    }

    func zones(at commit: String, owner: String?) throws(RecSyncError) -> (zones: [ZoneEntry], warnings: [StoreWarning]) {
        try requireSharedZones()
        let root = try tree(commit)
        var warnings: [StoreWarning] = []
        let top = try git("listing the store") { () throws(GitError) in try repository.treeEntries(root) }
        for e in top
        where !((e.name == StoreLayout.manifestPath || e.name == CompactionMarker.path) && e.kind == .blob)
            && !((e.name == StoreLayout.zonesDir || e.name == StoreLayout.tombstonesDir || e.name == StoreLayout.usersDir) && e.kind == .tree)
        {
            warnings.append(StoreWarning(path: e.name, message: "unknown entry at the top of the store; ignored"))
        }
        guard let zonesTree = top.first(where: { $0.name == StoreLayout.zonesDir && $0.kind == .tree }) else {
            try requireFormatOneZones(at: commit)
            return ([], warnings)
        }
        var owners = try git("listing owners") { () throws(GitError) in try repository.treeEntries(zonesTree.oid) }
        if let owner {
            let escaped = StoreLayout.escape(owner)
            owners = owners.filter { $0.name == escaped }
        }
        var result: [ZoneEntry] = []
        for ownerEntry in owners {
            let ownerPath = "\(StoreLayout.zonesDir)/\(ownerEntry.name)"
            guard ownerEntry.kind == .tree, let ownerName = StoreLayout.unescape(ownerEntry.name) else {
                warnings.append(StoreWarning(path: ownerPath, message: "not an owner directory recsync wrote; ignored"))
                continue
            }
            let zoneEntries = try git("listing zones") { () throws(GitError) in try repository.treeEntries(ownerEntry.oid) }
            for z in zoneEntries {
                let path = "\(ownerPath)/\(z.name)"
                guard z.kind == .tree, let zoneName = StoreLayout.unescape(z.name) else {
                    warnings.append(StoreWarning(path: path, message: "not a zone directory recsync can use (bad name or not a directory); ignored"))
                    continue
                }
                // A name no workspace can hold (too long once escaped, not NFC — a second
                // spelling of a zone name, …) is reported and skipped: it must not stop the rest.
                let zoneID: ZoneID
                do { zoneID = try ZoneID(zoneName: zoneName, ownerName: ownerName) } catch {
                    warnings.append(StoreWarning(path: path, message: "zone skipped: \(error.message)"))
                    continue
                }
                result.append(zoneEntry(zoneID, tree: z.oid, path: path))
            }
        }
        return (result, warnings)
    }

    /// Zones are listed from the shared ref only in format 1; format 2 lists them from their
    /// refs (`zoneRefs`).
    private func requireSharedZones() throws(RecSyncError) {
        if zonesHaveOwnRefs { throw .internalError("a store with a ref per zone lists its zones from their refs (zoneRefs)") }
    }

    /// A zone's entry, its document read once per tree (`zoneDocuments`).
    private func zoneEntry(_ zoneID: ZoneID, tree: GitOID, path: String) -> ZoneEntry {
        let document: Result<RecordZone, RecSyncError>
        let key = "\(tree.hex) \(path)"
        if let known = zoneDocuments[key] {
            document = known
        } else {
            document = readZone(zoneID, tree: tree)
            if zoneDocuments.count >= 20_000 { zoneDocuments.removeAll(keepingCapacity: true) }
            zoneDocuments[key] = document
        }
        return ZoneEntry(zoneID: zoneID, contentID: ZoneContentID(rawValue: tree.hex), zone: document)
    }

    /// Walks both commits' `zones/` trees together and skips every owner and zone subtree
    /// whose OID is equal on both sides: what a commit did not touch costs nothing.
    func zoneChanges(from base: String?, to target: String, owner: String?) throws(RecSyncError) -> (changes: [ZoneChange], warnings: [StoreWarning])
    {
        try requireSharedZones()
        func zonesTree(_ commit: String?) throws(RecSyncError) -> GitOID? {
            guard let commit, let e = try entry(StoreLayout.zonesDir, at: commit), e.kind == .tree else { return nil }
            return e.oid
        }
        func subtrees(_ e: GitTreeEntry?) throws(RecSyncError) -> [GitTreeEntry] {
            guard let e, e.kind == .tree else { return [] }
            // Walking history, one commit's owner tree is the next one's earlier side.
            if let known = ownerTrees.first(where: { $0.tree == e.oid }) { return known.entries }
            let listed = try entries(e.oid)
            ownerTrees.append((e.oid, listed))
            if ownerTrees.count > 4 { ownerTrees.removeFirst() }
            return listed
        }
        let old = try zonesTree(base), new = try zonesTree(target)
        if new == nil { try requireFormatOneZones(at: target) }
        var changes: [ZoneChange] = []
        var warnings: [StoreWarning] = []
        guard old != new else { return (changes, warnings) }
        let escapedOwner = owner.map(StoreLayout.escape)
        for (o, n) in try mergeEntries(entries(old), entries(new)) {
            let name = (n ?? o)!.name
            if let escapedOwner, name != escapedOwner { continue }
            if o?.oid == n?.oid && o?.kind == n?.kind { continue }
            let ownerPath = "\(StoreLayout.zonesDir)/\(name)"
            guard let ownerName = StoreLayout.unescape(name) else {
                if n != nil { warnings.append(StoreWarning(path: ownerPath, message: "not an owner directory recsync wrote; ignored")) }
                continue
            }
            if let n, n.kind != .tree { warnings.append(StoreWarning(path: ownerPath, message: "not an owner directory recsync wrote; ignored")) }
            for (zo, zn) in try mergeEntries(subtrees(o), subtrees(n)) {
                if zo?.oid == zn?.oid && zo?.kind == zn?.kind { continue }
                let zoneName = (zn ?? zo)!.name
                let path = "\(ownerPath)/\(zoneName)"
                // As `zones(at:)` lists them: only what it would list is a zone.
                guard let unescaped = StoreLayout.unescape(zoneName) else {
                    if zn != nil {
                        warnings.append(
                            StoreWarning(path: path, message: "not a zone directory recsync can use (bad name or not a directory); ignored"))
                    }
                    continue
                }
                let zoneID: ZoneID
                do { zoneID = try ZoneID(zoneName: unescaped, ownerName: ownerName) } catch {
                    if zn != nil { warnings.append(StoreWarning(path: path, message: "zone skipped: \(error.message)")) }
                    continue
                }
                let before = zo.flatMap { $0.kind == .tree ? zoneEntry(zoneID, tree: $0.oid, path: path) : nil }
                let after = zn.flatMap { $0.kind == .tree ? zoneEntry(zoneID, tree: $0.oid, path: path) : nil }
                if let zn, zn.kind != .tree {
                    warnings.append(StoreWarning(path: path, message: "not a zone directory recsync can use (bad name or not a directory); ignored"))
                }
                if before == nil && after == nil { continue }
                changes.append(ZoneChange(before: before, after: after))
            }
        }
        return (changes, warnings)
    }

    private func readZone(_ zoneID: ZoneID, tree: GitOID) -> Result<RecordZone, RecSyncError> {
        let path = paths.shown(paths.zoneFile(zoneID), in: zoneID)
        return Result { () throws(RecSyncError) -> RecordZone in
            let bytes = try git("reading \(path)") { () throws(GitError) -> [UInt8]? in
                guard let e = try repository.entry(atPath: StoreLayout.zoneFile, inTree: tree), e.kind == .blob else { return nil }
                return try repository.blob(e.oid)
            }
            guard let bytes else { throw .storeCorrupt("\(path) is missing; the zone directory was not written by recsync") }
            return try ZoneDocuments.decodeZone(bytes, zoneID: zoneID, path: path)
        }
    }

    func zone(_ id: ZoneID, at commit: String) throws(RecSyncError) -> ZoneEntry? {
        if zonesHaveOwnRefs { try requireZoneCommit(id, commit) }
        guard let e = try entry(paths.zoneDir(id), at: commit), e.kind == .tree else {
            try requireFormatOneZones(at: commit)
            return nil
        }
        return ZoneEntry(zoneID: id, contentID: ZoneContentID(rawValue: e.oid.hex), zone: readZone(id, tree: e.oid))
    }

    func zoneContent(_ id: ZoneID, at commit: String) throws(RecSyncError) -> ZoneContentID? {
        // A commit of main from before an upgrade (`commitBeforeUpgrade`) holds the zone where
        // format 1 puts it; no commit of a zone's ref has a manifest.
        var path = paths.zoneDir(id)
        if zonesHaveOwnRefs, try entry(StoreLayout.manifestPath, at: commit) != nil { path = StoreLayout.zoneDir(id) }
        guard let e = try entry(path, at: commit), e.kind == .tree else { return nil }
        return ZoneContentID(rawValue: e.oid.hex)
    }

    /// A zone's ref names a commit the store holds: plain git can point one at anything (a
    /// blob, an object it never pushed), which is that zone's problem (`storeCorrupt`), not
    /// every reader's.
    private func requireZoneCommit(_ id: ZoneID, _ commit: String) throws(RecSyncError) {
        let c = try oid(commit)
        do throws(GitError) { _ = try repository.commit(c) } catch {
            guard error.isNotFound else { throw Self.wrap(error, "reading commit \(commit)") }
            throw .storeCorrupt(
                """
                \(RefNames.refName(for: id)) points at \(commit), which is not a commit this store holds (only plain git\
                 puts one there); zone '\(id)' is not read until its ref is set back to one of its commits
                """
            )
        }
    }

    /// The tree a zone content ID names.
    private func zoneTree(_ content: ZoneContentID) throws(RecSyncError) -> GitOID {
        guard let oid = GitOID(hex: content.rawValue) else { throw .internalError("\(content) is not a zone's tree") }
        return oid
    }

    /// An entry of a version of a zone's directory, by its path in it.
    private func entry(_ path: String, inZone content: ZoneContentID) throws(RecSyncError) -> GitTreeEntry? {
        let tree = try zoneTree(content)
        return try git("reading \(path)") { () throws(GitError) in try repository.entry(atPath: path, inTree: tree) }
    }

    /// The entries of a zone's directory that recsync keeps as directories.
    static let zoneDirectories: Set<String> = [StoreLayout.recordsDir, StoreLayout.clientTokensDir, StoreLayout.assetsDir]

    /// Looks at the zone's directories and, in `records` and `assets`, at their fan-out
    /// directories: one made a file hides its records the same way (read as deleted,
    /// unwritable). Other foreign entries there are passed over where they are met.
    func zoneShapeProblem(_ id: ZoneID, at commit: String) throws(RecSyncError) -> String? {
        let path = paths.zoneDir(id)
        guard let zone = try entry(path, at: commit), zone.kind == .tree else { return nil }
        var bad: (path: String, kind: GitTreeEntry.Kind)?
        for e in try entries(zone.oid) where Self.zoneDirectories.contains(e.name) {
            if e.kind != .tree {
                bad = ("\(path)/\(e.name)", e.kind)
            } else if e.name != StoreLayout.clientTokensDir,
                let f = try entries(e.oid).first(where: { StoreLayout.isFanout($0.name) && $0.kind != .tree })
            {
                bad = ("\(path)/\(e.name)/\(f.name)", f.kind)
            }
            if bad != nil { break }
        }
        guard let bad else { return nil }
        return Self.misshapen(
            bad.path, bad.kind, wanted: .tree, consequence: "zone '\(id)' is neither read nor written until it is a directory again",
            on: paths.ref(id))
    }

    /// What to tell the user about an entry plain git made the wrong kind of thing: a file (a
    /// link, …) where recsync keeps a directory (`wanted` `.tree`), or the reverse; `path` is
    /// in the commits of `ref` (nil: main), and the repair is made there.
    static func misshapen(_ path: String, _ kind: GitTreeEntry.Kind, wanted: GitTreeEntry.Kind, consequence: String, on ref: String? = nil)
        -> String
    {
        func described(_ kind: GitTreeEntry.Kind) -> String {
            switch kind {
            case .blob, .executable: "a file"
            case .tree: "a directory"
            case .symlink: "a symbolic link"
            case .submodule: "a submodule"
            case .other: "an entry of an unknown kind"
            }
        }
        // A clone fetches no zone ref unless asked to.
        let repair =
            ref.map { ref in
                """
                in a clone of the store: 'git fetch origin \(ref):\(ref)', find the commit that did with 'git log \(ref) --\
                 \(path)', revert it on that ref ('git switch --detach \(ref)', 'git revert COMMIT') and 'git push origin\
                 HEAD:\(ref)'
                """
            } ?? "revert the commit that did in a clone of the store ('git log -- \(path)' finds it) and 'git push' the revert"
        return
            """
            \(ref.map { "\($0):" } ?? "")\(path) is \(described(kind)) where recsync keeps \(described(wanted)) (plain git put it\
             there); \(consequence). To repair it, \(repair)
            """
    }

    func tombstone(_ id: ZoneID, at commit: String) throws(RecSyncError) -> ZoneDeletionReason? {
        guard let e = try entry(paths.tombstone(id), at: commit), e.kind == .blob else { return nil }
        let bytes = try git("reading a tombstone") { () throws(GitError) in try repository.blob(e.oid) }
        return ZoneDocuments.decodeTombstone(bytes)
    }

    func clientToken(_ zone: ZoneID, client: String, in content: ZoneContentID) throws(RecSyncError) -> [UInt8]? {
        guard let e = try entry(StoreLayout.clientTokenKey(client), inZone: content), e.kind == .blob else { return nil }
        return try git("reading a client change token") { () throws(GitError) in try repository.blob(e.oid) }
    }

    func userKey(_ user: String, at commit: String) throws(RecSyncError) -> [UInt8]? {
        guard let e = try entry(StoreLayout.userKeyPath(user), at: commit), e.kind == .blob else { return nil }
        return try git("reading a user's public key") { () throws(GitError) in try repository.blob(e.oid) }
    }

    func recordTag(_ id: RecordID, at commit: String) throws(RecSyncError) -> String? {
        guard let e = try entry(paths.record(id), at: commit), e.kind == .blob || e.kind == .executable else { return nil }
        return e.oid.hex
    }

    func blobSize(_ tag: String) throws(RecSyncError) -> Int? {
        guard let o = GitOID(hex: tag) else { return nil }
        // Nil for an object that is missing or is not a blob (a commit or tree someone put
        // where a record belongs): read as a version the store does not hold.
        return try git("reading the size of object \(tag)") { () throws(GitError) -> Int? in
            try repository.blobSize(o).map { Int($0) }
        }
    }

    func blob(_ tag: String) throws(RecSyncError) -> [UInt8]? {
        guard let o = GitOID(hex: tag) else { return nil }
        return try git("reading object \(tag)") { () throws(GitError) -> [UInt8]? in
            guard try repository.contains(o) else { return nil }
            do throws(GitError) { return try repository.blob(o) } catch {
                if error.isNotFound { return nil }  // there, but not a blob
                throw error
            }
        }
    }

    /// The records tree of a version of a zone.
    private func recordsTree(_ content: ZoneContentID?) throws(RecSyncError) -> GitOID? {
        guard let content, let e = try entry(StoreLayout.recordsDir, inZone: content), e.kind == .tree else { return nil }
        return e.oid
    }

    private func entries(_ tree: GitOID?) throws(RecSyncError) -> [GitTreeEntry] {
        guard let tree else { return [] }
        return try git("reading a tree") { () throws(GitError) in try repository.treeEntries(tree) }
    }

    /// Our own diff: walks both records trees in git order and skips every subtree whose OID
    /// is equal on both sides, so the cost follows the number of changes, not the zone's size.
    func recordChanges(zone: ZoneID, from base: ZoneContentID?, to target: ZoneContentID?, after: String?, limit: Int) throws(RecSyncError)
        -> RawRecordChangeBatch
    {
        let recordsPath = paths.shown(paths.records(zone), in: zone)
        var batch = RawRecordChangeBatch(changes: [], more: false, warnings: [])
        let targetEntry = try target.flatMap { c throws(RecSyncError) in try entry(StoreLayout.recordsDir, inZone: c) }
        if let targetEntry, targetEntry.kind != .tree {
            // Not "every record deleted": nothing can be read from it (`zoneShapeProblem`).
            batch.warnings.append(
                StoreWarning(
                    path: recordsPath,
                    message: Self.misshapen(
                        paths.records(zone), targetEntry.kind, wanted: .tree, consequence: "the zone's records are not read", on: paths.ref(zone))))
            return batch
        }
        let baseTree = try recordsTree(base)
        let targetTree = targetEntry?.oid
        if baseTree == targetTree { return batch }
        var afterFanout: String?
        var afterName: String?
        if let after, let slash = after.firstIndex(of: "/") {
            afterFanout = String(after[..<slash])
            afterName = String(after[after.index(after: slash)...])
        }
        let topPairs = try mergeEntries(entries(baseTree), entries(targetTree))
        for (old, new) in topPairs {
            let name = (new ?? old)!.name
            if let afterFanout, name < afterFanout { continue }
            if old?.oid == new?.oid { continue }
            guard StoreLayout.isFanout(name), old.map({ $0.kind == .tree }) ?? true, new.map({ $0.kind == .tree }) ?? true else {
                if new != nil { batch.warnings.append(StoreWarning(path: "\(recordsPath)/\(name)", message: "not a fan-out directory; ignored")) }
                continue
            }
            let pairs = try mergeEntries(entries(old?.oid), entries(new?.oid))
            for (o, n) in pairs {
                let entryName = (n ?? o)!.name
                if name == afterFanout, let afterName, entryName <= afterName { continue }
                if o?.oid == n?.oid && o?.kind == n?.kind { continue }
                let path = "\(recordsPath)/\(name)/\(entryName)"
                let usable: (GitTreeEntry?) -> GitTreeEntry? = { e in
                    guard let e else { return nil }
                    return e.kind == .blob || e.kind == .executable ? e : nil
                }
                if let n, usable(n) == nil {
                    batch.warnings.append(
                        StoreWarning(
                            path: path, message: n.kind == .symlink ? "a symbolic link, not a record; ignored" : "not a record file; ignored"))
                }
                let oldBlob = usable(o), newBlob = usable(n)
                if oldBlob == nil && newBlob == nil { continue }
                guard let recordName = StoreLayout.unescape(entryName) else {
                    if newBlob != nil {
                        batch.warnings.append(StoreWarning(path: path, message: "the file name is not an escaped record name; ignored"))
                    }
                    continue
                }
                // A misplaced entry was never the record (reading it only warns): its removal,
                // as when someone moves it where it belongs, deletes nothing.
                let misplaced = StoreLayout.fanout(recordName) != name
                if misplaced && newBlob == nil { continue }
                if batch.changes.count == limit {
                    batch.more = true
                    return batch
                }
                var problem: String?
                if misplaced {
                    problem = "record '\(recordName)' belongs in fan-out directory '\(StoreLayout.fanout(recordName))', not '\(name)'; move it there"
                }
                batch.changes.append(
                    RawRecordChange(
                        key: "\(name)/\(entryName)", recordName: recordName, old: oldBlob?.oid.hex, new: newBlob?.oid.hex, problem: problem))
            }
        }
        return batch
    }

    /// Pairs the entries of two trees by name, in git order.
    private func mergeEntries(_ a: [GitTreeEntry], _ b: [GitTreeEntry]) throws(RecSyncError) -> [(GitTreeEntry?, GitTreeEntry?)] {
        var result: [(GitTreeEntry?, GitTreeEntry?)] = []
        result.reserveCapacity(max(a.count, b.count))
        var i = 0, j = 0
        while i < a.count || j < b.count {
            if i == a.count { result.append((nil, b[j])); j += 1; continue }
            if j == b.count { result.append((a[i], nil)); i += 1; continue }
            if a[i].name == b[j].name { result.append((a[i], b[j])); i += 1; j += 1; continue }
            let c = GitTreeEntry.gitOrder(a[i].name, aIsTree: a[i].kind == .tree, b[j].name, bIsTree: b[j].kind == .tree)
            if c < 0 { result.append((a[i], nil)); i += 1 } else { result.append((nil, b[j])); j += 1 }
        }
        return result
    }

    func recordChangeCountEstimate(zone: ZoneID, from base: ZoneContentID?, to target: ZoneContentID?) throws(RecSyncError) -> Int {
        guard let targetTree = try recordsTree(target) else { return 0 }
        let baseTree = try recordsTree(base)
        if baseTree == targetTree { return 0 }
        var count = 0
        for (old, new) in try mergeEntries(entries(baseTree), entries(targetTree)) where old?.oid != new?.oid {
            // Only fan-out directories hold records (`recordChanges` warns of anything else).
            let oldTree = old?.kind == .tree ? old?.oid : nil, newTree = new?.kind == .tree ? new?.oid : nil
            for (o, n) in try mergeEntries(entries(oldTree), entries(newTree)) where o?.oid != n?.oid { count += 1 }
        }
        return count
    }

    func recordCountEstimate(zone: ZoneID, in content: ZoneContentID?) throws(RecSyncError) -> Int {
        var count = 0
        for fan in try entries(recordsTree(content)) where fan.kind == .tree {
            count += try git("reading a tree") { () throws(GitError) in try repository.treeEntryCount(fan.oid) }
        }
        return count
    }

    func allRecords(zone: ZoneID, in content: ZoneContentID?) throws(RecSyncError) -> [(recordName: String, tag: String)] {
        var result: [(recordName: String, tag: String)] = []
        for fan in try entries(recordsTree(content)) where fan.kind == .tree {
            for e in try entries(fan.oid) where e.kind == .blob || e.kind == .executable {
                if let name = StoreLayout.unescape(e.name), StoreLayout.fanout(name) == fan.name {
                    result.append((name, e.oid.hex))
                }
            }
        }
        return result
    }

    func storeAsset(fd: Int32, size: Int64, path: String) throws(RecSyncError) -> AssetReference {
        let digest = try git("storing \(path) as an asset") { () throws(GitError) in try repository.createBlob(fromFD: fd, size: size, path: path) }
        return try AssetReference(oid: digest.oid.hex, size: digest.size, sha256: digest.sha256)
    }

    func assetSize(_ oid: String) throws(RecSyncError) -> Int64? {
        guard let o = GitOID(hex: oid) else { return nil }
        return try git("reading the size of asset \(oid)") { () throws(GitError) -> Int64? in
            try repository.blobSize(o)
        }
    }

    func readAsset(_ oid: String, toFD fd: Int32, path: String) throws(RecSyncError) -> AssetReference? {
        guard let o = GitOID(hex: oid) else { return nil }
        let digest = try git("reading asset \(oid) into \(path)") { () throws(GitError) -> BlobDigest? in
            guard try repository.contains(o) else { return nil }
            return try repository.writeBlob(o, toFD: fd, path: path)
        }
        guard let digest else { return nil }
        return try AssetReference(oid: digest.oid.hex, size: digest.size, sha256: digest.sha256)
    }

    func assetSHA256(_ oid: String) throws(RecSyncError) -> String? {
        guard let o = GitOID(hex: oid) else { return nil }
        return try git("hashing asset \(oid)") { () throws(GitError) -> String? in
            guard try repository.contains(o) else { return nil }
            return try repository.digestBlob(o).sha256
        }
    }

    func recordAssetBlobs(_ id: RecordID, at commit: String) throws(RecSyncError) -> Set<String> {
        guard let e = try entry(paths.assetDir(id), at: commit), e.kind == .tree else { return [] }
        return Set(try entries(e.oid).filter { $0.kind == .blob }.map(\.oid.hex))
    }

    func commit(on ref: StoreRef, parent: String?, writes: [StoreWrite], message: String, actor: StoreActor, time: Int64) throws(RecSyncError)
        -> CommitOutcome
    {
        let name = refName(ref)
        let recordCount = writes.reduce(0) { n, w in if case .saveRecord = w { n + 1 } else { n } }
        // Large modifications write into memory and land as one pack file; so does every
        // commit to a network store's mirror, whose loose objects' fsyncs would stand
        // between the user and the push (a one-record push: 32 fsyncs, 16 as a pack).
        let writer = try git("opening the store for writing") { () throws(GitError) in
            recordCount > Self.bulkThreshold || remote != nil ? try GitRepository.open(at: repository.path, bulkWrites: true) : repository
        }
        let built = try build(RefCommit(ref: ref, parent: parent, writes: writes, message: message), in: writer, actor: actor, time: time)
        try git("writing a commit") { () throws(GitError) in try writer.writePack() }
        // The head moves by compare-and-swap: a non-force push for a network store, the local
        // ref otherwise.
        let landed: Bool
        if let remote {
            landed = try remote.publish(built.commit, parent: built.parent, to: name, in: repository, sendingFrom: writer)
        } else {
            landed = try git("moving \(name)") { () throws(GitError) in
                try repository.updateReference(
                    name, to: built.commit, expected: built.parent, logMessage: "recsync: \(message.prefix(while: { $0 != "\n" }))")
            }
            // A lock a killed writer left would make every retry fail the same way.
            if !landed, let lock = repository.referenceLock(name) {
                try Self.clearAbandoned(lock, in: repository, notices: notices)
            }
        }
        return landed ? .committed(commit: built.commit.hex, tags: built.tags) : .headMoved
    }

    /// A network store's commits on several zone refs go out in one push (one connection, one
    /// pack), each ref by compare-and-swap on its own; elsewhere, one commit after another.
    func commit(_ batch: [RefCommit], actor: StoreActor, time: Int64) throws(RecSyncError) -> [CommitOutcome] {
        guard let remote, batch.count > 1, batch.allSatisfy({ refName($0.ref) != Self.headRef }) else {
            return try commitEach(batch, actor: actor, time: time)
        }
        let writer = try git("opening the store for writing") { () throws(GitError) in
            try GitRepository.open(at: repository.path, bulkWrites: true)
        }
        var built: [(commit: GitOID, parent: GitOID?, tags: [RecordID: String])] = []
        for c in batch { built.append(try build(c, in: writer, actor: actor, time: time)) }
        try git("writing the commits") { () throws(GitError) in try writer.writePack() }
        let landed = try remote.publish(
            zip(batch, built).map { c, b in (b.commit, b.parent, refName(c.ref)) }, in: repository, sendingFrom: writer)
        return zip(built, landed).map { b, ok in ok ? .committed(commit: b.commit.hex, tags: b.tags) : .headMoved }
    }

    /// Writes one commit's objects with `repo` (its pack is the caller's to write); the commit,
    /// its parent and the saved records' change tags.
    private func build(_ c: RefCommit, in repo: GitRepository, actor: StoreActor, time: Int64) throws(RecSyncError) -> (
        commit: GitOID, parent: GitOID?, tags: [RecordID: String]
    ) {
        // Only a zone's own ref starts without a parent; refs/heads/main always has one.
        guard c.parent != nil || refName(c.ref) != Self.headRef else { throw .internalError("a commit to \(c.ref) without a parent") }
        let parentOID = try c.parent.map { p throws(RecSyncError) in try oid(p) }
        let (commit, tags) = try git("writing a commit") { () throws(GitError) -> Result<(GitOID, [RecordID: String]), RecSyncError> in
            var updates: [GitTreeUpdate] = []
            updates.reserveCapacity(c.writes.count)
            var tags: [RecordID: String] = [:]
            let baseTree = try parentOID.map { p throws(GitError) in try repo.commit(p).tree }
            var assetTrees = AssetTrees(repository: repo, baseTree: baseTree, paths: paths)
            for write in c.writes {
                switch write {
                case .saveRecord(let id, let bytes, let assets):
                    let blob = try repo.createBlob(bytes)
                    tags[id] = blob.hex
                    updates.append(.upsertBlob(path: paths.record(id), oid: blob))
                    updates += try assetTrees.updates(for: id, keeping: assets)
                case .deleteRecord(let id):
                    updates.append(.remove(path: paths.record(id)))
                    updates += try assetTrees.updates(for: id, keeping: [:])
                case .saveZone(let id, let bytes):
                    updates.append(.upsertBlob(path: paths.zoneFile(id), oid: try repo.createBlob(bytes)))
                case .removeZone(let id):
                    updates.append(.remove(path: paths.zoneDir(id)))
                case .saveTombstone(let id, let bytes):
                    updates.append(.upsertBlob(path: paths.tombstone(id), oid: try repo.createBlob(bytes)))
                case .removeTombstone(let id):
                    updates.append(.remove(path: paths.tombstone(id)))
                case .saveClientToken(let id, let client, let bytes):
                    updates.append(.upsertBlob(path: paths.clientToken(id, client: client), oid: try repo.createBlob(bytes)))
                case .saveUserKey(let user, let bytes):
                    updates.append(.upsertBlob(path: StoreLayout.userKeyPath(user), oid: try repo.createBlob(bytes)))
                }
            }
            let newTree: GitOID
            do throws(GitError) { newTree = try repo.updateTree(base: baseTree, updates: updates) } catch {
                // An entry plain git wrote in the way is named, not left as libgit2's "D/F conflict".
                guard let baseTree, let found = try Self.obstruction(of: updates, in: baseTree, repository: repo) else { throw error }
                let ref = refName(c.ref)
                return .failure(
                    .storeCorrupt(
                        Self.misshapen(
                            found.path, found.kind, wanted: found.wanted, consequence: "nothing was written", on: ref == Self.headRef ? nil : ref)))
            }
            let signature = GitSignature(name: actor.displayName, email: actor.email, time: time / 1000)
            let commit = try repo.createCommit(tree: newTree, parents: parentOID.map { [$0] } ?? [], author: signature, message: c.message)
            return .success((commit, tags))
        }.get()
        return (commit, parentOID, tags)
    }
}

extension GitBackend {
    /// The first entry of `tree` in the way of a file an update writes, with the kind wanted
    /// there: one that is not a directory above the file's path, or a directory (a submodule)
    /// at it; nil when there is none.
    static func obstruction(of updates: [GitTreeUpdate], in tree: GitOID, repository: GitRepository) throws(GitError) -> (
        path: String, kind: GitTreeEntry.Kind, wanted: GitTreeEntry.Kind
    )? {
        for case .upsertBlob(let path, _) in updates {
            let components = path.split(separator: "/")
            for n in 1...components.count {
                let prefix = components.prefix(n).joined(separator: "/")
                guard let e = try repository.entry(atPath: prefix, inTree: tree) else { break }
                if n < components.count, e.kind != .tree { return (prefix, e.kind, .tree) }
                if n == components.count, e.kind == .tree || e.kind == .submodule { return (prefix, e.kind, .blob) }
            }
        }
        return nil
    }

    /// After a head update that did not land with a lock on the head: removes the lock if its
    /// writer is gone (`GitLockFile.removeIfAbandoned`), saying so, so that the next attempt
    /// goes through; fails with what to do if the lock is stale but cannot be told abandoned
    /// (a shared file system); returns otherwise, for the caller's usual retry.
    static func clearAbandoned(_ lock: GitLockFile, in repository: GitRepository, notices: StoreNotices) throws(RecSyncError) {
        let removed: Bool
        do { removed = try lock.removeIfAbandoned(repositoryRoot: repository.path) } catch {
            throw .fileSystem(
                path: lock.path, message: "a writer that is gone left this lock, and it cannot be removed (\(error.message)); remove it by hand")
        }
        if removed {
            notices.post(
                "removed \(lock.path): a writer that is gone (killed or crashed) left it, and no process has it open; nothing it guarded was lost")
            return
        }
        if lock.isStillStale() { throw GitStore.staleLockError(lock, store: repository.path) }
    }
}

/// Keeps records' asset directories (`StoreLayout.assetDir`) in step with their records
/// within one commit: what to remove and add so a record's directory holds exactly its
/// asset fields. A zone without assets costs one lookup per commit.
struct AssetTrees {
    let repository: GitRepository
    /// The tree of the base commit (nil: the ref's first commit).
    let baseTree: GitOID?
    let paths: ZonePaths
    /// The assets tree of each zone at the base commit (nil: the zone has none).
    private var zones: [ZoneID: GitOID?] = [:]

    init(repository: GitRepository, baseTree: GitOID?, paths: ZonePaths) {
        self.repository = repository
        self.baseTree = baseTree
        self.paths = paths
    }

    mutating func updates(for id: RecordID, keeping assets: [String: String]) throws(GitError) -> [GitTreeUpdate] {
        if zones[id.zoneID] == nil {
            let e = try baseTree.flatMap { tree throws(GitError) in try repository.entry(atPath: paths.assets(id.zoneID), inTree: tree) }
            zones[id.zoneID] = .some(e?.kind == .tree ? e?.oid : nil)
        }
        var existing: [String: GitOID] = [:]
        if case .some(.some(let tree)) = zones[id.zoneID],
            let dir = try repository.entry(atPath: StoreLayout.recordKey(id.recordName), inTree: tree)
        {
            if dir.kind == .tree {
                for e in try repository.treeEntries(dir.oid) { existing[e.name] = e.oid }
            } else {
                // Someone put a file where a directory belongs: replaced by the record's assets.
                return [.remove(path: paths.assetDir(id))]
                    + assets.sorted(by: { $0.key < $1.key }).compactMap { key, hex in
                        GitOID(hex: hex).map { .upsertBlob(path: paths.asset(id, field: key), oid: $0) }
                    }
            }
        }
        var result: [GitTreeUpdate] = []
        for (key, hex) in assets.sorted(by: { $0.key < $1.key }) {
            guard let oid = GitOID(hex: hex) else { continue }
            let name = StoreLayout.escape(key)
            if existing.removeValue(forKey: name) != oid {
                result.append(.upsertBlob(path: paths.asset(id, field: key), oid: oid))
            }
        }
        for name in existing.keys.sorted() {
            result.append(.remove(path: "\(paths.assetDir(id))/\(name)"))
        }
        return result
    }
}

extension GitError {
    /// The error as the library boundary carries it (`RecSyncError.internalError`'s cause).
    var failure: LibraryFailure {
        LibraryFailure(library: "libgit2", function: function, code: code, errorClass: errorClass, message: message)
    }
}

/// Where a zone's entries sit in a commit of the ref that holds it: under
/// `zones/<owner>/<zone>/` on the shared ref (format 1), under `zone/` on the zone's own ref,
/// with its tombstone beside it (format 2). The same content is the same tree in both.
struct ZonePaths {
    let ownRefs: Bool

    func zoneDir(_ zone: ZoneID) -> String { ownRefs ? StoreLayout.zoneRefDir : StoreLayout.zoneDir(zone) }
    func zoneFile(_ zone: ZoneID) -> String { "\(zoneDir(zone))/\(StoreLayout.zoneFile)" }
    func records(_ zone: ZoneID) -> String { "\(zoneDir(zone))/\(StoreLayout.recordsDir)" }
    func record(_ id: RecordID) -> String { "\(records(id.zoneID))/\(StoreLayout.recordKey(id.recordName))" }
    func clientToken(_ zone: ZoneID, client: String) -> String { "\(zoneDir(zone))/\(StoreLayout.clientTokenKey(client))" }
    func assets(_ zone: ZoneID) -> String { "\(zoneDir(zone))/\(StoreLayout.assetsDir)" }
    func assetDir(_ id: RecordID) -> String { "\(assets(id.zoneID))/\(StoreLayout.recordKey(id.recordName))" }
    func asset(_ id: RecordID, field: String) -> String { "\(assetDir(id))/\(StoreLayout.escape(field))" }
    func tombstone(_ zone: ZoneID) -> String { ownRefs ? StoreLayout.zoneRefTombstone : StoreLayout.tombstonePath(zone) }

    /// The ref a zone's entries are on, when it is not main: the zone's own.
    func ref(_ zone: ZoneID) -> String? { ownRefs ? RefNames.refName(for: zone) : nil }

    /// How a message names a path of a zone's entries: on the zone's own ref `<ref>:<path>`,
    /// as `git show` takes it; on main, the path.
    func shown(_ path: String, in zone: ZoneID) -> String { ref(zone).map { "\($0):\(path)" } ?? path }

    /// How a message names a record's stored file.
    func shownRecord(_ id: RecordID) -> String { shown(record(id), in: id.zoneID) }
}
