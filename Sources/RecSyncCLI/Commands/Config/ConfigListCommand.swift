import ArgumentParser
import RecSyncModel
import RecSyncWorkspace

/// `recsync config list`: prints every setting as `key=value`.
struct ConfigListCommand: RecSyncSubcommand {
    static var commandPath: String { "config " + (configuration.commandName ?? "") }
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "Print every setting of the workspace as key=value.",
        discussion: """
            EXAMPLES
              recsync config list
              recsync config list --json
            """)

    @OptionGroup var global: GlobalOptions

    func execute(_ context: CommandContext) async throws(RecSyncError) -> Int32 {
        let config = try context.workspace().config
        let settings = WorkspaceSetting.allCases.map { ($0.rawValue, config.value(of: $0)) }
        context.console.document(["settings": .array(settings.map { .object(["key": .string($0.0), "value": $0.1]) })])
        for (key, value) in settings { context.console.out("\(key)=\(Self.text(value))") }
        return ExitCodes.success
    }

    /// A setting's value as text: a string as it is, a boolean as true/false, a list of
    /// strings as `config set` takes it (separated by commas; none: empty).
    static func text(_ value: JSONValue) -> String {
        switch value {
        case .string(let s): s
        case .bool(let b): b ? "true" : "false"
        case .array(let items) where items.allSatisfy({ if case .string = $0 { true } else { false } }):
            items.map { if case .string(let s) = $0 { s } else { "" } }.joined(separator: ",")
        default: String(decoding: JSON.serialize(value, pretty: false), as: UTF8.self)
        }
    }
}
