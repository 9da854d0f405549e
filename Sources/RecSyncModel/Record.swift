import Foundation

/// Who changed something, and when (milliseconds since the epoch).
public struct ChangeStamp: Sendable, Hashable, Codable {
    public var timestamp: Int64
    public var userRecordName: String

    public init(timestamp: Int64, userRecordName: String) {
        self.timestamp = timestamp
        self.userRecordName = userRecordName
    }
}

/// A record: its ID, type, user fields and system fields.
///
/// `changeTag` identifies the stored version the record was read from (nil for a record that
/// was never saved); the store sets it, clients only carry it back.
public struct Record: Sendable, Hashable {
    public static let maxFieldDataBytes = 1_000_000

    public var recordID: RecordID
    public var recordType: String
    public var fields: [String: FieldValue]
    public var changeTag: String?
    public var created: ChangeStamp?
    public var modified: ChangeStamp?

    public init(
        recordID: RecordID, recordType: String, fields: [String: FieldValue] = [:],
        changeTag: String? = nil, created: ChangeStamp? = nil, modified: ChangeStamp? = nil
    ) throws(RecSyncError) {
        try NameRules.validateRecordType(recordType)
        for (key, value) in fields {
            try NameRules.validateFieldKey(key)
            try value.validate(key: key)
        }
        self.recordID = recordID
        self.recordType = recordType
        self.fields = fields
        self.changeTag = changeTag
        self.created = created
        self.modified = modified
    }

    /// Checks every rule again (fields can be mutated after construction), including the size limit.
    public func validate() throws(RecSyncError) {
        try NameRules.validateRecordType(recordType)
        for (key, value) in fields {
            try NameRules.validateFieldKey(key)
            try value.validate(key: key)
        }
        let size = StoreEncoding.fieldDataSize(of: self)
        if size > Record.maxFieldDataBytes {
            throw .limitExceeded(
                """
                record '\(recordID.recordName)' holds \(size) bytes of field data; the limit is 1 MB (assets not\
                 counted). Split it, or keep large values as assets (files)
                """
            )
        }
    }

    /// The record's asset fields (key → reference).
    public var assetFields: [String: AssetReference] {
        var result: [String: AssetReference] = [:]
        for (key, value) in fields { if case .asset(let a) = value { result[key] = a } }
        return result
    }

    /// The system fields alone (CloudKit's `encodeSystemFields`): the record without user fields.
    public var systemFields: SystemFields {
        SystemFields(recordID: recordID, recordType: recordType, changeTag: changeTag, created: created, modified: modified)
    }
}

/// What `encodeSystemFields` keeps: everything about a record except its user fields.
public struct SystemFields: Sendable, Hashable, Codable {
    public var recordID: RecordID
    public var recordType: String
    public var changeTag: String?
    public var created: ChangeStamp?
    public var modified: ChangeStamp?

    public init(recordID: RecordID, recordType: String, changeTag: String?, created: ChangeStamp?, modified: ChangeStamp?) {
        self.recordID = recordID
        self.recordType = recordType
        self.changeTag = changeTag
        self.created = created
        self.modified = modified
    }
}

extension ChangeStamp {
    /// `timestamp` as a date.
    public var date: Date { Date(timeIntervalSince1970: Double(timestamp) / 1000) }
}

extension Record {
    /// When the record was first saved (CloudKit's `creationDate`); nil before that.
    public var creationDate: Date? { created?.date }
    /// When the version read was saved (CloudKit's `modificationDate`); nil before the first save.
    public var modificationDate: Date? { modified?.date }
    /// Who first saved the record (CloudKit's `creatorUserRecordID`, by name).
    public var creatorUserRecordName: String? { created?.userRecordName }
    /// Who saved the version read (CloudKit's `lastModifiedUserRecordID`, by name).
    public var lastModifiedUserRecordName: String? { modified?.userRecordName }
}

extension RecSyncError {
    /// For a refused save (`serverRecordChanged`), the store's current version: merge onto it
    /// (CloudKit's `CKError.serverRecord`). Nil for any other error, or when the record was
    /// deleted on the store meanwhile.
    public var serverRecord: Record? {
        if case .serverRecordChanged(let conflict) = reason { conflict.server } else { nil }
    }

    /// For a refused save, the version that was sent (CloudKit's `CKError.clientRecord`).
    public var clientRecord: Record? {
        if case .serverRecordChanged(let conflict) = reason { conflict.client } else { nil }
    }

    /// For a refused save, the version both sides started from, when the store still has it
    /// (CloudKit's `CKError.ancestorRecord`).
    public var ancestorRecord: Record? {
        if case .serverRecordChanged(let conflict) = reason { conflict.ancestor } else { nil }
    }
}
