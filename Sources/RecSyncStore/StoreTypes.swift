import Glibc
import RecSyncModel

/// Why a zone went away (CloudKit's `CKDatabase.DatabaseChange.Deletion.Reason`).
public enum ZoneDeletionReason: String, Sendable, Hashable, Codable {
    /// Deleted by an app or another device: drop the local copy.
    case deleted
    /// Purged by the user: drop the local copy and never upload it again.
    case purged
    /// The user reset encrypted data: keep the local copy and upload it again.
    case encryptedDataReset
}

/// What a participant of a shared zone may do.
public enum SharePermission: String, Sendable, Hashable, Codable {
    case readOnly
    case readWrite
}

/// What a user is to a zone, as `zone list` shows it: its owner, a participant with a
/// permission, or not among its users.
public enum ZoneAccess: String, Sendable, Hashable {
    case owner
    case readWrite
    case readOnly
    case none
}

/// A user a zone is shared with.
public struct ShareParticipant: Sendable, Hashable, Codable {
    public var userRecordName: String
    public var permission: SharePermission

    public init(userRecordName: String, permission: SharePermission) {
        self.userRecordName = userRecordName
        self.permission = permission
    }
}

/// A zone and its metadata.
public struct RecordZone: Sendable, Hashable, Codable {
    public var zoneID: ZoneID
    /// The type given to new records that do not name one.
    public var defaultRecordType: String?
    /// The users this zone is shared with (owner only; empty means not shared).
    public var participants: [ShareParticipant]
    /// Set by the store when the zone is created.
    public var created: ChangeStamp?
    /// Identifies this creation of the zone: a zone deleted and created again gets a new one.
    public var incarnation: String?
    /// Set for an encrypted zone: which fields its clients seal, and its key wrapped for
    /// each participant. Once set, a save without it keeps the stored one.
    public var encryption: ZoneEncryption?

    public init(zoneID: ZoneID, defaultRecordType: String? = nil, participants: [ShareParticipant] = []) {
        self.zoneID = zoneID
        self.defaultRecordType = defaultRecordType
        self.participants = participants
    }

    /// What `user` may do in this zone: nil if it is not visible to them at all.
    public func permission(for user: String) -> SharePermission? {
        if zoneID.ownerName == user { return .readWrite }
        return participants.first(where: { $0.userRecordName == user })?.permission
    }

    /// What `user` is to this zone: its owner, or a participant with their permission (for
    /// showing; what a user may do is `permission(for:)`).
    public func access(for user: String) -> ZoneAccess {
        if zoneID.ownerName == user { return .owner }
        switch participants.first(where: { $0.userRecordName == user })?.permission {
        case .readWrite?: return .readWrite
        case .readOnly?: return .readOnly
        case nil: return .none
        }
    }
}

/// An encrypted zone's settings as kept in its `zone.json`: opaque to the store.
public struct ZoneEncryption: Sendable, Hashable, Codable {
    /// The field keys sealed by clients; nil: every field.
    public var fields: [String]?
    /// The zone key of each generation, wrapped for each user who may read it. Empty in a
    /// request to create an encrypted zone: the client mints the key.
    public var keys: [WrappedZoneKey]
    /// The zone owner's Ed25519 signature over the zone ID, the store ID, `fields` and
    /// `keys`: what lets a reader tell the owner's keys from ones a store writer added. Nil
    /// in a request (the client signs) and in a section an older recsync wrote, which
    /// clients refuse.
    public var signature: [UInt8]?

    public init(fields: [String]? = nil, keys: [WrappedZoneKey] = [], signature: [UInt8]? = nil) {
        self.fields = fields
        self.keys = keys
        self.signature = signature
    }

    /// The generation new writes use (the highest): 0 when no key is there yet.
    public var currentGeneration: Int { keys.map(\.generation).max() ?? 0 }

    /// Whether clients seal field `key`.
    public func seals(_ key: String) -> Bool { fields?.contains(key) ?? true }

