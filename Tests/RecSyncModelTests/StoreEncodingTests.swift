import RecSyncModel
import RecSyncTestSupport
import Testing

@Suite struct StoreEncodingTests {
    func sampleRecord() throws -> Record {
        try Record(
            recordID: RecordID(recordName: "r1", zoneID: testZone), recordType: "Note",
            fields: [
                "title": .string("x"), "n": .int64(5), "d": .double(3), "tags": .list([.string("a"), .string("b")]),
                "empty": .list([]), "ref": .reference(Reference(recordName: "parent", action: .deleteSelf)),
                "loc": .location(Location(latitude: 52.5, longitude: 13)), "blob": .bytes([0, 1, 2, 255]),
                "when": .timestamp(1_795_341_600_000), "meta": .json(.object(["b": .array([.int(1), .string("x")]), "a": .null])),
            ],
            changeTag: "abc", created: ChangeStamp(timestamp: 1_795_341_600_000, userRecordName: "alice"))
    }

    @Test func exactBytes() throws {
        let expected = """
            {
              "created": {
                "timestamp": 1795341600000,
                "userRecordName": "alice"
              },
              "fields": {
                "blob": {
                  "type": "BYTES",
                  "value": "AAEC/w=="
                },
                "d": {
                  "type": "DOUBLE",
                  "value": 3.0
                },
                "empty": {
                  "type": "LIST",
                  "value": []
                },
                "loc": {
                  "type": "LOCATION",
                  "value": {
                    "latitude": 52.5,
                    "longitude": 13.0
                  }
                },
                "meta": {
                  "type": "JSON",
                  "value": {
                    "a": null,
                    "b": [
                      1,
                      "x"
                    ]
                  }
                },
                "n": {
                  "type": "INT64",
                  "value": 5
                },
                "ref": {
                  "type": "REFERENCE",
                  "value": {
                    "action": "DELETE_SELF",
                    "recordName": "parent"
                  }
                },
                "tags": {
                  "type": "STRING_LIST",
                  "value": [
                    "a",
                    "b"
                  ]
                },
                "title": {
                  "type": "STRING",
                  "value": "x"
                },
                "when": {
                  "type": "TIMESTAMP",
                  "value": 1795341600000
                }
              },
              "recordName": "r1",
              "recordType": "Note"
            }

            """
        let r = try sampleRecord()
        #expect(text(StoreEncoding.encode(r)) == expected)
        #expect(try StoreEncoding.decode(bytes(expected), zoneID: testZone, changeTag: "abc") == r)
    }

    @Test func minimalRecord() throws {
        let r = try Record(recordID: RecordID(recordName: "a", zoneID: testZone), recordType: "T")
        #expect(text(StoreEncoding.encode(r)) == "{\n  \"fields\": {},\n  \"recordName\": \"a\",\n  \"recordType\": \"T\"\n}\n")
        #expect(StoreEncoding.fieldDataSize(of: r) == 2)
    }

    @Test(arguments: [1, 2, 3] as [UInt64])
    func generatedRecordsRoundTrip(seed: UInt64) throws {
        var g = SeededRandom(seed: seed)
        for _ in 0..<250 {
            let r = RecordGenerator.record(using: &g, zoneID: testZone)
            let blob = StoreEncoding.encode(r)
            let back = try StoreEncoding.decode(blob, zoneID: r.recordID.zoneID, changeTag: r.changeTag)
            #expect(back == r)
            // Bit-exact, -0.0 included: the re-encoding is the same bytes.
            #expect(StoreEncoding.encode(back) == blob)
            // The fields object in the blob is what encodeValue builds, and its compact size is fieldDataSize.
            guard case .object(let top) = try JSON.parse(blob), let fieldsJSON = top["fields"] else {
                Issue.record("no fields object")
                continue
            }
            #expect(fieldsJSON == .object(r.fields.mapValues(StoreEncoding.encodeValue)))
            #expect(JSON.serialize(fieldsJSON, pretty: false).count == StoreEncoding.fieldDataSize(of: r))
            for (k, v) in r.fields {
                #expect(try StoreEncoding.decodeValue(StoreEncoding.encodeValue(v), key: k) == v)
            }
        }
    }

    @Test func equalRecordsEncodeToEqualBytes() throws {
        var g = SeededRandom(seed: 99)
        for _ in 0..<100 {
            let r = RecordGenerator.record(using: &g, zoneID: testZone)
            var other: [String: FieldValue] = [:]
            other.reserveCapacity(64)
            for (k, v) in r.fields.sorted(by: { $0.key > $1.key }) { other[k] = v }
            var r2 = r
            r2.fields = other
            #expect(StoreEncoding.encode(r2) == StoreEncoding.encode(r))
        }
    }

