import Foundation
import RecSyncModel
import RecSyncTestSupport
import Testing

/// Zone ref names (store format 2): every owner and zone name maps to a ref name git accepts,
/// and back, or to the hashed form for a name too long.
@Suite struct RefNamesTests {
    /// What git refuses in one component of a ref name (git-check-ref-format(1)), checked here
    /// without git, for the generated names.
    static func gitWouldRefuse(_ component: String) -> String? {
        let b = Array(component.utf8)
        func has(_ piece: String) -> Bool {
            let p = Array(piece.utf8)
            return b.count >= p.count && (0...(b.count - p.count)).contains { b[$0..<$0 + p.count].elementsEqual(p) }
        }
        if b.isEmpty { return "empty" }
        if b.first == 0x2E { return "starts with ." }
        if b.last == 0x2E { return "ends with ." }
        if b.count >= 5 && b.suffix(5).elementsEqual(".lock".utf8) { return "ends with .lock" }
        if has("..") { return "contains .." }
        if has("@{") { return "contains @{" }
        if let bad = b.first(where: { $0 < 0x20 || $0 == 0x7F || Array(" ~^:?*[\\/".utf8).contains($0) }) { return "contains byte \(bad)" }
        if b.count > RefNames.maxComponentBytes { return "longer than \(RefNames.maxComponentBytes) bytes" }
        return nil
    }

    /// Encodes, checks the component is one git takes, and decodes back to the name (or, for
    /// the hashed form, to a digest the name matches).
    func expectRoundTrip(_ name: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let c = RefNames.component(name)
        if let why = Self.gitWouldRefuse(c) {
            Issue.record("component \(c.debugDescription) of \(name.debugDescription) \(why)", sourceLocation: sourceLocation)
        }
        guard let decoded = RefNames.decodeComponent(c) else {
            Issue.record("component \(c.debugDescription) of \(name.debugDescription) does not decode", sourceLocation: sourceLocation)
            return
        }
        switch decoded {
        case .name(let back):
            #expect(Array(back.utf8) == Array(name.utf8), sourceLocation: sourceLocation)
            #expect(!c.contains("%%"), "%% comes only from the hashed form", sourceLocation: sourceLocation)
        case .hashed:
            #expect(c.hasPrefix("%%") && c.utf8.count == 66, sourceLocation: sourceLocation)
            #expect(decoded.matches(name), sourceLocation: sourceLocation)
        }
        #expect(decoded.encoded == c, sourceLocation: sourceLocation)
    }

    @Test func ordinaryNamesAreThemselves() {
        for name in ["Notes", "alice", "todo-2026", "a_b", "x#$!@}]'\"<|;,=+&y"] {
            #expect(RefNames.component(name) == name)
            expectRoundTrip(name)
        }
        #expect(RefNames.refName(for: testZone) == "refs/recsync/zones/alice/Notes")
        #expect(RefNames.suffix(for: testZone) == "alice/Notes")
        #expect(RefNames.ownerPrefix("alice") == "refs/recsync/zones/alice/")
    }

    @Test func nonASCIIStaysAsItIs() throws {
        // NFC names, as zone names are kept: the bytes go into the ref name unchanged.
        for name in ["Grüße", "日本語のノート", "emoji😀", "ünïcödé"] {
            #expect(NameRules.isNFC(name))
            #expect(RefNames.component(name) == name)
            expectRoundTrip(name)
        }
        // An NFD spelling is another name, with another component (ZoneID refuses it anyway).
        let nfd = "Gru\u{308}ße"
        #expect(Array(RefNames.component(nfd).utf8) == Array(nfd.utf8))
        #expect(RefNames.component(nfd).utf8.elementsEqual(RefNames.component("Grüße").utf8) == false)
        expectRoundTrip(nfd)
        let zone = try ZoneID(zoneName: "Grüße 2026", ownerName: "bob")
        #expect(RefNames.refName(for: zone) == "refs/recsync/zones/bob/Grüße%202026")
    }

