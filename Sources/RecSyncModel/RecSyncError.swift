import Foundation

/// The three copies of a record in a `serverRecordChanged` conflict.
///
/// `client` is nil when the client tried to delete; `ancestor` is the version the client's change
/// tag names, nil when the store no longer has it or the client never had one.
public struct RecordConflict: Sendable, Hashable {
    public var recordID: RecordID
    public var server: Record?
    public var client: Record?
    public var ancestor: Record?

    public init(recordID: RecordID, server: Record?, client: Record?, ancestor: Record?) {
        self.recordID = recordID
        self.server = server
        self.client = client
        self.ancestor = ancestor
    }
}

/// Why a change token was refused before it was used.
public enum TokenProblem: Sendable, Hashable {
    case garbled
    case unsupportedVersion(Int)
    case wrongKind(expected: String, found: String)
    case wrongScope(expected: String, found: String)
    case wrongZone(expected: ZoneID, found: ZoneID)
    case wrongStore(expected: String, found: String)
}

/// CloudKit's numeric error codes (`CKError.Code`), for the errors that have one.
public enum CloudKitErrorCode: Int, Sendable, Hashable {
    case internalError = 1
    case partialFailure = 2
    case networkUnavailable = 3
    case networkFailure = 4
    case notAuthenticated = 9
    case permissionFailure = 10
    case unknownItem = 11
    case invalidArguments = 12
    case serverRecordChanged = 14
    case serverRejectedRequest = 15
    case assetFileNotFound = 16
    case assetFileModified = 17
    case operationCancelled = 20
    case changeTokenExpired = 21
    case batchRequestFailed = 22
    case zoneBusy = 23
    case badDatabase = 24
    case zoneNotFound = 26
    case limitExceeded = 27
    case userDeletedZone = 28
    case incompatibleVersion = 35
}

/// Bytes that do not decode as what they should be (JSON, a record file, a sidecar, a stored
/// record), and where.
public struct MalformedInput: Sendable, Hashable {
    /// The file (relative to the workspace root) or store path, when known.
    public var path: String?
    /// The 1-based line and column of the problem in the text, when it is at one place.
    public var line: Int?
    public var column: Int?
    /// What is wrong, and what to do.
    public var detail: String

    public init(path: String? = nil, line: Int? = nil, column: Int? = nil, detail: String) {
        self.path = path
        self.line = line
        self.column = column
        self.detail = detail
    }

    /// `path: line L, column C: detail`, each part when known.
    public var message: String {
        var text = detail
        if let line { text = "line \(line)" + (column.map { ", column \($0)" } ?? "") + ": " + text }
        if let path { text = "\(path): " + text }
        return text
    }
}

/// The system call behind a `RecSyncError.fileSystem`: its name and the `errno` it failed with.
public struct SystemCallFailure: Sendable, Hashable {
    /// The call, as its manual page names it (`openat`, `renameat`, `fsync`).
    public var call: String
    /// The `errno` value the call set.
    public var errno: Int32

    public init(call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }
}

/// A failure inside a library recsync calls (libgit2), as that library reported it: behind a
/// `RecSyncError.internalError`, so that a bug report or a script can tell which call failed
/// and how.
public struct LibraryFailure: Sendable, Hashable {
    /// The library (`libgit2`).
    public var library: String
    /// Its function that failed (`git_odb_write`).
    public var function: String
    /// Its return code (libgit2's `git_error_code`).
    public var code: Int32
    /// Its error class (libgit2's `git_error_t`), when it set one.
    public var errorClass: Int32?
    /// Its message.
    public var message: String

    public init(library: String, function: String, code: Int32, errorClass: Int32? = nil, message: String) {
        self.library = library
        self.function = function
        self.code = code
        self.errorClass = errorClass
        self.message = message
    }
}

/// What a send could not do although the rest of it went (CloudKit's `partialFailure` and its
/// `partialErrorsByItemID`): the error of each record and zone change the store refused.
public struct PartialFailure: Sendable, Hashable {
    public var records: [RecordID: RecSyncError]
    public var zones: [ZoneID: RecSyncError]

    public init(records: [RecordID: RecSyncError] = [:], zones: [ZoneID: RecSyncError] = [:]) {
        self.records = records
        self.zones = zones
    }

    public var isEmpty: Bool { records.isEmpty && zones.isEmpty }

