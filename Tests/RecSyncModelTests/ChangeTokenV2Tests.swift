import Foundation
import RecSyncModel
import RecSyncTestSupport
import Testing

/// Version 2 change tokens (store format 2, one ref per zone): a database token carries the
/// heads of the zone refs its scope looked at, a zone token commits of the zone's ref.
@Suite struct ChangeTokenV2Tests {
    let oid = "0123456789abcdef0123456789abcdef01234567"
    let oid2 = "89abcdef0123456789abcdef0123456789abcdef"

    func wrap(_ payload: [UInt8]) -> ServerChangeToken {
        var t = Data(payload).base64EncodedString()
        t = t.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while t.hasSuffix("=") { t.removeLast() }
        return ServerChangeToken(rawValue: "rsct2." + t)
    }

    func payload(_ token: ServerChangeToken) -> [UInt8] {
        var t = String(token.rawValue.dropFirst("rsct2.".count))
        t = t.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while t.count % 4 != 0 { t.append("=") }
        return Data(base64Encoded: t).map { Array($0) } ?? []
    }

    var sampleHeads: [ZoneRefHead] {
        [
            ZoneRefHead(refSuffix: "bob/Notes", head: oid, visible: true),
            ZoneRefHead(refSuffix: "bob/Grüße%20x", head: oid2, visible: false),
            ZoneRefHead(refSuffix: "carol/%%" + String(repeating: "ab", count: 32), head: oid, visible: true),
            // Memory store heads are not hex: kept as text, whole.
            ZoneRefHead(refSuffix: "bob/m", head: "m12", visible: true),
            ZoneRefHead(refSuffix: "bob/n", head: "m3", visible: false),
            // Suffixes that share a prefix ending inside a character (é is C3 A9, ê is C3 AA).
            ZoneRefHead(refSuffix: "bob/é", head: oid, visible: true),
            ZoneRefHead(refSuffix: "bob/ê", head: oid2, visible: true),
        ]
    }

    // MARK: Round trips

    @Test func databaseTokenRoundTrip() throws {
        let c = ChangeTokenContent(storeID: "s1", scope: .shared, user: "alice", heads: sampleHeads)
        #expect(c.version == 2 && c.version == ChangeTokenContent.zoneRefsVersion)
        #expect(c.commit.isEmpty && c.target == nil && c.after == nil)
        let token = c.token
        #expect(token.rawValue.hasPrefix("rsct2."))
        #expect(!token.rawValue.contains("+") && !token.rawValue.contains("/") && !token.rawValue.contains("="))
        #expect(try ChangeTokenContent.decode(token) == c)
        #expect(try ChangeTokenContent.decodeDatabaseToken(token, storeID: "s1", scope: .shared, user: "alice") == c)
        // Sorted by the suffix's bytes, as git lists refs.
        let suffixes = try #require(c.heads).map { Array($0.refSuffix.utf8) }
        #expect(suffixes == suffixes.sorted { $0.lexicographicallyPrecedes($1) })
        #expect(c.heads?.count == sampleHeads.count)

        let paged = ChangeTokenContent(storeID: "s1", scope: .private, user: "bob", heads: sampleHeads, after: "bob/Notes")
        #expect(try ChangeTokenContent.decode(paged.token) == paged)
        #expect(paged.token != c.token)

        // A scope with no zones.
        let empty = ChangeTokenContent(storeID: "s1", scope: .private, user: "alice", heads: [])
        #expect(try ChangeTokenContent.decode(empty.token) == empty)
        #expect(try ChangeTokenContent.decode(empty.token).heads == [])

        // Codable keeps the heads too.
        let json = try JSONEncoder().encode(c)
        #expect(try JSONDecoder().decode(ChangeTokenContent.self, from: json) == c)
    }

