import RecSyncTestSupport

#if RECSYNC_LIBFUZZER
    /// libFuzzer's entry point: every decoder of untrusted bytes on one input.
    @_cdecl("LLVMFuzzerTestOneInput")
    public func recsyncFuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
        DecoderFuzz.runAll(data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
        return 0
    }

    /// libFuzzer's driver (compiler-rt's libFuzzer, linked by -sanitize=fuzzer).
    @_silgen_name("LLVMFuzzerRunDriver")
    func LLVMFuzzerRunDriver(
        _ argc: UnsafeMutablePointer<CInt>,
        _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
        _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
    ) -> CInt

    /// SwiftPM links an executable's `main` to `<module>_main`; libFuzzer's own `main` is then
    /// not used, so this one starts its driver.
    @_cdecl("recsync_fuzz_main")
    public func recsyncFuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
        var argc = argc
        var argv = argv
        return LLVMFuzzerRunDriver(&argc, &argv) { data, size in recsyncFuzzOneInput(data, size) }
    }
#else
    /// Without libFuzzer: `recsync-fuzz [--seconds N] [--seed S] [--write-corpus DIR]` runs the
    /// seeded mutation loop (the same one as `DecoderFuzzTests`), or writes the seed corpus.
    @main
    struct RecSyncFuzz {
        static func main() {
            var arguments = Array(CommandLine.arguments.dropFirst())
            var seconds = 10.0
            var seed: UInt64?
            while !arguments.isEmpty {
                let flag = arguments.removeFirst()
                let value = arguments.isEmpty ? "" : arguments.removeFirst()
                switch flag {
                case "--seconds": seconds = Double(value) ?? seconds
                case "--seed": seed = UInt64(value)
                case "--write-corpus":
                    let written = DecoderFuzzLoop.writeCorpus(to: value)
                    print("wrote \(written) seed inputs to \(value)")
                    return
                default:
                    print("usage: recsync-fuzz [--seconds N] [--seed S] [--write-corpus DIR]")
                    return
                }
            }
            let result = DecoderFuzzLoop.run(seconds: seconds, seed: seed) { print($0) }
            print(result)
        }
    }
#endif
