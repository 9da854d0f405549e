import Foundation
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

/// Links and FIFOs in a workspace, through the built binary (DESIGN §11).
@Suite(.ownThreads) struct ConfinementCLITests {
    @Test func aFIFORecordFileIsReportedByStatusAndDiffWithoutHanging() async throws {
        let f = try CLIFixture().withStore()
        let ws = try f.clone("ws")
        try f.put("notes/a", #"{"v": 1}"#, in: "ws")
        try f.run(["push"], in: "ws")
        let fifo = "\(ws)/private/notes/x.json"
        try makeFIFO(fifo)
        let runner = f.recsync
        var outputs: [Result<ProcessOutput, Error>] = []
        for args in [["status"], ["diff", "private/notes/x.json"], ["push"], ["pull"]] {
            let (output, hung) = await runUnblockingFIFOs([fifo]) { Result { try runner.run(args, in: ws) } }
            #expect(!hung, "recsync \(args.joined(separator: " ")) waited on the FIFO")
            outputs.append(output)
        }
        let (status, diff, push, pull) = (try outputs[0].get(), try outputs[1].get(), try outputs[2].get(), try outputs[3].get())
        #expect((status.stdout + status.stderr).contains("private/notes/x.json: is a directory, symbolic link, FIFO or device"), "\(status)")
        #expect(diff.status != 0 && diff.stderr.contains("FIFO"), "\(diff)")
        #expect(push.status != 0 && push.stderr.contains("private/notes/x.json"), "\(push)")
        #expect(pull.status == 0, "\(pull)")
    }

    /// libgit2 writes into a network store's mirror by path: a link anywhere inside it
    /// (here its `objects/`) is refused before a fetch could write a pack through it.
    @Test func aLinkInsideTheMirrorIsRefusedBeforeAFetch() throws {
        let f = try CLIFixture().withStore()
        let daemon = try GitDaemon(basePath: f.directory.path)
        let url = daemon.url("store.git")
        try f.run(["clone", url, "laptop"])
        try f.run(["clone", url, "phone"])
        try f.put("notes/a", #"{"v": 1}"#, in: "laptop")
        try f.run(["push"], in: "laptop")
        let phone = f.ws("phone")
        let outside = f.ws("outside-objects")
        try FileManager.default.moveItem(atPath: "\(phone)/.recsync/mirror/objects", toPath: outside)
        try FileManager.default.createSymbolicLink(atPath: "\(phone)/.recsync/mirror/objects", withDestinationPath: outside)
        let before = try FileManager.default.subpathsOfDirectory(atPath: outside).sorted()
        let pull = try f.run(["pull"], in: "phone", expect: 1)
        #expect(pull.stderr.contains(".recsync/mirror/objects") && pull.stderr.contains("symbolic link"), "\(pull)")
        #expect(try FileManager.default.subpathsOfDirectory(atPath: outside).sorted() == before, "nothing written through the link")
    }

    /// The store doctor removes stale lock files in a network store's mirror: a mirror whose
    /// `refs/` is a link to another repository is refused, and that repository's lock kept.
    @Test func theStoreDoctorRemovesNoLockThroughALinkInTheMirror() throws {
        let f = try CLIFixture().withStore()
        let daemon = try GitDaemon(basePath: f.directory.path)
        try f.run(["clone", daemon.url("store.git"), "laptop"])
        let laptop = f.ws("laptop")
        let elsewhere = f.ws("elsewhere-refs")
        try FileManager.default.moveItem(atPath: "\(laptop)/.recsync/mirror/refs", toPath: elsewhere)
        try FileManager.default.createSymbolicLink(atPath: "\(laptop)/.recsync/mirror/refs", withDestinationPath: elsewhere)
        let lock = "\(elsewhere)/heads/main.lock"
        try FileManager.default.createDirectory(atPath: "\(elsewhere)/heads", withIntermediateDirectories: true)
        try writeFile(lock, "\n")
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -3600)], ofItemAtPath: lock)
        for arguments in [["store", "doctor"], ["doctor", "--fix"]] {
            let doctored = try f.run(arguments, in: "laptop", expect: 1)
            #expect(doctored.stdout.contains("symbolic link") || doctored.stderr.contains("symbolic link"), "\(arguments): \(doctored)")
            #expect(FileManager.default.fileExists(atPath: lock), "\(arguments): the lock behind the link is kept")
        }
    }

    @Test func pullIntoALinkedZoneDirectoryWritesNothingOutside() throws {
        let f = try CLIFixture().withStore()
        _ = try f.clone("laptop")
        try f.put("notes/a", #"{"v": 1}"#, in: "laptop")
        try f.run(["push"], in: "laptop")
        let phone = try f.clone("phone")
        let outside = f.ws("outside")
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        try FileManager.default.removeItem(atPath: "\(phone)/private/notes")
        try FileManager.default.createSymbolicLink(atPath: "\(phone)/private/notes", withDestinationPath: outside)
        try f.put("notes/b", #"{"v": 2}"#, in: "laptop")
        try f.run(["push"], in: "laptop")

        let pull = try f.run(["pull"], in: "phone", expect: 1)
        #expect(pull.stderr.contains("private/notes: is a symbolic link"), "\(pull)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside).isEmpty)
    }
}
