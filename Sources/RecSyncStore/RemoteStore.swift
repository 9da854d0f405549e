import Glibc
import RecSyncModel

/// A recsync store as CloudKit's operations see it, for one acting user.
///
/// Every operation is made by `userRecordName`: the private scope is that user's zones, the
/// shared scope the zones other owners share with that user. Implementations: `GitStore`
/// (a git repository through libgit2) and `MemoryStore` (for tests; the same semantics).
public protocol RemoteStore: Actor {
    /// The user every operation acts as.
    nonisolated var userRecordName: String { get }
    /// The store's identity (from its manifest); tokens are bound to it.
    nonisolated var storeID: String { get }
    /// The network address the store is reached at, without credentials (for messages);
    /// nil for a store opened by path or kept in memory (the default).
    nonisolated var remote: String? { get }

    /// What to wait on for the store to move (`recsync watch`); nil when the store offers
    /// nothing to wait on (the default): a watcher then looks again periodically.
    nonisolated func changeSignal() throws(RecSyncError) -> StoreChangeSignal?

    /// Told before a pull reads much of the store (a clone, or any pull): a store may then
    /// trade speed for memory. Does nothing by default.
    nonisolated func prepareForBulkRead()

    /// Zones changed and deleted in a scope since a database token (nil: every zone in scope).
    func databaseChanges(scope: DatabaseScope, since token: ServerChangeToken?, resultsLimit: Int) async throws(RecSyncError) -> DatabaseChanges

    /// Records changed and deleted in one zone since a zone token (nil: every record).
    ///
    /// `desiredKeys`: nil returns every field, `[]` none, otherwise only those keys.
    func recordZoneChanges(
        zone: ZoneID, since token: ServerChangeToken?, resultsLimit: Int, desiredKeys: [String]?
    ) async throws(RecSyncError) -> RecordZoneChanges

    /// Saves and deletes records; one result per item, in input order.
    ///
    /// With `atomically`, a zone in which any item fails lands nothing (the others get
    /// `batchRequestFailed`); zones are independent of each other either way.
    /// `clientChangeTokenData` (CloudKit's): an opaque token of the client's choosing, kept
    /// for every zone the request writes to and handed back by `recordZoneChanges` to this
    /// client (`StoreActor.deviceID`), so that it can tell whether an upload landed.
    func modifyRecords(
        saving: [Record], deleting: [RecordDeletion], savePolicy: SavePolicy, atomically: Bool, clientChangeTokenData: String?
    ) async throws(RecSyncError) -> ModifyRecordsResult

    /// Creates, updates, deletes and purges zones; one result per operation, in input order.
    func modifyRecordZones(_ operations: [ZoneOperation]) async throws(RecSyncError) -> [ZoneOperationResult]

    /// Every zone in a scope.
    func fetchAllRecordZones(scope: DatabaseScope) async throws(RecSyncError) -> [RecordZone]

    /// Why each of these zones of the user's own went away: one deletion per zone the store
    /// holds a tombstone of and not the zone itself. Zones of other owners are left out.
    ///
    /// What a client asks before it creates a zone it holds and the store lacks (only an
    /// explicit create brings a deleted zone back), and after a full database listing, which
    /// names live zones only.
    func fetchZoneDeletions(_ zoneIDs: [ZoneID]) async throws(RecSyncError) -> [ZoneDeletion]

    /// Publishes the acting user's public keys (`users/<user>/key.json`); replaces older ones.
    ///
    /// - Parameters:
    ///   - key: the X25519 public key (32 bytes) owners of encrypted zones wrap zone keys for.
    ///   - signingKey: the Ed25519 public key (32 bytes) that checks this user's signatures of
    ///     their zones' keys.
    @discardableResult
    func publishUserPublicKey(_ key: [UInt8], signingKey: [UInt8]) async throws(RecSyncError) -> UserPublicKey

    /// A user's published public key; nil when they have published none.
    func fetchUserPublicKey(_ user: String) async throws(RecSyncError) -> UserPublicKey?

    /// A database token at the store's head: where a subscription that starts now begins.
    func currentDatabaseToken(scope: DatabaseScope) async throws(RecSyncError) -> ServerChangeToken

