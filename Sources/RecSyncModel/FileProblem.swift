/// A file or directory of a workspace that cannot be synced as it is, and why.
///
/// The path and the message travel apart so that `--json` can print them as `{path,
/// message}` without parsing text (a file name may itself hold ": ").
public struct FileProblem: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The file or directory, relative to where the command ran (as the text output shows it).
    public var path: String
    /// What is wrong with it, and what to do.
    public var message: String

    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }

    /// `path: message`, as the text output prints it.
    public var description: String { "\(path): \(message)" }

    public static func < (a: FileProblem, b: FileProblem) -> Bool { (a.path, a.message) < (b.path, b.message) }
}
