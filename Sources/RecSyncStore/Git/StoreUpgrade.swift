import Foundation
import RecSyncGit
import RecSyncModel

/// What `GitStore.upgradeToZoneRefs` did.
public struct StoreUpgradeReport: Sendable, Hashable {
    /// False when the store already had a ref per zone: nothing was changed.
    public var upgraded: Bool
    /// The store's format before and after.
    public var formatBefore: Int
    public var formatAfter: Int
    /// `refs/heads/main` before (the last commit of format 1) and after (the switch).
    public var oldHead: String
    public var newHead: String
    /// Zones given a ref of their own.
    public var zones: Int
    /// First-parent commits of main read, and commits written on zone refs (one for each
    /// zone a commit of main changed).
    public var commitsRead: Int
    public var zoneCommits: Int
    /// Entries under `zones/` or `tombstones/` that no recsync could have written (a bad name):
    /// format 1 skipped them with a warning, and they get no ref.
    public var skipped: [String]
    /// How many times the switch was tried: more than once when other writers moved main.
    public var attempts: Int
    /// True when, on a network store, recsync writers were asked to hold their pushes meanwhile.
    public var writersHeldOff: Bool = false
    /// Lease references the server would not let recsync remove afterwards.
    public var leasesLeft: [String] = []
}

/// What the switch to format 2 leaves on main (`upgrade.json`): the last head of format 1 and
/// each zone ref's head at the switch. Change tokens handed out before the upgrade name
/// commits of main up to `from`; a zone token among them is answered from the zone's
/// directory in that commit (`GitBackend.zoneContent`).
struct UpgradeMarker: Sendable, Hashable {
    static let path = "upgrade.json"
    static let format = 1

    var from: String
    var upgraded: ChangeStamp
    var zoneRefs: [String: String]

    func encoded() -> [UInt8] {
        JSON.serialize(
            .object([
                "format": .int(Int64(Self.format)),
                "from": .object(["format": .int(Int64(StoreLayout.formatVersion)), "head": .string(from)]),
                "upgraded": ZoneDocuments.stamp(upgraded),
                "zoneRefs": .object(zoneRefs.mapValues { .string($0) }),
            ]), pretty: true)
    }

    /// The last format-1 head a marker names; nil when it is not one this recsync wrote
    /// (tokens from before the upgrade then expire, and clients fetch again from nil).
    static func decodeFrom(_ bytes: [UInt8]) -> String? {
        let json: JSONValue
        do { json = try JSON.parse(bytes) } catch { return nil }
        guard case .object(let o) = json, case .int(let f)? = o["format"], f == Int64(format),
            case .object(let from)? = o["from"], case .string(let head)? = from["head"], GitOID(hex: head) != nil
        else { return nil }
        return head
    }
}

extension GitStore {
    /// How many times the switch is tried when other writers move main first.
    static let maxUpgradeAttempts = 32

    /// Moves every zone of a format-1 store onto a ref of its own (store format 2,
    /// docs/zone-refs.md), keeping its whole history.
    ///
    /// Each zone's history is replayed from main's first-parent chain onto
    /// `refs/recsync/zones/<owner>/<zone>`: for every commit of main that changed the zone's
    /// directory or tombstone, one commit on the zone's ref with the zone's directory as `zone/`
    /// (the same tree: no record is rewritten), its tombstone as `tombstone.json`, and the
    /// original author, committer, times and message. The replay is deterministic, so a run
    /// killed before the switch leaves refs that no client reads and that a rerun finds
    /// already made. Then main moves, by compare-and-swap from the head replayed, to a commit
    /// whose tree says format 2 and holds `upgrade.json`: that one ref update is the moment
    /// the store changes format. If a format-1 writer got in first, what it wrote is replayed
    /// too and the switch tried again.
    ///
    /// Main's history stays as the switch's parent, so change tokens handed out before stay
    /// readable: a zone token is answered from the zone's directory in the commit it names; a
    /// database token expires once (`changeTokenExpired`: the zone list is fetched again,
    /// the zones' own tokens go on). Clients of format 1 refuse the store from then on.
    ///
    /// This `GitStore` reads format 1: open the store again to use it.
    public func upgradeToZoneRefs() throws(RecSyncError) -> StoreUpgradeReport {
        try upgradeToZoneRefs(beforeSwitching: { _ throws(RecSyncError) in })
    }