    /// The refusal of a file (an asset) in field `field` of record `id`, which its zone
    /// seals: recsync does not encrypt files, so such a file is neither uploaded nor saved.
    public static func fileInSealedField(_ id: RecordID, field: String) -> RecSyncError {
        .invalidValue(
            """
            zone '\(id.zoneID)' seals field '\(field)', but record '\(id.recordName)' holds a file (ASSET)\
             there, and recsync does not encrypt files; neither the file nor the record was sent. Keep files\
             in fields the zone does not seal (the zone's encryption lists the sealed ones)
            """
        )
    }
}

/// One generation of a zone key, sealed for one user (X25519 + HKDF-SHA256 + ChaChaPoly).
public struct WrappedZoneKey: Sendable, Hashable, Codable {
    public var generation: Int
    public var userRecordName: String
    /// The sender's one-time X25519 public key (32 bytes).
    public var ephemeralPublicKey: [UInt8]
    /// Nonce, ciphertext and tag of the 32-byte zone key.
    public var sealedKey: [UInt8]

    public init(generation: Int, userRecordName: String, ephemeralPublicKey: [UInt8], sealedKey: [UInt8]) {
        self.generation = generation
        self.userRecordName = userRecordName
        self.ephemeralPublicKey = ephemeralPublicKey
        self.sealedKey = sealedKey
    }
}

/// A user's published public keys (`users/<user>/key.json`): the one others wrap zone keys
/// for, and the one the user's signatures of their zones' keys are checked with.
public struct UserPublicKey: Sendable, Hashable {
    public var userRecordName: String
    /// An X25519 public key (32 bytes).
    public var publicKey: [UInt8]
    /// An Ed25519 public key (32 bytes); nil when published by an older recsync.
    public var signingPublicKey: [UInt8]?
    /// Milliseconds since the epoch when it was made.
    public var created: Int64

    public init(userRecordName: String, publicKey: [UInt8], signingPublicKey: [UInt8]? = nil, created: Int64) {
        self.userRecordName = userRecordName
        self.publicKey = publicKey
        self.signingPublicKey = signingPublicKey
        self.created = created
    }
}

/// A zone-level change: the argument of `modifyRecordZones`.
public enum ZoneOperation: Sendable, Hashable {
    /// Creates the zone, or updates its metadata (default type, participants) if it exists.
    /// Refused where the zone was deleted, purged or reset (its tombstone is there): only an
    /// explicit create brings a zone back, so a client that merely holds a copy cannot.
    case save(RecordZone)
    /// As `save`, and brings back a zone that was deleted, purged or reset: an explicit
    /// create (`recsync zone create`, the upload after an encrypted-data reset).
    case recreate(RecordZone)
    /// As `save`, and brings back a zone whose tombstone says `encryptedDataReset` (the upload
    /// after a reset), but not one deleted or purged since: decided in the same commit, so a
    /// device that purges the zone meanwhile is never overridden by a re-upload.
    case uploadAfterReset(RecordZone)
    /// Deletes the zone and its records (reason `deleted`).
    case delete(ZoneID)
    /// Deletes the zone and its records; clients must not upload it again (reason `purged`).
    case purge(ZoneID)
    /// Drops the zone's data as an encrypted-data reset does; clients re-create and re-upload it.
    case markEncryptedDataReset(ZoneID)

    public var zoneID: ZoneID {
        switch self {
        case .save(let z), .recreate(let z), .uploadAfterReset(let z): z.zoneID
        case .delete(let z), .purge(let z), .markEncryptedDataReset(let z): z
        }
    }
}

/// The outcome of one `ZoneOperation`.
public struct ZoneOperationResult: Sendable, Hashable {
    public var operation: ZoneOperation
    public var result: Result<RecordZone?, RecSyncError>

    /// For a `RemoteStore` around another store that answers an operation itself.
    public init(operation: ZoneOperation, result: Result<RecordZone?, RecSyncError>) {
        self.operation = operation
        self.result = result
    }
}

