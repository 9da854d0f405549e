import Foundation
import RecSyncModel
import RecSyncTestSupport
import Testing

@testable import RecSyncSystem

/// Durable writes: a file is the old one or the new one, never part of either, and leaves no
/// temporary file behind.
@Suite struct DurableWriteTests {
    private func entries(_ dir: TempDirectory) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
    }

    @Test func aReplacedFileHoldsTheNewBytesWithTheModeAsked() throws {
        let dir = TempDirectory("durable-replace")
        let path = dir.file("key.json")
        try FileIO.writeAtomically(path, Array("old".utf8))
        try FileIO.writeAtomically(path, Array("new".utf8), mode: 0o600)
        #expect(try FileIO.read(path) == Array("new".utf8))
        let mode = try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
        #expect(mode & 0o077 == 0, "mode \(String(mode, radix: 8))")
        #expect(try entries(dir) == ["key.json"])
    }

    @Test func aNewFileIsCreatedWholeAndAnExistingOneIsRefusedUntouched() throws {
        let dir = TempDirectory("durable-create")
        let path = dir.file("export.json")
        try FileIO.createAtomically(path, Array("first".utf8), mode: 0o600)
        #expect(try FileIO.read(path) == Array("first".utf8))
        #expect {
            try FileIO.createAtomically(path, Array("second".utf8))
        } throws: { error in
            guard case .fileSystem(let where_, _, let cause) = (error as? RecSyncError)?.reason else { return false }
            return where_ == path && cause?.errno == EEXIST
        }
        #expect(try FileIO.read(path) == Array("first".utf8))
        #expect(try entries(dir) == ["export.json"], "no temporary file is left beside it")
    }

    @Test func aNewFileWhereADirectoryStandsIsRefusedLeavingNothing() throws {
        let dir = TempDirectory("durable-create-dir")
        try FileManager.default.createDirectory(atPath: dir.file("taken"), withIntermediateDirectories: false)
        #expect(throws: RecSyncError.self) { try FileIO.createAtomically(dir.file("taken"), Array("x".utf8)) }
        #expect(try entries(dir) == ["taken"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.file("taken")).isEmpty)
    }
}