    @Test func everyCharacterGitRefusesIsEscaped() {
        let refused: [(String, String)] = [
            (" ", "%20"), ("~", "%7E"), ("^", "%5E"), (":", "%3A"), ("?", "%3F"), ("*", "%2A"), ("[", "%5B"), ("\\", "%5C"), ("{", "%7B"),
            // What NameEscaping already escapes.
            ("/", "%2F"), ("%", "%25"), ("\u{0}", "%00"), ("\u{1}", "%01"), ("\n", "%0A"), ("\u{1F}", "%1F"), ("\u{7F}", "%7F"),
        ]
        for (char, escaped) in refused {
            #expect(RefNames.component("a\(char)b") == "a\(escaped)b", "\(char.debugDescription)")
            #expect(RefNames.component("\(char)") == escaped, "\(char.debugDescription)")
            expectRoundTrip("a\(char)b")
            expectRoundTrip(char)
            expectRoundTrip(String(repeating: char, count: 5))
        }
        #expect(RefNames.component("x@{1}") == "x@%7B1}")
        #expect(RefNames.component("@") == "@")
        expectRoundTrip("x@{1}")
    }

    @Test func dotsWhereGitRefusesThem() {
        let cases: [(String, String)] = [
            ("a.", "a%2E"),
            ("a.lock", "a%2Elock"),
            (".lock", "%2Elock"),
            ("a.lock.lock", "a.lock%2Elock"),
            ("a.lock.", "a.lock%2E"),
            ("a..b", "a.%2Eb"),
            ("a...b", "a.%2E%2Eb"),
            ("..", "%2E%2E"),
            ("...", "%2E.%2E"),
            (".", "%2E"),
            (".hidden", "%2Ehidden"),
            (".a.", "%2Ea%2E"),
            ("a.b.c", "a.b.c"),
            ("a.LOCK", "a.LOCK"),
            ("alock", "alock"),
            ("a.locks", "a.locks"),
        ]
        for (name, component) in cases {
            #expect(RefNames.component(name) == component, "\(name)")
            expectRoundTrip(name)
        }
    }

    @Test func componentsThatDoNotRoundTripAreRefused() {
        let bad = [
            "", "a.", "a..b", "a.lock", ".x", "a b", "a%2e", "a%41", "a%", "a%2", "a%ZZ", "a%2Fb%", "%C3", "%FF",
            "%%", "%%abc", "%%" + String(repeating: "a", count: 63), "%%" + String(repeating: "A", count: 64),
            "%%" + String(repeating: "a", count: 65), "%%" + String(repeating: "g", count: 64), "a/b",
            String(repeating: "x", count: 241),
        ]
        for c in bad {
            #expect(RefNames.decodeComponent(c) == nil, "\(c.debugDescription)")
        }
        // Escaped only where needed: `a%2Fb` is the name `a/b`, `%2E.` is not the name `..`.
        #expect(RefNames.decodeComponent("a%2Fb") == .name("a/b"))
        #expect(RefNames.decodeComponent("%2E.") == nil)
        #expect(RefNames.decodeComponent("%2E%2E") == .name(".."))
    }

    @Test func longNamesAreHashedAt240Bytes() {
        let at = String(repeating: "x", count: 240)
        #expect(RefNames.component(at) == at)
        expectRoundTrip(at)

        let over = String(repeating: "x", count: 241)
        let hashed = "%%7dbf05774ebc8b0213e8f74d789e344714ca95a03e019d92c8d48365045b7989"  // sha256sum of 241 x's
        #expect(RefNames.component(over) == hashed)
        #expect(RefNames.decodeComponent(hashed) == .hashed(sha256: String(hashed.dropFirst(2))))
        expectRoundTrip(over)
        #expect(RefNames.decodeComponent(hashed)?.matches(over) == true)
        #expect(RefNames.decodeComponent(hashed)?.matches(at) == false)
        #expect(RefNames.decodeComponent(hashed)?.matches(String(repeating: "y", count: 241)) == false)

        // The limit is on the escaped form: escapes count three bytes each.
        let fits = String(repeating: "x", count: 237) + " "
        #expect(RefNames.component(fits) == String(repeating: "x", count: 237) + "%20")
        #expect(RefNames.component(fits).utf8.count == 240)
        let spills = String(repeating: "x", count: 238) + " "
        #expect(RefNames.component(spills).hasPrefix("%%"))
        expectRoundTrip(fits)
        expectRoundTrip(spills)
        // Non-ASCII counts its UTF-8 bytes: 120 é are 240 bytes, one more character spills.
        #expect(RefNames.component(String(repeating: "é", count: 120)) == String(repeating: "é", count: 120))
        #expect(RefNames.component(String(repeating: "é", count: 120) + "x").hasPrefix("%%"))
        // A name whose escaped form looks hashed is escaped, never hashed: `%` is `%25`.
        let lookalike = "%%" + String(repeating: "a", count: 64)
        #expect(RefNames.component(lookalike) == "%25%25" + String(repeating: "a", count: 64))
        expectRoundTrip(lookalike)
    }