    /// `upgradeToZoneRefs`, with `beforeSwitching` run between writing the zone refs and
    /// moving main on each attempt (tests move the store, or stop, there).
    func upgradeToZoneRefs(beforeSwitching: @Sendable (Int) throws(RecSyncError) -> Void) throws(RecSyncError) -> StoreUpgradeReport {
        let backend = core.backend
        let repository = backend.repository
        if backend.zonesHaveOwnRefs {
            let head = try backend.head()
            return StoreUpgradeReport(
                upgraded: false, formatBefore: StoreLayout.zoneRefsFormat, formatAfter: StoreLayout.zoneRefsFormat, oldHead: head,
                newHead: head, zones: 0, commitsRead: 0, zoneCommits: 0, skipped: [], attempts: 0)
        }
        let link = backend.remote
        // The mirror learns the remote's zone refs (a rerun finds its own, or someone's by hand).
        let fetchedZoneRefs = link?.fetchesZoneRefs ?? false
        link?.fetchesZoneRefs = true
        defer { link?.fetchesZoneRefs = fetchedZoneRefs }
        let leases = link.map { CompactionLeaseHolder(link: $0, repository: repository) }
        defer { leases?.release() }
        var replay: ZoneRefReplay?
        for attempt in 1...Self.maxUpgradeAttempts {
            if let link { try link.fetch(into: repository) }
            let head = try backend.head()
            guard let headOID = GitOID(hex: head) else { throw .storeCorrupt("the store's head '\(head)' is not a commit ID") }
            let manifest = try GitBackend.manifestAtHead(of: repository, acceptingZoneRefs: true)
            if manifest.format == StoreLayout.zoneRefsFormat {
                // Another upgrade got in first.
                return StoreUpgradeReport(
                    upgraded: false, formatBefore: StoreLayout.zoneRefsFormat, formatAfter: StoreLayout.zoneRefsFormat, oldHead: head,
                    newHead: head, zones: 0, commitsRead: 0, zoneCommits: 0, skipped: [], attempts: attempt)
            }
            let previous = replay
            replay = try Self.git("replaying the zones' history") { () throws(GitError) -> ZoneRefReplay in
                if let previous, let extended = try previous.extended(to: headOID, in: repository) { return extended }
                return try ZoneRefReplay.compute(in: repository, head: headOID)
            }
            guard let current = replay else { continue }
            leases?.ensure()
            guard try publishZoneRefs(current.tips) else { continue }
            try beforeSwitching(attempt)
            let switchCommit = try Self.git("writing the switch to format 2") { () throws(GitError) in
                try Self.switchCommit(on: headOID, manifest: manifest, tips: current.tips, in: repository, actor: core.actor)
            }
            let landed: Bool
            if let link {
                landed = try link.publish(switchCommit, parent: headOID, in: repository, waitingForLeases: false)
            } else {
                landed = try Self.git("moving the head") { () throws(GitError) in
                    try repository.updateReference(
                        GitBackend.headRef, to: switchCommit, expected: headOID, logMessage: "recsync: upgrade to format 2")
                }
                if !landed, let lock = repository.referenceLock(GitBackend.headRef) {
                    try GitBackend.clearAbandoned(lock, in: repository, notices: backend.notices)
                }
            }
            if landed {
                return StoreUpgradeReport(
                    upgraded: true, formatBefore: manifest.format, formatAfter: StoreLayout.zoneRefsFormat, oldHead: head,
                    newHead: switchCommit.hex, zones: current.tips.count, commitsRead: current.commitsRead, zoneCommits: current.zoneCommits,
                    skipped: current.skipped.sorted(), attempts: attempt, writersHeldOff: leases?.placed ?? false,
                    leasesLeft: leases?.release() ?? [])
            }
            usleep(UInt32.random(in: 0...UInt32(min(100_000, 1_000 << min(attempt, 7)))))
        }
        throw .storeBusy(
            """
            the store kept moving while recsync upgraded it (\(Self.maxUpgradeAttempts) attempts); its format is\
             unchanged. Run the upgrade again when fewer writers are busy
            """
        )
    }

