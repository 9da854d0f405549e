import Foundation
import RecSyncModel
import RecSyncTestSupport
import Testing

@testable import RecSyncSystem

/// `FileIO.refuseLinks`: a tree libgit2 writes into by path (a network store's mirror) must
/// hold no link at any depth it looks, and `depth` bounds how deep that is.
@Suite struct RefuseLinksTests {
    /// A mirror-shaped tree: objects/xx/<file>, objects/pack/<files>, refs/heads/main.
    private func mirror(in dir: TempDirectory) throws -> String {
        let root = "\(dir.path)/mirror"
        let fm = FileManager.default
        for sub in ["objects/ab", "objects/pack", "refs/heads"] {
            try fm.createDirectory(atPath: "\(root)/\(sub)", withIntermediateDirectories: true)
        }
        for file in ["HEAD", "objects/ab/cdef", "objects/pack/pack-1.pack", "refs/heads/main"] {
            #expect(fm.createFile(atPath: "\(root)/\(file)", contents: Data("x\n".utf8)))
        }
        return root
    }

    @Test func aTreeWithoutLinksPasses() throws {
        let dir = TempDirectory("refuse-links")
        try FileIO.refuseLinks(within: try mirror(in: dir))
    }

    @Test(arguments: ["objects", "objects/cd", "objects/ab/0123", "refs/heads/topic"])
    func aLinkAtAnyDepthIsRefusedNamingIt(_ link: String) throws {
        let dir = TempDirectory("refuse-links")
        let root = try mirror(in: dir)
        if link == "objects" { try FileManager.default.removeItem(atPath: "\(root)/objects") }
        try FileManager.default.createSymbolicLink(atPath: "\(root)/\(link)", withDestinationPath: dir.path)
        #expect {
            try FileIO.refuseLinks(within: root)
        } throws: { error in
            "\(error)".contains("\(root)/\(link)") && "\(error)".contains("symbolic link")
        }
    }

    @Test func depthBoundsWhereItLooks() throws {
        let dir = TempDirectory("refuse-links")
        let root = try mirror(in: dir)
        try FileManager.default.createSymbolicLink(atPath: "\(root)/objects/ab/0123", withDestinationPath: dir.path)
        try FileIO.refuseLinks(within: root, depth: 2)  // objects/ab/* is at depth 3
        #expect(throws: RecSyncError.self) { try FileIO.refuseLinks(within: root, depth: 3) }
    }

    @Test func theTreeItselfMustNotBeALink() throws {
        let dir = TempDirectory("refuse-links")
        let root = try mirror(in: dir)
        try FileManager.default.createSymbolicLink(atPath: "\(dir.path)/alias", withDestinationPath: root)
        #expect(throws: RecSyncError.self) { try FileIO.refuseLinks(within: "\(dir.path)/alias") }
    }

    /// Under a workspace root, a directory above the tree that is a link (`.recsync` swapped
    /// for one) is refused too: the tree is not taken for one that is not there.
    @Test func aLinkAboveTheTreeUnderAWorkspaceRootIsRefused() throws {
        let dir = TempDirectory("refuse-links-above")
        let elsewhere = dir.file("elsewhere")
        try FileManager.default.createDirectory(atPath: "\(elsewhere)/mirror/objects", withIntermediateDirectories: true)
        let root = dir.file("ws")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: "\(root)/.recsync", withDestinationPath: elsewhere)
        Confinement.register(root)
        defer { Confinement.unregister(root) }
        #expect {
            try FileIO.refuseLinks(within: "\(root)/.recsync/mirror")
        } throws: { error in
            "\(error)".contains("\(root)/.recsync") && "\(error)".contains("symbolic link")
        }
    }
}
