import Foundation
import RecSyncTestSupport
import Testing

/// recsync run short of resources: it may stop with an error, but what it does to the store
/// is what the workspace holds, never a guess from a listing that came back short.
@Suite struct ResourceLimitTests {
    /// A push with only a few file descriptors (`ulimit -n`), at every limit from too few to
    /// start up to enough: the store keeps every record (a zone directory that cannot be
    /// listed is not a zone whose files were deleted), and a pull elsewhere sees them all.
    @Test func aPushShortOfFileDescriptorsDeletesNothing() throws {
        let f = try CLIFixture().withStore()
        try f.clone("a")
        try f.run(["zone", "create", "notes"], in: "a")
        let count = 12
        for i in 0..<count { try f.put("notes/r\(i)", #"{"v": \#(i)}"#, in: "a") }
        try f.run(["push"], in: "a")
        try f.clone("b")
        for limit in 8...26 {
            // An edit, so that each push has something to send.
            try f.put("notes/r0", #"{"v": \#(1000 + limit)}"#, in: "a")
            let push = try Subprocess.capture(
                "/bin/sh", ["-c", "ulimit -n \(limit) && exec \"$0\" push", f.recsync.executable],
                in: f.ws("a"), environment: f.recsync.environment)
            #expect(push.status < 128, "push under ulimit -n \(limit) was killed by a signal:\n\(push)")
            try f.run(["pull"], in: "b")
            let held = try FileManager.default.contentsOfDirectory(atPath: f.ws("b") + "/private/notes").filter { $0.hasSuffix(".json") }
            #expect(held.count == count, "after a push under ulimit -n \(limit) the store holds \(held.count) of \(count) records:\n\(push)")
            if held.count != count { break }
        }
    }
}