    @Test func zoneRefNamesParseBack() throws {
        let parsed = RefNames.parseRefName("refs/recsync/zones/alice/Notes")
        #expect(parsed == RefNames.ZoneRefName(owner: .name("alice"), zone: .name("Notes")))
        #expect(parsed?.matches(testZone) == true)
        #expect(parsed?.refName == "refs/recsync/zones/alice/Notes")
        #expect(parsed?.suffix == "alice/Notes")

        let odd = try ZoneID(zoneName: ".a b:c..lock", ownerName: "b~o:b")
        let ref = RefNames.refName(for: odd)
        #expect(ref == "refs/recsync/zones/b%7Eo%3Ab/%2Ea%20b%3Ac.%2Elock")
        #expect(RefNames.parseRefName(ref) == RefNames.ZoneRefName(owner: .name("b~o:b"), zone: .name(".a b:c..lock")))

        let long = try ZoneID(zoneName: String(repeating: "z", count: 245), ownerName: "alice")
        let longRef = try #require(RefNames.parseRefName(RefNames.refName(for: long)))
        guard case .hashed = longRef.zone else {
            Issue.record("expected a hashed zone component, got \(longRef.zone)")
            return
        }
        #expect(longRef.owner == .name("alice"))
        #expect(longRef.matches(long))
        #expect(!longRef.matches(try ZoneID(zoneName: String(repeating: "z", count: 244), ownerName: "alice")))

        for other in [
            "refs/heads/main", "refs/recsync/zones/alice", "refs/recsync/zones/alice/", "refs/recsync/zones//Notes",
            "refs/recsync/zones/alice/Notes/x", "refs/recsync/zones/a%2e/x", "refs/recsync/zones/alice/a.",
            "refs/recsync/compacting/alice/Notes", "refs/recsync/zonesalice/Notes",
        ] {
            #expect(RefNames.parseRefName(other) == nil, "\(other)")
        }
        #expect(RefNames.parseSuffix("alice/Notes") == parsed)
        #expect(RefNames.parseSuffix("alice") == nil)
    }

    /// Characters and pieces that meet the encoding's rules: dots, `.lock`, what git refuses,
    /// what NameEscaping escapes, escapes themselves, non-ASCII.
    static let alphabet = [
        ".", ".", "..", ".lock", "lock", "l", "a", "Z", "0", " ", "~", "^", ":", "?", "*", "[", "\\", "{", "}", "@", "@{", "/", "%",
        "%2E", "%%", "%25", "\u{0}", "\u{1F}", "\u{7F}", "é", "e\u{301}", "ü", "日", "😀", "\u{FEFF}", "#", "]", "'", "\"",
    ]

    static func generatedName(using g: inout SeededRandom) -> String {
        // Mostly short, sometimes long enough to be hashed.
        let pieces = g.below(10) == 0 ? 60 + g.below(120) : 1 + g.below(12)
        var name = ""
        for _ in 0..<pieces { name += g.pick(alphabet) }
        return name
    }

    @Test func generatedNamesRoundTrip() {
        var g = SeededRandom(seed: 240)
        var hashed = 0
        for _ in 0..<5000 {
            let name = Self.generatedName(using: &g)
            expectRoundTrip(name)
            if RefNames.component(name).hasPrefix("%%") { hashed += 1 }
        }
        #expect(hashed > 50, "the loop reaches the hashed form")
    }

