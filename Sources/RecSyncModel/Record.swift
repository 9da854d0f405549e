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
            throw .limitExceeded("record '\(recordID.recordName)' holds \(size) bytes of field data; the limit is 1 MB (assets not counted). Split it, or keep large values as assets (files)")
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
