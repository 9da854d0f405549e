import Foundation
import RecSyncModel
import RecSyncTestSupport
import Testing

@testable import RecSyncStore

/// `zone.json` and zone tombstones, as another user may have written them into the store,
/// never trap their readers: the decoder fuzzer's mutation loop on the store's own decoders
/// (internal, hence here and not in the libFuzzer target, which fuzzes the JSON parser under them).
@Suite struct ZoneDocumentFuzzTests {
    @Test func zoneDocumentsSurviveMutatedInputs() throws {
        let zone = Build.zone("fuzz")
        let targets = [
            DecoderFuzz.Target(name: "zone.json") { bytes in
                _ = try? ZoneDocuments.decodeZone(bytes, zoneID: zone, path: "zones/alice/fuzz/zone.json")
            },
            DecoderFuzz.Target(name: "tombstone") { bytes in _ = ZoneDocuments.decodeTombstone(bytes) },
        ]
        var shared = RecordZone(zoneID: zone, defaultRecordType: "Note")
        shared.created = ChangeStamp(timestamp: 1_767_225_600_000, userRecordName: "alice")
        shared.incarnation = "i1"
        shared.participants = [
            ShareParticipant(userRecordName: "bob", permission: .readOnly), ShareParticipant(userRecordName: "carol", permission: .readWrite),
        ]
        let seeds = [
            ZoneDocuments.encodeZone(RecordZone(zoneID: zone)),
            ZoneDocuments.encodeZone(shared),
            ZoneDocuments.encodeTombstone(reason: .purged, stamp: ChangeStamp(timestamp: 1, userRecordName: "alice")),
        ]
        let env = ProcessInfo.processInfo.environment
        let seconds = env["RECSYNC_FUZZ_SECONDS"].flatMap(Double.init) ?? 3
        let seed = env["RECSYNC_FUZZ_SEED"].flatMap { UInt64($0) } ?? (env["RECSYNC_FUZZ_SECONDS"] == nil ? 1 : nil)
        let result = DecoderFuzzLoop.run(seconds: seconds, seed: seed, targets: targets, seeds: seeds) { print($0) }
        print(result)
        #expect(result.executions > seeds.count, "the loop ran mutated inputs")
        // The seeds themselves decode: the loop starts from valid documents.
        #expect(try ZoneDocuments.decodeZone(seeds[1], zoneID: zone, path: "z").participants.count == 2)
        #expect(ZoneDocuments.decodeTombstone(seeds[2]) == .purged)
    }
}
