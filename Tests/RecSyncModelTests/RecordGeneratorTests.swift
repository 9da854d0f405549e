import RecSyncModel
import RecSyncTestSupport
import Testing

@Suite struct RecordGeneratorTests {
    @Test func deterministic() {
        var a = SeededRandom(seed: 5)
        var b = SeededRandom(seed: 5)
        for _ in 0..<50 {
            #expect(RecordGenerator.record(using: &a, zoneID: testZone) == RecordGenerator.record(using: &b, zoneID: testZone))
        }
        var c = SeededRandom(seed: 0)
        #expect(c.next() == 0xE220_A839_7B1D_CDAF)  // SplitMix64 reference value for seed 0
        #expect(RecordGenerator.realisticRecord(index: 3, zoneID: testZone) == RecordGenerator.realisticRecord(index: 3, zoneID: testZone))
        #expect(RecordGenerator.realisticRecord(index: 3, zoneID: testZone) != RecordGenerator.realisticRecord(index: 4, zoneID: testZone))
    }

    @Test func coversTheAwkwardCases() throws {
        var g = SeededRandom(seed: 1)
        var types = Set<String>()
        var seen = Set<String>()
        func note(_ v: FieldValue) {
            switch v {
            case .list(let items):
                types.insert(StoreEncoding.encodeValue(v) == StoreEncoding.encodeValue(.list([])) ? "LIST" : "list")
                if let t = items.first?.scalarType { types.insert(t.rawValue + "_LIST") }
                items.forEach(note)
            case .json(let j):
                if case .object(let o) = WorkspaceEncoding.json(from: v), o.keys.contains("$json") {
                    seen.insert("wrapped")
                } else {
                    seen.insert("plain json")
                }
                if case .object(let o) = j, o.keys.contains(where: { $0.hasPrefix("$") }) { seen.insert("$ key") }
            case .string(let s):
                if s.unicodeScalars.contains(where: { $0.value < 0x20 }) { seen.insert("control") }
                if s.contains("\"") || s.contains("\\") { seen.insert("quote or backslash") }
                if s.unicodeScalars.contains(where: { $0.value > 0xFFFF }) { seen.insert("non-BMP") }
            case .int64(let i):
                if i == .min || i == .max { seen.insert("extreme int") }
            case .double(let d):
                if d == d.rounded() && abs(d) < 1e15 { seen.insert("whole double") }
                if d < 0 { seen.insert("negative double") }
                if d != 0 && abs(d) < 1e-300 { seen.insert("tiny double") }
                if abs(d) > 1e300 { seen.insert("huge double") }
            case .timestamp(let t):
                if t < 0 { seen.insert("negative timestamp") }
                #expect(t >= Timestamps.minMilliseconds && t <= Timestamps.maxMilliseconds)
            default:
                break
            }
            if let t = v.scalarType { types.insert(t.rawValue) }
        }
        for _ in 0..<500 {
            let r = RecordGenerator.record(using: &g, zoneID: testZone)
            try r.validate()
            r.fields.values.forEach(note)
            let name = r.recordID.recordName
            if name.contains("/") { seen.insert("/") }
            if name.contains("%") { seen.insert("%") }
            if name.contains(" ") { seen.insert("space") }
            if name.hasPrefix(".") { seen.insert("leading .") }
            seen.insert(r.created == nil ? "no created" : "created")
            seen.insert(r.modified == nil ? "no modified" : "modified")
            seen.insert(r.changeTag == nil ? "no tag" : "tag")
        }
        for t in FieldType.allCases where t != .asset && t != .encrypted { #expect(types.contains(t.rawValue), "\(t)") }
        for t in FieldType.allCases where t != .json && t != .asset && t != .encrypted { #expect(types.contains(t.rawValue + "_LIST"), "\(t) list") }
        #expect(types.contains("LIST"))
        for s in [
            "wrapped", "plain json", "$ key", "control", "quote or backslash", "non-BMP", "extreme int", "whole double",
            "negative double", "tiny double", "huge double", "negative timestamp", "/", "%", "space", "leading .",
            "no created", "created", "no modified", "modified", "no tag", "tag",
        ] {
            #expect(seen.contains(s), "\(s)")
        }
    }

    @Test func realisticRecordsAreAboutThreeHundredBytes() throws {
        var total = 0
        for i in 0..<100 {
            let r = RecordGenerator.realisticRecord(index: i, zoneID: testZone)
            try r.validate()
            #expect(r.fields.count == 10)
            total += WorkspaceEncoding.encodeFields(r.fields).count
        }
        let average = total / 100
        #expect(average > 200 && average < 450, "average \(average)")
        #expect(RecordGenerator.realisticRecord(index: 0, zoneID: testZone, fieldCount: 14).fields.count == 14)
    }
}
