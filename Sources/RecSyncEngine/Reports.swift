import RecSyncModel
import RecSyncStore
import RecSyncWorkspace

/// Something a sync did or noticed, as it happens (for progress and JSON-lines output).
public enum SyncEvent: Sendable, Hashable {
    case zoneChanged(ZoneID)
    case zoneRemoved(ZoneID, reason: ZoneDeletionReason, lostAndFound: String?)
    case zoneCreated(ZoneID)
    /// A fetch of a zone started: about how many records it brings (the zone's size from the
    /// beginning, else the records changed since its token, deletions included), the total its
    /// `recordsWritten` and `recordsDeleted` events add up to.
    case recordsExpected(ZoneID, count: Int)
    case recordsWritten(ZoneID, count: Int)
    case recordsDeleted(ZoneID, count: Int)
    case conflict(RecordID)
    case tokenExpired(String)
    case warning(String)
    /// A push is about to send this many record saves and deletions to the store.
    case sending(records: Int)
    /// A pull is asking the store what changed (over a network, its fetch): nothing is
    /// counted until the answer comes.
    case askingStore
}

/// What `pull` did.
public struct PullReport: Sendable, Hashable {
    public var zonesChanged: [ZoneID] = []
    /// Zones the store listed as changed that this pull could not read (reported in `warnings`).
    public var zonesSkipped: [ZoneID] = []
    public var zonesRemoved: [ZoneDeletion] = []
    public var recordsWritten = 0
    public var recordsDeleted = 0
    /// Records that changed on both sides (kept under `.recsync/conflicts/`).
    public var conflicts: [RecordID] = []
    /// Where unpushed work of removed zones was saved.
    public var lostAndFound: [String] = []
    /// Tokens the store no longer honoured; those zones or scopes were fetched again in full.
    public var expiredTokens: [String] = []
    public var warnings: [String] = []
    /// The records written and deleted (kept by a dry run only), and the conflicts whose
    /// store side is a deletion: what a dry run lists (`PullPlan`).
    var recordsWrittenIDs: [RecordID] = []
    var recordsDeletedIDs: [RecordID] = []
    var conflictsDeletedOnStore: [RecordID] = []

    public init() {}

    /// Adds what the pull of one zone did.
    mutating func merge(_ other: PullReport) {
        recordsWrittenIDs += other.recordsWrittenIDs
        recordsDeletedIDs += other.recordsDeletedIDs
        conflictsDeletedOnStore += other.conflictsDeletedOnStore
        zonesChanged += other.zonesChanged
        zonesSkipped += other.zonesSkipped
        zonesRemoved += other.zonesRemoved
        recordsWritten += other.recordsWritten
        recordsDeleted += other.recordsDeleted
        conflicts += other.conflicts
        lostAndFound += other.lostAndFound
        expiredTokens += other.expiredTokens
        warnings += other.warnings
    }
}

/// What `push` did.
public struct PushReport: Sendable, Hashable {
    public var zonesCreated: [ZoneID] = []
    public var saved: [RecordID] = []
    public var deleted: [RecordID] = []
    /// Records refused because the store changed them (kept under `.recsync/conflicts/`).
    public var conflicts: [RecordID] = []
    /// Records not sent: conflicts still pending from before, or refused for another reason.
    public var notSent: [String] = []
    /// What can be done about the refusals in `notSent` (each remedy once, in order).
    public var remedies: [RecSyncError.Remedy] = []
    /// The store commit the push landed in.
    public var commit: String?
    /// Zones the store had deleted, purged or reset, found before anything was sent: removed
    /// here as a pull removes them (a reset zone is kept and uploaded again).
    public var zonesRemoved: [ZoneDeletion] = []
    /// Where unpushed work of removed zones was saved.
    public var lostAndFound: [String] = []
    /// Files that are not records and no ignore rule covers: not sent, and not a reason to
    /// refuse the rest (paths as shown).
    public var untracked: [String] = []
    /// With `force`: records whose store version was not the one this workspace last synced,
    /// replaced (or deleted) by the push, with the change tag the store held just before; and
    /// records deleted on the store since this workspace synced them, brought back by the push.
    public var overwritten: [OverwrittenRecord] = []

    public init() {}
}

/// A store version a forced push replaced without having seen it: another version, or the
/// record's deletion.
public struct OverwrittenRecord: Sendable, Hashable {
    public var recordID: RecordID
    /// The change tag the store held just before the push (nil: the store had deleted the
    /// record since this workspace synced it, and the push brought it back).
    public var changeTag: String?
    /// The change tag this workspace had last synced (nil: it never had the record).
    public var knownTag: String?

    /// Whether the store had deleted the record: the push brought it back.
    public var wasDeleted: Bool { changeTag == nil }

    public init(recordID: RecordID, changeTag: String?, knownTag: String?) {
        self.recordID = recordID
        self.changeTag = changeTag
        self.knownTag = knownTag
    }
}

/// One local change, for `status`.
public struct LocalChange: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable { case new, modified, deleted }
    public var kind: Kind
    public var recordID: RecordID
    /// The record file, relative to the workspace root.
    public var path: String
}

/// What `status` found.
public struct StatusReport: Sendable, Hashable {
    public var changes: [LocalChange] = []
    /// Zone directories that do not exist on the store yet (a push creates them).
    public var newZones: [ZoneID] = []
    /// Zones kept after an encrypted-data reset, which the next push creates and uploads again.
    public var zonesToUploadAgain: [ZoneID] = []
    public var conflicts: [RecordID] = []
    /// Files that cannot be pushed as they are, and why.
    public var problems: [FileProblem] = []
    /// Files that are not records and no ignore rule covers (paths as shown): a warning only.
    public var untracked: [String] = []
    /// When the workspace last pulled from or pushed to its store (milliseconds since the
    /// epoch); nil if it never did.
    public var lastContact: Int64?
    /// Why the store could not be reached, when this status is from the workspace alone
    /// (`SyncEngine.offlineStatus`).
    public var storeError: String?

    public init() {}
    public var isClean: Bool { changes.isEmpty && newZones.isEmpty && zonesToUploadAgain.isEmpty && conflicts.isEmpty && problems.isEmpty }
    /// Whether a push has something to send (records, new zones, zones to upload again).
    public var hasSomethingToPush: Bool { !changes.isEmpty || !newZones.isEmpty || !zonesToUploadAgain.isEmpty }
}