    /// Sets each zone's ref to its replayed head, locally or in one push: a ref that is
    /// missing is created; one that holds the same commit (a rerun) or an ancestor of it (main
    /// moved since) moves on. False when a ref moved under the push: the caller looks again.
    private func publishZoneRefs(_ tips: [ZoneID: GitOID]) throws(RecSyncError) -> Bool {
        let backend = core.backend
        let repository = backend.repository
        var updates: [GitRefUpdate] = []
        for (zone, tip) in tips.sorted(by: { $0.key < $1.key }) {
            let name = RefNames.refName(for: zone)
            let existing = try Self.git("reading \(name)") { () throws(GitError) in try repository.referenceTarget(name) }
            if existing == tip { continue }
            if let existing {
                let behind = try Self.git("reading \(name)") { () throws(GitError) -> Bool in
                    guard try repository.contains(existing) else { return false }
                    return try repository.isDescendantOrEqual(tip, of: existing)
                }
                guard behind else {
                    throw .storeCorrupt(
                        """
                        \(name) already exists and holds \(existing.hex), which is not the history recsync replays for zone\
                         '\(zone)' (it was not written by an upgrade); nothing was changed. Look at it with 'git log \(name)'\
                         and delete it ('git update-ref -d \(name)' where the store lives) if nothing needs it
                        """
                    )
                }
            }
            updates.append(GitRefUpdate(tip, to: name, expected: existing))
        }
        guard !updates.isEmpty else { return true }
        guard let link = backend.remote else {
            for update in updates {
                let moved = try Self.git("writing \(update.remoteRef)") { () throws(GitError) in
                    try repository.updateReference(update.remoteRef, to: update.commit, expected: update.expected, logMessage: "recsync: upgrade")
                }
                if !moved {
                    // A lock an upgrade killed while writing this ref left would refuse every rerun.
                    if let lock = repository.referenceLock(update.remoteRef) {
                        try GitBackend.clearAbandoned(lock, in: repository, notices: backend.notices)
                    }
                    return false
                }
            }
            return true
        }
        // The upgrade's own lease holds other writers, not the upgrade.
        return try link.publish(updates.map { ($0.commit, $0.expected, $0.remoteRef) }, in: repository, waitingForLeases: false).allSatisfy { $0 }
    }

    /// The commit that makes main format 2: parent `head`, whose tree keeps main's users,
    /// compaction marker and anything else, says format 2 in the manifest, holds files at
    /// `zones` and `tombstones` where format 1 has directories (so that a format-1 writer
    /// cannot put a zone there), and `upgrade.json`.
    static func switchCommit(on head: GitOID, manifest: StoreManifest, tips: [ZoneID: GitOID], in repository: GitRepository, actor: StoreActor)
        throws(GitError) -> GitOID
    {
        let tree = try repository.commit(head).tree
        var upgraded = manifest
        upgraded.format = StoreLayout.zoneRefsFormat
        let time = actor.clock()
        let marker = UpgradeMarker(
            from: head.hex, upgraded: ChangeStamp(timestamp: time, userRecordName: actor.userRecordName),
            zoneRefs: Dictionary(uniqueKeysWithValues: tips.map { (RefNames.refName(for: $0.key), $0.value.hex) }))
        let note = try repository.createBlob(Array(GitStore.zoneRefsNote.utf8))
        var removals: [GitTreeUpdate] = []
        for name in [StoreLayout.zonesDir, StoreLayout.tombstonesDir] where try repository.entry(atPath: name, inTree: tree) != nil {
            removals.append(.remove(path: name))
        }
        let cleared = try repository.updateTree(base: tree, updates: removals)
        let newTree = try repository.updateTree(
            base: cleared,
            updates: [
                .upsertBlob(path: StoreLayout.manifestPath, oid: try repository.createBlob(upgraded.encoded())),
                .upsertBlob(path: StoreLayout.zonesDir, oid: note), .upsertBlob(path: StoreLayout.tombstonesDir, oid: note),
                .upsertBlob(path: UpgradeMarker.path, oid: try repository.createBlob(marker.encoded())),
            ])
        let signature = GitSignature(name: actor.displayName, email: actor.email, time: time / 1000)
        let message =
            """
            \(actor.userRecordName): upgrade the store to format \(StoreLayout.zoneRefsFormat), a ref per zone

            \(tips.count) zones moved to \(RefNames.zonesPrefix)<owner>/<zone> with their history; \(UpgradeMarker.path)
            names the last head of format 1 (this commit's parent).

            """
        return try repository.createCommit(tree: newTree, parents: [head], author: signature, message: message)
    }