    /// The refusals as "zone 'z': kind" and "record 'r' in zone 'z': kind", zones first, each
    /// part sorted.
    var lines: [String] {
        zones.sorted { $0.key.description < $1.key.description }.map { "zone '\($0.key)': \($0.value.kind)" }
            + records.sorted { ($0.key.zoneID.description, $0.key.recordName) < ($1.key.zoneID.description, $1.key.recordName) }
            .map { "record '\($0.key.recordName)' in zone '\($0.key.zoneID)': \($0.value.kind)" }
    }
}

extension RecSyncError {
    /// A next step the library can name but not take: the message says what is wrong in the
    /// library's terms, and a front end turns each remedy into its own words (the command line
    /// into the command that does it). The library's messages name no command or flag.
    public enum Remedy: Sendable, Hashable {
        /// Bring the user's key exported on a device that holds it.
        case importKey
        /// Make the user's key on this machine and publish its public half.
        case makeKey
        /// The key is lost: make a new one; encrypted zones are dropped and uploaded again.
        case resetKeys
        /// Another user must publish a key, in a workspace of this store.
        case askToPublishKey(user: String)
        /// Compare key fingerprints with their owner.
        case compareKeyFingerprints
        /// Replace the key file, which already holds another key.
        case replaceKey
        /// Make a store at a path (nil: a path of the user's choice).
        case createStore(path: String?)
        /// Check the store and remove what a killed writer left (locks, temporary files).
        case checkStore(path: String?)
        /// Compact the store where it lives (on the server).
        case compactStoreWhereItLives
        /// List the zones (and with whom they are shared).
        case listZones
        /// Track or untrack zones: the set of zones a partial workspace holds.
        case trackZones
        /// List the workspace's subscriptions.
        case listSubscriptions
        /// List the store's history.
        case listHistory
        /// List the versions of the record named.
        case listRecordVersions
        /// Pull, then retry.
        case pull
        /// Settle the conflict on a record file.
        case resolve(path: String)
        /// Name the subscription with another ID, or remove the one there.
        case chooseAnotherSubscriptionID
        /// Add a subscription, or watch to pull.
        case subscribeOrPull
        /// Look at pending notifications without taking them.
        case lookWithoutAcknowledging
        /// Work as another user: clone the store into a new directory as them.
        case cloneAs(user: String)
        /// Finish a clone that was stopped by pulling in its directory.
        case finishClone(directory: String)
        /// Check the workspace and repair what it can.
        case checkWorkspace
        /// Make the zone again, then copy the kept records back.
        case createZone(name: String)
        /// Remove a record file that was never pushed (there is nothing to restore).
        case removeRecord(path: String)
        /// Show a record file's unpushed edits, or undo them.
        case showOrUndoEdits(path: String)
        /// Do it anyway, losing what the refusal protects (a removal of records with unpushed
        /// edits).
        case force
        /// Save over the store's copy whatever it holds: a save with no change tag
        /// (`SavePolicy.allKeys`), which a push does when forced.
        case forceSave
        /// Name exported records by another key than a field's, or leave names out.
        case nameRecordsByAnotherKey
    }
}

/// What a failed call reports underneath: the system call or the library call that failed.
public enum ErrorCause: Sendable, Hashable, CustomStringConvertible {
    case systemCall(SystemCallFailure)
    case library(LibraryFailure)

    public var description: String {
        switch self {
        case .systemCall(let failure): "\(failure.call): \(String(cString: strerror(failure.errno)))"
        case .library(let failure): "\(failure.library) \(failure.function): \(failure.message)"
        }
    }
}

/// Every error recsync's library reports, in the shape of swift-nio's `FileSystemError`: a
/// `reason` (what went wrong and the details a caller acts on, which give the stable `kind`
/// and CloudKit's `code`), a `message` in the library's own terms, the `cause` underneath
/// (a system call with its errno, a libgit2 call with its class and code) and the `location`
/// that made it.
///
/// Made like an enum's cases (`throw .zoneNotFound(zone)`), each of which records where it was
/// made; matched on its reason (`if case .zoneNotFound(let zone) = error.reason`).
public struct RecSyncError: Error, Sendable, Hashable, CustomStringConvertible {
    public var reason: Reason
    /// Where the error was made (for a developer reading a report, not for telling errors apart).
    public var location: SourceLocation
    /// What the caller can do about it, in the library's terms: a front end words each in its
    /// own (the command line as a command to run). Not part of what the error means.
    public var remedies: [Remedy] = []

