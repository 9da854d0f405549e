import RecSyncModel

/// One version of a zone's content: the OID of the zone's directory in a git store.
///
/// Record reads take it rather than a commit, so they do not depend on where a commit keeps
/// the zone: the same content has the same ID wherever it sits (see docs/zone-refs.md, where
/// each zone moves to a ref of its own).
struct ZoneContentID: Hashable, Sendable, CustomStringConvertible {
    var rawValue: String
    var description: String { rawValue }
}

/// Where a backend keeps commits (docs/zone-refs.md): the shared ref, and the ref of each
/// zone, which in store format 1 is the shared ref too.
enum StoreRef: Hashable, Sendable, Comparable, CustomStringConvertible {
    case shared
    case zone(ZoneID)

    var description: String {
        switch self {
        case .shared: "the shared ref"
        case .zone(let id): "zone '\(id)''s ref"
        }
    }
}

/// A zone's own ref and the commit it is at, in a store where each zone has one.
struct ZoneRefState: Sendable, Hashable {
    var zoneID: ZoneID
    /// The ref's name after `refs/recsync/zones/` (`RefNames.suffix(for:)`): what a version 2
    /// database token keys its heads by.
    var suffix: String
    var head: String
}

/// A zone as found in one version of the store.
struct ZoneEntry: Sendable {
    var zoneID: ZoneID
    /// Changes whenever anything in the zone changes (the subtree's OID in a git store).
    var contentID: ZoneContentID
    /// The zone's metadata, or why it could not be read.
    var zone: Result<RecordZone, RecSyncError>
}

/// A zone whose content differs between two commits (`StoreBackend.zoneChanges`).
struct ZoneChange: Sendable {
    var before: ZoneEntry?
    var after: ZoneEntry?
    var zoneID: ZoneID { (after ?? before)!.zoneID }
}

extension StoreBackend {
    /// The shared ref's head: the store's head where every zone is on it.
    func head() throws(RecSyncError) -> String {
        guard let head = try head(of: .shared) else { throw .internalError("the store's shared ref has no head") }
        return head
    }

    /// The head of the ref that holds a zone's commits; nil when that ref does not exist yet.
    func zoneHead(_ zone: ZoneID) throws(RecSyncError) -> String? { try head(of: ref(of: zone)) }

    /// Both commits' zones compared in full: for a backend whose listing costs nothing much.
    func zoneChangesByListing(from base: String?, to target: String, owner: String?) throws(RecSyncError) -> (
        changes: [ZoneChange], warnings: [StoreWarning]
    ) {
        let before = try base.map { c throws(RecSyncError) in try zones(at: c, owner: owner).zones } ?? []
        let (after, warnings) = try zones(at: target, owner: owner)
        var old: [ZoneID: ZoneEntry] = [:]
        for e in before { old[e.zoneID] = e }
        var changes: [ZoneChange] = []
        for e in after {
            let was = old.removeValue(forKey: e.zoneID)
            if was?.contentID != e.contentID { changes.append(ZoneChange(before: was, after: e)) }
        }
        for e in old.values { changes.append(ZoneChange(before: e, after: nil)) }
        return (changes, warnings)
    }
}

/// One record that differs between two versions of a zone.
struct RawRecordChange: Sendable {
    /// Where the walk is: resuming after this key skips everything up to and including it.
    var key: String
    var recordName: String
    /// Change tag before (nil: the record is new).
    var old: String?
    /// Change tag after (nil: the record was deleted).
    var new: String?
    /// Why this item cannot be used although its name could be read.
    var problem: String?
}

/// A page of record changes.
struct RawRecordChangeBatch: Sendable {
    var changes: [RawRecordChange]
    var more: Bool
    var warnings: [StoreWarning]
}

/// One write in a commit.
enum StoreWrite: Sendable {
    /// A record's blob, and its asset fields (field key → asset blob ID): the record's asset
    /// directory is made to hold exactly these.
    case saveRecord(RecordID, [UInt8], assets: [String: String])
    case deleteRecord(RecordID)
    case saveZone(ZoneID, [UInt8])
    case removeZone(ZoneID)
    case saveTombstone(ZoneID, [UInt8])
    case removeTombstone(ZoneID)
    /// The client change token of one client (`StoreActor.clientSlot`) in a zone.
    case saveClientToken(ZoneID, client: String, [UInt8])
    /// A user's public key (`users/<user>/key.json`).
    case saveUserKey(String, [UInt8])
}