    @Test func arbitraryComponentsDecodeOnlyWhenTheyRoundTrip() {
        var g = SeededRandom(seed: 7)
        let pieces = ["%", "2", "E", "e", "%2E", "%25", ".", "a", "%C3", "%A9", "%7B", "{", "%%", "f", "%20", " ", "lock"]
        var decoded = 0
        for _ in 0..<5000 {
            var text = ""
            for _ in 0..<(1 + g.below(8)) { text += g.pick(pieces) }
            guard let component = RefNames.decodeComponent(text) else { continue }
            decoded += 1
            #expect(Array(component.encoded.utf8) == Array(text.utf8))
        }
        #expect(decoded > 100)
    }

    /// The real git agrees: every encoded ref name passes `git check-ref-format`, and a
    /// repository holds them all as loose refs (file names, the `.lock` beside each included)
    /// and lists them back as the names they came from.
    @Test(.enabled(if: Machine.hasGit, "needs /usr/bin/git (apt-get install git)"))
    func gitAcceptsEveryEncodedRefName() throws {
        var names = [
            "Notes", "Grüße", ".hidden", "a.", "a.lock", "a..b", "...", "x@{1}", "@", " ~^:?*[\\{", "%%", "a%2Eb", "/", "\u{1}\u{7F}",
            String(repeating: "x", count: 240), String(repeating: "x", count: 241), String(repeating: "é", count: 120) + ".",
            String(repeating: ".", count: 80), String(repeating: " ", count: 80), String(repeating: "ü", count: 200),
        ]
        var g = SeededRandom(seed: 2026)
        for _ in 0..<120 { names.append(Self.generatedName(using: &g)) }
        let owners = ["alice", "b.o.b.", "c:d", String(repeating: "o", count: 250)]
        // Keyed by bytes: two canonically equivalent names are two refs.
        var refs: [[UInt8]: (owner: String, zone: String)] = [:]
        for (i, zone) in names.enumerated() {
            let owner = owners[i % owners.count]
            refs[Array((RefNames.zonesPrefix + RefNames.component(owner) + "/" + RefNames.component(zone)).utf8)] = (owner, zone)
        }
        let refNames = refs.keys.sorted { $0.lexicographicallyPrecedes($1) }.map { String(decoding: $0, as: UTF8.self) }

        let dir = TempDirectory("refnames-git")
        // A few refs git must refuse, so a check that passes everything would show.
        for raw in ["refs/recsync/zones/alice/a..b", "refs/recsync/zones/alice/a.lock", "refs/recsync/zones/alice/a b"] {
            #expect(throws: GitCLI.Failure.self) { try GitCLI.run(["check-ref-format", raw], in: dir.path) }
        }
        for ref in refNames {
            do {
                try GitCLI.run(["check-ref-format", ref], in: dir.path)
            } catch {
                Issue.record("git refuses \(ref.debugDescription): \(error)")
            }
        }

        try GitCLI.run(["init", "--bare", "-q", "repo.git"], in: dir.path)
        let repo = dir.file("repo.git")
        let tree = try GitCLI.run(["mktree"], in: repo, input: "").trimmingCharacters(in: .whitespacesAndNewlines)
        let commit = try GitCLI.run(["commit-tree", tree, "-m", "zone"], in: repo).trimmingCharacters(in: .whitespacesAndNewlines)
        try GitCLI.run(["update-ref", "--stdin"], in: repo, input: refNames.map { "create \($0) \(commit)\n" }.joined())
        let listed = try GitCLI.run(["for-each-ref", "--format=%(refname)", RefNames.zonesPrefix], in: repo)
            .utf8.split(separator: 0x0A).map { Array($0) }
        #expect(listed.count == refs.count)
        #expect(Set(listed) == Set(refs.keys))
        for ref in listed {
            let text = String(decoding: ref, as: UTF8.self)
            guard let parsed = RefNames.parseRefName(text), let names = refs[ref] else {
                Issue.record("\(text.debugDescription) does not parse back")
                continue
            }
            #expect(parsed.owner.matches(names.owner) && parsed.zone.matches(names.zone), "\(text.debugDescription)")
        }
    }
}