    public init(_ reason: Reason, function: String = #function, file: String = #fileID, line: Int = #line) {
        self.reason = reason
        self.location = SourceLocation(function: function, file: file, line: line)
    }

    /// Where an error was made: the function, file and line that made it (the shape of
    /// swift-nio's `FileSystemError.SourceLocation`). Not part of what an error means: two errors
    /// with the same reason are equal wherever they were made.
    public struct SourceLocation: Sendable, Hashable, CustomStringConvertible {
        public var function: String
        public var file: String
        public var line: Int

        public init(function: String, file: String, line: Int) {
            self.function = function
            self.file = file
            self.line = line
        }

        public var description: String { "\(file):\(line)" }
    }

    /// The error with `remedies` added: what the caller can do next.
    public func suggesting(_ remedies: Remedy...) -> RecSyncError {
        var error = self
        error.remedies += remedies
        return error
    }

    /// The same reason: where each was made does not matter.
    public static func == (a: RecSyncError, b: RecSyncError) -> Bool { a.reason == b.reason }
    public func hash(into hasher: inout Hasher) { reason.hash(into: &hasher) }

    /// CloudKit's error code for the reason.
    public var code: CloudKitErrorCode { reason.code }
    /// The reason's name (`serverRecordChanged`, `malformed`, `fileSystem`, …): what scripts
    /// tell errors apart by (`recsync --json` prints it as `error.kind`).
    public var kind: Kind { reason.kind }
    /// What went wrong and what to do next, in the library's terms.
    public var message: String { reason.message }
    public var description: String { reason.message }
    /// The system call or library call underneath, when one failed.
    public var cause: ErrorCause? {
        switch reason {
        case .fileSystem(_, _, let cause?): .systemCall(cause)
        case .internalError(_, let cause?): .library(cause)
        default: nil
        }
    }
    /// For a send of which some changes were refused, each refusal (CloudKit's
    /// `CKError.partialErrorsByItemID`); nil for any other error.
    public var partialFailure: PartialFailure? {
        if case .partialFailure(let failure) = reason { failure } else { nil }
    }

    /// The stable name of each reason, which scripts and apps tell errors apart by (the shape of
    /// swift-nio's `FileSystemError.Code`): `error.kind == .zoneNotFound`.
    public enum Kind: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        case serverRecordChanged
        case unknownItem
        case zoneNotFound
        case userDeletedZone
        case changeTokenExpired
        case badToken
        case badDatabase
        case invalidArguments
        case invalidName
        case invalidValue
        case malformed
        case limitExceeded
        case batchRequestFailed
        case permissionFailure
        case storeCorrupt
        case storeBusy
        case unsupportedStoreFormat
        case internalError
        case notAWorkspace
        case notAStore
        case noRemote
        case storeMismatch
        case workspaceLocked
        case invalidFiles
        case fileSystem
        case networkUnavailable
        case networkFailure
        case notAuthenticated
        case notDelivered
        case partialFailure
        case delegateFailed
        case operationCancelled
        case alreadyExists
        case notFound
        case localChanges
        case notConfirmed
        case unsupported
        case keyUnavailable
        case assetFileNotFound
        case assetFileModified

