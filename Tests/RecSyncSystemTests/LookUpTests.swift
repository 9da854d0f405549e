import Foundation
import RecSyncModel
import RecSyncTestSupport
import Testing

@testable import RecSyncSystem

/// `FileIO.info`: nil means nothing is there, and only that. A path that cannot be looked at
/// is an error naming it; read as absent, a record file would read as deleted, and a push
/// would delete the record from the store.
@Suite struct LookUpTests {
    @Test func nothingThereIsNilAndAFileIsItsStamp() throws {
        let dir = TempDirectory("look-up")
        let file = dir.file("r.json")
        #expect(try FileIO.info(file) == nil)
        #expect(try FileIO.info("\(file)/below") == nil, "below a path that is not there")
        try Data("{}".utf8).write(to: URL(fileURLWithPath: file))
        #expect(try FileIO.info(file)?.isRegular == true && FileIO.stamp(file)?.size == 2)
        #expect(try FileIO.info("\(file)/below") == nil, "below a file (ENOTDIR) nothing can be")
    }

    @Test(arguments: [false, true])
    func aPathThatCannotBeLookedAtIsAnErrorNamingIt(confined: Bool) throws {
        let dir = TempDirectory("look-up")
        if confined { Confinement.register(dir.path) }
        defer { if confined { Confinement.unregister(dir.path) } }
        // A name longer than a file system allows: lstat and fstatat fail with ENAMETOOLONG.
        let path = dir.file(String(repeating: "n", count: 300))
        #expect {
            _ = try FileIO.info(path)
        } throws: { error in
            guard case .fileSystem(let at, _, let cause) = (error as? RecSyncError)?.reason else { return false }
            return at == path && cause?.errno == ENAMETOOLONG
        }
        #expect(throws: RecSyncError.self) { _ = try FileIO.stamp(path) }
    }

    /// A directory without search permission: its entries cannot be looked at. Root may look
    /// anyway, so this runs only for another user.
    @Test(.enabled(if: getuid() != 0, "root may search any directory: no permission error to meet"))
    func aFileInADirectoryThatCannotBeSearchedIsNotReadAsGone() throws {
        let dir = TempDirectory("look-up")
        let zone = dir.file("notes")
        try FileManager.default.createDirectory(atPath: zone, withIntermediateDirectories: true)
        try Data("{}".utf8).write(to: URL(fileURLWithPath: "\(zone)/r.json"))
        chmod(zone, 0o600)
        defer { chmod(zone, 0o755) }
        #expect {
            _ = try FileIO.info("\(zone)/r.json")
        } throws: { error in
            (error as? RecSyncError)?.cause == .systemCall(SystemCallFailure(call: "lstat", errno: EACCES))
        }
    }
}
