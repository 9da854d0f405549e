import Foundation
import RecSyncGit
import RecSyncModel
import RecSyncSystem

/// A recsync store kept in a bare git repository (DESIGN §2), through libgit2.
///
/// Each handle owns one repository handle; several handles (in one process or many) may
/// write the same store at once: the head moves only by compare-and-swap.
public actor GitStore: RemoteStore {
    /// Bounds how much of the store's pack stays mapped, for the rest of the process (memory
    /// of a clone or pull of a large store). Opening a store bounds them already; this says
    /// so again for a caller about to read much.
    ///
    /// The bound is set before the store's repository is opened: a window mapped earlier
    /// stays, at libgit2's default size (1 GiB, so the whole pack of most stores), and every
    /// later read reuses it, each byte read then resident. A pull of three 50 MB assets from a
    /// packed store peaked at 229 MB that way. Pack writes (the opening fetch of a network
    /// store included) run with libgit2's defaults all the same (`GitPackWindows`).
    public nonisolated func prepareForBulkRead() {
        GitPackWindows.boundForReading()
    }

    public nonisolated let userRecordName: String
    public nonisolated let storeID: String
    /// The store's repository: the store itself, or the mirror of a network store.
    public nonisolated let path: String
    let core: StoreCore<GitBackend>

    /// The network remote this store is a mirror of (redacted: no credentials), nil for a
    /// local store.
    public nonisolated let remote: String?
    /// Whether each zone has a ref of its own (store format 2).
    nonisolated let zonesHaveOwnRefs: Bool

    /// The store's own thread (see `BlockingExecutor`): libgit2's blocking calls run there,
    /// not on Swift's shared pool.
    nonisolated let executor: BlockingExecutor
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// Opens an existing store as `actor`.
    public init(path: String, actor: StoreActor) throws(RecSyncError) {
        try self.init(path: path, actor: actor, acceptingZoneRefs: false)
    }

    /// Opens an existing store as `actor`; with `acceptingZoneRefs`, one of the format with a
    /// ref per zone too (being built: only tests open it).
    package init(path: String, actor: StoreActor, acceptingZoneRefs: Bool) throws(RecSyncError) {
        guard FileManager.default.fileExists(atPath: path) else {
            throw .notAStore("no store at '\(path)'; check the path, or create a store there").suggesting(.createStore(path: path))
        }
        let repository: GitRepository
        GitPackWindows.boundForReading()
        do { repository = try GitRepository.open(at: path) } catch {
            throw .notAStore("'\(path)' is not a git repository (\(error.message)); give the path of a recsync store")
        }
        try self.init(backend: GitBackend(repository: repository, acceptingZoneRefs: acceptingZoneRefs), actor: actor, path: path)
    }

    /// What the store did on its own that its user should hear about (a killed writer's lock
    /// removed): set a handler to print or log them.
    public nonisolated let notices: StoreNotices

    private init(backend: GitBackend, actor: StoreActor, path: String) {
        self.notices = backend.notices
        self.executor = BlockingExecutor(name: "recsync store \((path as NSString).lastPathComponent)")
        self.core = StoreCore(backend: backend, actor: actor)
        self.userRecordName = actor.userRecordName
        self.storeID = backend.manifest.storeID
        self.maxAssetBytes = backend.manifest.assetLimit
        self.path = path
        self.remote = backend.remote?.remote.redacted
        self.zonesHaveOwnRefs = backend.zonesHaveOwnRefs
    }

    deinit {
        executor.stop()
    }

    /// Whether the caller runs on the store's own thread (for tests).
    func isOnOwnThread() -> Bool { executor.isCurrentThread }

    /// Sets the most a push waits for compaction leases in all (for tests).
    func holdForLeasesAtMost(_ duration: Duration) { core.backend.remote?.longestTotalHold = duration }

    /// Packs a mirror may hold before the small ones are merged (`consolidatePacks`).
    public static let mirrorPackLimit = 32
    /// Packs larger than this are never rewritten by a merge (a large clone's pack, mostly):
    /// a merge writes its objects again, whole, at roughly 5 MB/s here, and the command that
    /// opened the mirror waits for it.
    public static let mirrorPackMergeLimit = 16 << 20

    /// Whether `location` names a network remote (`ssh://`, `user@host:path`, `https://`,
    /// `http://`, `git://`, `file://`) to open with `open(remote:mirror:actor:)`, rather than
    /// the path of a local store.
    public static func isNetworkRemote(_ location: String) -> Bool { GitRemoteURL.isRemote(location) }

    /// Opens the store at a network remote, kept as a bare mirror at `mirror` (created if
    /// missing; the workspace passes `.recsync/mirror`), and fetches it.
    ///
    /// Every call then fetches first (once per operation: see `beginOperation`), and writes
    /// push without force: a refused push means the store moved, and the write is recomputed
    /// against the new head.
    ///
    /// `lookingNow: false` leaves the fetch to the first call when the mirror already holds
    /// the store (an earlier command fetched it): the remote is then first asked when the
    /// store is used, and not at all by a push that lands on the mirror's head
    /// (`beginOperation(fromLastLook:)`).
    public static func open(remote: String, mirror: String, actor: StoreActor, options: NetworkOptions = .fromEnvironment(), lookingNow: Bool = true)
        throws(RecSyncError) -> GitStore
    {
        try open(remote: remote, mirror: mirror, actor: actor, options: options, lookingNow: lookingNow, acceptingZoneRefs: false)
    }

    /// `open(remote:…)`; with `acceptingZoneRefs`, a store of the format with a ref per zone
    /// too (being built: only tests open it).
    package static func open(
        remote: String, mirror: String, actor: StoreActor, options: NetworkOptions = .fromEnvironment(), lookingNow: Bool = true,
        acceptingZoneRefs: Bool
    ) throws(RecSyncError) -> GitStore {
        guard let url = GitRemoteURL(remote) else {
            throw .invalidArguments(
                """
                '\(GitRemoteURL.shown(remote))' is not a remote address recsync understands; use\
                 ssh://[user@]host[:port]/path, user@host:path, https://host/path, git://host/path or\
                 file:///path
                """
            )
        }
        if let problem = options.settingProblem { throw .invalidArguments(problem) }
        try FileIO.refuseLinks(within: mirror)  // libgit2 writes into it by path
        GitPackWindows.boundForReading()
        let repository: GitRepository
        do {
            if FileManager.default.fileExists(atPath: mirror) {
                repository = try GitRepository.open(at: mirror)
            } else {
                repository = try GitRepository.initBare(at: mirror)
            }
        } catch {
            throw .invalidArguments(
                "cannot use '\(mirror)' as the mirror of \(url.redacted) (\(error.message)); remove it and recsync will create it again")
        }
        let link = RemoteMirror(remote: url, options: options)
        func mirrorHead() throws(RecSyncError) -> GitOID? {
            do { return try repository.referenceTarget(GitBackend.headRef) } catch { throw GitBackend.wrap(error, "reading the mirror's head") }
        }
        let mirrorHeld = try mirrorHead() != nil
        // A mirror that holds zone refs is of a store of format 2: they come with the first
        // fetch (else `GitBackend` fetches them once it has read the manifest).
        do { link.fetchesZoneRefs = try !repository.references(under: RefNames.zonesPrefix).isEmpty } catch {
            throw GitBackend.wrap(error, "listing the mirror's zone refs")
        }
        if lookingNow || !mirrorHeld { try link.fetch(into: repository) }
        guard try mirrorHead() != nil else {
            throw .notAStore(
                """
                \(url.redacted) has no \(GitBackend.headRef): it is not a recsync store (or is empty); create\
                 one on the server and serve that repository
                """
            ).suggesting(.createStore(path: nil))
        }
        // Every fetch and push leaves a pack in the mirror, and every object lookup searches
        // them one after another: merge the small ones once there are many.
        do {
            try repository.consolidatePacks(whenMoreThan: Self.mirrorPackLimit, largest: Self.mirrorPackMergeLimit)
        } catch {
            throw .fileSystem(
                path: mirror,
                message:
                    """
                    the mirror's packs could not be merged (\(error.message)); free some disk space, or remove\
                     \(mirror) and recsync will fetch the store again
                    """
            )
        }
        return try GitStore(
            backend: GitBackend(repository: repository, remote: link, acceptingZoneRefs: acceptingZoneRefs), actor: actor, path: mirror)
    }

    /// Opens the store at `location` (see `StoreLocation`) as `actor`: a path or `file://`
    /// URL in place, relative to `base`; a network URL through the bare mirror at `mirror`
    /// (a new temporary directory when nil). `lookingNow`: see `open(remote:mirror:actor:options:lookingNow:)`.
    public static func open(location: String, relativeTo base: String, actor: StoreActor, mirror: String? = nil, lookingNow: Bool = true)
        throws(RecSyncError) -> GitStore
    {
        let zoneRefs = experimentalZoneRefs
        if StoreLocation.isNetwork(location) {
            let mirrorPath =
                mirror ?? FileManager.default.temporaryDirectory.appendingPathComponent("recsync-mirror-\(UUID().uuidString.prefix(8))").path
            return try GitStore.open(remote: location, mirror: mirrorPath, actor: actor, lookingNow: lookingNow, acceptingZoneRefs: zoneRefs)
        }
        return try GitStore(path: try StoreLocation.storePath(location, relativeTo: base), actor: actor, acceptingZoneRefs: zoneRefs)
    }

    /// Whether stores of the format with a ref per zone, being built (docs/zone-refs.md), are
    /// opened, and made by `StoreLocation.create`: only with `RECSYNC_EXPERIMENTAL_STORE_FORMAT=2`
    /// in the environment, which the benchmark sets to measure it. Such a store serves pulls
    /// and pushes; subscriptions, `log`, compaction and `doctor` do not read it yet.
    package static var experimentalZoneRefs: Bool {
        ProcessInfo.processInfo.environment["RECSYNC_EXPERIMENTAL_STORE_FORMAT"] == String(StoreLayout.zoneRefsFormat)
    }

    /// Opens the store at `location` for an app, whatever kind of location it is: a path or
    /// `file://` URL in place (a relative path from the current directory), or a network
    /// remote (ssh, https, git://) through a bare mirror that recsync keeps in
    /// `cacheDirectory` (created if missing), one per location, user and device. An app that
    /// embeds `RecordSyncEngine` needs no other call to reach its store.
    ///
    /// - Parameters:
    ///   - location: What `recsync clone` takes: a path, or a URL.
    ///   - user: The user the app acts as.
    ///   - device: This installation's name (a client of the store).
    ///   - cacheDirectory: Where network stores' mirrors live; a directory of the app's own.
    public static func open(location: String, user: String, device: String, cacheDirectory: String) throws(RecSyncError) -> GitStore {
        let actor = try StoreActor(userRecordName: user, deviceID: device)
        guard StoreLocation.isNetwork(location) else {
            return try open(location: location, relativeTo: FileManager.default.currentDirectoryPath, actor: actor)
        }
        do {
            try FileManager.default.createDirectory(atPath: cacheDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw .fileSystem(
                path: cacheDirectory,
                message: "cannot make the directory for the store's mirror (\(error.localizedDescription)); pass a directory the app can write")
        }
        // Named by a hash: the location may carry credentials, and must not show in a path.
        let name: String
        do {
            name = try GitOID.blob(of: Array("\(location)\n\(user)\n\(device)".utf8)).description.prefix(20) + ".mirror"
        } catch {
            throw GitBackend.wrap(error, "naming the mirror")
        }
        return try open(remote: location, mirror: cacheDirectory + "/" + name, actor: actor)
    }

    /// Opens the store at `location` for one look (`recsync changes`, `store compact`), runs `body`, and lets
    /// it go: a network store through a throwaway mirror in the temporary directory, removed
    /// afterwards (a mirror that cannot be removed is an error naming it, once `body` is done).
    public static func withStore<T>(
        at location: String, relativeTo base: String, actor: StoreActor, _ body: (GitStore) async throws(RecSyncError) -> T
    ) async throws(RecSyncError) -> T {
        guard StoreLocation.isNetwork(location) else {
            return try await body(GitStore.open(location: location, relativeTo: base, actor: actor))
        }
        // A new private directory of this process's own (creating it fails if the name is
        // taken), so the mirror is never one someone else placed at a guessed path.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("recsync-look-\(UUID().uuidString)").path
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        } catch {
            throw .fileSystem(
                path: directory,
                message: "cannot make a directory for the throwaway mirror (\(error.localizedDescription)); check the temporary directory ($TMPDIR)")
        }
        let mirror = directory + "/mirror"
        func removeMirror() throws(RecSyncError) {
            do { try FileManager.default.removeItem(atPath: directory) } catch {
                throw .fileSystem(
                    path: directory, message: "the throwaway mirror could not be removed (\(error.localizedDescription)); remove it by hand")
            }
        }
        let result: T
        do throws(RecSyncError) {
            result = try await body(GitStore.open(location: location, relativeTo: base, actor: actor, mirror: mirror))
        } catch {
            try? removeMirror()  // the body's error is the one to report
            throw error
        }
        try removeMirror()
        return result
    }

    /// `remote` without the password a network address may carry (the user name stays): the
    /// form to keep on disk or show (DESIGN §11: credentials never on disk in the workspace).
    public static func withoutPassword(_ remote: String) -> String { GitRemoteURL.withoutPassword(remote) }

    /// `remote` as a message may show it: no password, and a query string (`?token=…`) as `?…`.
    public static func shown(_ remote: String) -> String { GitRemoteURL.shown(remote) }

    /// Hands the user name and password in a network address to git's credential helpers, so
    /// that the address kept without the password still authenticates; false when `remote`
    /// carries no password or no helper could take it (then `RECSYNC_TOKEN` must supply it).
    @discardableResult
    public static func rememberCredentials(of remote: String, options: NetworkOptions = .fromEnvironment()) -> Bool {
        guard options.useCredentialHelper, let url = GitRemoteURL(remote) else { return false }
        return url.approveCredentials(options: options)
    }

    /// The store's current head commit, cheaply: for a network store the remote's
    /// `refs/heads/main` as advertised (`git ls-remote`, no fetch), for `recsync watch` to poll.
    /// With a ref per zone, main's head and every zone ref's, one per line (`name commit`):
    /// what moves when anything is written.
    public func remoteHead() throws(RecSyncError) -> String {
        if core.backend.zonesHaveOwnRefs {
            let refs: [(name: String, target: GitOID)]
            if let link = core.backend.remote {
                refs = try link.remoteReferences(named: GitBackend.headRef, under: RefNames.zonesPrefix)
            } else {
                let repository = core.backend.repository
                do {
                    refs =
                        try [(GitBackend.headRef, repository.referenceTarget(GitBackend.headRef))].compactMap { n, t in t.map { (n, $0) } }
                        + repository.references(under: RefNames.zonesPrefix)
                } catch { throw GitBackend.wrap(error, "listing the store's refs") }
            }
            return refs.map { "\($0.name) \($0.target.hex)" }.joined(separator: "\n")
        }
        if let link = core.backend.remote {
            guard let head = try link.remoteHead() else {
                throw .storeCorrupt(
                    "\(link.remote.redacted) no longer has \(GitBackend.headRef); restore it from a clone (the mirror in \(path) is one)")
            }
            return head.hex
        }
        return try core.backend.head()
    }

    /// Operations begun and not yet ended (see `beginOperation`).
    private var operationDepth = 0
    /// Whether the mirror has looked at the remote within the current operation.
    private var lookedInOperation = false

    public func beginOperation(fromLastLook: Bool) async {
        if operationDepth == 0 && fromLastLook { lookedInOperation = true }
        operationDepth += 1
    }

    public func endOperation() async {
        operationDepth = max(0, operationDepth - 1)
        if operationDepth == 0 { lookedInOperation = false }
    }

    /// Fetches a network store's head into the mirror, so that a call reads the store as it
    /// is now: at every call outside an operation, and once per operation inside one (the
    /// later calls of the operation read the mirror). Writes need no look of their own: they
    /// push by compare-and-swap, and a push the remote refused fetches and recomputes.
    private func refresh() throws(RecSyncError) {
        guard let link = core.backend.remote else { return }
        if operationDepth > 0 && lookedInOperation { return }
        try link.fetch(into: core.backend.repository)
        if operationDepth > 0 { lookedInOperation = true }
        // The remote may have been replaced by another store since the mirror was opened (or
        // last fetched by an earlier command): never read one store's history as another's.
        let fetched = try GitBackend.manifestAtHead(of: core.backend.repository, acceptingZoneRefs: core.backend.zonesHaveOwnRefs).storeID
        guard fetched == storeID else {
            throw .notAStore(
                """
                \(link.remote.redacted) now holds another store (store \(fetched); its mirror at \(path) held\
                 store \(storeID)); if that is intended, clone it into a new directory
                """
            )
        }
    }

    /// Creates a new, empty store: a bare repository whose first commit holds `recsync.json`.
    @discardableResult
    public static func create(at path: String, actor: StoreActor, storeID: String = UUID().uuidString.lowercased()) throws(RecSyncError)
        -> StoreManifest
    {
        try create(at: path, actor: actor, storeID: storeID, format: StoreLayout.formatVersion)
    }

    /// Creates a new, empty store of a format: 1, or `StoreLayout.zoneRefsFormat` (a ref per
    /// zone, being built: only tests make one). Format 2's first commit also holds a file at
    /// `zones` and at `tombstones`, where format 1 keeps directories, so that a format-1 writer
    /// that got past the manifest cannot put a zone on the shared ref.
    @discardableResult
    package static func create(at path: String, actor: StoreActor, storeID: String = UUID().uuidString.lowercased(), format: Int)
        throws(RecSyncError) -> StoreManifest
    {
        try checkNewStoreTarget(path)
        let repository: GitRepository
        do { repository = try GitRepository.initBare(at: path) } catch {
            if error.isExists {
                throw .alreadyExists("'\(path)' is already a git repository; choose an empty or new directory")
            }
            throw .invalidArguments("cannot create a store at '\(path)': \(error.message)")
        }
        let time = actor.clock()
        let manifest = StoreManifest(format: format, storeID: storeID, created: time)
        let created: Bool
        do throws(GitError) {
            let blob = try repository.createBlob(manifest.encoded())
            var updates: [GitTreeUpdate] = [.upsertBlob(path: StoreLayout.manifestPath, oid: blob)]
            if format == StoreLayout.zoneRefsFormat {
                let note = try repository.createBlob(Array(Self.zoneRefsNote.utf8))
                updates += [.upsertBlob(path: StoreLayout.zonesDir, oid: note), .upsertBlob(path: StoreLayout.tombstonesDir, oid: note)]
            }
            let tree = try repository.updateTree(base: nil, updates: updates)
            let signature = GitSignature(name: actor.displayName, email: actor.email, time: time / 1000)
            let commit = try repository.createCommit(
                tree: tree, parents: [], author: signature, message: "\(actor.userRecordName): create recsync store \(storeID)\n")
            created = try repository.updateReference(GitBackend.headRef, to: commit, expected: nil, logMessage: "recsync: create store")
        } catch { throw GitBackend.wrap(error, "creating the store") }
        guard created else {
            throw .alreadyExists("'\(path)' already has a \(GitBackend.headRef); it is not empty")
        }
        return manifest
    }

    /// Where a store may be created: a path that does not exist, or an empty directory. A
    /// regular file, a git repository or a directory holding anything is refused with the
    /// reason, before anything is written (git would otherwise make a repository among the files).
    public static func checkNewStoreTarget(_ path: String) throws(RecSyncError) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { return }
        guard isDirectory.boolValue else {
            throw .alreadyExists("'\(path)' is a file, not a directory; give a new path or an empty directory for the store")
        }
        let entries: [String]
        do { entries = try FileManager.default.contentsOfDirectory(atPath: path).sorted() } catch {
            throw .fileSystem(
                path: path, message: "cannot be listed (\(error.localizedDescription)); give a new path or an empty directory for the store")
        }
        guard let first = entries.first else { return }
        if entries.contains("HEAD") && entries.contains("objects") {
            throw .alreadyExists("'\(path)' is already a git repository; choose an empty or new directory")
        }
        let more = entries.count > 1 ? " and \(entries.count - 1) more" : ""
        throw .alreadyExists("'\(path)' is not empty (it holds '\(first)'\(more)); give a new path or an empty directory for the store")
    }

    public func databaseChanges(scope: DatabaseScope, since token: ServerChangeToken?, resultsLimit: Int) throws(RecSyncError) -> DatabaseChanges {
        try refresh()
        return try core.databaseChanges(scope: scope, since: token, resultsLimit: resultsLimit)
    }

    public func recordZoneChanges(zone: ZoneID, since token: ServerChangeToken?, resultsLimit: Int, desiredKeys: [String]?) throws(RecSyncError)
        -> RecordZoneChanges
    {
        try refresh()
        return try core.recordZoneChanges(zone: zone, since: token, resultsLimit: resultsLimit, desiredKeys: desiredKeys)
    }

    public func modifyRecords(saving: [Record], deleting: [RecordDeletion], savePolicy: SavePolicy, atomically: Bool, clientChangeTokenData: String?)
        throws(RecSyncError) -> ModifyRecordsResult
    {
        try refresh()
        return try core.modifyRecords(
            saving: saving, deleting: deleting, savePolicy: savePolicy, atomically: atomically, clientChangeTokenData: clientChangeTokenData)
    }

    public func modifyRecordZones(_ operations: [ZoneOperation]) throws(RecSyncError) -> [ZoneOperationResult] {
        try refresh()
        return try core.modifyRecordZones(operations)
    }

    public func fetchAllRecordZones(scope: DatabaseScope) throws(RecSyncError) -> [RecordZone] {
        try refresh()
        return try core.fetchAllRecordZones(scope: scope)
    }

    @discardableResult
    public func publishUserPublicKey(_ key: [UInt8], signingKey: [UInt8]) throws(RecSyncError) -> UserPublicKey {
        try refresh()
        return try core.publishUserPublicKey(key, signingKey: signingKey)
    }

    public func fetchUserPublicKey(_ user: String) throws(RecSyncError) -> UserPublicKey? {
        try refresh()
        return try core.fetchUserPublicKey(user)
    }

    public func fetchZoneDeletions(_ zoneIDs: [ZoneID]) throws(RecSyncError) -> [ZoneDeletion] {
        try refresh()
        return try core.fetchZoneDeletions(zoneIDs)
    }

    public func currentDatabaseToken(scope: DatabaseScope) throws(RecSyncError) -> ServerChangeToken {
        try refresh()
        return try core.currentDatabaseToken(scope: scope)
    }

    public func checkSubscriptions(_ subscriptions: [Subscription], scope: DatabaseScope, since token: ServerChangeToken?) throws(RecSyncError)
        -> SubscriptionCheck
    {
        try refresh()
        return try core.checkSubscriptions(subscriptions, scope: scope, since: token)
    }

    public func fetchRecords(_ ids: [RecordID], desiredKeys: [String]?) throws(RecSyncError) -> [RecordResult] {
        try refresh()
        return try core.fetchRecords(ids, desiredKeys: desiredKeys)
    }

    /// Writes the asset into the store's repository (the mirror, for a network store: the
    /// commit that references it pushes it).
    /// From the store's manifest as it was opened.
    public nonisolated let maxAssetBytes: Int64

    public func uploadAsset(fd: Int32, path: String, for recordID: RecordID, field: String) throws(RecSyncError) -> AssetReference {
        try core.uploadAsset(fd: fd, path: path, for: recordID, field: field)
    }

    public func downloadAsset(_ asset: AssetReference, zone: ZoneID, fd: Int32, path: String) throws(RecSyncError) {
        // Content-addressed: a mirror that lacks the blob has not fetched the record yet.
        if try core.backend.assetSize(asset.oid) == nil { try refresh() }
        try core.downloadAsset(asset, zone: zone, fd: fd, path: path)
    }

    public func fetchRecordVersion(_ id: RecordID, changeTag: String) throws(RecSyncError) -> Record? {
        try refresh()
        return try core.fetchRecordVersion(id, changeTag: changeTag)
    }

    /// The change tags a record had, newest first, following the first-parent history
    /// (nil entries: the record did not exist at that commit). At most `limit` commits.
    /// With a ref per zone, the history of the record's zone's ref.
    public func recordHistory(_ id: RecordID, limit: Int = 10_000) throws(RecSyncError) -> [(commit: String, tag: String?)] {
        let backend = core.backend
        let repo = backend.repository
        var result: [(commit: String, tag: String?)] = []
        let path = backend.paths.record(id)
        try walkHistory(of: backend.refName(backend.ref(of: id.zoneID))) { (oid, commit) throws(GitError) -> Bool in
            let entry = try repo.entry(atPath: path, inTree: commit.tree)
            result.append((oid.hex, entry?.oid.hex))
            return result.count < limit
        }
        return result
    }

    /// Visits the first-parent history from the head of `ref` (main by default), newest
    /// first, while `visit` returns true; down to (not including) `stop`.
    func walkHistory(of ref: String = GitBackend.headRef, stoppingAt stop: GitOID? = nil, _ visit: (GitOID, GitCommit) throws(GitError) -> Bool)
        throws(RecSyncError)
    {
        let repo = core.backend.repository
        do {
            var next = try repo.referenceTarget(ref)
            while let c = next, c != stop {
                let commit = try repo.commit(c)
                guard try visit(c, commit) else { return }
                next = commit.parents.first
            }
        } catch {
            throw GitBackend.wrap(error, "reading history")
        }
    }
}