        public var description: String { rawValue }
    }

    /// The error as a JSON object for scripts (see ``Reason/json``); an internal error adds
    /// the `location` that made it (`RecSyncStore/Git/GitBackend.swift:120`), for a bug report.
    public var json: JSONValue {
        guard kind == .internalError, case .object(var object) = reason.json else { return reason.json }
        object["location"] = .string(location.description)
        return .object(object)
    }

    /// A decoding error of the bytes of the file at `path` (shown relative to the workspace),
    /// told as one: `malformed` gains the path, a bad name or value in the file makes it
    /// `malformed` there, any other error becomes `fileSystem` there.
    public func located(at path: String) -> RecSyncError {
        var located = self
        switch reason {
        case .malformed(var m):
            m.path = path
            located.reason = .malformed(m)
        case .invalidName(let detail), .invalidValue(let detail):
            // A field key or value the file holds breaks a rule: the file is malformed.
            located.reason = .malformed(MalformedInput(path: path, detail: detail))
        case .fileSystem:
            break
        default:
            located.reason = .fileSystem(path: path, message: message)
        }
        return located
    }

    /// Shorthand for `.malformed` with only a detail.
    public static func malformedInput(_ detail: String, function: String = #function, file: String = #fileID, line: Int = #line) -> RecSyncError {
        RecSyncError(.malformed(MalformedInput(detail: detail)), function: function, file: file, line: line)
    }

    // One maker per reason, so that `throw .zoneNotFound(zone)` reads as it did when the error
    // was an enum, and records where it was made.
    public static func serverRecordChanged(
        _ value: RecordConflict, function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.serverRecordChanged(value), function: function, file: file, line: line)
    }

    public static func unknownItem(
        _ value: RecordID, function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.unknownItem(value), function: function, file: file, line: line)
    }

    public static func zoneNotFound(
        _ value: ZoneID, function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.zoneNotFound(value), function: function, file: file, line: line)
    }

    public static func userDeletedZone(
        _ value: ZoneID, function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.userDeletedZone(value), function: function, file: file, line: line)
    }

    public static func changeTokenExpired(
        _ value: String, function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.changeTokenExpired(value), function: function, file: file, line: line)
    }

    public static func badToken(
        _ value: TokenProblem, function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.badToken(value), function: function, file: file, line: line)
    }

    public static func badDatabase(
        operation: String, function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.badDatabase(operation: operation), function: function, file: file, line: line)
    }

    public static func invalidArguments(
        _ value: String, function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.invalidArguments(value), function: function, file: file, line: line)
    }

    public static func invalidName(
        _ value: String, function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.invalidName(value), function: function, file: file, line: line)
    }

    public static func invalidValue(
        _ value: String, function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.invalidValue(value), function: function, file: file, line: line)
    }

    public static func malformed(
        _ value: MalformedInput, function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.malformed(value), function: function, file: file, line: line)
    }

    public static func limitExceeded(
        _ value: String, function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.limitExceeded(value), function: function, file: file, line: line)
    }

    public static func batchRequestFailed(
        _ value: RecordID, function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.batchRequestFailed(value), function: function, file: file, line: line)
    }

    public static func permissionFailure(
        _ value: String, function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.permissionFailure(value), function: function, file: file, line: line)
    }

    public static func storeCorrupt(
        _ value: String, function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.storeCorrupt(value), function: function, file: file, line: line)
    }

    public static func storeBusy(
        _ value: String, function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.storeBusy(value), function: function, file: file, line: line)
    }

    public static func unsupportedStoreFormat(
        found: Int64, supported: Int, function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.unsupportedStoreFormat(found: found, supported: supported), function: function, file: file, line: line)
    }

    public static func internalError(
        _ value0: String, cause: LibraryFailure? = nil, function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.internalError(value0, cause: cause), function: function, file: file, line: line)
    }

    public static func notAWorkspace(
        _ value: String, function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.notAWorkspace(value), function: function, file: file, line: line)
    }

    public static func notAStore(
        _ value: String, function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.notAStore(value), function: function, file: file, line: line)
    }

    public static func noRemote(function: String = #function, file: String = #fileID, line: Int = #line) -> RecSyncError {
        RecSyncError(.noRemote, function: function, file: file, line: line)
    }

    public static func storeMismatch(
        location: String, expected: String, found: String, function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.storeMismatch(location: location, expected: expected, found: found), function: function, file: file, line: line)
    }

    public static func workspaceLocked(
        _ value: String, function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.workspaceLocked(value), function: function, file: file, line: line)
    }

    public static func invalidFiles(
        _ value: [FileProblem], function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.invalidFiles(value), function: function, file: file, line: line)
    }

    public static func fileSystem(
        path: String, message: String, cause: SystemCallFailure? = nil, function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.fileSystem(path: path, message: message, cause: cause), function: function, file: file, line: line)
    }

    public static func networkUnavailable(
        _ value: String, function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.networkUnavailable(value), function: function, file: file, line: line)
    }

    public static func networkFailure(
        _ value: String, function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.networkFailure(value), function: function, file: file, line: line)
    }

    public static func notAuthenticated(
        _ value: String, function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.notAuthenticated(value), function: function, file: file, line: line)
    }

    public static func notDelivered(
        _ value: [String], function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.notDelivered(value), function: function, file: file, line: line)
    }

    public static func partialFailure(
        _ value: PartialFailure, function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.partialFailure(value), function: function, file: file, line: line)
    }

    public static func delegateFailed(
        event: String, message: String, function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.delegateFailed(event: event, message: message), function: function, file: file, line: line)
    }

    public static func operationCancelled(
        _ value: String, function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.operationCancelled(value), function: function, file: file, line: line)
    }

    public static func alreadyExists(
        _ value: String, function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.alreadyExists(value), function: function, file: file, line: line)
    }

    public static func notFound(
        _ value: String, function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.notFound(value), function: function, file: file, line: line)
    }

    public static func localChanges(
        _ value: String, function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.localChanges(value), function: function, file: file, line: line)
    }

    public static func notConfirmed(
        _ value: String, function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.notConfirmed(value), function: function, file: file, line: line)
    }

    public static func unsupported(
        _ value: String, function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.unsupported(value), function: function, file: file, line: line)
    }

    public static func keyUnavailable(
        _ value: String, function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.keyUnavailable(value), function: function, file: file, line: line)
    }

    public static func assetFileNotFound(
        _ value: String, function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.assetFileNotFound(value), function: function, file: file, line: line)
    }

    public static func assetFileModified(
        _ value: String, function: String = #function, file: String = #fileID, line: Int = #line
    ) -> RecSyncError {
        RecSyncError(.assetFileModified(value), function: function, file: file, line: line)
    }
}