    @Test func typeNames() {
        func type(_ v: FieldValue) -> JSONValue? {
            guard case .object(let o) = StoreEncoding.encodeValue(v) else { return nil }
            return o["type"]
        }
        #expect(type(.list([])) == .string("LIST"))
        #expect(type(.list([.int64(1)])) == .string("INT64_LIST"))
        #expect(type(.list([.timestamp(1)])) == .string("TIMESTAMP_LIST"))
        #expect(type(.list([.location(try! Location(latitude: 0, longitude: 0))])) == .string("LOCATION_LIST"))
        #expect(type(.json(.null)) == .string("JSON"))
        #expect(type(.boolean(true)) == .string("BOOLEAN"))
    }

    @Test func lenientDecodings() throws {
        func field(_ s: String) throws -> FieldValue { try StoreEncoding.decodeValue(JSON.parse(s), key: "k") }
        #expect(try field(#"{"type":"DOUBLE","value":3}"#) == .double(3))
        #expect(try field(#"{"type":"DOUBLE_LIST","value":[1,2.5]}"#) == .list([.double(1), .double(2.5)]))
        #expect(try field(#"{"type":"INT64_LIST","value":[]}"#) == .list([]))
        #expect(try field(#"{"type":"LIST","value":[]}"#) == .list([]))
        #expect(try field(#"{"type":"LOCATION","value":{"latitude":-90,"longitude":180}}"#) == .location(Location(latitude: -90, longitude: 180)))
        #expect(try field(#"{"type":"JSON","value":null}"#) == .json(.null))
        #expect(try field(#"{"type":"BYTES","value":""}"#) == .bytes([]))
        #expect(try field(#"{"type":"BYTES","value":"AA=="}"#) == .bytes([0]))
        #expect(try field(#"{"type":"BYTES","value":"AAA="}"#) == .bytes([0, 0]))
        #expect(try field(#"{"type":"BYTES","value":"+/+/"}"#) == .bytes([0xFB, 0xFF, 0xBF]))
    }