    @Test func zoneTokenRoundTrip() throws {
        let full = ChangeTokenContent(storeID: "s1", zone: testZone, incarnation: "i1", refCommit: oid, target: oid2, after: "ab/cd%2Fx")
        #expect(full.version == 2 && full.heads == nil)
        #expect(full.token.rawValue.hasPrefix("rsct2."))
        #expect(try ChangeTokenContent.decodeZoneToken(full.token, storeID: "s1", zoneID: testZone) == full)
        for c in [
            ChangeTokenContent(storeID: "s1", zone: testZone, incarnation: "i1", refCommit: oid),
            ChangeTokenContent(storeID: "s1", zone: testZone, incarnation: "", refCommit: "", target: oid, after: "k"),
            ChangeTokenContent(storeID: "s1", zone: testZone, incarnation: "i", refCommit: "m4", target: "m9"),
            ChangeTokenContent(storeID: "s1", zone: Build.zone("Grüße .lock", owner: "b~b"), incarnation: "i", refCommit: "ABCDEF"),
        ] {
            #expect(try ChangeTokenContent.decode(c.token) == c)
        }
        // An empty commit means "from the beginning", which only a mid-batch token carries.
        let empty = ChangeTokenContent(storeID: "s1", zone: testZone, incarnation: "i", refCommit: "")
        expectError(.badToken(.garbled)) { try ChangeTokenContent.decode(empty.token) }
    }

    @Test func hiddenZonesKeepAPrefixOfTheirHead() {
        let hidden = ZoneRefHead(refSuffix: "bob/x", head: oid, visible: false)
        #expect(hidden.head == "0123456789abcdef" && hidden.head.count == ZoneRefHead.hiddenHeadDigits)
        #expect(hidden.isHead(oid))
        #expect(!hidden.isHead(oid2))
        #expect(hidden.isHead("0123456789abcdef"))
        #expect(!hidden.isHead("0123456789ABCDEF0123456789abcdef01234567"))

        let visible = ZoneRefHead(refSuffix: "bob/x", head: oid, visible: true)
        #expect(visible.head == oid && visible.isHead(oid))
        #expect(!visible.isHead(String(oid.prefix(16))) && !visible.isHead(oid2))

        // Heads that are not object IDs are kept whole, and compared whole.
        let memory = ZoneRefHead(refSuffix: "bob/x", head: "m1", visible: false)
        #expect(memory.head == "m1" && memory.isHead("m1") && !memory.isHead("m10"))
        #expect(ZoneRefHead(refSuffix: "b/x", head: oid.uppercased(), visible: false).head == oid.uppercased())
    }

    @Test func theSameContentIsTheSameToken() throws {
        let reference = ChangeTokenContent(storeID: "s1", scope: .shared, user: "alice", heads: sampleHeads).token
        var g = SeededRandom(seed: 5)
        for _ in 0..<20 {
            var heads = sampleHeads
            heads.shuffle(using: &g)
            #expect(ChangeTokenContent(storeID: "s1", scope: .shared, user: "alice", heads: heads).token == reference)
        }
        #expect(try ChangeTokenContent.decode(reference).token == reference)
        // Two entries for one ref: the first given is kept.
        let twice = ChangeTokenContent(
            storeID: "s1", scope: .private, user: "alice",
            heads: [ZoneRefHead(refSuffix: "alice/a", head: oid, visible: true), ZoneRefHead(refSuffix: "alice/a", head: oid2, visible: true)])
        #expect(twice.heads == [ZoneRefHead(refSuffix: "alice/a", head: oid, visible: true)])
        #expect(try ChangeTokenContent.decode(twice.token) == twice)
    }

    /// The binary layout, pinned: a token handed out is read by later versions of recsync.
    @Test func theLayoutIsPinned() throws {
        let oidBytes: [UInt8] = [
            0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67,
        ]
        let db: [UInt8] =
            [2] + Array("s1".utf8) + [0, 1] + [5] + Array("alice".utf8) + [2]
            + [0, 9] + Array("bob/Notes".utf8) + [1, 20] + oidBytes  // visible
            + [4, 1] + Array("x".utf8) + [0, 8] + oidBytes.prefix(8)  // "bob/x", hidden
            + [1, 9] + Array("bob/Notes".utf8)  // after
        let content = ChangeTokenContent(
            storeID: "s1", scope: .shared, user: "alice",
            heads: [ZoneRefHead(refSuffix: "bob/x", head: oid, visible: false), ZoneRefHead(refSuffix: "bob/Notes", head: oid, visible: true)],
            after: "bob/Notes")
        #expect(payload(content.token) == db)
        #expect(try ChangeTokenContent.decode(wrap(db)) == content)

        let zone: [UInt8] =
            [2] + Array("s1".utf8) + [1] + [5] + Array("alice".utf8) + [5] + Array("Notes".utf8) + [2] + Array("i1".utf8)
            + [0, 20] + oidBytes + [1, 2, 2] + Array("m7".utf8) + [0]
        let zoneContent = ChangeTokenContent(storeID: "s1", zone: testZone, incarnation: "i1", refCommit: oid, target: "m7")
        #expect(payload(zoneContent.token) == zone)
        #expect(try ChangeTokenContent.decode(wrap(zone)) == zoneContent)
    }

