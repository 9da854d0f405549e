import Foundation
import RecSyncModel
import Testing

@Suite struct ChangeTokenTests {
    let otherZone: ZoneID = {
        do { return try ZoneID(zoneName: "Other", ownerName: "alice") } catch { fatalError("\(error)") }
    }()

    func rawToken(_ json: String) -> ServerChangeToken {
        var t = Data(json.utf8).base64EncodedString()
        t = t.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while t.hasSuffix("=") { t.removeLast() }
        return ServerChangeToken(rawValue: "rsct1." + t)
    }

    @Test func databaseTokenRoundTrip() throws {
        let c = ChangeTokenContent(storeID: "s1", kind: .database(scope: .private, user: "alice"), commit: "abc123", target: "def", after: "zone/x")
        let token = c.token
        #expect(token.rawValue.hasPrefix("rsct1."))
        #expect(!token.rawValue.contains("+") && !token.rawValue.contains("/") && !token.rawValue.contains("="))
        #expect(try ChangeTokenContent.decode(token) == c)
        #expect(try ChangeTokenContent.decodeDatabaseToken(token, storeID: "s1", scope: .private, user: "alice") == c)
        #expect(c.token == token)
    }

    @Test func zoneTokenRoundTrip() throws {
        let c = ChangeTokenContent(storeID: "s1", kind: .zone(testZone, incarnation: "i1"), commit: "abc")
        #expect(try ChangeTokenContent.decodeZoneToken(c.token, storeID: "s1", zoneID: testZone) == c)
        #expect(c.version == ChangeTokenContent.currentVersion)
    }

