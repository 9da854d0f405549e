import RecSyncTestSupport
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

    @Test func escapesClassesAndWildcardsWithinOneName() {
        let rules = IgnoreRules(lines: [##"\#literal"##, #"\!bang"#, "draft-[0-9].json", "?.tmp", "private/*.log", #"space\ "#])
        #expect(rules.ignores("private/notes/#literal"), "an escaped # is a pattern, not a comment")
        #expect(rules.ignores("private/notes/!bang"), "an escaped ! is a name, not a negation")
        #expect(!rules.ignores("private/notes/bang"))
        #expect(rules.ignores("private/notes/draft-7.json"))
        #expect(!rules.ignores("private/notes/draft-x.json"))
        #expect(!rules.ignores("private/notes/draft-10.json"), "a class is one character")
        #expect(rules.ignores("private/notes/a.tmp"))
        #expect(!rules.ignores("private/notes/ab.tmp"))
        #expect(rules.ignores("private/x.log"))
        #expect(!rules.ignores("private/notes/x.log"), "* never crosses a /")
        #expect(rules.ignores("private/notes/space "), "an escaped trailing space is kept")
        #expect(!rules.ignores("private/notes/space"))
    }

    @Test func doubleStarsSpanDirectoriesButNotTheirOwnBase() {
        let rules = IgnoreRules(lines: ["private/**/cache", "shared/**"])
        #expect(rules.ignores("private/cache"), "/**/ matches no directory at all too")
        #expect(rules.ignores("private/a/cache"))
        #expect(rules.ignores("private/a/b/c/cache"))
        #expect(!rules.ignores("private/a/cachex"))
        #expect(!rules.ignores("other/private/cache"), "the pattern is anchored")
        #expect(rules.ignores("shared/bob/zone/r.json"))
        #expect(!rules.ignores("shared", isDirectory: true), "a/** is what is inside a, not a")
    }

    @Test func aFileInsideAnIgnoredDirectoryCannotBeReincluded() {
        let build = IgnoreRules(lines: ["build/", "!keep.json", "!private/build/kept.json"])
        #expect(build.ignores("private/build/keep.json"), "git does not look inside an excluded directory")
        #expect(build.ignores("private/build/kept.json"))
        #expect(!build.ignores("private/notes/keep.json"))
        let rules = IgnoreRules(lines: ["*.json", "!important.json"])
        #expect(rules.ignores("private/notes/r.json"))
        #expect(!rules.ignores("private/notes/important.json"), "a later negation re-includes a file")
        #expect(!IgnoreRules(lines: ["!*.json"]).ignores("private/n/a.json"), "a negation with nothing to undo ignores nothing")
        #expect(!IgnoreRules(lines: ["/", "!", "#x", "   "]).ignores("private/n/a.json"), "empty patterns are no rules")
    }

    @Test func theRulesFileIsReadAndFilesOutsideZonesAreFound() throws {
        let dir = TempDirectory("ignore-rules")
        let ws = try Workspace.create(at: dir.file("ws"), config: WorkspaceConfig(user: "alice", remote: "memory"))
        try writeFile("\(ws.root)/.recsyncignore", "*.bak\n# comment\n!keep.bak\n")
        let rules = try IgnoreRules.load(ws)
        #expect(rules.ignores("private/notes/a.bak"))
        #expect(!rules.ignores("private/notes/keep.bak"), "a negation in the file re-includes")
        try writeFile("\(ws.root)/private/stray.txt", "x")
        try writeFile("\(ws.root)/private/old.bak", "x")
        try writeFile("\(ws.root)/private/notes/r.json", "{}")
        try writeFile("\(ws.root)/shared/loose.txt", "x")
        try writeFile("\(ws.root)/shared/bob/stray.txt", "x")
        try writeFile("\(ws.root)/shared/bob/inbox/r.json", "{}")
        #expect(try ws.untrackedOutsideZones().sorted() == ["private/stray.txt", "shared/bob/stray.txt", "shared/loose.txt"])
    }

    /// A rules file written on Windows (CRLF line ends) is read line by line, as git reads it.
    @Test func aRulesFileWithCRLFLineEndsIsReadLineByLine() throws {
        let dir = TempDirectory("ignore-crlf")
        let ws = try Workspace.create(at: dir.file("ws"), config: WorkspaceConfig(user: "alice", remote: "/nowhere"))
        try writeFile("\(ws.root)/.recsyncignore", "*.bak\r\n# a comment\r\n!keep.bak\r\n")
        let rules = try IgnoreRules.load(ws)
        #expect(rules.ignores("private/notes/old.bak"))
        #expect(!rules.ignores("private/notes/keep.bak"))
    }

    /// `**/dir/name` matches a path that ends with `dir/name` at any depth, as in git.
    @Test func aDoubleStarBeforeAPathMatchesItAtAnyDepth() {
        let rules = IgnoreRules(lines: ["**/notes/draft.json", "**/tmp"])
        #expect(rules.ignores("private/notes/draft.json"))
        #expect(rules.ignores("shared/bob/notes/draft.json"))
        #expect(!rules.ignores("private/notes/final.json"))
        #expect(!rules.ignores("private/other/draft.json"))
        #expect(rules.ignores("private/tmp", isDirectory: true))
        #expect(rules.ignores("private/a/tmp/x.json"))
    }
}