    /// Evaluates subscriptions of one scope against what changed since a database token
    /// (nil: since the store began), as CloudKit's server does before it sends a push: one
    /// coalesced match per subscription, leaving out this client's own commits
    /// (`StoreActor.deviceID`) unless a subscription includes them. The result's cursor is the
    /// token to check from next time; `changeTokenExpired` when history was rewritten.
    func checkSubscriptions(_ subscriptions: [Subscription], scope: DatabaseScope, since token: ServerChangeToken?) async throws(RecSyncError)
        -> SubscriptionCheck

    /// The current version of each record, one result per ID, in input order.
    func fetchRecords(_ ids: [RecordID], desiredKeys: [String]?) async throws(RecSyncError) -> [RecordResult]

    /// One earlier version of a record, named by its change tag (the ancestor of a conflict);
    /// nil when the store no longer has it or the zone is not visible.
    func fetchRecordVersion(_ id: RecordID, changeTag: String) async throws(RecSyncError) -> Record?

    /// The largest asset the store takes, in bytes (`maxAssetBytes` in its `recsync.json`).
    nonisolated var maxAssetBytes: Int64 { get }

    /// Stores the file open for reading at `fd` as an asset (CloudKit uploads a `CKAsset`
    /// before the record that references it), streaming from its start: the reference to put
    /// in a record's `.asset` field. `path` names the file in errors. A file over the store's
    /// `maxAssetBytes` is refused (`limitExceeded`) before anything is sent. Saving a record
    /// checks that each asset it references is in the store at that size and SHA-256 (hashed
    /// streaming, once per blob), and that it is the record's: uploaded through this handle
    /// for that record and field, or already one of the record's assets in the store.
    ///
    /// `recordID` and `field` say where the file is to go: a file for a field its zone seals
    /// (an encrypted zone) is refused before a byte of it is read, since recsync does not
    /// encrypt files and the store would otherwise hold its content in clear.
    ///
    /// The file is read from its start, wherever the descriptor stands.
    ///
    /// The caller opens the file (and closes it after): a workspace opens it under its root
    /// without following links (`FileIO.openRegularFile`), which a path handed to the store
    /// could not promise. `uploadAsset(fileAt:for:field:)` opens a path for you.
    func uploadAsset(fd: Int32, path: String, for recordID: RecordID, field: String) async throws(RecSyncError) -> AssetReference

    /// Writes an asset of a record in `zone` into the file open for writing at `fd` (`path`
    /// names it in errors), emptied first, streaming, and makes the file durable. Content that does
    /// not match the reference (size, SHA-256) or is missing is `storeCorrupt` for that
    /// asset; the caller, who opened the file, removes it then.
    /// `downloadAsset(_:zone:to:)` creates the file at a path for you.
    func downloadAsset(_ asset: AssetReference, zone: ZoneID, fd: Int32, path: String) async throws(RecSyncError)

    /// Marks the start of one operation made of several calls (a pull, a push, a status): a
    /// store reached over the network may then look at the remote once, at the operation's
    /// first call, and answer the later calls from that look, instead of asking the remote
    /// again at every call. Writes are not affected: they still land by compare-and-swap
    /// against the remote itself, so a write based on a stale look is refused and decided
    /// again. Operations nest; each `beginOperation` is paired with one `endOperation`.
    ///
    /// `fromLastLook`: the operation's reads may answer from the last look the store took,
    /// however old, with no look of their own: for an operation whose point is a write (a
    /// push). When the write lands, the store had not moved since that look, so every read
    /// was current; when it is refused, the store looks then, and the write is decided again
    /// against what it finds. Does nothing by default.
    func beginOperation(fromLastLook: Bool) async

    /// Ends what `beginOperation` began: the next operation looks at the remote again.
    func endOperation() async
}

extension RemoteStore {
    /// Stores the file at `path` as an asset (see `uploadAsset(fd:path:for:field:)`); a
    /// link in its last component is not followed. For a file in a workspace, open it
    /// confined and pass the descriptor instead.
    public func uploadAsset(fileAt path: String, for recordID: RecordID, field: String) async throws(RecSyncError) -> AssetReference {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else {
            let e = errno
            throw .fileSystem(
                path: path, message: "cannot open the asset file: \(String(cString: strerror(e)))", cause: SystemCallFailure(call: "open", errno: e))
        }
        defer { close(fd) }
        return try await uploadAsset(fd: fd, path: path, for: recordID, field: field)
    }

