import RecSyncModel
import RecSyncTestSupport
import Testing
import Foundation

@Test func tmpPerf() throws {
    let zone = try ZoneID(zoneName: "z", ownerName: "alice")
    var t = Date()
    let records = (0..<100_000).map { RecordGenerator.realisticRecord(index: $0, zoneID: zone) }
    print("gen", Date().timeIntervalSince(t)); t = Date()
    var blobs: [[UInt8]] = []
    blobs.reserveCapacity(records.count)
    for r in records { blobs.append(StoreEncoding.encode(r)) }
    print("store encode", Date().timeIntervalSince(t), blobs.map(\.count).reduce(0, +) / blobs.count); t = Date()
    for b in blobs { _ = try StoreEncoding.decode(b, zoneID: zone, changeTag: nil) }
    print("store decode", Date().timeIntervalSince(t)); t = Date()
    var plain: [[UInt8]] = []
    for r in records { plain.append(WorkspaceEncoding.encodeFields(r.fields)) }
    print("ws encode", Date().timeIntervalSince(t), plain.map(\.count).reduce(0, +) / plain.count); t = Date()
    for b in plain { _ = try WorkspaceEncoding.decodeFields(b) }
    print("ws decode", Date().timeIntervalSince(t)); t = Date()
    for r in records { _ = StoreEncoding.fieldDataSize(of: r) }
    print("size", Date().timeIntervalSince(t)); t = Date()
    print(text(plain[0]))
}