extension RecSyncError {
    /// What went wrong, with what a script or an app may act on; each reason has a message
    /// that says what to do next.
    public enum Reason: Sendable, Hashable, CustomStringConvertible {
        /// The record changed on the store since the client's change tag (CloudKit 14).
        case serverRecordChanged(RecordConflict)
        /// The record does not exist on the store (CloudKit 11).
        case unknownItem(RecordID)
        /// The zone does not exist, or was deleted (CloudKit 26).
        case zoneNotFound(ZoneID)
        /// The zone was purged by its owner (CloudKit 28).
        case userDeletedZone(ZoneID)
        /// The token's point in history is gone; refetch from nil (CloudKit 21).
        case changeTokenExpired(String)
        /// The token cannot be used here at all (CloudKit 12, invalidArguments).
        case badToken(TokenProblem)
        /// The operation is not supported on this database (CloudKit 24).
        case badDatabase(operation: String)
        /// An argument breaks a rule, or the call cannot be made as asked (CloudKit 12).
        case invalidArguments(String)
        /// A name (zone, record, owner, record type, field key, device ID) breaks CloudKit's or
        /// recsync's naming rules; the message names the rule (CloudKit 12, invalidArguments).
        case invalidName(String)
        /// A field value breaks a rule (a number that is not finite, a mixed list, a location out of
        /// range, nesting too deep) (CloudKit 12, invalidArguments).
        case invalidValue(String)
        /// Bytes that should be JSON, a record file, a sidecar or a stored record do not decode;
        /// carries the file and the line and column when known (CloudKit 12, invalidArguments).
        case malformed(MalformedInput)
        /// A size or count limit was exceeded (CloudKit 27).
        case limitExceeded(String)
        /// This item was fine, but another item in the same atomic zone failed (CloudKit 22).
        case batchRequestFailed(RecordID)
        /// The user may not do this (CloudKit 10).
        case permissionFailure(String)
        /// The store holds content recsync cannot read (CloudKit 15, serverRejectedRequest).
        case storeCorrupt(String)
        /// The store moved under us too often to land a change (CloudKit 23, zoneBusy).
        case storeBusy(String)
        /// The store is in a format newer than this recsync reads (`found`; it reads up to
        /// `supported`): nothing was read from it or written to it (CloudKit 35,
        /// incompatibleVersion).
        case unsupportedStoreFormat(found: Int64, supported: Int)
        /// Something failed inside recsync or the git library (CloudKit 1); `cause` is the
        /// library's own report, when a library call failed.
        case internalError(String, cause: LibraryFailure? = nil)
        /// The directory is not inside a recsync workspace.
        case notAWorkspace(String)
        /// There is no recsync store where one was named: no such path, not a git repository, or a
        /// repository (or remote) without recsync's branch (CloudKit 12, invalidArguments).
        case notAStore(String)
        /// The workspace names no store to sync with (CloudKit 12, invalidArguments).
        case noRemote
        /// The store at `location` is another store (`found`) than the one the workspace synced
        /// with (`expected`): its change tokens mean nothing there (CloudKit 12, invalidArguments).
        case storeMismatch(location: String, expected: String, found: String)
        /// Another recsync process holds the workspace lock.
        case workspaceLocked(String)
        /// Files in the workspace cannot be sent; each with its problem. Nothing was sent.
        case invalidFiles([FileProblem])
        /// Reading or writing a local file failed; `cause` names the system call and its `errno`
        /// when one failed.
        case fileSystem(path: String, message: String, cause: SystemCallFailure? = nil)
        /// The remote could not be reached at all (CloudKit 3); the message names the remote and the cause.
        case networkUnavailable(String)
        /// The connection to the remote failed part-way (CloudKit 4); nothing was half-applied.
        case networkFailure(String)
        /// The remote refused the credentials, or none could be found (CloudKit 9).
        case notAuthenticated(String)
        /// Some subscription notifications could not be delivered; they stay pending (CloudKit 2,
        /// partialFailure: the others were delivered).
        case notDelivered([String])
        /// Some changes of a send were refused, the others went (`RecordSyncEngine.sendChanges`
        /// throws it after the send's events, which carry each refusal too).
        case partialFailure(PartialFailure)
        /// An embedding app's delegate threw while it handled a sync event (`RecordSyncEngine`);
        /// what depended on the event (a token, a pending change) did not move.
        case delegateFailed(event: String, message: String)
        /// A fetch or send was cancelled (`RecordSyncEngine.cancelOperations()`, or its task was
        /// cancelled) between two pages or batches: what it had delivered is saved, the rest is
        /// not started.
        case operationCancelled(String)
        /// What was to be made is there already: a workspace, a store, a zone, a subscription, a key
        /// (CloudKit 12, invalidArguments).
        case alreadyExists(String)
        /// What was named is not there: a record file, an input file, a zone of the workspace, a
        /// subscription, a revision, a key on this machine (CloudKit 12, invalidArguments).
        case notFound(String)
        /// Done as asked, the call would lose edits not yet pushed; nothing was changed (CloudKit 12,
        /// invalidArguments).
        case localChanges(String)
        /// A change that drops data for every workspace of the store was not confirmed; nothing was
        /// changed (CloudKit 12, invalidArguments).
        case notConfirmed(String)
        /// The call is valid but not possible here: a remote where a local store is needed, an
        /// address scheme recsync does not speak, a store without readable history (CloudKit 12,
        /// invalidArguments).
        case unsupported(String)
        /// The encryption key needed is not at hand or not the one published: none on this machine,
        /// none published by a user, or another one (CloudKit 12, invalidArguments).
        case keyUnavailable(String)
        /// A record names an asset whose file is not in the store (CloudKit 16).
        case assetFileNotFound(String)
        /// A record's asset says another size or digest than the stored file has (CloudKit 17).
        case assetFileModified(String)

