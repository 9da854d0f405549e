import RecSyncModel
import RecSyncTestSupport
import Testing

@Suite struct WorkspaceEncodingTests {
    func fields(_ s: String) throws -> [String: FieldValue] { try WorkspaceEncoding.decodeFields(bytes(s)) }
    func value(_ s: String) throws -> FieldValue? { try WorkspaceEncoding.fieldValue(from: JSON.parse(s), key: "f") }

    @Test func exactBytes() throws {
        let f: [String: FieldValue] = [
            "title": .string("x"), "n": .int64(5), "d": .double(3), "tags": .list([.string("a"), .string("b")]),
            "empty": .list([]), "ref": .reference(try Reference(recordName: "parent", action: .deleteSelf)),
            "ref2": .reference(try Reference(recordName: "other")),
            "loc": .location(try Location(latitude: 52.5, longitude: 13)), "blob": .bytes([0, 1, 2, 255]),
            "when": .timestamp(1_795_341_600_000), "meta": .json(.object(["b": .array([.int(1), .string("x")]), "a": .null])),
            "wrapped": .json(.array([.string("a")])),
        ]
        let expected = """
            {
              "blob": {
                "$bytes": "AAEC/w=="
              },
              "d": 3.0,
              "empty": [],
              "loc": {
                "$location": {
                  "lat": 52.5,
                  "lon": 13.0
                }
              },
              "meta": {
                "a": null,
                "b": [
                  1,
                  "x"
                ]
              },
              "n": 5,
              "ref": {
                "$ref": "parent",
                "action": "deleteSelf"
              },
              "ref2": {
                "$ref": "other"
              },
              "tags": [
                "a",
                "b"
              ],
              "title": "x",
              "when": {
                "$date": "2026-11-22T10:00:00.000Z"
              },
              "wrapped": {
                "$json": [
                  "a"
                ]
              }
            }

            """
        #expect(text(WorkspaceEncoding.encodeFields(f)) == expected)
        #expect(try fields(expected) == f)
        #expect(text(WorkspaceEncoding.encodeFields([:])) == "{}\n")
    }

    @Test func plainValuesMapByShape() throws {
        #expect(try value(#""s""#) == .string("s"))
        #expect(try value("7") == .int64(7))
        #expect(try value("7.0") == .double(7))
        #expect(try value("7e0") == .double(7))
        #expect(try value("false") == .boolean(false))
        #expect(try value("null") == nil)
        #expect(try value(#"{"$date":"2026-11-22T11:00:00+01:00"}"#) == .timestamp(1_795_341_600_000))
        #expect(try value(#"{"$date":"1970-01-01T00:00:00Z"}"#) == .timestamp(0))
        #expect(try value(#"{"$date":-5}"#) == .timestamp(-5))
        #expect(try value(#"{"$bytes":""}"#) == .bytes([]))
        #expect(try value(#"{"$ref":"a/b"}"#) == .reference(Reference(recordName: "a/b", action: .none)))
        #expect(try value(#"{"$ref":"a","action":"none"}"#) == .reference(Reference(recordName: "a")))
        #expect(try value(#"{"action":"deleteSelf","$ref":"a"}"#) == .reference(Reference(recordName: "a", action: .deleteSelf)))
        #expect(try value(#"{"$location":{"lat":1,"lon":-2}}"#) == .location(Location(latitude: 1, longitude: -2)))
        #expect(try value(#"{"$json":"s"}"#) == .json(.string("s")))
        #expect(try value(#"{"$json":null}"#) == .json(.null))
        #expect(try value(#"{"$json":{"$date":1}}"#) == .json(.object(["$date": .int(1)])))
        #expect(try value(#"{"a":{"$date":1}}"#) == .json(.object(["a": .object(["$date": .int(1)])])))
        #expect(try value("{}") == .json(.object([:])))
    }