/// How a save treats the version on the store (CloudKit's `CKModifyRecordsOperation.RecordSavePolicy`).
public enum SavePolicy: String, Sendable, Hashable, Codable {
    /// Save only if the record's change tag matches the store (new records must not exist).
    case ifServerRecordUnchanged
    /// Overwrite the fields the client sends; keep the store's other fields.
    case changedKeys
    /// Overwrite the whole record.
    case allKeys
}

/// A record to delete, with the change tag the client last saw (nil: delete whatever is there).
public struct RecordDeletion: Sendable, Hashable {
    public var recordID: RecordID
    public var changeTag: String?

    public init(recordID: RecordID, changeTag: String?) {
        self.recordID = recordID
        self.changeTag = changeTag
    }
}

/// One record's outcome.
public struct RecordResult: Sendable, Hashable {
    public var recordID: RecordID
    public var result: Result<Record, RecSyncError>
    /// On a failure that lies in the stored bytes of the version read (not a record, too
    /// large, named for another record): that version's change tag. It fails the same way
    /// every time it is read, so a client need not ask for it again until the record changes
    /// on the store (the zone's changes then name it). nil otherwise: on success, and when the
    /// bytes could not be read at all (an object missing, an I/O error), which may pass.
    public var unreadableChangeTag: String?

    public init(recordID: RecordID, result: Result<Record, RecSyncError>, unreadableChangeTag: String? = nil) {
        self.recordID = recordID
        self.result = result
        self.unreadableChangeTag = unreadableChangeTag
    }
}

/// One deletion's outcome.
public struct DeletionResult: Sendable, Hashable {
    public var recordID: RecordID
    public var result: Result<Void, RecSyncError>

    public static func == (lhs: DeletionResult, rhs: DeletionResult) -> Bool {
        guard lhs.recordID == rhs.recordID else { return false }
        switch (lhs.result, rhs.result) {
        case (.success, .success): return true
        case (.failure(let a), .failure(let b)): return a == b
        default: return false
        }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(recordID)
        if case .failure(let e) = result { hasher.combine(e) }
    }
}

/// The outcome of `modifyRecords`.
public struct ModifyRecordsResult: Sendable, Hashable {
    /// One per saved record, in input order; a success carries the stored record with its new change tag.
    public var saveResults: [RecordResult]
    /// One per deletion, in input order.
    public var deleteResults: [DeletionResult]
    /// Records deleted because they referenced a deleted record with action `deleteSelf`.
    ///
    /// CloudKit does not report these; recsync does, and they also appear in later zone fetches.
    public var cascadedDeletions: [RecordID]
    /// The commit the change landed in, nil if nothing was written.
    public var commit: String?

    /// Every failure, saves then deletions.
    public var errors: [RecSyncError] {
        saveResults.compactMap { if case .failure(let e) = $0.result { e } else { nil } }
            + deleteResults.compactMap { if case .failure(let e) = $0.result { e } else { nil } }
    }
}

/// Something in the store that recsync passed over, and why.
public struct StoreWarning: Sendable, Hashable, CustomStringConvertible {
    /// Where in the store (a path in the store's tree).
    public var path: String
    public var message: String

    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }

    public var description: String { "\(path): \(message)" }
}

/// A deleted zone and the reason.
public struct ZoneDeletion: Sendable, Hashable {
    public var zoneID: ZoneID
    public var reason: ZoneDeletionReason

    public init(zoneID: ZoneID, reason: ZoneDeletionReason) {
        self.zoneID = zoneID
        self.reason = reason
    }

    /// Whether `user` keeps the zone's records and uploads them again (creating the zone anew):
    /// after an encrypted-data reset of a zone `user` owns. Anything else is a removal, a
    /// reset of a zone shared with `user` too: only its owner can create it again (and share
    /// it again), so for a participant it is gone like a deleted zone.
    public func keepsRecordsForUpload(by user: String) -> Bool {
        reason == .encryptedDataReset && zoneID.ownerName == user
    }
}