    // MARK: Version 1 as before

    @Test func version1TokensReadAsBefore() throws {
        let db = ServerChangeToken(
            rawValue:
                "rsct1.eyJjb21taXQiOiJhYmMxMjMiLCJraW5kIjp7ImRhdGFiYXNlIjp7InNjb3BlIjoicHJpdmF0ZSIsInVzZXIiOiJhbGljZSJ9fSwic3RvcmVJRCI6InMxIiwidmVyc2lvbiI6MX0"
        )
        let dbContent = ChangeTokenContent(storeID: "s1", kind: .database(scope: .private, user: "alice"), commit: "abc123")
        #expect(try ChangeTokenContent.decode(db) == dbContent)
        #expect(dbContent.token == db)
        #expect(dbContent.version == 1 && dbContent.heads == nil)

        let zone = ServerChangeToken(
            rawValue:
                "rsct1.eyJhZnRlciI6ImsiLCJjb21taXQiOiIwMTIzNDU2Nzg5YWJjZGVmMDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3Iiwia2luZCI6eyJ6b25lIjp7Il8wIjp7Im93bmVyTmFtZSI6ImFsaWNlIiwiem9uZU5hbWUiOiJOb3RlcyJ9LCJpbmNhcm5hdGlvbiI6ImkxIn19LCJzdG9yZUlEIjoiczEiLCJ0YXJnZXQiOiJ0IiwidmVyc2lvbiI6MX0"
        )
        let zoneContent = ChangeTokenContent(storeID: "s1", kind: .zone(testZone, incarnation: "i1"), commit: oid, target: "t", after: "k")
        #expect(try ChangeTokenContent.decodeZoneToken(zone, storeID: "s1", zoneID: testZone) == zoneContent)
        #expect(zoneContent.token == zone)

        // A `heads` member in a version 1 document is ignored, as any unknown member was.
        let withHeads = #"{"commit":"c","heads":[1,2],"kind":{"database":{"scope":"private","user":"a"}},"storeID":"s","version":1}"#
        var t = Data(withHeads.utf8).base64EncodedString()
        t = t.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while t.hasSuffix("=") { t.removeLast() }
        let read = try ChangeTokenContent.decode(ServerChangeToken(rawValue: "rsct1." + t))
        #expect(read.heads == nil && read.commit == "c" && read.version == 1)
    }

    // MARK: Hostile input

    func str(_ text: String) -> [UInt8] { [UInt8(text.utf8.count)] + Array(text.utf8) }
    var head20: [UInt8] { [1, 20] + hex(oid) }
    func hex(_ text: String) -> [UInt8] {
        let d = Array(text.utf8).map { $0 <= 0x39 ? $0 - 0x30 : $0 - 0x61 + 10 }
        return stride(from: 0, to: d.count, by: 2).map { d[$0] << 4 | d[$0 + 1] }
    }
    func db(count: [UInt8], _ entries: [UInt8], scope: UInt8 = 0, user: [UInt8]? = nil, tail: [UInt8] = [0]) -> [UInt8] {
        str("s1") + [0, scope] + (user ?? str("alice")) + count + entries + tail
    }
    func zone(owner: String = "alice", name: String = "Notes", commit: [UInt8]? = nil, target: [UInt8] = [0], tail: [UInt8] = [0]) -> [UInt8] {
        str("s1") + [1] + str(owner) + str(name) + str("i") + (commit ?? ([0, 20] + hex(oid))) + target + tail
    }