/// The outcome of a compare-and-swap commit.
enum CommitOutcome: Sendable {
    /// Landed; the change tags of the records saved.
    case committed(commit: String, tags: [RecordID: String])
    /// The head moved since `parent`: recompute and try again.
    case headMoved
}

/// The storage under the store semantics: versions of the DESIGN §2 tree.
///
/// Commits are named by opaque strings. Everything here is synchronous; the store actors
/// serialise access to one backend.
protocol StoreBackend: AnyObject {
    var manifest: StoreManifest { get }

    /// Whether each zone has a ref of its own (store format 2): then zones are listed from
    /// `zoneRefs`, and database changes compare zone heads (version 2 tokens).
    var zonesHaveOwnRefs: Bool { get }
    /// The zone refs of one owner (nil: every owner), sorted by suffix, and what was passed
    /// over (a ref whose name does not decode, or whose zone's name cannot be read). Empty
    /// where zones are on the shared ref.
    func zoneRefs(owner: String?) throws(RecSyncError) -> (refs: [ZoneRefState], warnings: [StoreWarning])
    /// The ref that holds a zone's commits: `.shared` when every zone is on the shared ref.
    func ref(of zone: ZoneID) -> StoreRef
    /// The commit a ref is at; nil when the ref does not exist (only a zone's own ref, before
    /// the zone is created, can be missing).
    func head(of ref: StoreRef) throws(RecSyncError) -> String?
    /// A commit's first parent (nil for the first commit) and message.
    func commitInfo(_ commit: String) throws(RecSyncError) -> (parent: String?, message: String)
    /// Whether `commit` exists and is the head or one of its ancestors.
    func isInHistory(_ commit: String, head: String) throws(RecSyncError) -> Bool
    /// The commit that a compaction replayed `commit` as, from the marker at `head` (nil: no
    /// compaction replayed it, or it was folded into the new root: a token naming it expires).
    func rewrittenCommit(_ commit: String, head: String) throws(RecSyncError) -> String?
    /// For a store upgraded to a ref per zone: the commit of main's history from before the
    /// upgrade that `commit` stands for (itself, or what a compaction before the upgrade
    /// replayed it as), whose format-1 tree `zoneContent` reads a zone from; nil otherwise.
    func commitBeforeUpgrade(_ commit: String) throws(RecSyncError) -> String?
    /// The zones (optionally of one owner) whose content differs between two commits, each
    /// as it is at both (nil: not there; `base` nil: the empty store), and what was passed
    /// over at `target`. Walking history commit by commit (subscriptions) asks this for every
    /// commit, so its cost must follow what changed, not the number of zones.
    func zoneChanges(from base: String?, to target: String, owner: String?) throws(RecSyncError) -> (changes: [ZoneChange], warnings: [StoreWarning])
    /// Zones present at a commit (optionally of one owner), and what was passed over.
    func zones(at commit: String, owner: String?) throws(RecSyncError) -> (zones: [ZoneEntry], warnings: [StoreWarning])
    /// One zone at a commit, nil if absent.
    func zone(_ id: ZoneID, at commit: String) throws(RecSyncError) -> ZoneEntry?
    /// A zone's content at a commit without reading its document (nil: absent): what the
    /// record reads below take.
    func zoneContent(_ id: ZoneID, at commit: String) throws(RecSyncError) -> ZoneContentID?
    /// Why a zone's directory at a commit cannot be read or written as recsync keeps it (an
    /// entry it keeps as a directory, such as `records`, is something else: only plain git
    /// makes that), naming the entry and what to do; nil when it can, or the zone is absent.
    func zoneShapeProblem(_ id: ZoneID, at commit: String) throws(RecSyncError) -> String?
    /// The deletion reason recorded for a zone at a commit, nil if there is no tombstone.
    func tombstone(_ id: ZoneID, at commit: String) throws(RecSyncError) -> ZoneDeletionReason?
    /// The client change token a client last recorded in a version of a zone; nil if none.
    func clientToken(_ zone: ZoneID, client: String, in content: ZoneContentID) throws(RecSyncError) -> [UInt8]?
    /// A user's published public key document at a commit, nil if none.
    func userKey(_ user: String, at commit: String) throws(RecSyncError) -> [UInt8]?
    /// The change tag of a record at a commit, nil if absent.
    func recordTag(_ id: RecordID, at commit: String) throws(RecSyncError) -> String?
    /// The stored bytes of a record version, nil if the store no longer has it.
    func blob(_ tag: String) throws(RecSyncError) -> [UInt8]?
    /// The size of a stored record version without reading it, nil if the store lacks it.
    func blobSize(_ tag: String) throws(RecSyncError) -> Int?
    /// Records that differ between two versions of a zone (nil: no zone, so nothing), in a
    /// fixed order, starting after key `after`, at most `limit`. `zone` names the zone in
    /// warnings.
    func recordChanges(zone: ZoneID, from base: ZoneContentID?, to target: ZoneContentID?, after: String?, limit: Int) throws(RecSyncError)
        -> RawRecordChangeBatch
    /// About how many records a version of a zone holds (entries of its fan-out directories,
    /// without reading them): the total a full fetch shows progress against.
    func recordCountEstimate(zone: ZoneID, in content: ZoneContentID?) throws(RecSyncError) -> Int