    /// What main holds at `zones` and `tombstones` in format 2.
    static let zoneRefsNote = "zones live in refs/recsync/zones/<owner>/<zone> (store format 2)\n"
}

/// Each zone's history of main, replayed onto its own ref (written, not yet published).
struct ZoneRefReplay {
    /// The head of main replayed up to.
    var head: GitOID
    /// Each zone's replayed head.
    var tips: [ZoneID: GitOID] = [:]
    var commitsRead = 0
    var zoneCommits = 0
    var skipped: Set<String> = []
    /// The `zones` and `tombstones` trees of `head`.
    private var zonesTree: GitOID?
    private var tombstonesTree: GitOID?

    private init(head: GitOID) { self.head = head }

    /// Replays main's first-parent history up to `head`, from its first commit.
    static func compute(in repository: GitRepository, head: GitOID) throws(GitError) -> ZoneRefReplay {
        var replay = ZoneRefReplay(head: head)
        try replay.replay(try chain(from: head, to: nil, in: repository), in: repository)
        return replay
    }

    /// This replay carried on to `head`, a head that moved on from `self.head`: only the
    /// commits that landed meanwhile are replayed. Nil when `self.head` is not in `head`'s
    /// first-parent history (the history was rewritten): replay from the start.
    func extended(to head: GitOID, in repository: GitRepository) throws(GitError) -> ZoneRefReplay? {
        if head == self.head { return self }
        let landed = try Self.chain(from: head, to: self.head, in: repository)
        guard let oldest = landed.first, oldest.parents.first == self.head else { return nil }
        var replay = self
        replay.head = head
        try replay.replay(landed, in: repository)
        return replay
    }

    /// The first-parent commits from `head` back to (not including) `stop`, oldest first.
    private static func chain(from head: GitOID, to stop: GitOID?, in repository: GitRepository) throws(GitError) -> [GitCommit] {
        var commits: [GitCommit] = []
        var next: GitOID? = head
        while let oid = next, oid != stop {
            let commit = try repository.commit(oid)
            commits.append(commit)
            next = commit.parents.first
        }
        return commits.reversed()
    }

    private mutating func replay(_ commits: [GitCommit], in repository: GitRepository) throws(GitError) {
        let bulk = try GitRepository.open(at: repository.path, bulkWrites: true)
        for commit in commits {
            commitsRead += 1
            let zones = try Self.entry(StoreLayout.zonesDir, of: commit.tree, in: bulk)
            let tombstones = try Self.entry(StoreLayout.tombstonesDir, of: commit.tree, in: bulk)
            defer { (zonesTree, tombstonesTree) = (zones, tombstones) }
            var changed = Set<ZoneID>()
            for (owner, name) in try Self.changedEntries(zonesTree, zones, in: bulk) {
                if let id = zoneID(owner: owner, entry: name, path: "\(StoreLayout.zonesDir)/\(owner)/\(name)") { changed.insert(id) }
            }
            for (owner, name) in try Self.changedEntries(tombstonesTree, tombstones, in: bulk) {
                let path = "\(StoreLayout.tombstonesDir)/\(owner)/\(name)"
                guard name.hasSuffix(".json") else {
                    skipped.insert(path)
                    continue
                }
                if let id = zoneID(owner: owner, entry: String(name.dropLast(5)), path: path) { changed.insert(id) }
            }
            for zone in changed.sorted() {
                var entries: [(name: String, oid: GitOID, kind: GitTreeEntry.Kind)] = []
                if let dir = try bulk.entry(atPath: StoreLayout.zoneDir(zone), inTree: commit.tree) {
                    // A file where a zone's directory belongs (only plain git writes one) is no zone.
                    if dir.kind == .tree {
                        entries.append((StoreLayout.zoneRefDir, dir.oid, .tree))
                    } else {
                        skipped.insert(StoreLayout.zoneDir(zone))
                    }
                }
                if let stone = try bulk.entry(atPath: StoreLayout.tombstonePath(zone), inTree: commit.tree), stone.kind == .blob {
                    entries.append((StoreLayout.zoneRefTombstone, try Self.naming(stone.oid, zone, in: bulk), .blob))
                }
                // Nothing of a zone that never was one gets a ref; a zone gone without a tombstone
                // (dropped by a compaction) is an empty commit on its ref.
                if entries.isEmpty && tips[zone] == nil { continue }
                let tree = try bulk.createTree(entries)
                tips[zone] = try bulk.copyCommit(commit.oid, tree: tree, parents: tips[zone].map { [$0] } ?? [])
                zoneCommits += 1
            }
        }
        try bulk.writePack()
    }

