/// One thing `recsync doctor` found in a workspace or its store, and whether it was repaired.
public struct DoctorFinding: Sendable, Hashable {
    /// What was found.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// A sync holds the workspace lock: the checks ran, nothing was repaired.
        case workspaceBusy
        /// Temp files or the registry of a write batch a killed sync left.
        case batchLeftover
        /// A sidecar that holds no synced version and has no record file (a new record's type
        /// note left when its file was removed before a push).
        case orphanSidecar
        /// A sidecar that does not decode.
        case damagedSidecar
        /// A record file whose sidecar is gone though the index says it was synced: it now
        /// reads as a new record.
        case missingSidecar
        /// An index entry for a file that has neither a record file nor a sidecar.
        case staleIndexEntry
        /// A change token file that does not decode.
        case unreadableToken
        /// A lock file a killed writer left in the store (or the network store's mirror).
        case staleStoreLock
        /// A lock file of a store write under way: not a problem.
        case storeLockInUse
        /// The store cannot be opened: `recsync.json` unreadable or of an unknown format.
        case storeUnreadable
        /// An entry of the store no workspace can hold, zone metadata that does not decode, or
        /// a zone directory of the wrong shape (a file where a directory belongs).
        case storeEntry
        /// A record the store cannot deliver (its blob does not decode).
        case undecodableRecord
    }

    public let kind: Kind
    /// The file or store path it is about (workspace paths relative to the root).
    public let path: String
    /// What it is, and what was done or is to be done.
    public var detail: String
    /// Whether `recsync doctor --fix` repairs it.
    public let fixable: Bool
    /// Whether it was repaired in this run.
    public var fixed: Bool

    public init(kind: Kind, path: String, detail: String, fixable: Bool, fixed: Bool = false) {
        self.kind = kind
        self.path = path
        self.detail = detail
        self.fixable = fixable
        self.fixed = fixed
    }

    /// Whether it is still a problem: not repaired, and not a sign of work under way.
    public var remains: Bool { !fixed && kind != .workspaceBusy && kind != .storeLockInUse }
}
