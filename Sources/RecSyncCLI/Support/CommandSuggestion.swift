import ArgumentParser

/// "Did you mean": the message for a mistyped subcommand (`recsync stauts`), as git gives it.
///
/// The argument parser would print its own error for an unknown subcommand (and take the word
/// for a positional argument of the parent); `recsync` asks here first.
public enum CommandSuggestion {
    /// The global options that take a value (`-C DIR`, `--color WHEN`): their value is not a
    /// subcommand.
    static let optionsWithValue: Set<String> = ["-C", "--color", "--generate-completion-script"]

    /// The error message for the first word of `arguments` (the command line without the
    /// program name) that should name a subcommand and names none; nil when every such word
    /// names one, or there is none (then the parser decides, help and all).
    public static func unknownCommand(in arguments: [String]) -> String? {
        var command: any ParsableCommand.Type = RecSyncCommand.self
        var path = ["recsync"]
        var words = arguments[...]
        while true {
            let subcommands = command.configuration.subcommands
            guard !subcommands.isEmpty, command.configuration.defaultSubcommand == nil,
                let word = nextPositional(&words)
            else { return nil }
            var names = ["help"]
            var match: (any ParsableCommand.Type)?
            for sub in subcommands {
                let own = [sub.configuration.commandName ?? sub._commandName] + sub.configuration.aliases
                names += own
                if own.contains(word) { match = sub }
            }
            // `recsync help WORD`: WORD is checked as a command of recsync's own.
            if word == "help" {
                if path.count == 1 { continue }
                return nil
            }
            guard let match else {
                let pathText = path.joined(separator: " ")
                if path.count == 1, let pointer = gitWords[word] { return "'\(word)' is not a \(pathText) command. " + pointer }
                return message(word, path: pathText, suggestions: suggestions(for: word, among: names))
            }
            command = match
            path.append(word)
        }
    }

    /// git's words that recsync has no command for, and what to use instead.
    static let gitWords: [String: String] = [
        "commit": "There is no staging: 'recsync push' sends every edit.",
        "add": "There is no staging: 'recsync push' sends every edit.",
        "checkout": "To put a record back as it was, use 'recsync restore'.",
        "fetch": "To see what a pull would bring without applying it, use 'recsync pull -n'.",
    ]

    /// The next word that is not an option (nor an option's value); nil after `--` or at the end.
    static func nextPositional(_ words: inout ArraySlice<String>) -> String? {
        while let word = words.popFirst() {
            if word == "--" { return nil }
            if word.hasPrefix("-") {
                if optionsWithValue.contains(word) { _ = words.popFirst() }
                continue
            }
            return word
        }
        return nil
    }

    /// The names closest to `word`: at most two edits (a swap of neighbours counts as one),
    /// fewer than the word has letters; of those as close, the ones the word begins (`pul`:
    /// pull, not put).
    public static func suggestions(for word: String, among names: [String]) -> [String] {
        let scored = Set(names).map { (name: $0, distance: editDistance(word, $0)) }
            .filter { $0.distance <= 2 && $0.distance < min(word.count, $0.name.count) }
        guard let best = scored.map(\.distance).min() else { return [] }
        let closest = scored.filter { $0.distance == best }.map(\.name).sorted()
        let completed = closest.filter { $0.hasPrefix(word) }
        return completed.isEmpty ? closest : completed
    }

    static func message(_ word: String, path: String, suggestions: [String]) -> String {
        let head = "'\(word)' is not a \(path) command."
        switch suggestions.count {
        case 0: return head + " See '\(path) --help'."
        case 1: return head + " Did you mean '\(suggestions[0])'?"
        default: return head + " Did you mean one of these? " + suggestions.map { "'\($0)'" }.joined(separator: ", ")
        }
    }

    /// The optimal-string-alignment distance: insertions, deletions, substitutions and swaps
    /// of two neighbours, one each.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let x = Array(a), y = Array(b)
        if x.isEmpty || y.isEmpty { return max(x.count, y.count) }
        var d = [[Int]](repeating: [Int](repeating: 0, count: y.count + 1), count: x.count + 1)
        for i in 0...x.count { d[i][0] = i }
        for j in 0...y.count { d[0][j] = j }
        for i in 1...x.count {
            for j in 1...y.count {
                let cost = x[i - 1] == y[j - 1] ? 0 : 1
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
                if i > 1, j > 1, x[i - 1] == y[j - 2], x[i - 2] == y[j - 1] {
                    d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
                }
            }
        }
        return d[x.count][y.count]
    }
}