/// The result of `databaseChanges`.
public struct DatabaseChanges: Sendable, Hashable {
    public var modifications: [ZoneID]
    public var deletions: [ZoneDeletion]
    public var changeToken: ServerChangeToken
    public var moreComing: Bool
    public var warnings: [StoreWarning]
}

/// A record deleted from a zone, with its type.
public struct RecordDeletionEvent: Sendable, Hashable {
    public var recordID: RecordID
    public var recordType: String

    public init(recordID: RecordID, recordType: String) {
        self.recordID = recordID
        self.recordType = recordType
    }
}

/// The result of `recordZoneChanges`.
public struct RecordZoneChanges: Sendable, Hashable {
    /// Changed and new records; an item fails alone when its stored form cannot be read.
    public var modifications: [RecordResult]
    public var deletions: [RecordDeletionEvent]
    public var changeToken: ServerChangeToken
    public var moreComing: Bool
    public var warnings: [StoreWarning]
    /// The client change token the most recent `modifyRecords` of this client (`StoreActor.deviceID`)
    /// on this zone supplied, as of this page's end; nil if none (CloudKit's `clientChangeTokenData`).
    /// Tells a client whether its last upload landed.
    public var clientChangeTokenData: String? = nil
    /// On the first page of a fetch: about how many records it brings, so a client can show
    /// progress against a total (from the beginning, the zone's size; since a token, the
    /// records changed since, deletions included); nil on the pages after it.
    public var recordCountEstimate: Int? = nil
}

/// Who acts on the store, and the clock used to stamp changes.
public struct StoreActor: Sendable {
    public var userRecordName: String
    /// Used for commit authorship; defaults to the user record name.
    public var displayName: String
    public var email: String
    /// Which of the user's clients (a workspace) acts: the store keeps each client's change
    /// token apart, as CloudKit keeps one per device. nil: one shared slot for the user.
    public var deviceID: String?
    /// Milliseconds since the epoch.
    public var clock: @Sendable () -> Int64

    public init(
        userRecordName: String, displayName: String? = nil, email: String? = nil, deviceID: String? = nil, clock: (@Sendable () -> Int64)? = nil
    ) throws(RecSyncError) {
        try NameRules.validateOwnerName(userRecordName)
        if let deviceID { try Self.validateToken(deviceID, what: "the device ID") }
        self.deviceID = deviceID
        // Both go into every commit's signature: checked before anything is written.
        if let displayName { try NameRules.validateSignatureText(displayName, what: "the commit author name '\(displayName)'") }
        if let email { try NameRules.validateSignatureText(email, what: "the commit author e-mail '\(email)'") }
        self.userRecordName = userRecordName
        self.displayName = displayName ?? userRecordName
        self.email = email ?? "\(userRecordName)@recsync.invalid"
        self.clock = clock ?? StoreActor.systemClock
    }

    /// Device IDs and client change tokens: 1–128 characters of letters, digits, `-`, `_`,
    /// `.`, `:` (they go into tree entry names and commit message trailers).
    public static func validateToken(_ text: String, what: String) throws(RecSyncError) {
        let ok =
            !text.isEmpty && text.utf8.count <= 128 && !text.hasPrefix(".")
            && text.utf8.allSatisfy { b in
                (b >= 48 && b <= 57) || (b >= 65 && b <= 90) || (b >= 97 && b <= 122) || b == 45 || b == 95 || b == 46 || b == 58
            }
        guard ok else {
            throw .invalidName(
                """
                \(what) '\(text.prefix(140))' is not 1–128 characters of letters, digits, '-', '_', '.', ':'\
                 (not starting with '.'); pass one of those
                """
            )
        }
    }

    /// The store's slot for this client's change tokens: `<user>/<device>`.
    var clientSlot: String { "\(userRecordName)/\(deviceID ?? "_")" }

    public static let systemClock: @Sendable () -> Int64 = {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }
}