    @Test func arraysBecomeListsOrJSON() throws {
        #expect(try value("[]") == .list([]))
        #expect(try value(#"["a","b"]"#) == .list([.string("a"), .string("b")]))
        #expect(try value("[true]") == .list([.boolean(true)]))
        #expect(try value("[1,2]") == .list([.int64(1), .int64(2)]))
        #expect(try value("[1,2.5,3]") == .list([.double(1), .double(2.5), .double(3)]))
        #expect(try value("[2.5,1]") == .list([.double(2.5), .double(1)]))
        #expect(try value(#"[{"$date":0},{"$date":"1970-01-01T00:00:00.001Z"}]"#) == .list([.timestamp(0), .timestamp(1)]))
        #expect(
            try value(#"[{"$ref":"a"},{"$ref":"b","action":"deleteSelf"}]"#)
                == .list([.reference(Reference(recordName: "a")), .reference(Reference(recordName: "b", action: .deleteSelf))]))
        #expect(try value(#"[1,"a"]"#) == .json(.array([.int(1), .string("a")])))
        #expect(try value("[[1]]") == .json(.array([.array([.int(1)])])))
        #expect(try value("[null]") == .json(.array([.null])))
        #expect(try value(#"[{"a":1}]"#) == .json(.array([.object(["a": .int(1)])])))
        #expect(try value(#"[{"$json":1}]"#) == .json(.array([.object(["$json": .int(1)])])))
        #expect(try value(#"[{"$date":0},"x"]"#) == .json(.array([.object(["$date": .int(0)]), .string("x")])))
    }

    @Test func jsonIsWrappedOnlyWhenNeeded() throws {
        func plain(_ j: JSONValue) -> String { text(JSON.serialize(WorkspaceEncoding.json(from: .json(j)), pretty: false)) }
        #expect(plain(.object(["a": .int(1)])) == #"{"a":1}"#)
        #expect(plain(.object([:])) == "{}")
        #expect(plain(.object(["a": .object(["$x": .null])])) == #"{"a":{"$x":null}}"#)
        #expect(plain(.array([.int(1), .string("a")])) == #"[1,"a"]"#)
        #expect(plain(.array([.object(["k": .null])])) == #"[{"k":null}]"#)
        #expect(plain(.object(["$date": .string("x")])) == #"{"$json":{"$date":"x"}}"#)
        #expect(plain(.object(["$json": .int(1)])) == #"{"$json":{"$json":1}}"#)
        #expect(plain(.object(["$": .int(1), "a": .int(2)])) == #"{"$json":{"$":1,"a":2}}"#)
        #expect(plain(.array([.string("a")])) == #"{"$json":["a"]}"#)
        #expect(plain(.array([])) == #"{"$json":[]}"#)
        #expect(plain(.array([.int(1), .double(2)])) == #"{"$json":[1,2.0]}"#)
        #expect(plain(.array([.object(["$foo": .int(1)])])) == #"{"$json":[{"$foo":1}]}"#)
        #expect(plain(.null) == #"{"$json":null}"#)
        #expect(plain(.string("s")) == #"{"$json":"s"}"#)
        #expect(plain(.int(1)) == #"{"$json":1}"#)
        #expect(plain(.double(1)) == #"{"$json":1.0}"#)
        #expect(plain(.bool(true)) == #"{"$json":true}"#)
        for j: JSONValue in [.null, .string("s"), .array([.string("a")]), .array([]), .object(["$date": .int(1)]), .object(["a": .int(1)])] {
            #expect(try WorkspaceEncoding.fieldValue(from: WorkspaceEncoding.json(from: .json(j)), key: "k") == .json(j))
        }
    }

    @Test func timestampsOutsideTheISORangeKeepMilliseconds() throws {
        for ms in [Int64.min, Timestamps.minMilliseconds - 1, Timestamps.maxMilliseconds + 1, .max] {
            let j = WorkspaceEncoding.json(from: .timestamp(ms))
            #expect(j == .object(["$date": .int(ms)]))
            #expect(try WorkspaceEncoding.fieldValue(from: j, key: "k") == .timestamp(ms))
        }
    }

