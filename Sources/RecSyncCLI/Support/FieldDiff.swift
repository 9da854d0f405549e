import RecSyncModel

/// One field that differs between two versions of a record (nil: absent on that side).
struct FieldChange: Sendable, Hashable {
    var key: String
    var old: FieldValue?
    var new: FieldValue?

    /// The fields that differ from `old` to `new`, by key (a missing version has no fields).
    static func between(_ old: [String: FieldValue]?, _ new: [String: FieldValue]?) -> [FieldChange] {
        let a = old ?? [:], b = new ?? [:]
        return Set(a.keys).union(b.keys).sorted().compactMap { key in
            a[key] == b[key] ? nil : FieldChange(key: key, old: a[key], new: b[key])
        }
    }

    /// A value as compact plain JSON, the way it is written in a record file.
    static func text(_ value: FieldValue) -> String {
        String(decoding: JSON.serialize(WorkspaceEncoding.json(from: value), pretty: false), as: UTF8.self)
    }

    var json: JSONValue {
        .object([
            "key": .string(key),
            "old": old.map(WorkspaceEncoding.json(from:)) ?? .null,
            "new": new.map(WorkspaceEncoding.json(from:)) ?? .null,
        ])
    }
}