    /// Tokens handed out before the canonical codec wrote them (JSONEncoder, sorted keys) are
    /// still read: workspaces and subscription cursors hold them.
    @Test func tokensWrittenByJSONEncoderStillDecode() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        for c in [
            ChangeTokenContent(storeID: "s1", kind: .database(scope: .shared, user: "bob"), commit: "abc", target: "t", after: "k"),
            ChangeTokenContent(storeID: "s1", kind: .zone(testZone, incarnation: "i1"), commit: "abc"),
        ] {
            var t = try encoder.encode(c).base64EncodedString()
            t = t.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            while t.hasSuffix("=") { t.removeLast() }
            #expect(try ChangeTokenContent.decode(ServerChangeToken(rawValue: "rsct1." + t)) == c)
        }
    }

    @Test func garbledTokens() {
        for raw in ["", "hello", "rsct1.", "rsct1.!!!!", "rsct1." + "bm90IGpzb24"] {
            expectError(.badToken(.garbled)) { try ChangeTokenContent.decode(ServerChangeToken(rawValue: raw)) }
        }
        expectError(.badToken(.garbled)) { try ChangeTokenContent.decode(rawToken("{}")) }
        // A zone that breaks the name rules cannot be smuggled in (the same document with a good zone decodes).
        let good = rawToken(
            #"{"commit":"c","kind":{"zone":{"_0":{"ownerName":"alice","zoneName":"Notes"},"incarnation":"i"}},"storeID":"s","version":1}"#)
        #expect((try? ChangeTokenContent.decode(good))?.kind == .zone(testZone, incarnation: "i"))
        expectError(.badToken(.garbled)) {
            try ChangeTokenContent.decode(
                rawToken(#"{"commit":"c","kind":{"zone":{"_0":{"ownerName":"a","zoneName":"a/b"},"incarnation":"i"}},"storeID":"s","version":1}"#))
        }
        // An empty commit without a target is not a token recsync hands out.
        let empty = ChangeTokenContent(storeID: "s1", kind: .zone(testZone, incarnation: "i"), commit: "")
        expectError(.badToken(.garbled)) { try ChangeTokenContent.decode(empty.token) }
        let garbled = ServerChangeToken(rawValue: "nonsense")
        expectError(.badToken(.garbled)) { try ChangeTokenContent.decodeZoneToken(garbled, storeID: "s1", zoneID: testZone) }
        expectError(.badToken(.garbled)) { try ChangeTokenContent.decodeDatabaseToken(garbled, storeID: "s1", scope: .private, user: "a") }
    }

    @Test func unsupportedVersion() {
        expectError(.badToken(.unsupportedVersion(3))) { try ChangeTokenContent.decode(ServerChangeToken(rawValue: "rsct3.abc")) }
        expectError(.badToken(.unsupportedVersion(12))) { try ChangeTokenContent.decode(ServerChangeToken(rawValue: "rsct12.abc")) }
        // A version 2 document behind the version 1 prefix is still refused by its version.
        expectError(.badToken(.unsupportedVersion(2))) {
            try ChangeTokenContent.decode(rawToken(#"{"commit":"c","kind":{"database":{"scope":"private","user":"a"}},"storeID":"s","version":2}"#))
        }
        var c = ChangeTokenContent(storeID: "s1", kind: .zone(testZone, incarnation: "i"), commit: "c")
        c.version = 7
        expectError(.badToken(.unsupportedVersion(7))) { try ChangeTokenContent.decode(c.token) }
    }

    @Test func wrongKind() {
        let db = ChangeTokenContent(storeID: "s1", kind: .database(scope: .private, user: "alice"), commit: "c").token
        let zone = ChangeTokenContent(storeID: "s1", kind: .zone(testZone, incarnation: "i"), commit: "c").token
        expectError(.badToken(.wrongKind(expected: "zone", found: "database"))) {
            try ChangeTokenContent.decodeZoneToken(db, storeID: "s1", zoneID: testZone)
        }
        expectError(.badToken(.wrongKind(expected: "database", found: "zone"))) {
            try ChangeTokenContent.decodeDatabaseToken(zone, storeID: "s1", scope: .private, user: "alice")
        }
    }

    @Test func wrongZone() {
        let zone = ChangeTokenContent(storeID: "s1", kind: .zone(testZone, incarnation: "i"), commit: "c").token
        expectError(.badToken(.wrongZone(expected: otherZone, found: testZone))) {
            try ChangeTokenContent.decodeZoneToken(zone, storeID: "s1", zoneID: otherZone)
        }
    }

    @Test func wrongStore() {
        let zone = ChangeTokenContent(storeID: "s1", kind: .zone(testZone, incarnation: "i"), commit: "c").token
        let db = ChangeTokenContent(storeID: "s1", kind: .database(scope: .shared, user: "bob"), commit: "c").token
        expectError(.badToken(.wrongStore(expected: "s2", found: "s1"))) {
            try ChangeTokenContent.decodeZoneToken(zone, storeID: "s2", zoneID: testZone)
        }
        expectError(.badToken(.wrongStore(expected: "s2", found: "s1"))) {
            try ChangeTokenContent.decodeDatabaseToken(db, storeID: "s2", scope: .shared, user: "bob")
        }
    }

    @Test func wrongScope() {
        let db = ChangeTokenContent(storeID: "s1", kind: .database(scope: .private, user: "alice"), commit: "c").token
        expectError(.badToken(.wrongScope(expected: "alice's shared database", found: "alice's private database"))) {
            try ChangeTokenContent.decodeDatabaseToken(db, storeID: "s1", scope: .shared, user: "alice")
        }
        expectError(.badToken(.wrongScope(expected: "bob's private database", found: "alice's private database"))) {
            try ChangeTokenContent.decodeDatabaseToken(db, storeID: "s1", scope: .private, user: "bob")
        }
    }

    @Test func problemsAreDistinctAndInvalidArguments() {
        let problems: [TokenProblem] = [
            .garbled, .unsupportedVersion(2), .wrongKind(expected: "zone", found: "database"),
            .wrongScope(expected: "a", found: "b"), .wrongZone(expected: otherZone, found: testZone), .wrongStore(expected: "a", found: "b"),
        ]
        #expect(Set(problems).count == problems.count)
        #expect(Set(problems.map { RecSyncError.badToken($0).message }).count == problems.count)
        for p in problems { #expect(RecSyncError.badToken(p).code == .invalidArguments) }
    }
}