/// One commit of a store's history.
public struct StoreCommit: Sendable, Hashable {
    public var commit: String
    public var authorName: String
    public var authorEmail: String
    /// Seconds since the epoch.
    public var time: Int64
    public var message: String
}

extension GitStore {
    /// The store's history, newest first, following first parents: its change log. With a
    /// zone, only the commits that changed that zone (its subtree differs from the parent's).
    ///
    /// With a ref per zone: a zone's log is its ref's history; the store's log merges main's
    /// history since the upgrade (if any: before it, the zones' replayed commits stand for
    /// it) with every zone ref's, newest first by commit time.
    public func log(limit: Int = 100, zone: ZoneID? = nil) throws(RecSyncError) -> [StoreCommit] {
        if core.backend.zonesHaveOwnRefs { return try logOfZoneRefs(limit: limit, zone: zone) }
        let repo = core.backend.repository
        var result: [StoreCommit] = []
        try walkHistory { (oid, commit) throws(GitError) -> Bool in
            if let zone {
                // Only commits whose zone subtree differs from their parent's.
                let path = StoreLayout.zoneDir(zone)
                let mine = try repo.entry(atPath: path, inTree: commit.tree)?.oid
                let parents =
                    try commit.parents.first.map { p throws(GitError) in try repo.entry(atPath: path, inTree: repo.commit(p).tree)?.oid } ?? nil
                if mine == parents { return true }
            }
            result.append(StoreCommit(commit))
            return result.count < limit
        }
        return result
    }