    @Test func errorsNameTheKey() {
        expectInvalid("field 'f'", "unknown tag '$foo'") { try value(#"{"$foo":1}"#) }
        expectInvalid("field 'f'", "unknown tag '$foo'") { try value(#"[{"$foo":1}]"#) }
        expectInvalid("field 'f'", "unexpected key 'extra' beside '$date'") { try value(#"{"$date":"2026-11-22T10:00:00Z","extra":1}"#) }
        expectInvalid("field 'f'", "unexpected key 'a' beside '$json'") { try value(#"{"$json":1,"a":2}"#) }
        expectInvalid("field 'f'", "unexpected key 'action' beside '$bytes'") { try value(#"{"$bytes":"","action":"none"}"#) }
        expectInvalid("field 'f'", "only one '$' tag", "'$bytes' and '$date'") { try value(#"{"$date":1,"$bytes":""}"#) }
        expectInvalid("field 'f'", "'2026-02-30T00:00:00Z' is not a timestamp") { try value(#"{"$date":"2026-02-30T00:00:00Z"}"#) }
        expectInvalid("field 'f'", "'$date' must be an ISO 8601 string") { try value(#"{"$date":1.5}"#) }
        expectInvalid("field 'f'", "'$bytes' is not valid base64") { try value(#"{"$bytes":"!!!!"}"#) }
        expectInvalid("field 'f'", "'$bytes' must be a base64 string") { try value(#"{"$bytes":[1]}"#) }
        expectInvalid("field 'f'", "'action' of a '$ref'") { try value(#"{"$ref":"a","action":"cascade"}"#) }
        expectInvalid("field 'f'", "record name '_a'") { try value(#"{"$ref":"_a"}"#) }
        expectInvalid("field 'f'", "'$ref' must be a record name string") { try value(#"{"$ref":1}"#) }
        expectInvalid("field 'f'", "needs a number 'lon'") { try value(#"{"$location":{"lat":1}}"#) }
        expectInvalid("field 'f'", "needs a number 'lat'") { try value(#"{"$location":{"lat":"1","lon":2}}"#) }
        expectInvalid("field 'f'", "unexpected key 'alt' in '$location'") { try value(#"{"$location":{"lat":1,"lon":2,"alt":3}}"#) }
        expectInvalid("field 'f'", "out of range") { try value(#"{"$location":{"lat":0,"lon":180.5}}"#) }
        expectInvalid("field 'f'", "must be an object with 'lat' and 'lon'") { try value(#"{"$location":[1,2]}"#) }
        expectInvalid("field 'f'", "nan") { try WorkspaceEncoding.fieldValue(from: .double(.nan), key: "f") }
        expectInvalid("field 'f'", "inf") { try WorkspaceEncoding.fieldValue(from: .object(["a": .double(.infinity)]), key: "f") }
    }

    @Test func fieldsFileErrors() throws {
        expectInvalid("must hold a JSON object of fields", "found an array") { try fields("[]") }
        expectInvalid("must hold a JSON object of fields", "found null") { try fields("null") }
        expectInvalid("field key '9lives'", "ASCII letter") { try fields(#"{"9lives":1}"#) }
        expectInvalid("field key 'a-b'") { try fields(#"{"a-b":1}"#) }
        expectInvalid("line 2, column 8", "expected a value") { try fields("{\n  \"a\": ,\n}") }
        expectInvalid("field 'when'", "unknown tag '$dat'") { try fields(#"{"when":{"$dat":"x"}}"#) }
        #expect(try fields(#"{"gone":null,"kept":1}"#) == ["kept": .int64(1)])
    }

    @Test(arguments: [11, 12] as [UInt64])
    func generatedFieldsRoundTrip(seed: UInt64) throws {
        var g = SeededRandom(seed: seed)
        for _ in 0..<300 {
            let r = RecordGenerator.record(using: &g, zoneID: testZone)
            let encoded = WorkspaceEncoding.encodeFields(r.fields)
            let back = try WorkspaceEncoding.decodeFields(encoded)
            #expect(back == r.fields)
            #expect(WorkspaceEncoding.encodeFields(back) == encoded)
            #expect(JSON.serialize(.object(r.fields.mapValues(WorkspaceEncoding.json(from:))), pretty: true) == encoded)
            for (k, v) in r.fields {
                #expect(try WorkspaceEncoding.fieldValue(from: WorkspaceEncoding.json(from: v), key: k) == v)
            }
            // The store blob of the decoded fields is byte-identical too (doubles bit-exact).
            var r2 = r
            r2.fields = back
            #expect(StoreEncoding.encode(r2) == StoreEncoding.encode(r))
        }
    }

    @Test func sidecarExactBytes() throws {
        let s = SystemFields(
            recordID: try RecordID(recordName: "r 1/%", zoneID: testZone), recordType: "Note", changeTag: "c1",
            created: ChangeStamp(timestamp: 1, userRecordName: "alice"), modified: ChangeStamp(timestamp: -2, userRecordName: "bob"))
        let expected = """
            {
              "changeTag": "c1",
              "created": {
                "timestamp": 1,
                "userRecordName": "alice"
              },
              "modified": {
                "timestamp": -2,
                "userRecordName": "bob"
              },
              "recordName": "r 1/%",
              "recordType": "Note",
              "zone": {
                "ownerName": "alice",
                "zoneName": "Notes"
              }
            }

            """
        #expect(text(WorkspaceEncoding.encodeSystemFields(s)) == expected)
        #expect(try WorkspaceEncoding.decodeSystemFields(bytes(expected)) == s)
        let bare = SystemFields(recordID: s.recordID, recordType: "Note", changeTag: nil, created: nil, modified: nil)
        #expect(
            text(WorkspaceEncoding.encodeSystemFields(bare))
                == """
                {\n  \"recordName\": \"r 1/%\",\n  \"recordType\": \"Note\",\n  \"zone\": {\n    \"ownerName\":\
                 \"alice\",\n    \"zoneName\": \"Notes\"\n  }\n}\n
                """
        )
        #expect(try WorkspaceEncoding.decodeSystemFields(WorkspaceEncoding.encodeSystemFields(bare)) == bare)
    }

    @Test func generatedSidecarsRoundTrip() throws {
        var g = SeededRandom(seed: 21)
        let zones = [testZone, try ZoneID(zoneName: "é zone .x", ownerName: "bob"), try ZoneID(zoneName: "..a", ownerName: "c d")]
        for i in 0..<600 {
            let r = RecordGenerator.record(using: &g, zoneID: zones[i % zones.count])
            let s = r.systemFields
            let encoded = WorkspaceEncoding.encodeSystemFields(s)
            let back = try WorkspaceEncoding.decodeSystemFields(encoded)
            #expect(back == s)
            #expect(WorkspaceEncoding.encodeSystemFields(back) == encoded)
        }
    }

    @Test func malformedSidecars() {
        func decode(_ s: String) throws -> SystemFields { try WorkspaceEncoding.decodeSystemFields(bytes(s)) }
        let zone = #""zone":{"ownerName":"alice","zoneName":"Notes"}"#
        expectInvalid("zone name 'a/b'", "'/'") { try decode(#"{"recordName":"r","recordType":"T","zone":{"ownerName":"alice","zoneName":"a/b"}}"#) }
        expectInvalid("owner name '_o'") { try decode(#"{"recordName":"r","recordType":"T","zone":{"ownerName":"_o","zoneName":"z"}}"#) }
        expectInvalid("record name '_r'") { try decode(#"{"recordName":"_r","recordType":"T",\#(zone)}"#) }
        expectInvalid("record type 'T-1'") { try decode(#"{"recordName":"r","recordType":"T-1",\#(zone)}"#) }
        expectInvalid("'zone' must be an object") { try decode(#"{"recordName":"r","recordType":"T"}"#) }
        expectInvalid("unexpected key 'fields'") { try decode(#"{"fields":{},"recordName":"r","recordType":"T",\#(zone)}"#) }
        expectInvalid("unexpected key 'extra' in 'zone'") {
            try decode(#"{"recordName":"r","recordType":"T","zone":{"ownerName":"a","zoneName":"z","extra":1}}"#)
        }
        expectInvalid("'changeTag' must be a string") { try decode(#"{"changeTag":1,"recordName":"r","recordType":"T",\#(zone)}"#) }
        expectInvalid("'created' needs an integer 'timestamp'") {
            try decode(#"{"created":{"userRecordName":"u"},"recordName":"r","recordType":"T",\#(zone)}"#)
        }
        #expect((try? decode(#"{"changeTag":null,"created":null,"recordName":"r","recordType":"T",\#(zone)}"#))?.changeTag == .some(nil))
    }
}
