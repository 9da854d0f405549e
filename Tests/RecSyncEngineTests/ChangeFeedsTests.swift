import RecSyncEngine
import RecSyncEngineFixtures
import RecSyncModel
import RecSyncStore
import RecSyncTestSupport
import Testing

/// The feeds every fetch reads the store's changes through.
@Suite struct ChangeFeedsTests {
    @Test func aZoneFeedPagesToTheEndAndStartsOverWhenItsTokenExpired() async throws {
        let f = EngineFixture()
        let alice = try f.store("alice")
        let notes = zone("notes")
        try await alice.createZones([notes])
        try await alice.save((0..<5).map { Build.record("r\($0)", in: notes, ["v": .int64(Int64($0))]) })

        var feed = ZoneChangeFeed(store: alice, zone: notes, since: nil)
        var names: [String] = []
        var pages = 0
        while let step = try await feed.next(limit: 2) {
            guard case .page(let page) = step else { Issue.record("no token to expire"); return }
            names += page.modifications.map(\.recordID.recordName)
            pages += 1
        }
        #expect(names.sorted() == ["r0", "r1", "r2", "r3", "r4"])
        #expect(pages == 3 && feed.isFinished)
        #expect(try await feed.next(limit: 2) == nil, "finished: nothing more")

        // A saved token that the store no longer honours: said once, then the zone from the start.
        let saved = try #require(feed.token)
        f.storage.rewriteHistory()
        var again = ZoneChangeFeed(store: alice, zone: notes, since: saved)
        guard case .tokenExpired? = try await again.next(limit: 0) else {
            Issue.record("an expired token is said")
            return
        }
        #expect(again.token == nil)
        guard case .page(let all)? = try await again.next(limit: 0) else {
            Issue.record("then the zone from the beginning")
            return
        }
        #expect(all.modifications.count == 5 && !all.moreComing)
    }

    @Test func aDatabaseFeedSaysAnExpiredTokenAndListsEveryZoneAgain() async throws {
        let f = EngineFixture()
        let alice = try f.store("alice")
        try await alice.createZones([zone("a"), zone("b")])
        var feed = DatabaseChangeFeed(store: alice, scope: .private, since: nil)
        var zones: [ZoneID] = []
        while let step = try await feed.next() {
            if case .page(let page) = step { zones += page.modifications }
        }
        #expect(Set(zones) == [zone("a"), zone("b")])
        let saved = try #require(feed.token)
        f.storage.rewriteHistory()
        var again = DatabaseChangeFeed(store: alice, scope: .private, since: saved)
        guard case .tokenExpired? = try await again.next() else {
            Issue.record("an expired token is said")
            return
        }
        guard case .page(let listing)? = try await again.next() else {
            Issue.record("after the expired token, the feed lists every zone again")
            return
        }
        #expect(Set(listing.modifications) == [zone("a"), zone("b")])
    }
}
