import Foundation
import RecSyncModel
import RecSyncSystem
import RecSyncWorkspace
import Synchronization

/// Feeds untrusted bytes to every decoder that reads them from a workspace or a store, for
/// the fuzzers: the libFuzzer target `recsync-fuzz` and the seeded mutation loop in
/// `RecSyncModelTests` (`DecoderFuzzTests`).
///
/// A decoder may refuse any input with a `RecSyncError`; it must never trap, hang or crash.
/// The targets: record JSON and its type tags (`WorkspaceEncoding.decodeFields`), sidecars
/// (`decodeSystemFields`), store record blobs (`StoreEncoding.decode`), change tokens (as the
/// opaque string, as the JSON inside a version 1 one and the binary inside a version 2 one),
/// zone ref names (`RefNames`), the zone index (base file and journal, through
/// the files `ZoneIndex.load` maps), and the JSON parser that reads `zone.json`.
public enum DecoderFuzz {
    /// One decoder, by name.
    public struct Target: Sendable {
        public var name: String
        public var run: @Sendable ([UInt8]) -> Void

        public init(name: String, run: @escaping @Sendable ([UInt8]) -> Void) {
            self.name = name
            self.run = run
        }
    }

    static let zone = Build.zone("fuzz")

    /// Every target. The index target writes files in a scratch workspace of its own.
    public static let targets: [Target] = [
        Target(name: "record JSON") { bytes in _ = try? WorkspaceEncoding.decodeFields(bytes) },
        Target(name: "sidecar") { bytes in _ = try? WorkspaceEncoding.decodeSystemFields(bytes) },
        Target(name: "store record blob") { bytes in
            _ = try? StoreEncoding.decode(bytes, zoneID: zone, changeTag: "c0ffee")
            _ = try? StoreEncoding.decode(bytes, zoneID: zone, changeTag: nil)
        },
        Target(name: "change token") { bytes in
            let token = ServerChangeToken(rawValue: String(decoding: bytes, as: UTF8.self))
            _ = try? ChangeTokenContent.decode(token)
            _ = try? ChangeTokenContent.decodeZoneToken(token, storeID: "s", zoneID: zone)
            _ = try? ChangeTokenContent.decodeDatabaseToken(token, storeID: "s", scope: .private, user: "alice")
        },
        Target(name: "change token payload") { bytes in
            // The JSON inside a token, wrapped the way `ChangeTokenContent.token` wraps it.
            var text = Data(bytes).base64EncodedString()
            text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            while text.hasSuffix("=") { text.removeLast() }
            _ = try? ChangeTokenContent.decode(ServerChangeToken(rawValue: "rsct1." + text))
        },
        Target(name: "change token v2 payload") { bytes in
            // The binary inside a version 2 token, wrapped the same way.
            var text = Data(bytes).base64EncodedString()
            text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            while text.hasSuffix("=") { text.removeLast() }
            _ = try? ChangeTokenContent.decode(ServerChangeToken(rawValue: "rsct2." + text))
        },
        Target(name: "zone ref name") { bytes in
            let text = String(decoding: bytes, as: UTF8.self)
            _ = RefNames.parseRefName(text)
            _ = RefNames.parseSuffix(text)
            _ = RefNames.decodeComponent(text)
        },
        Target(name: "zone.json and JSON") { bytes in _ = try? JSON.parse(bytes) },
        Target(name: "zone index") { bytes in IndexScratch.shared.load(bytes) },
    ]

    /// Runs every target on one input.
    public static func runAll(_ bytes: [UInt8]) {
        for target in targets { target.run(bytes) }
    }