        public var code: CloudKitErrorCode {
            switch self {
            case .serverRecordChanged: .serverRecordChanged
            case .unknownItem: .unknownItem
            case .zoneNotFound: .zoneNotFound
            case .userDeletedZone: .userDeletedZone
            case .changeTokenExpired: .changeTokenExpired
            case .badToken, .invalidArguments, .invalidName, .invalidValue, .malformed: .invalidArguments
            case .badDatabase: .badDatabase
            case .limitExceeded: .limitExceeded
            case .batchRequestFailed: .batchRequestFailed
            case .permissionFailure: .permissionFailure
            case .storeCorrupt: .serverRejectedRequest
            case .storeBusy: .zoneBusy
            case .unsupportedStoreFormat: .incompatibleVersion
            case .internalError: .internalError
            case .notAWorkspace, .notAStore, .workspaceLocked, .invalidFiles, .fileSystem, .noRemote, .storeMismatch: .invalidArguments
            case .notDelivered, .partialFailure: .partialFailure
            case .delegateFailed: .internalError
            case .operationCancelled: .operationCancelled
            case .alreadyExists: .invalidArguments
            case .notFound: .invalidArguments
            case .localChanges: .invalidArguments
            case .notConfirmed: .invalidArguments
            case .unsupported: .invalidArguments
            case .keyUnavailable: .invalidArguments
            case .assetFileNotFound: .assetFileNotFound
            case .assetFileModified: .assetFileModified
            case .networkUnavailable: .networkUnavailable
            case .networkFailure: .networkFailure
            case .notAuthenticated: .notAuthenticated
            }
        }

