import Glibc
import RecSyncModel
import RecSyncSystem

extension Workspace {
    /// Files (not directories) directly in `private/`, `shared/` or `shared/OWNER/`, where only
    /// zone directories belong, that no ignore rule covers: untracked, as shown.
    package func untrackedOutsideZones() throws(RecSyncError) -> [String] {
        let rules = try IgnoreRules.load(self)
        var found: [String] = []
        func look(_ rel: String, descend: Bool) {
            for name in FileIO.list("\(root)/\(rel)") where !name.hasPrefix(".") {
                let path = "\(rel)/\(name)"
                if FileIO.isDirectory("\(root)/\(path)") {
                    if descend { look(path, descend: false) }
                } else if !rules.ignores(path) {
                    found.append(relative("\(root)/\(path)"))
                }
            }
        }
        look("private", descend: false)
        look("shared", descend: true)
        return found
    }
}

/// Which files in a workspace are not records and should be left alone: `.recsyncignore` in the
/// workspace root, in gitignore syntax, after built-in rules for editor droppings.
///
/// Hand-written over fnmatch(3): no library in the package mirror matches gitignore patterns,
/// and the subset recsync needs is small. Supported: blank lines and `#` comments; `!` to
/// re-include; a trailing `/` for directories only; a pattern with a `/` (other than a trailing
/// one) is anchored at the workspace root, one without matches a name at any depth; `*`, `?`,
/// `[...]` within a name (FNM_PATHNAME: never across `/`); `**/`, `/**/` and `/**` across
/// directories. The last matching rule decides, as in git.
package struct IgnoreRules: Sendable {
    /// Built-in rules, before the file's: editor backups, swap and lock files, Finder's.
    package static let defaults = ["*~", "*.swp", "*.swo", ".#*", "\\#*#", ".DS_Store"]

    struct Rule: Sendable {
        var pattern: String
        var negated: Bool
        var directoryOnly: Bool
        var anchored: Bool
    }

    var rules: [Rule]

    /// Rules from gitignore-syntax lines (the defaults first).
    package init(lines: [String]) {
        rules = (Self.defaults + lines).compactMap(Self.rule)
    }

    /// The rules of a workspace: the defaults, then its `.recsyncignore` (if there is one).
    package static func load(_ workspace: Workspace) throws(RecSyncError) -> IgnoreRules {
        let path = "\(workspace.root)/.recsyncignore"
        guard let bytes = try FileIO.read(path) else { return IgnoreRules(lines: []) }
        return IgnoreRules(
            // "\r\n" is one Character in Swift: a file written on Windows splits on it too.
            lines: String(decoding: bytes, as: UTF8.self).split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
                .map { $0.hasSuffix("\r") ? String($0.dropLast()) : String($0) })
    }

    static func rule(_ line: String) -> Rule? {
        var text = line
        // Trailing spaces are ignored unless escaped (as git does); leading ones are kept.
        while text.hasSuffix(" ") && !text.hasSuffix("\\ ") { text.removeLast() }
        if text.isEmpty || text.hasPrefix("#") { return nil }
        var negated = false
        if text.hasPrefix("!") {
            negated = true
            text.removeFirst()
        } else if text.hasPrefix("\\!") || text.hasPrefix("\\#") {
            text.removeFirst()
        }
        var directoryOnly = false
        if text.hasSuffix("/") {
            directoryOnly = true
            text.removeLast()
        }
        let anchored = text.contains("/")
        if text.hasPrefix("/") { text.removeFirst() }
        if text.hasPrefix("**/") {
            // `**/name` matches a name at any depth; `**/dir/name` a path that ends that way.
            let rest = String(text.dropFirst(3))
            let deep = rest.contains("/")
            return Rule(pattern: deep ? "**/" + rest : rest, negated: negated, directoryOnly: directoryOnly, anchored: deep)
        }
        guard !text.isEmpty else { return nil }
        return Rule(pattern: text, negated: negated, directoryOnly: directoryOnly, anchored: anchored)
    }

    /// Whether a path (relative to the workspace root, `/`-separated) is ignored. A file inside
    /// an ignored directory is ignored too.
    package func ignores(_ path: String, isDirectory: Bool = false) -> Bool {
        let parts = path.split(separator: "/").map(String.init)
        // Directories first: git does not look inside an excluded directory.
        for depth in 1..<max(parts.count, 1) where decide(parts[0..<depth].joined(separator: "/"), isDirectory: true) == true {
            return true
        }
        return decide(path, isDirectory: isDirectory) ?? false
    }

    /// The last rule that matches decides: true ignored, false re-included, nil no rule.
    func decide(_ path: String, isDirectory: Bool) -> Bool? {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        var verdict: Bool?
        for rule in rules where !rule.directoryOnly || isDirectory {
            let matched = rule.anchored ? Self.match(rule.pattern, path) : Self.match(rule.pattern, name)
            if matched { verdict = !rule.negated }
        }
        return verdict
    }

    /// fnmatch with FNM_PATHNAME, plus `**` segments spanning directories.
    static func match(_ pattern: String, _ path: String) -> Bool {
        if pattern.hasPrefix("**/") {
            let tail = String(pattern.dropFirst(3))
            let parts = path.split(separator: "/").map(String.init)
            return parts.indices.contains { match(tail, parts[$0...].joined(separator: "/")) }
        }
        if let range = pattern.range(of: "/**/") {
            let head = String(pattern[..<range.lowerBound]), tail = String(pattern[range.upperBound...])
            let parts = path.split(separator: "/").map(String.init)
            for split in 1..<max(parts.count, 1) {
                let left = parts[0..<split].joined(separator: "/")
                guard match(head, left) else { continue }
                for rest in split..<parts.count where match(tail, parts[rest...].joined(separator: "/")) { return true }
            }
            return false
        }
        if pattern.hasSuffix("/**") {
            let head = String(pattern.dropLast(3))
            let parts = path.split(separator: "/").map(String.init)
            return (1..<max(parts.count, 1)).contains { match(head, parts[0..<$0].joined(separator: "/")) }
        }
        return fnmatch(pattern, path, FNM_PATHNAME) == 0
    }
}
