import RecSyncEngine
import RecSyncModel

extension FieldChange {
    /// A value as compact plain JSON, the way it is written in a record file.
    static func text(_ value: FieldValue) -> String {
        String(decoding: JSON.serialize(WorkspaceEncoding.json(from: value), pretty: false), as: UTF8.self)
    }

    /// The change as `diff` and `log -p` print it: '-key: old' (red) then '+key: new' (green).
    func lines(_ console: Console, indent: String = "") -> [String] {
        var lines: [String] = []
        if let old { lines.append(console.paint("\(indent)-  \(key): \(Self.text(old))", .red)) }
        if let new { lines.append(console.paint("\(indent)+  \(key): \(Self.text(new))", .green)) }
        return lines
    }

    var json: JSONValue {
        .object([
            "key": .string(key),
            "old": old.map(WorkspaceEncoding.json(from:)) ?? .null,
            "new": new.map(WorkspaceEncoding.json(from:)) ?? .null,
        ])
    }
}