    /// Valid examples of every format, to mutate from.
    public static func seeds() -> [[UInt8]] {
        var seeds: [[UInt8]] = []
        for i in 0..<4 {
            let record = RecordGenerator.realisticRecord(index: i, zoneID: zone, fieldCount: 3 + 2 * i)
            seeds.append(WorkspaceEncoding.encodeFields(record.fields))
            seeds.append(StoreEncoding.encode(record))
            var stored = record
            stored.changeTag = "t\(i)"
            stored.created = ChangeStamp(timestamp: 1_767_225_600_000 + Int64(i), userRecordName: "alice")
            stored.modified = stored.created
            seeds.append(WorkspaceEncoding.encodeSystemFields(stored.systemFields))
        }
        var g = SeededRandom(seed: 7)
        for _ in 0..<3 {
            let value = RecordGenerator.fieldValue(using: &g)
            seeds.append(WorkspaceEncoding.encodeFields(["v": value, "list": .list([value, value])]))
        }
        let tokens = [
            ChangeTokenContent(storeID: "s", kind: .zone(zone, incarnation: "i1"), commit: "0123456789abcdef0123456789abcdef01234567"),
            ChangeTokenContent(storeID: "s", kind: .database(scope: .private, user: "alice"), commit: "abc", target: "def", after: "zones/alice/x"),
        ]
        for t in tokens {
            seeds.append(Array(t.token.rawValue.utf8))
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            if let json = try? encoder.encode(t) { seeds.append(Array(json)) }
        }
        let oid = "0123456789abcdef0123456789abcdef01234567"
        let tokens2 = [
            ChangeTokenContent(
                storeID: "s", scope: .shared, user: "alice",
                heads: [
                    ZoneRefHead(refSuffix: "bob/notes", head: oid, visible: true),
                    ZoneRefHead(refSuffix: "bob/n%C3%BC.%2E", head: oid, visible: false),
                    ZoneRefHead(refSuffix: "carol/%%" + String(repeating: "ab", count: 32), head: "m7", visible: true),
                ], after: "bob/notes"),
            ChangeTokenContent(storeID: "s", zone: zone, incarnation: "i1", refCommit: oid, target: "m2", after: "ab/cd"),
        ]
        for t in tokens2 {
            seeds.append(Array(t.token.rawValue.utf8))
            // The binary payload alone, for the v2 payload target.
            var text = String(t.token.rawValue.dropFirst("rsct2.".count))
            text = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            while text.count % 4 != 0 { text.append("=") }
            if let payload = Data(base64Encoded: text) { seeds.append(Array(payload)) }
        }
        for name in ["notes", "a..b.lock", "~^:?*[\\{ x.", String(repeating: "é", count: 120) + "%%"] {
            seeds.append(Array(RefNames.refName(for: Build.zone(name)).utf8))
        }
        seeds.append(
            Array(
                #"{"zoneName": "notes", "ownerName": "alice", "capabilities": ["atomic", "fetchChanges"], "defaultRecordType": "Note", "created": {"timestamp": 1767225600000, "userRecordName": "alice"}, "share": {"participants": [{"userRecordName": "bob", "permission": "readOnly"}]}}"#
                    .utf8))
        seeds += IndexScratch.shared.sampleFiles()
        return seeds
    }

    /// One mutation of `input`, libFuzzer-style: flip, insert, delete, duplicate or splice
    /// bytes, or splice in a token that decoders look for.
    public static func mutate(_ input: [UInt8], corpus: [[UInt8]], using g: inout SeededRandom) -> [UInt8] {
        var b = input
        for _ in 0..<(1 + g.below(4)) {
            switch g.below(9) {
            case 0 where !b.isEmpty:
                b[g.below(b.count)] ^= UInt8(1 << g.below(8))
            case 1 where !b.isEmpty:
                b[g.below(b.count)] = UInt8(truncatingIfNeeded: g.next())
            case 2:
                b.insert(UInt8(truncatingIfNeeded: g.next()), at: g.below(b.count + 1))
            case 3 where !b.isEmpty:
                let at = g.below(b.count)
                b.removeSubrange(at..<min(b.count, at + 1 + g.below(16)))
            case 4 where !b.isEmpty:
                let at = g.below(b.count)
                let piece = b[at..<min(b.count, at + 1 + g.below(32))]
                b.insert(contentsOf: piece, at: g.below(b.count + 1))
            case 5:
                let other = g.pick(corpus)
                guard !other.isEmpty else { continue }
                let at = g.below(other.count)
                b.insert(contentsOf: other[at..<min(other.count, at + 1 + g.below(64))], at: g.below(b.count + 1))
            case 6:
                b.insert(contentsOf: Array(g.pick(interesting).utf8), at: g.below(b.count + 1))
            case 7 where !b.isEmpty:
                // Truncate: a half-written file.
                b.removeSubrange(g.below(b.count)...)
            default:
                let digits = Array(String(g.pick([Int64.max, Int64.min, 0, -1, 1 << 53, 255, 256, 65536])).utf8)
                b.insert(contentsOf: digits, at: g.below(b.count + 1))
            }
        }
        return b
    }

    static let interesting = [
        "\"", "\\", "\\u", "\\ud800", "\\udc00", "\\u0000", "{", "}", "[", "]", ":", ",", "null", "true", "1e999", "-0", "1.5e-400",
        "{\"$type\":", "\"BYTES\"", "\"REFERENCE\"", "\"LOCATION\"", "\"TIMESTAMP\"", "\"ASSET\"", "\"LIST\"", "\"INT64\"", "\"DOUBLE\"",
        "\t", "\n", "\r", "\u{0}", "\u{FEFF}", "\u{10FFFF}", "\u{FF}", "é", "e\u{301}", "%", "%2F", "%%", "..", "/", "rsct1.", "rsct2.", "rsct9.",
        "recsync-index 1\n", "recsync-index 2 ", "=", "==", "-", "_",
    ]

    /// A workspace in a temp dir whose zone index the index target overwrites and loads.
    final class IndexScratch: Sendable {
        static let shared = IndexScratch()
        let directory = TempDirectory("fuzz-index", in: FileManager.default.isWritableFile(atPath: "/dev/shm") ? "/dev/shm" : nil)
        let workspace: Workspace?

