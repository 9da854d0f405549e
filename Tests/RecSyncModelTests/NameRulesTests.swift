import RecSyncModel
import Testing

@Suite struct NameRulesTests {
    @Test func recordNames() throws {
        for ok in ["a", ".", "..", ".hidden", "a/b/c", "100%", "with space", " ", "-", "a_", String(repeating: "x", count: 255)] {
            try NameRules.validateRecordName(ok)
            _ = try RecordID(recordName: ok, zoneID: testZone)
        }
        expectInvalid("record name is empty") { try NameRules.validateRecordName("") }
        expectInvalid("record name '\(String(repeating: "x", count: 40))…' is 256 characters", "limit is 255") {
            try NameRules.validateRecordName(String(repeating: "x", count: 256))
        }
        expectInvalid("record name 'héllo'", "non-ASCII") { try NameRules.validateRecordName("héllo") }
        expectInvalid("record name '_x'", "starts with '_'") { try NameRules.validateRecordName("_x") }
        expectInvalid("record name '_x'") { try RecordID(recordName: "_x", zoneID: testZone) }
        expectInvalid("record name '_r'") { try Reference(recordName: "_r") }
    }

    @Test func zoneNames() throws {
        for ok in ["Notes", "é", "..a", ".a", "a b", "_other", String(repeating: "z", count: NameRules.maxEscapedZoneNameLength)] {
            try NameRules.validateZoneName(ok)
            _ = try ZoneID(zoneName: ok, ownerName: "alice")
        }
        expectInvalid("zone name is empty") { try NameRules.validateZoneName("") }
        expectInvalid("zone name 'a/b'", "'/'") { try NameRules.validateZoneName("a/b") }
        expectInvalid("zone name '.'") { try NameRules.validateZoneName(".") }
        expectInvalid("zone name '..'") { try NameRules.validateZoneName("..") }
        expectInvalid("zone name '_defaultZone' is reserved") { try NameRules.validateZoneName("_defaultZone") }
        expectInvalid("zone name 'a\u{1}b'", "control characters") { try NameRules.validateZoneName("a\u{1}b") }
        expectInvalid("zone name 'a\u{7F}'", "control characters") { try NameRules.validateZoneName("a\u{7F}") }
        expectInvalid("longer than 255 bytes") { try NameRules.validateZoneName(String(repeating: "é", count: 128)) }
        expectInvalid("zone name 'x/y'") { try ZoneID(zoneName: "x/y", ownerName: "alice") }
    }

    /// A zone name must fit a file name once escaped, or no workspace can hold it.
    @Test func zoneNamesFitAFileNameOnceEscaped() throws {
        expectInvalid("takes 300 bytes once escaped", "the limit is 247") {
            try ZoneID(zoneName: String(repeating: "%", count: 100), ownerName: "alice")
        }
        expectInvalid("takes 257 bytes once escaped") { try NameRules.validateZoneName("." + String(repeating: "a", count: 254)) }
        expectInvalid("takes 248 bytes once escaped") { try NameRules.validateZoneName(String(repeating: "z", count: 248)) }
        try NameRules.validateZoneName(String(repeating: "%", count: 82))
    }

    /// Zone names are kept in NFC; a name a person types is normalised, a stored
    /// one in another form is refused (it would be a second spelling of the same name).
    @Test func zoneNamesAreNFC() throws {
        let nfc = "caf\u{E9}", nfd = "cafe\u{301}"
        #expect(nfc == nfd)  // Swift compares canonically: why two spellings must never coexist
        #expect(Array(nfc.utf8) != Array(nfd.utf8))
        try NameRules.validateZoneName(nfc)
        expectInvalid("not in Unicode NFC", "rename it to 'caf\u{E9}'") { try ZoneID(zoneName: nfd, ownerName: "alice") }
        let typed = try ZoneID(normalizing: nfd, ownerName: "alice")
        #expect(Array(typed.zoneName.utf8) == Array(nfc.utf8))
        #expect(NameRules.isNFC("plain ascii"))
    }

