// A stress writer for the multi-process concurrency tests: opens a git store, makes
// read-modify-write attempts, and prints one JSON line per attempt on stdout.
//
// usage: recsync-store-writer STORE USER ZONE-OWNER ZONE ITERATIONS SHARED-RECORDS SEED
import Foundation
import RecSyncModel
import RecSyncStore
import RecSyncTestSupport

let args = CommandLine.arguments
guard args.count == 8, let iterations = Int(args[5]), let shared = Int(args[6]), let seed = UInt64(args[7]) else {
    FileHandle.standardError.write(Data("usage: recsync-store-writer STORE USER ZONE-OWNER ZONE ITERATIONS SHARED-RECORDS SEED\n".utf8))
    exit(64)
}
do {
    let store = try GitStore(path: args[1], actor: StoreActor(userRecordName: args[2]))
    let zone = try ZoneID(zoneName: args[4], ownerName: args[3])
    let log = await StressWriter.run(store: store, zone: zone, writer: args[2], iterations: iterations, sharedRecords: shared, seed: seed)
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    for entry in log {
        FileHandle.standardOutput.write(try encoder.encode(entry) + Data("\n".utf8))
    }
} catch {
    FileHandle.standardError.write(Data("recsync-store-writer: \(error)\n".utf8))
    exit(1)
}
