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
            Subscription(id: "q", kind: .query(QuerySubscription(scope: .shared, recordType: "Task", zone: zone,
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
        let q = QuerySubscription(scope: .private, recordType: "Task", conditions: [
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