    /// About how many records differ between two versions of a zone (the entries a tree diff
    /// finds, without reading any record): the total a fetch since a token shows progress against.
    func recordChangeCountEstimate(zone: ZoneID, from base: ZoneContentID?, to target: ZoneContentID?) throws(RecSyncError) -> Int
    /// Every record of a version of a zone (nil: none).
    func allRecords(zone: ZoneID, in content: ZoneContentID?) throws(RecSyncError) -> [(recordName: String, tag: String)]
    /// Stores an open file's content as an asset blob, streaming (never whole in memory).
    func storeAsset(fd: Int32, size: Int64, path: String) throws(RecSyncError) -> AssetReference
    /// The size of a stored asset blob, nil when the store lacks it (or it is not a blob).
    func assetSize(_ oid: String) throws(RecSyncError) -> Int64?
    /// Writes a stored asset blob's content to an open file; what was written (nil: the
    /// store lacks the blob).
    func readAsset(_ oid: String, toFD fd: Int32, path: String) throws(RecSyncError) -> AssetReference?
    /// A stored asset blob's SHA-256, computed from its content read in chunks (nil: the
    /// store lacks the blob).
    func assetSHA256(_ oid: String) throws(RecSyncError) -> String?
    /// The asset blobs a record holds at a commit (the blob IDs under its asset directory,
    /// `StoreLayout.assetDir`): what a save of the record may reference without uploading.
    func recordAssetBlobs(_ id: RecordID, at commit: String) throws(RecSyncError) -> Set<String>
    /// Commits `writes` on top of `parent` (nil: the ref does not exist yet) and moves `ref`
    /// to it by compare-and-swap. The writes touch only what `ref` holds.
    func commit(on ref: StoreRef, parent: String?, writes: [StoreWrite], message: String, actor: StoreActor, time: Int64) throws(RecSyncError)
        -> CommitOutcome
    /// Commits on several refs, each by compare-and-swap on its own: one outcome per commit, in
    /// their order. A network store publishes them in one push.
    func commit(_ batch: [RefCommit], actor: StoreActor, time: Int64) throws(RecSyncError) -> [CommitOutcome]
}

/// One commit of a batch (`StoreBackend.commit(_:actor:time:)`): `writes` on top of `parent`
/// (nil: the ref does not exist yet), for `ref`.
struct RefCommit {
    var ref: StoreRef
    var parent: String?
    var writes: [StoreWrite]
    var message: String
}

extension StoreBackend {
    /// One commit after another, for a backend whose commits cost no round trip.
    func commitEach(_ batch: [RefCommit], actor: StoreActor, time: Int64) throws(RecSyncError) -> [CommitOutcome] {
        var outcomes: [CommitOutcome] = []
        for c in batch {
            outcomes.append(try commit(on: c.ref, parent: c.parent, writes: c.writes, message: c.message, actor: actor, time: time))
        }
        return outcomes
    }
}
