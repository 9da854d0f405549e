import Foundation
import RecSyncTestSupport
import Testing

/// The decoders of untrusted bytes (record JSON and tags, sidecars, store blobs, tokens, ref names, the
/// zone index, JSON) never trap on mutated inputs: a seeded mutation loop over valid seeds.
///
/// CI runs a short budget; `RECSYNC_FUZZ_SECONDS` runs it longer and `RECSYNC_FUZZ_SEED`
/// replays a run. A crash ends the test process: the log names the seed to replay. The
/// libFuzzer target (`make fuzz`) runs the same decoders with coverage feedback.
@Suite struct DecoderFuzzTests {
    @Test func decodersSurviveMutatedInputs() {
        let env = ProcessInfo.processInfo.environment
        let seconds = env["RECSYNC_FUZZ_SECONDS"].flatMap(Double.init) ?? 15
        let seed = env["RECSYNC_FUZZ_SEED"].flatMap { UInt64($0) } ?? (env["RECSYNC_FUZZ_SECONDS"] == nil ? 1 : nil)
        let result = DecoderFuzzLoop.run(seconds: seconds, seed: seed) { print($0) }
        print(result)
        #expect(result.executions > DecoderFuzz.seeds().count, "the loop ran mutated inputs")
    }

    @Test func theSeedCorpusCoversEveryTarget() {
        // Without valid seeds the loop would fuzz only the error paths.
        #expect(DecoderFuzz.seeds().count >= 20)
        #expect(DecoderFuzz.targets.count == 9)
    }
}
