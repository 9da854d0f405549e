import RecSyncModel
import RecSyncTestSupport
import Testing

@Suite struct JSONParseTests {
    @Test func parsesEveryKindOfValue() throws {
        let v = try JSON.parse(#" { "a" : 1 , "b":[true,false,null], "c":"x", "d":{}, "e":[], "f":-2.5e-3 } "#)
        #expect(
            v
                == .object([
                    "a": .int(1), "b": .array([.bool(true), .bool(false), .null]), "c": .string("x"),
                    "d": .object([:]), "e": .array([]), "f": .double(-0.0025),
                ]))
        #expect(try JSON.parse("\t\r\n 7 \n") == .int(7))
        #expect(try JSON.parse("\"\"") == .string(""))
    }

    @Test func integersAndDoublesStayApart() throws {
        #expect(try JSON.parse("1") == .int(1))
        #expect(try JSON.parse("1.0") == .double(1))
        #expect(try JSON.parse("1e2") == .double(100))
        #expect(try JSON.parse("1E+2") == .double(100))
        #expect(try JSON.parse("-0") == .int(0))
        guard case .double(let negZero) = try JSON.parse("-0.0") else { Issue.record("not a double"); return }
        #expect(negZero == 0 && negZero.sign == .minus)
        #expect(try JSON.parse("9223372036854775807") == .int(.max))
        #expect(try JSON.parse("-9223372036854775808") == .int(.min))
        #expect(try JSON.parse("9223372036854775808.0") == .double(9223372036854775808.0))
        #expect(try JSON.parse("5e-324") == .double(.leastNonzeroMagnitude))
    }

    @Test func rejectsIntegersBeyond64Bits() {
        expectInvalid("line 1, column 1", "integer 9223372036854775808 does not fit in 64 bits", "decimal point") {
            try JSON.parse("9223372036854775808")
        }
        expectInvalid("line 1, column 6", "integer -9223372036854775809 does not fit in 64 bits") {
            try JSON.parse("{\"a\":-9223372036854775809}")
        }
        expectInvalid("integer 123456789012345678901234567890") { try JSON.parse("[123456789012345678901234567890]") }
    }

    @Test func rejectsNonStandardSyntaxWithPositions() {
        expectInvalid("line 1, column 4", "expected a value") { try JSON.parse("[1,]") }
        expectInvalid("line 1, column 8", "expected a string key") { try JSON.parse("{\"a\":1,}") }
        expectInvalid("line 1, column 1", "expected a value") { try JSON.parse("// c\n1") }
        expectInvalid("line 1, column 2", "expected a value", "found '/'") { try JSON.parse("[/* c */ 1]") }
        expectInvalid("line 1, column 1") { try JSON.parse("NaN") }
        expectInvalid("line 1, column 2", "expected a digit") { try JSON.parse("-Infinity") }
        expectInvalid("line 1, column 1") { try JSON.parse("Infinity") }
        expectInvalid("line 1, column 1", "leading zero") { try JSON.parse("01") }
        expectInvalid("line 1, column 3", "decimal point") { try JSON.parse("1.") }
        expectInvalid("line 1, column 1") { try JSON.parse(".5") }
        expectInvalid("line 1, column 1") { try JSON.parse("+1") }
        expectInvalid("line 1, column 3", "exponent") { try JSON.parse("1e") }
        expectInvalid("line 1, column 2", "expected a string key") { try JSON.parse("{'a':1}") }
        expectInvalid("line 1, column 1", "did you mean 'true'") { try JSON.parse("tru") }
        expectInvalid("line 1, column 1", "the end of the input") { try JSON.parse("") }
        expectInvalid("line 1, column 4", "found the end of the input") { try JSON.parse("   ") }
        expectInvalid("line 1, column 4", "end of the document") { try JSON.parse("{} x") }
        expectInvalid("line 1, column 3", "end of the document") { try JSON.parse("1 2") }
        expectInvalid("line 1, column 8", "expected ',' or '}'") { try JSON.parse("{\"a\":1 \"b\":2}") }
        expectInvalid("line 1, column 6", "expected ':'") { try JSON.parse("{\"a\" 1}") }
        expectInvalid("line 1, column 3", "expected ',' or ']'") { try JSON.parse("[1") }
        expectInvalid("line 1, column 5", "close the string that starts at column 1") { try JSON.parse("\"abc") }
    }

