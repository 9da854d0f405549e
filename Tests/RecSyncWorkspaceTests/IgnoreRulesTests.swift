import RecSyncWorkspace
import Testing

/// gitignore semantics of `.recsyncignore`, the subset IgnoreRules documents.
@Suite struct IgnoreRulesTests {
    @Test func defaultsHideEditorDroppings() {
        let rules = IgnoreRules(lines: [])
        for path in [
            "private/notes/a.json~", "private/notes/.a.json.swp", "private/notes/x.swo", "private/notes/.#a.json", "private/notes/#a.json#",
            "private/.DS_Store",
        ] {
            #expect(rules.ignores(path), "\(path)")
        }
        #expect(!rules.ignores("private/notes/a.json"))
        #expect(!rules.ignores("private/notes/notes.txt"))
    }

    @Test func namesPathsNegationAndDirectories() {
        let rules = IgnoreRules(lines: [
            "# a comment", "", "*.txt", "!keep.txt", "/private/scratch/", "private/notes/draft-*.json",
            "build/", "**/tmp", "private/**/old", "trailing   ", "!*~",
        ])
        #expect(rules.ignores("private/notes/a.txt"))
        #expect(rules.ignores("shared/bob/x/deep.txt"), "a name without / matches at any depth")
        #expect(!rules.ignores("private/notes/keep.txt"), "the last matching rule decides")
        #expect(rules.ignores("private/scratch", isDirectory: true))
        #expect(rules.ignores("private/scratch/a.json"), "inside an ignored directory")
        #expect(!rules.ignores("private/other/scratch", isDirectory: true), "a leading / anchors")
        #expect(rules.ignores("private/notes/draft-1.json"))
        #expect(!rules.ignores("private/other/draft-1.json"), "a / in the pattern anchors it")
        #expect(!rules.ignores("private/notes/build"), "a trailing / matches directories only")
        #expect(rules.ignores("private/notes/build", isDirectory: true))
        #expect(rules.ignores("private/notes/tmp"))
        #expect(rules.ignores("private/a/b/old"))
        #expect(rules.ignores("private/notes/trailing"), "trailing spaces are not part of the pattern")
        #expect(!rules.ignores("private/notes/a.json~"), "a rule of the file re-includes a default")
        #expect(!rules.ignores("private/notes/a.json"))
    }
}
