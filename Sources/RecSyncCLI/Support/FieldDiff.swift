import RecSyncEngine
import RecSyncModel

extension FieldChange {
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