    @Test func malformedValuesNameTheKey() {
        func field(_ s: String) throws -> FieldValue { try StoreEncoding.decodeValue(JSON.parse(s), key: "price") }
        expectInvalid("field 'price'", "unknown type 'MONEY'") { try field(#"{"type":"MONEY","value":1}"#) }
        expectInvalid("field 'price'", "unknown type 'JSON_LIST'") { try field(#"{"type":"JSON_LIST","value":[]}"#) }
        expectInvalid("field 'price'", "unknown type 'FOO_LIST'") { try field(#"{"type":"FOO_LIST","value":[]}"#) }
        expectInvalid("field 'price'", "LIST is only for the empty list") { try field(#"{"type":"LIST","value":[1]}"#) }
        expectInvalid("field 'price'", "STRING value must be a string", "found an integer") { try field(#"{"type":"STRING","value":1}"#) }
        expectInvalid("field 'price'", "INT64 value must be an integer") { try field(#"{"type":"INT64","value":1.5}"#) }
        expectInvalid("field 'price'", "INT64 value must be an integer") { try field(#"{"type":"INT64","value":"1"}"#) }
        expectInvalid("field 'price'", "BOOLEAN") { try field(#"{"type":"BOOLEAN","value":"true"}"#) }
        expectInvalid("field 'price'", "TIMESTAMP") { try field(#"{"type":"TIMESTAMP","value":"2026-01-01T00:00:00Z"}"#) }
        expectInvalid("field 'price'", "DOUBLE value must be a number") { try field(#"{"type":"DOUBLE","value":null}"#) }
        expectInvalid("field 'price'", "STRING_LIST value must be an array") { try field(#"{"type":"STRING_LIST","value":"a"}"#) }
        expectInvalid("field 'price'", "STRING value must be a string") { try field(#"{"type":"STRING_LIST","value":["a",1]}"#) }
        for bad in ["abc", "ab=c", "QR==", "QUJ=", "A===", "====", "QQ", "Q Q=", "QQ==QQ==", "-_8="] {
            expectInvalid("field 'price'", "not valid base64") { try field(#"{"type":"BYTES","value":"\#(bad)"}"#) }
        }
        expectInvalid("field 'price'", "'action'") { try field(#"{"type":"REFERENCE","value":{"recordName":"a"}}"#) }
        expectInvalid("field 'price'", "'action'") { try field(#"{"type":"REFERENCE","value":{"recordName":"a","action":"deleteSelf"}}"#) }
        expectInvalid("field 'price'", "'recordName'") { try field(#"{"type":"REFERENCE","value":{"action":"NONE"}}"#) }
        expectInvalid("field 'price'", "unexpected key 'zoneID'") {
            try field(#"{"type":"REFERENCE","value":{"action":"NONE","recordName":"a","zoneID":"z"}}"#)
        }
        expectInvalid("field 'price'", "record name '_hidden'", "starts with '_'") {
            try field(#"{"type":"REFERENCE","value":{"action":"NONE","recordName":"_hidden"}}"#)
        }
        expectInvalid("field 'price'", "out of range") { try field(#"{"type":"LOCATION","value":{"latitude":91,"longitude":0}}"#) }
        expectInvalid("field 'price'", "'latitude' and 'longitude'") { try field(#"{"type":"LOCATION","value":{"latitude":1}}"#) }
        expectInvalid("field 'price'", "unexpected key 'alt'") { try field(#"{"type":"LOCATION","value":{"latitude":1,"longitude":2,"alt":3}}"#) }
        expectInvalid("field 'price'", "expected an object with 'type' and 'value'") { try field("5") }
        expectInvalid("field 'price'", "unexpected key 'extra'") { try field(#"{"type":"STRING","value":"a","extra":1}"#) }
        expectInvalid("field 'price'", "'value' is missing") { try field(#"{"type":"STRING"}"#) }
        expectInvalid("field 'price'", "'type' must be a string") { try field(#"{"value":"a"}"#) }
        expectInvalid("field 'price'", "nan") {
            try StoreEncoding.decodeValue(.object(["type": .string("DOUBLE"), "value": .double(.nan)]), key: "price")
        }
        expectInvalid("field 'price'", "inf") {
            try StoreEncoding.decodeValue(.object(["type": .string("JSON"), "value": .array([.double(.infinity)])]), key: "price")
        }
    }

    @Test func malformedBlobs() {
        func decode(_ s: String) throws -> Record { try StoreEncoding.decode(bytes(s), zoneID: testZone, changeTag: nil) }
        expectInvalid("line 1, column 2") { try decode("{,}") }
        expectInvalid("record blob", "expected a JSON object") { try decode("[]") }
        expectInvalid("record blob", "'recordName' must be a string") { try decode(#"{"fields":{},"recordType":"T"}"#) }
        expectInvalid("record name '_x'") { try decode(#"{"fields":{},"recordName":"_x","recordType":"T"}"#) }
        expectInvalid("record name is empty") { try decode(#"{"fields":{},"recordName":"","recordType":"T"}"#) }
        expectInvalid("record type '9T'") { try decode(#"{"fields":{},"recordName":"a","recordType":"9T"}"#) }
        expectInvalid("'fields' must be an object") { try decode(#"{"recordName":"a","recordType":"T"}"#) }
        expectInvalid("field key 'bad-key'") {
            try decode(#"{"fields":{"bad-key":{"type":"STRING","value":"x"}},"recordName":"a","recordType":"T"}"#)
        }
        expectInvalid("field 'good'", "unknown type 'NOPE'") {
            try decode(#"{"fields":{"good":{"type":"NOPE","value":"x"}},"recordName":"a","recordType":"T"}"#)
        }
        expectInvalid("unexpected key 'zone'") { try decode(#"{"fields":{},"recordName":"a","recordType":"T","zone":"z"}"#) }
        expectInvalid("'created' needs an integer 'timestamp'") {
            try decode(#"{"created":{"timestamp":1.5,"userRecordName":"u"},"fields":{},"recordName":"a","recordType":"T"}"#)
        }
        expectInvalid("'modified' must be an object") { try decode(#"{"modified":null,"fields":{},"recordName":"a","recordType":"T"}"#) }
    }

    @Test func decodeTakesZoneAndChangeTagFromTheCaller() throws {
        let r = try sampleRecord()
        let other = try ZoneID(zoneName: "Other", ownerName: "bob")
        let back = try StoreEncoding.decode(StoreEncoding.encode(r), zoneID: other, changeTag: "t2")
        #expect(back.recordID.zoneID == other)
        #expect(back.changeTag == "t2")
        #expect(back.fields == r.fields)
    }

    @Test func deepestValidJSONRoundTripsThroughBothEncodings() throws {
        func nested(_ n: Int, object: Bool) -> JSONValue {
            var v = JSONValue.int(1)
            for _ in 0..<n { v = object ? .object(["a": v]) : .array([v]) }
            return v
        }
        let id = try RecordID(recordName: "deep", zoneID: testZone)
        for object in [false, true] {
            let deep = nested(JSONValue.maxNesting, object: object)
            let r = try Record(recordID: id, recordType: "T", fields: ["j": .json(deep)])
            #expect(try StoreEncoding.decode(StoreEncoding.encode(r), zoneID: testZone, changeTag: nil) == r)
            #expect(try WorkspaceEncoding.decodeFields(WorkspaceEncoding.encodeFields(r.fields)) == r.fields)
            expectInvalid("field 'j' nests arrays and objects more than 500 levels deep") {
                try Record(recordID: id, recordType: "T", fields: ["j": .json(nested(JSONValue.maxNesting + 1, object: object))])
            }
        }
    }

    @Test func sizeLimitUsesFieldDataSize() throws {
        var r = try Record(recordID: RecordID(recordName: "big", zoneID: testZone), recordType: "T", fields: ["s": .string("x")])
        #expect(StoreEncoding.fieldDataSize(of: r) == #"{"s":{"type":"STRING","value":"x"}}"#.utf8.count)
        try r.validate()
        r.fields["s"] = .string(String(repeating: "a", count: Record.maxFieldDataBytes))
        expectError(
            .limitExceeded(
                """
                record 'big' holds \(Record.maxFieldDataBytes + 34) bytes of field data; the limit is 1 MB\
                 (assets not counted). Split it, or keep large values as assets (files)
                """
            )
        ) {
            try r.validate()
        }
    }
}