        public var message: String {
            switch self {
            case .serverRecordChanged(let c):
                return "record '\(c.recordID)' changed on the store since you last fetched it; pull, resolve the conflict, then push again"
            case .unknownItem(let id):
                return "record '\(id)' does not exist on the store; pull to refresh, or save it again as a new record"
            case .zoneNotFound(let z):
                return "zone '\(z)' does not exist on the store (or was deleted); create it first, or pull to drop it locally"
            case .userDeletedZone(let z):
                return "zone '\(z)' was purged by its owner; its data must not be re-uploaded. Remove it locally (pull does this)"
            case .changeTokenExpired(let what):
                return "the change token for \(what) is no longer valid (the store's history was rewritten); fetch again from the beginning"
            case .badToken(let p):
                switch p {
                case .garbled: return "the change token is garbled; pass a token recsync printed, or none for a full fetch"
                case .unsupportedVersion(let v):
                    return "the change token has version \(v), which this recsync does not understand; upgrade recsync or fetch from the beginning"
                case .wrongKind(let e, let f):
                    return "a \(f) token was given where a \(e) token is needed; database and zone tokens are not interchangeable"
                case .wrongScope(let e, let f): return "the token belongs to \(f), not \(e); use the token saved for this scope"
                case .wrongZone(let e, let f): return "the token belongs to zone '\(f)', not '\(e)'; use the token saved for this zone"
                case .wrongStore(let e, let f): return "the token belongs to store \(f), not this store (\(e)); fetch from the beginning"
                }
            case .badDatabase(let op):
                return "\(op) is not supported on the public database; use the private or shared scope"
            case .malformed(let m):
                return m.message
            case .invalidArguments(let m), .invalidName(let m), .invalidValue(let m), .notAStore(let m), .limitExceeded(let m),
                .permissionFailure(let m),
                .storeCorrupt(let m), .storeBusy(let m), .internalError(let m, _):
                return m
            case .unsupportedStoreFormat(let found, let supported):
                var message = "the store has format \(found); this recsync reads format \(supported) and older. Upgrade recsync to use this store"
                if found == 2 {
                    message += " (a store of format 2 that this recsync made or upgraded is read with RECSYNC_EXPERIMENTAL_STORE_FORMAT=2 set)"
                }
                return message
            case .batchRequestFailed(let id):
                return "record '\(id)' was not saved because another change in the same zone failed; fix that one and push again"
            case .notAWorkspace(let path):
                return "'\(path)' is not inside a recsync workspace (no .recsync directory there or above)"
            case .noRemote:
                return "this workspace has no remote store to sync with"
            case .storeMismatch(let location, let expected, let found):
                return
                    "\(location) is another store (\(found)) than the one this workspace synced with (\(expected)); its change tokens mean nothing there"
            case .workspaceLocked(let holder):
                return "another recsync (\(holder)) is syncing this workspace; wait for it to finish"
            case .invalidFiles(let problems):
                return "nothing was sent; fix these files first:\n" + problems.map { "  \($0)" }.joined(separator: "\n")
            case .fileSystem(let path, let message, _):
                return "\(path): \(message)"
            case .networkUnavailable(let m), .networkFailure(let m), .notAuthenticated(let m):
                return m
            case .alreadyExists(let m), .notFound(let m), .localChanges(let m), .notConfirmed(let m), .unsupported(let m), .keyUnavailable(let m),
                .assetFileNotFound(let m), .assetFileModified(let m):
                return m
            case .delegateFailed(let event, let message):
                return "the app failed to handle \(event): \(message); nothing that depends on it was marked done, so the next sync delivers it again"
            case .operationCancelled(let what):
                return "\(what) was cancelled; what it delivered before is kept, and the next run goes on from there"
            case .partialFailure(let failure):
                let lines = failure.lines
                let shown = lines.prefix(5).joined(separator: "; ") + (lines.count > 5 ? "; and \(lines.count - 5) more" : "")
                return
                    """
                    the store refused \(lines.count) of the changes sent (\(shown)); the rest went. Changes refused\
                     for good are no longer pending: handle each (the send's events carry its error) and add it\
                     again; those refused for a passing reason stay pending
                    """
            case .notDelivered(let ids):
                return
                    """
                    not delivered, still pending: \(ids.joined(separator: ", ")) (the warnings above say why); their\
                     cursors did not move, so the next delivery sends them again
                    """
            }
        }

        public var description: String { message }