    /// A tombstone that names its zone when the zone's ref name is hashed (its only way to be
    /// known once the zone is gone): a format-1 tombstone without the names gets them, the
    /// same bytes on every run; any other is kept as it is.
    private static func naming(_ tombstone: GitOID, _ zone: ZoneID, in repository: GitRepository) throws(GitError) -> GitOID {
        let component = RefNames.suffix(for: zone).split(separator: "/").map(String.init)
        guard component.contains(where: { $0.hasPrefix(RefNames.hashedMarker) }) else { return tombstone }
        let bytes = try repository.blob(tombstone)
        let json: JSONValue
        do { json = try JSON.parse(bytes) } catch { return tombstone }
        guard case .object(var o) = json, o["zoneName"] == nil else { return tombstone }
        o["zoneName"] = .string(zone.zoneName)
        o["ownerName"] = .string(zone.ownerName)
        return try repository.createBlob(JSON.serialize(.object(o), pretty: true))
    }

    /// The ID of a zone an entry names; nil, noted as skipped, for a name recsync would not write.
    private mutating func zoneID(owner: String, entry: String, path: String) -> ZoneID? {
        guard let ownerName = StoreLayout.unescape(owner), let zoneName = StoreLayout.unescape(entry) else {
            skipped.insert(path)
            return nil
        }
        do { return try ZoneID(zoneName: zoneName, ownerName: ownerName) } catch {
            skipped.insert(path)
            return nil
        }
    }

    /// A directory at the top of a tree; nil when there is none (or something else is there).
    private static func entry(_ name: String, of tree: GitOID, in repository: GitRepository) throws(GitError) -> GitOID? {
        guard let e = try repository.entry(atPath: name, inTree: tree), e.kind == .tree else { return nil }
        return e.oid
    }

    /// The `(owner, entry)` names two-level trees (`zones/<owner>/<zone>`,
    /// `tombstones/<owner>/<zone>.json`) differ in, skipping every subtree equal on both sides.
    private static func changedEntries(_ old: GitOID?, _ new: GitOID?, in repository: GitRepository) throws(GitError) -> [(String, String)] {
        guard old != new else { return [] }
        var changed: [(String, String)] = []
        let oldOwners = try children(old, in: repository), newOwners = try children(new, in: repository)
        for owner in Set(oldOwners.keys).union(newOwners.keys).sorted() where oldOwners[owner]?.oid != newOwners[owner]?.oid {
            let before = try children(oldOwners[owner].flatMap { $0.kind == .tree ? $0.oid : nil }, in: repository)
            let after = try children(newOwners[owner].flatMap { $0.kind == .tree ? $0.oid : nil }, in: repository)
            for name in Set(before.keys).union(after.keys).sorted() where before[name] != after[name] {
                changed.append((owner, name))
            }
        }
        return changed
    }

    private static func children(_ tree: GitOID?, in repository: GitRepository) throws(GitError) -> [String: GitTreeEntry] {
        guard let tree else { return [:] }
        var result: [String: GitTreeEntry] = [:]
        for e in try repository.treeEntries(tree) { result[e.name] = e }
        return result
    }
}