    @Test func reportsLinesAndColumns() {
        expectInvalid("line 3, column 8: expected a value") { try JSON.parse("{\n  \"a\": 1,\n  \"b\": ?\n}") }
        // Columns count characters, not bytes.
        expectInvalid("line 2, column 6") { try JSON.parse("[\n\"é😀\" x]") }
    }

    @Test func rejectsDuplicateKeys() {
        expectInvalid("line 1, column 9", "duplicate key \"a\"") { try JSON.parse("{\"a\":1, \"a\":1}") }
        expectInvalid("duplicate key \"k\"") { try JSON.parse("[{\"x\":{\"k\":true,\"k\":false}}]") }
    }

    @Test func stringEscapes() throws {
        #expect(try JSON.parse(#""\"\\\/\b\f\n\r\t""#) == .string("\"\\/\u{8}\u{C}\n\r\t"))
        #expect(try JSON.parse(#""\u0041\u00e9\u4e2D\u0000""#) == .string("Aé中\u{0}"))
        #expect(try JSON.parse(#""\uD83D\uDE00 and \ud834\udd1e""#) == .string("😀 and 𝄞"))
        #expect(try JSON.parse("\"raw é 😀\"") == .string("raw é 😀"))
        expectInvalid("line 1, column 2", "lone high surrogate") { try JSON.parse(#""\uD800""#) }
        expectInvalid("lone high surrogate") { try JSON.parse(#""\uD800\u0041""#) }
        expectInvalid("lone high surrogate") { try JSON.parse(#""\uD800x""#) }
        expectInvalid("line 1, column 4", "lone low surrogate") { try JSON.parse(#""ab\uDC00""#) }
        expectInvalid("line 1, column 2", "invalid escape '\\x'") { try JSON.parse(#""\x""#) }
        expectInvalid("four hex digits") { try JSON.parse(#""\u12G4""#) }
        expectInvalid("line 1, column 3", "control character") { try JSON.parse("\"a\nb\"") }
        expectInvalid("control character") { try JSON.parse("\"a\\n\tb\"") }
        expectInvalid("line 1, column 1", "not valid UTF-8") { try JSON.parse([0x22, 0xFF, 0x22]) }
        expectInvalid("not valid UTF-8") { try JSON.parse([0x22, 0x5C, 0x6E, 0xC3, 0x22]) }
    }

    @Test func rejectsNonFiniteNumbers() {
        expectInvalid("line 1, column 2", "1e400", "too large") { try JSON.parse("[1e400]") }
        expectInvalid("too large") { try JSON.parse("-1.5e999") }
        #expect((try? JSON.parse("1e-400")) == .double(0))
    }

    @Test func nestingLimit() throws {
        let ok = String(repeating: "[", count: 512) + String(repeating: "]", count: 512)
        let v = try JSON.parse(ok)
        // Parsing allows 512 levels; a stored value may nest 500, leaving room for its envelope.
        expectInvalid("field 'deep' nests arrays and objects more than 500 levels deep") { try v.validate(context: "field 'deep'") }
        #expect(text(JSON.serialize(v, pretty: false)) == ok)
        #expect(try JSON.parse(JSON.serialize(v, pretty: true)) == v)
        let deep = String(repeating: "[", count: 513) + String(repeating: "]", count: 513)
        expectInvalid("line 1, column 513", "nested more than 512 levels") { try JSON.parse(deep) }
        let deepObject = String(repeating: "{\"a\":", count: 513) + "1" + String(repeating: "}", count: 513)
        expectInvalid("nested more than 512 levels") { try JSON.parse(deepObject) }
    }

    @Test func validateRejectsNonFiniteDoubles() {
        expectInvalid("field 'x'", "nan") { try JSONValue.array([.int(1), .object(["a": .double(.nan)])]).validate(context: "field 'x'") }
        expectInvalid("inf") { try JSONValue.double(.infinity).validate(context: "c") }
        #expect(throws: Never.self) { try JSONValue.object(["a": .array([.double(1.5), .null])]).validate(context: "c") }
    }
}

@Suite struct JSONSerializeTests {
    let sample: JSONValue = .object([
        "b": .array([.int(1), .double(2.5), .string("x")]), "a": .object([:]), "c": .array([]),
        "d": .object(["z": .null, "y": .bool(true)]),
    ])

    @Test func compactIsCanonical() {
        #expect(text(JSON.serialize(sample, pretty: false)) == #"{"a":{},"b":[1,2.5,"x"],"c":[],"d":{"y":true,"z":null}}"#)
    }

    @Test func prettyIsCanonical() {
        let expected = """
            {
              "a": {},
              "b": [
                1,
                2.5,
                "x"
              ],
              "c": [],
              "d": {
                "y": true,
                "z": null
              }
            }

            """
        #expect(text(JSON.serialize(sample, pretty: true)) == expected)
        #expect(text(JSON.serialize(.object([:]), pretty: true)) == "{}\n")
        #expect(text(JSON.serialize(.array([]), pretty: true)) == "[]\n")
        #expect(text(JSON.serialize(.int(-5), pretty: true)) == "-5\n")
    }

    @Test func keysSortByUTF8Bytes() {
        let v = JSONValue.object([
            "b": .int(1), "a": .int(2), "B": .int(3), "é": .int(4), "z": .int(5), "": .int(6), "😀": .int(7), "\u{FFFD}": .int(8),
        ])
        #expect(text(JSON.serialize(v, pretty: false)) == #"{"":6,"B":3,"a":2,"b":1,"z":5,"é":4,"�":8,"😀":7}"#)
    }

    @Test func integers() {
        #expect(
            text(JSON.serialize(.array([.int(0), .int(-1), .int(.max), .int(.min)]), pretty: false))
                == "[0,-1,9223372036854775807,-9223372036854775808]")
    }

    @Test func doublesAlwaysReadBackAsDoubles() throws {
        let cases: [(Double, String)] = [
            (3.0, "3.0"), (-0.0, "-0.0"), (0.0, "0.0"), (2.5, "2.5"), (1e16, "1e+16"), (1e15, "1000000000000000.0"),
            (0.00001, "1e-05"), (0.1, "0.1"), (-1.5e300, "-1.5e+300"), (.leastNonzeroMagnitude, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"), (123456789.0, "123456789.0"),
        ]
        for (d, expected) in cases {
            let out = text(JSON.serialize(.double(d), pretty: false))
            #expect(out == expected)
            guard case .double(let back) = try JSON.parse(out) else {
                Issue.record("\(out) did not parse as a double")
                continue
            }
            #expect(back.bitPattern == d.bitPattern, "\(out)")
        }
        #expect(text(JSON.serialize(.double(.nan), pretty: false)) == "null")
    }

    @Test func stringEscaping() {
        let s = "\"\\/\n\t\r\u{8}\u{C}\u{0}\u{1}\u{1F}\u{7F}é😀\u{2028}"
        #expect(
            text(JSON.serialize(.string(s), pretty: false))
                == "\"\\\"\\\\/\\n\\t\\r\\b\\f\\u0000\\u0001\\u001f\u{7F}é😀\u{2028}\"")
    }

    @Test func randomValuesRoundTrip() throws {
        var g = SeededRandom(seed: 42)
        for _ in 0..<2000 {
            let v = RecordGenerator.json(using: &g, depth: 4)
            for pretty in [false, true] {
                let out = JSON.serialize(v, pretty: pretty)
                let back = try JSON.parse(out)
                #expect(back == v)
                #expect(JSON.serialize(back, pretty: pretty) == out)
            }
        }
    }

    @Test func parseOfTextAndBytesAgree() throws {
        let s = #"{"k":["é",1,2.0]}"#
        #expect(try JSON.parse(s) == JSON.parse(Array(s.utf8)))
    }
}