        /// The case's name (`serverRecordChanged`, `malformed`, `fileSystem`, …): what scripts
        /// tell errors apart by (`recsync --json` prints it as `error.kind`).
        public var kind: Kind {
            switch self {
            case .serverRecordChanged: .serverRecordChanged
            case .unknownItem: .unknownItem
            case .zoneNotFound: .zoneNotFound
            case .userDeletedZone: .userDeletedZone
            case .changeTokenExpired: .changeTokenExpired
            case .badToken: .badToken
            case .badDatabase: .badDatabase
            case .invalidArguments: .invalidArguments
            case .invalidName: .invalidName
            case .invalidValue: .invalidValue
            case .malformed: .malformed
            case .limitExceeded: .limitExceeded
            case .batchRequestFailed: .batchRequestFailed
            case .permissionFailure: .permissionFailure
            case .storeCorrupt: .storeCorrupt
            case .storeBusy: .storeBusy
            case .unsupportedStoreFormat: .unsupportedStoreFormat
            case .internalError: .internalError
            case .notAWorkspace: .notAWorkspace
            case .notAStore: .notAStore
            case .noRemote: .noRemote
            case .storeMismatch: .storeMismatch
            case .workspaceLocked: .workspaceLocked
            case .invalidFiles: .invalidFiles
            case .fileSystem: .fileSystem
            case .networkUnavailable: .networkUnavailable
            case .networkFailure: .networkFailure
            case .notAuthenticated: .notAuthenticated
            case .notDelivered: .notDelivered
            case .partialFailure: .partialFailure
            case .delegateFailed: .delegateFailed
            case .operationCancelled: .operationCancelled
            case .alreadyExists: .alreadyExists
            case .notFound: .notFound
            case .localChanges: .localChanges
            case .notConfirmed: .notConfirmed
            case .unsupported: .unsupported
            case .keyUnavailable: .keyUnavailable
            case .assetFileNotFound: .assetFileNotFound
            case .assetFileModified: .assetFileModified
            }
        }

        /// The error as a JSON object for scripts: `kind`, CloudKit's numeric `code`, `message`,
        /// and what the case carries that a script may act on (`path`, `line`, `column`, the
        /// system `call` and its `errno`, `recordName`, `zone`, `files`, `subscriptions`; a partial failure's `zones` and `records`,
        /// each with its `error`).
        public var json: JSONValue {
            var o: [String: JSONValue] = ["kind": .string(kind.rawValue), "code": .int(Int64(code.rawValue)), "message": .string(message)]
            switch self {
            case .malformed(let m):
                if let path = m.path { o["path"] = .string(path) }
                if let line = m.line { o["line"] = .int(Int64(line)) }
                if let column = m.column { o["column"] = .int(Int64(column)) }
            case .fileSystem(let path, _, let cause):
                o["path"] = .string(path)
                if let cause {
                    o["call"] = .string(cause.call)
                    o["errno"] = .int(Int64(cause.errno))
                }
            case .internalError(_, let cause?):
                var c: [String: JSONValue] = [
                    "library": .string(cause.library), "function": .string(cause.function), "code": .int(Int64(cause.code)),
                    "message": .string(cause.message),
                ]
                if let errorClass = cause.errorClass { c["class"] = .int(Int64(errorClass)) }
                o["cause"] = .object(c)
            case .serverRecordChanged(let c):
                o["zone"] = .string(c.recordID.zoneID.description)
                o["recordName"] = .string(c.recordID.recordName)
            case .unknownItem(let id), .batchRequestFailed(let id):
                o["zone"] = .string(id.zoneID.description)
                o["recordName"] = .string(id.recordName)
            case .zoneNotFound(let z), .userDeletedZone(let z):
                o["zone"] = .string(z.description)
            case .unsupportedStoreFormat(let found, let supported):
                o["storeFormat"] = .int(found)
                o["supportedFormat"] = .int(Int64(supported))
            case .storeMismatch(let location, let expected, let found):
                o["store"] = .string(location)
                o["expected"] = .string(expected)
                o["found"] = .string(found)
            case .invalidFiles(let problems):
                o["files"] = .array(problems.map { .object(["path": .string($0.path), "message": .string($0.message)]) })
            case .notDelivered(let ids):
                o["subscriptions"] = .array(ids.map { .string($0) })
            case .partialFailure(let failure):
                o["zones"] = .array(
                    failure.zones.sorted { $0.key.description < $1.key.description }.map {
                        .object(["zone": .string($0.key.description), "error": $0.value.json])
                    })
                o["records"] = .array(
                    failure.records.sorted { ($0.key.zoneID.description, $0.key.recordName) < ($1.key.zoneID.description, $1.key.recordName) }.map {
                        .object(["zone": .string($0.key.zoneID.description), "recordName": .string($0.key.recordName), "error": $0.value.json])
                    })
            default:
                break
            }
            return .object(o)
        }
    }
}