    func expectGarbled(_ payload: [UInt8], _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            let content = try ChangeTokenContent.decode(wrap(payload))
            Issue.record("\(what): decoded to \(content)", sourceLocation: sourceLocation)
        } catch {
            #expect(error == .badToken(.garbled), "\(what)", sourceLocation: sourceLocation)
        }
    }

    @Test func malformedVersion2TokensAreGarbled() throws {
        // The hand-made baselines decode, so each case below fails for its one change.
        #expect(try ChangeTokenContent.decode(wrap(db(count: [1], [0] + str("alice/Notes") + head20))).heads?.count == 1)
        #expect(try ChangeTokenContent.decode(wrap(zone())).commit == oid)

        for raw in ["rsct2.", "rsct2.!!!!", "rsct2.A", "rsct2.AA", "rsct2.aGVsbG8", "rsct2.\u{0}"] {
            expectError(.badToken(.garbled)) { try ChangeTokenContent.decode(ServerChangeToken(rawValue: raw)) }
        }
        let entry = [0] + str("alice/Notes") + head20
        let cases: [(String, [UInt8])] = [
            ("empty", []),
            ("huge count", db(count: [0xFF, 0xFF, 0xFF, 0xFF, 0x0F], entry)),
            ("count past the end", db(count: [2], entry)),
            ("huge store ID length", [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F] + Array("s1".utf8) + [0, 0] + str("alice") + [0, 0]),
            ("a varint of ten bytes", Array(repeating: 0x80, count: 10) + [0x01]),
            ("an overlong varint", [0x82, 0x00] + Array("s1".utf8) + [0, 0] + str("alice") + [0, 0]),
            ("bad UTF-8 store ID", [2, 0xC3, 0x28, 0, 0] + str("alice") + [0, 0]),
            ("bad UTF-8 user", db(count: [0], [], user: [2, 0xFF, 0xFE])),
            ("bad UTF-8 suffix", db(count: [1], [0, 2, 0xC3, 0x28] + head20)),
            ("unknown kind", str("s1") + [2] + str("alice") + [0, 0]),
            ("unknown scope", db(count: [0], [], scope: 3)),
            ("unknown flag", db(count: [1], [0] + str("alice/Notes") + [4, 20] + hex(oid))),
            ("visible flag on a zone commit", zone(commit: [1, 20] + hex(oid))),
            ("hex sent as text", db(count: [1], [0] + str("alice/Notes") + [3, 2] + Array("ab".utf8))),
            ("a hidden zone's whole head", db(count: [1], [0] + str("alice/Notes") + [0, 20] + hex(oid))),
            ("unsorted", db(count: [2], [0] + str("alice/b") + head20 + [0] + str("alice/a") + head20)),
            ("a ref twice", db(count: [2], [0] + str("alice/a") + head20 + [7] + str("") + head20)),
            ("a shared prefix longer than the previous suffix", db(count: [1], [3] + str("alice/a") + head20)),
            ("a head past the end", db(count: [1], [0] + str("alice/a") + [1, 200] + hex(oid), tail: [])),
            ("after of tag 2", db(count: [0], [], tail: [2])),
            ("after past the end", db(count: [0], [], tail: [1, 9, 0x61])),
            ("a byte left over", db(count: [0], [], tail: [0, 0])),
            ("a zone name the rules refuse", zone(name: "a/b")),
            ("a zone owner the rules refuse", zone(owner: "<alice>")),
            ("an empty commit without a target", zone(commit: [2, 0])),
            ("a target of tag 3", zone(target: [3])),
        ]
        for (what, bytes) in cases { expectGarbled(bytes, what) }
        // With a target, an empty commit is a mid-batch token.
        #expect(try ChangeTokenContent.decode(wrap(zone(commit: [2, 0], target: [1] + [0, 20] + hex(oid2)))).target == oid2)

        // Every truncation of a good token, and every byte added at its end.
        let good = payload(ChangeTokenContent(storeID: "s1", scope: .shared, user: "alice", heads: sampleHeads, after: "bob/m").token)
        for n in 0..<good.count { expectGarbled(Array(good[..<n]), "truncated to \(n) of \(good.count) bytes") }
        for b in [0, 1, 0x7F, 0x80, 0xFF] as [UInt8] { expectGarbled(good + [b], "byte \(b) appended") }
    }

    /// Mutated tokens never trap; one that decodes is exactly the token of what it decodes to.
    @Test func mutatedVersion2TokensDecodeOnlyInTheirOwnForm() {
        let seeds = [
            payload(ChangeTokenContent(storeID: "s1", scope: .shared, user: "alice", heads: sampleHeads, after: "bob/m").token),
            payload(ChangeTokenContent(storeID: "s1", scope: .private, user: "bob", heads: []).token),
            payload(ChangeTokenContent(storeID: "s1", zone: testZone, incarnation: "i1", refCommit: oid, target: "m2", after: "k").token),
        ]
        var g = SeededRandom(seed: 2)
        var decoded = 0
        for i in 0..<20_000 {
            let mutated = DecoderFuzz.mutate(seeds[i % seeds.count], corpus: seeds, using: &g)
            let token = wrap(mutated)
            do {
                let content = try ChangeTokenContent.decode(token)
                decoded += 1
                #expect(content.token == token)
            } catch {
                #expect(error == .badToken(.garbled))
            }
        }
        #expect(decoded > 0)
    }

    // MARK: What a token is bound to

    @Test func version2TokensAreCheckedForStoreScopeKindAndZone() {
        let db = ChangeTokenContent(storeID: "s1", scope: .shared, user: "alice", heads: sampleHeads).token
        let zone = ChangeTokenContent(storeID: "s1", zone: testZone, incarnation: "i", refCommit: oid).token
        let other = Build.zone("Other")
        expectError(.badToken(.wrongStore(expected: "s2", found: "s1"))) {
            try ChangeTokenContent.decodeDatabaseToken(db, storeID: "s2", scope: .shared, user: "alice")
        }
        expectError(.badToken(.wrongScope(expected: "alice's private database", found: "alice's shared database"))) {
            try ChangeTokenContent.decodeDatabaseToken(db, storeID: "s1", scope: .private, user: "alice")
        }
        expectError(.badToken(.wrongScope(expected: "bob's shared database", found: "alice's shared database"))) {
            try ChangeTokenContent.decodeDatabaseToken(db, storeID: "s1", scope: .shared, user: "bob")
        }
        expectError(.badToken(.wrongKind(expected: "zone", found: "database"))) {
            try ChangeTokenContent.decodeZoneToken(db, storeID: "s1", zoneID: testZone)
        }
        expectError(.badToken(.wrongKind(expected: "database", found: "zone"))) {
            try ChangeTokenContent.decodeDatabaseToken(zone, storeID: "s1", scope: .private, user: "alice")
        }
        expectError(.badToken(.wrongZone(expected: other, found: testZone))) {
            try ChangeTokenContent.decodeZoneToken(zone, storeID: "s1", zoneID: other)
        }
        expectError(.badToken(.wrongStore(expected: "s2", found: "s1"))) {
            try ChangeTokenContent.decodeZoneToken(zone, storeID: "s2", zoneID: testZone)
        }
    }

    /// The size the design counts on (docs/zone-refs.md: ~40–70 KB for 1,000 zones).
    @Test func aThousandZonesMakeATokenOfTensOfKilobytes() throws {
        var g = SeededRandom(seed: 9)
        func randomOID() -> String { (0..<20).map { _ in String(format: "%02x", g.below(256)) }.joined() }
        let own = (0..<1000).map { ZoneRefHead(refSuffix: "alice/zone-\($0)", head: randomOID(), visible: true) }
        let privateToken = ChangeTokenContent(storeID: UUID().uuidString, scope: .private, user: "alice", heads: own).token
        // About 33 bytes a zone once in base64 (suffixes share "alice/zone-").
        #expect(privateToken.rawValue.utf8.count < 40_000)
        let others = (0..<1000).map { ZoneRefHead(refSuffix: "user\($0 % 50)/zone-\($0)", head: randomOID(), visible: $0 % 4 == 0) }
        let sharedToken = ChangeTokenContent(storeID: UUID().uuidString, scope: .shared, user: "alice", heads: others).token
        #expect(sharedToken.rawValue.utf8.count < 30_000)
        #expect(try ChangeTokenContent.decode(sharedToken).heads?.count == 1000)
    }
}