    /// Writes an asset into a new file at `path` (it must not exist) as
    /// `downloadAsset(_:zone:fd:path:)` does, whole or not at all: the content goes into a
    /// temporary file beside `path`, which is linked to `path` once it is checked and durable,
    /// so a process killed part-way leaves no partial file under that name (at most the
    /// temporary one, named `.recsync-partial-<random>`, short whatever the name). On failure nothing is left behind.
    public func downloadAsset(_ asset: AssetReference, zone: ZoneID, to path: String) async throws(RecSyncError) {
        // The directory with its slash ("" for a bare name), and the name.
        let slash = path.lastIndex(of: "/")
        let prefix = slash.map { String(path[...$0]) } ?? ""
        // Not derived from the name: a name near the system's limit would make it too long.
        let partial = "\(prefix).recsync-partial-\(String(UInt64.random(in: 0...UInt64.max), radix: 36))"
        // Refused before anything is read (and again by the link below, should one appear).
        var st = stat()
        if lstat(path, &st) == 0 {
            throw .fileSystem(
                path: path, message: "cannot create the asset file: \(String(cString: strerror(EEXIST)))",
                cause: SystemCallFailure(call: "lstat", errno: EEXIST))
        }
        let fd = open(partial, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard fd >= 0 else {
            let e = errno
            throw .fileSystem(
                path: path, message: "cannot create the asset file: \(String(cString: strerror(e)))", cause: SystemCallFailure(call: "open", errno: e)
            )
        }
        defer { unlink(partial) }
        do {
            try await downloadAsset(asset, zone: zone, fd: fd, path: path)
        } catch {
            close(fd)
            throw error
        }
        close(fd)
        // A link, not a rename: a file already at `path` is refused, not replaced.
        guard link(partial, path) == 0 else {
            let e = errno
            throw .fileSystem(
                path: path, message: "cannot create the asset file: \(String(cString: strerror(e)))", cause: SystemCallFailure(call: "link", errno: e)
            )
        }
        let dfd = open(prefix.isEmpty ? "." : prefix, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { if dfd >= 0 { close(dfd) } }
        guard dfd >= 0, fsync(dfd) == 0 else {
            let e = errno
            throw .fileSystem(
                path: path, message: "cannot sync the directory of the asset file: \(String(cString: strerror(e)))",
                cause: SystemCallFailure(call: "fsync", errno: e))
        }
    }

    public nonisolated var remote: String? { nil }

    public nonisolated var maxAssetBytes: Int64 { AssetReference.defaultMaxBytes }

    public nonisolated func changeSignal() throws(RecSyncError) -> StoreChangeSignal? { nil }

    public nonisolated func prepareForBulkRead() {}

    public func beginOperation(fromLastLook: Bool) async {}

    public func beginOperation() async { await beginOperation(fromLastLook: false) }

    public func endOperation() async {}

    public func databaseChanges(scope: DatabaseScope, since token: ServerChangeToken?) async throws(RecSyncError) -> DatabaseChanges {
        try await databaseChanges(scope: scope, since: token, resultsLimit: 0)
    }

    public func recordZoneChanges(zone: ZoneID, since token: ServerChangeToken?) async throws(RecSyncError) -> RecordZoneChanges {
        try await recordZoneChanges(zone: zone, since: token, resultsLimit: 0, desiredKeys: nil)
    }

    public func modifyRecords(saving: [Record], deleting: [RecordDeletion], savePolicy: SavePolicy, atomically: Bool) async throws(RecSyncError)
        -> ModifyRecordsResult
    {
        try await modifyRecords(saving: saving, deleting: deleting, savePolicy: savePolicy, atomically: atomically, clientChangeTokenData: nil)
    }

    public func modifyRecords(saving: [Record], deleting: [RecordDeletion] = []) async throws(RecSyncError) -> ModifyRecordsResult {
        try await modifyRecords(saving: saving, deleting: deleting, savePolicy: .ifServerRecordUnchanged, atomically: true)
    }

    public func fetchRecords(_ ids: [RecordID]) async throws(RecSyncError) -> [RecordResult] {
        try await fetchRecords(ids, desiredKeys: nil)
    }
}