    /// A user name goes into commit signatures; newlines and angle brackets break them.
    @Test func ownerNamesAreSafeInACommitSignature() throws {
        try NameRules.validateOwnerName("alice@example.com")
        try NameRules.validateOwnerName("Alice Smith")
        expectInvalid("owner name 'a\\u{a}b'", "control characters") { try NameRules.validateOwnerName("a\nb") }
        expectInvalid("owner name 'eve <e@x>'", "'<' or '>'") { try NameRules.validateOwnerName("eve <e@x>") }
        expectInvalid("owner name 'a>'", "'<' or '>'") { try ZoneID(zoneName: "z", ownerName: "a>") }
        expectInvalid("starts or ends with ' '") { try NameRules.validateOwnerName(" alice") }
        // libgit2 trims these from a signature's ends: the commit would name 'alice', or no one.
        for trimmed in ["'alice'", "alice.", "\"alice\"", ";alice;", ".hidden", ".", "..", ",", "a\\"] {
            expectInvalid("which git drops from a commit signature") { try NameRules.validateOwnerName(trimmed) }
        }
        try NameRules.validateOwnerName("a.b")
        expectInvalid("once escaped for disk") { try NameRules.validateOwnerName(String(repeating: "%", count: 90)) }
    }

    @Test func ownerNames() throws {
        try NameRules.validateOwnerName("alice")
        expectInvalid("owner name '_o'", "record name '_o'") { try NameRules.validateOwnerName("_o") }
        expectInvalid("owner name ''", "empty") { try ZoneID(zoneName: "z", ownerName: "") }
        expectInvalid("owner name 'bö'", "non-ASCII") { try ZoneID(zoneName: "z", ownerName: "bö") }
    }

    @Test func fieldKeys() throws {
        for ok in ["a", "Z", "A1_b", "title_2", String(repeating: "k", count: 255)] {
            try NameRules.validateFieldKey(ok)
        }
        expectInvalid("a field key is empty") { try NameRules.validateFieldKey("") }
        expectInvalid("field key '1a'", "must start with an ASCII letter") { try NameRules.validateFieldKey("1a") }
        expectInvalid("field key '_a'", "must start with an ASCII letter") { try NameRules.validateFieldKey("_a") }
        expectInvalid("field key '$date'", "must start with an ASCII letter") { try NameRules.validateFieldKey("$date") }
        expectInvalid("field key 'a-b'", "only ASCII letters, digits and '_'") { try NameRules.validateFieldKey("a-b") }
        expectInvalid("field key 'a b'") { try NameRules.validateFieldKey("a b") }
        expectInvalid("field key 'é'") { try NameRules.validateFieldKey("é") }
        expectInvalid("field key 'aé'") { try NameRules.validateFieldKey("aé") }
        expectInvalid("longer than 255") { try NameRules.validateFieldKey(String(repeating: "k", count: 256)) }
    }

    @Test func recordTypesAndRecordInit() throws {
        try NameRules.validateRecordType("Note_2")
        expectInvalid("record type '1Note'") { try NameRules.validateRecordType("1Note") }
        let id = try RecordID(recordName: "r", zoneID: testZone)
        expectInvalid("record type 'No te'") { try Record(recordID: id, recordType: "No te") }
        expectInvalid("field key 'bad key'") { try Record(recordID: id, recordType: "T", fields: ["bad key": .int64(1)]) }
        expectInvalid("field 'x'", "nan") { try Record(recordID: id, recordType: "T", fields: ["x": .double(.nan)]) }
        expectInvalid("field 'x'", "mixing INT64 and STRING") {
            try Record(recordID: id, recordType: "T", fields: ["x": .list([.int64(1), .string("a")])])
        }
        expectInvalid("field 'x'", "list of lists or JSON values") { try Record(recordID: id, recordType: "T", fields: ["x": .list([.json(.null)])]) }
        expectInvalid("field 'x'", "list of lists or JSON values") { try Record(recordID: id, recordType: "T", fields: ["x": .list([.list([])])]) }
        expectInvalid("location (91.0, 0.0) is out of range") { try Location(latitude: 91, longitude: 0) }
        expectInvalid("out of range") { try Location(latitude: 0, longitude: .infinity) }
    }

    @Test func publicDatabaseIsRefused() throws {
        expectError(.badDatabase(operation: "fetchRecordZoneChanges")) { try DatabaseScope.public.requireSupported(for: "fetchRecordZoneChanges") }
        #expect(RecSyncError.badDatabase(operation: "x").code == .badDatabase)
        try DatabaseScope.private.requireSupported(for: "x")
        try DatabaseScope.shared.requireSupported(for: "x")
    }
}