        init() {
            do {
                workspace = try Workspace.create(at: directory.file("ws"), config: WorkspaceConfig(user: "alice", remote: "fuzz"))
            } catch {
                workspace = nil
            }
            // A static is never deinitialised: remove the directory when the process exits.
            Self.path.withLock { $0 = directory.path }
            atexit {
                if let path = IndexScratch.path.withLock({ $0 }), ProcessInfo.processInfo.environment["RECSYNC_KEEP_TEMP"] == nil {
                    try? FileManager.default.removeItem(atPath: path)
                }
            }
        }

        static let path = Mutex<String?>(nil)

        /// Index files made by the index itself (a base and a journal).
        func sampleFiles() -> [[UInt8]] {
            guard let ws = workspace else { return [] }
            var index = ZoneIndex.load(ws, zone: DecoderFuzz.zone)
            for n in 0..<6 {
                index.record(
                    file: "r\(n).json", recordName: "r\(n)\(n == 3 ? "\twith tab" : "")", tag: "t\(n)", hash: "h\(n)",
                    fileStamp: FileStamp(size: Int64(n), mtimeNanos: Int64(n) * 1000, inode: UInt64(n)), sideStamp: nil)
            }
            try? index.save(compacting: true)
            let base = (try? FileIO.read(ws.indexPath(DecoderFuzz.zone))) ?? nil
            index.record(file: "r9.json", recordName: "r9", tag: "t9", hash: "h9", fileStamp: nil, sideStamp: nil)
            index["r1.json"] = nil
            try? index.save(compacting: false)
            let journal = (try? FileIO.read(ws.indexPath(DecoderFuzz.zone) + ".log")) ?? nil
            return [base, journal].compactMap { $0 }
        }

        /// Loads `bytes` as the base file and as the journal, and reads every entry.
        func load(_ bytes: [UInt8]) {
            guard let ws = workspace else { return }
            let path = ws.indexPath(DecoderFuzz.zone)
            for asJournal in [false, true] {
                // Plain writes (no fsync): this runs thousands of times a second.
                unlink(path)
                unlink(path + ".log")
                guard FileManager.default.createFile(atPath: asJournal ? path + ".log" : path, contents: Data(bytes)) else { return }
                var index = ZoneIndex.load(ws, zone: DecoderFuzz.zone)
                _ = index["r1.json"]
                _ = index.stamps("r2.json")
                index.loadAll()
                _ = index["r9.json"]
            }
        }
    }
}

/// The seeded mutation loop over `DecoderFuzz.seeds()`: the fuzzer where libFuzzer is not
/// used (CI's short run, `DecoderFuzzTests`, and a plain `recsync-fuzz`).
public enum DecoderFuzzLoop {
    public struct Result: Sendable, CustomStringConvertible {
        public var seed: UInt64
        public var executions: Int
        public var seconds: Double
        public var corpus: Int
        public var description: String {
            "decoder fuzzing: \(executions) executions in \(Int(seconds)) s (seed \(seed), corpus \(corpus)), no crash"
        }
    }

    /// Mutates and runs inputs for `seconds`. A crash ends the process (that is the finding);
    /// `log` is told the seed first, so `--seed` replays the run exactly.
    /// `targets` and `seeds`: other decoders (a test's, reached with `@testable`) and inputs.
    public static func run(
        seconds: Double, seed: UInt64? = nil, targets: [DecoderFuzz.Target] = DecoderFuzz.targets,
        seeds: [[UInt8]] = DecoderFuzz.seeds(), log: (String) -> Void = { _ in }
    ) -> Result {
        let seed = seed ?? UInt64(Date().timeIntervalSince1970 * 1000)
        log("decoder fuzzing with seed \(seed) for \(seconds) s (replay: --seed \(seed))")
        var g = SeededRandom(seed: seed)
        var corpus = seeds
        let start = Date()
        var executions = 0
        func runAll(_ bytes: [UInt8]) { for target in targets { target.run(bytes) } }
        for s in corpus { runAll(s); executions += 1 }
        while Date().timeIntervalSince(start) < seconds {
            for _ in 0..<64 {
                var input = DecoderFuzz.mutate(g.pick(corpus), corpus: corpus, using: &g)
                if input.count > 4096 { input.removeSubrange(4096...) }
                runAll(input)
                executions += 1
                // Keep a few mutants to mutate further (no coverage feedback: a random sample).
                if g.chance(2) {
                    if corpus.count < 512 { corpus.append(input) } else { corpus[g.below(corpus.count)] = input }
                }
            }
        }
        return Result(seed: seed, executions: executions, seconds: Date().timeIntervalSince(start), corpus: corpus.count)
    }

    /// Writes the seed inputs as files (libFuzzer's starting corpus); returns how many.
    public static func writeCorpus(to directory: String) -> Int {
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var n = 0
        for (i, s) in DecoderFuzz.seeds().enumerated() where FileManager.default.createFile(atPath: "\(directory)/seed-\(i)", contents: Data(s)) {
            n += 1
        }
        return n
    }
}
