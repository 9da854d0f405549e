import Foundation
import RecSyncModel
import Testing

/// Subscriptions as kept in `.recsync/subscriptions.json`, and names shown from them.
@Suite struct SubscriptionModelTests {
    @Test func subscriptionsRoundTripThroughTheirFileForm() throws {
        let zone = try ZoneID(zoneName: "notes", ownerName: "bob")
        let all = [
            Subscription(id: "db", kind: .database(.shared)),
            Subscription(id: "z", kind: .zone(zone), includeOwn: true),
            Subscription(
                id: "q",
                kind: .query(
                    QuerySubscription(
                        scope: .shared, recordType: "Task", zone: zone,
                        conditions: [FieldCondition(field: "open", test: .equals("true")), FieldCondition(field: "due", test: .exists)],
                        firesOn: [.deleted, .created]))),
        ]
        let data = try JSONEncoder().encode(all)
        #expect(try JSONDecoder().decode([Subscription].self, from: data) == all)
        let text = String(decoding: data, as: UTF8.self)
        #expect(text.contains(#""firesOn":["created","deleted"]"#), "reasons are written in a fixed order: \(text)")
    }

    @Test func aQueryMatchesOnlyWhenEveryConditionHolds() throws {
        let zone = try ZoneID(zoneName: "notes", ownerName: "alice")
        let q = QuerySubscription(
            scope: .private, recordType: "Task",
            conditions: [
                try FieldCondition.validated(field: "open", test: .equals("true")),
                try FieldCondition.validated(field: "tag", test: .equals(#""home""#)),
                try FieldCondition.validated(field: "due", test: .exists),
            ])
        let m = try q.matcher()
        let id = try RecordID(recordName: "r", zoneID: zone)
        func record(_ type: String, _ fields: [String: FieldValue]) throws -> Record {
            try Record(recordID: id, recordType: type, fields: fields)
        }
        #expect(m.matches(try record("Task", ["open": .boolean(true), "tag": .string("home"), "due": .int64(3)])))
        #expect(!m.matches(try record("Task", ["open": .boolean(true), "tag": .string("home")])), "due is missing")
        #expect(!m.matches(try record("Task", ["open": .boolean(false), "tag": .string("home"), "due": .int64(3)])))
        #expect(!m.matches(try record("Note", ["open": .boolean(true), "tag": .string("home"), "due": .int64(3)])))
        #expect(throws: RecSyncError.self) { try FieldCondition.validated(field: "open", test: .equals("not json")) }
        #expect(throws: RecSyncError.self) { try FieldCondition.validated(field: "open", test: .equals("null")) }
    }

    @Test func idsMustFitAFileNameOnceEscaped() throws {
        try Subscription.validateID("zone-alice-日本")
        #expect(throws: RecSyncError.self) { try Subscription.validateID(String(repeating: "%", count: 100)) }
        #expect(throws: RecSyncError.self) { try Subscription.validateID("a\nb") }
        #expect(throws: RecSyncError.self) { try Subscription.validateID("") }
    }

    @Test func namesShownOnATerminalHaveTheirControlCharactersEscaped() {
        #expect(NameRules.printable("ok\u{1B}[2Jgone\u{9B}31m\nline") == "ok\\u{1b}[2Jgone\\u{9b}31m\\u{a}line")
        #expect(NameRules.printable("日本-notes") == "日本-notes")
    }
}

/// `SubscriptionRequest`: what `recsync subscribe` asks for, made into a subscription.
@Suite struct SubscriptionRequestTests {
    @Test func defaultIDsAndScopes() throws {
        let db = try SubscriptionRequest(database: "private").subscription(user: "alice")
        #expect(db.id == "database-private" && db.kind == .database(.private))
        let shared = try SubscriptionRequest(zone: "bob/plans").subscription(user: "alice")
        let plans = try ZoneID(zoneName: "plans", ownerName: "bob")
        #expect(shared.id == "zone-bob-plans" && shared.kind == .zone(plans))
        let urgent = try FieldCondition.validated(field: "urgent", test: .equals("true"))
        let query = try SubscriptionRequest(zone: "bob/plans", query: "Task", conditions: [urgent], firesOn: [.created]).subscription(user: "alice")
        #expect(query.id == "query-Task-shared-urgent")
        guard case .query(let q) = query.kind else { Issue.record("not a query"); return }
        #expect(q.scope == .shared && q.firesOn == [.created])
        #expect(query.summary == "query Task in zone bob/plans where urgent = true on create")
        #expect(
            try SubscriptionRequest(database: "shared", id: "mine", includeOwn: true).subscription(user: "alice").summary
                == "database shared (including own changes)")
    }

    @Test func whatCannotBeASubscriptionIsRefused() {
        #expect(throws: RecSyncError.self) { try SubscriptionRequest().subscription(user: "alice") }
        #expect(throws: RecSyncError.self) { try SubscriptionRequest(database: "private", zone: "notes").subscription(user: "alice") }
        #expect(throws: RecSyncError.self) { try SubscriptionRequest(database: "public").subscription(user: "alice") }
        #expect(throws: RecSyncError.self) { try SubscriptionRequest(query: "not a type").subscription(user: "alice") }
        #expect(throws: RecSyncError.self) { try SubscriptionRequest(zone: "a/b/c/..").subscription(user: "alice") }
        #expect(throws: RecSyncError.self) { try RecordChangeReason.parseList("create,explode") }
        #expect(throws: RecSyncError.self) { try RecordChangeReason.parseList(" , ") }
        let parsed = try? RecordChangeReason.parseList("Created, deletion")
        #expect(parsed == [.created, .deleted])
    }
}