    /// `log` of a store with a ref per zone.
    private func logOfZoneRefs(limit: Int, zone: ZoneID?) throws(RecSyncError) -> [StoreCommit] {
        let backend = core.backend
        var result: [StoreCommit] = []
        if let zone {
            try walkHistory(of: RefNames.refName(for: zone)) { (_, commit) throws(GitError) -> Bool in
                result.append(StoreCommit(commit))
                return result.count < limit
            }
            return result
        }
        // Each ref's next commit; the newest of them is taken, and its ref moves on.
        var tips: [(commit: GitCommit, stop: GitOID?, main: Bool)] = []
        func tip(_ oid: GitOID?, stop: GitOID?, main: Bool) throws(RecSyncError) {
            guard let oid, oid != stop else { return }
            do { tips.append((try backend.repository.commit(oid), stop, main)) } catch { throw GitBackend.wrap(error, "reading commit \(oid.hex)") }
        }
        try tip(GitOID(hex: backend.head()), stop: try backend.upgradedFrom().flatMap(GitOID.init(hex:)), main: true)
        for ref in try backend.zoneRefs(owner: nil).refs { try tip(GitOID(hex: ref.head), stop: nil, main: false) }
        // Commit times are whole seconds: of commits made in the same second, main's (the
        // store's creation, keys, the upgrade) are taken last, as they came first.
        func older(_ a: Int, _ b: Int) -> Bool {
            (tips[a].commit.time, tips[a].main ? 0 : 1, -a) < (tips[b].commit.time, tips[b].main ? 0 : 1, -b)
        }
        while result.count < limit, let newest = tips.indices.max(by: older) {
            let (commit, stop, main) = tips.remove(at: newest)
            result.append(StoreCommit(commit))
            try tip(commit.parents.first, stop: stop, main: main)
        }
        return result
    }
}

extension StoreCommit {
    init(_ commit: GitCommit) {
        self.init(commit: commit.oid.hex, authorName: commit.authorName, authorEmail: commit.authorEmail, time: commit.time, message: commit.message)
    }
}
