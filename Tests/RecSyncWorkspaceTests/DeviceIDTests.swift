import Foundation
import RecSyncModel
import RecSyncTestSupport
import Testing

@testable import RecSyncWorkspace

/// The device ID behind "no echo" and the client change token slot of pending pushes: it
/// must change for a copy, and only for a copy.
@Suite struct DeviceIDTests {
    func workspace() throws -> (TempDirectory, Workspace) {
        let dir = TempDirectory("device")
        return (dir, try Workspace.create(at: dir.file("ws"), config: WorkspaceConfig(user: "alice", remote: "memory")))
    }

    @Test func theIDIsStableAcrossCallsAndReopening() throws {
        let (dir, ws) = try workspace()
        defer { withExtendedLifetime(dir) {} }
        let id = try ws.deviceID()
        #expect(try ws.deviceID() == id)
        #expect(try Workspace.open(at: dir.file("ws")).deviceID() == id)
    }

    /// st_dev is not a stable name for a file system. A Docker overlay, NFS, btrfs
    /// or an LVM volume gets another device number at the next mount or boot; the workspace
    /// is the same, and a new ID would turn its own unacknowledged pushes into echoes and
    /// leave a pending push unsettled (its token is in the old ID's slot).
    @Test func aNewDeviceNumberForTheSameFileSystemKeepsTheID() throws {
        let (dir, ws) = try workspace()
        defer { withExtendedLifetime(dir) {} }
        let home = try ws.deviceHome()
        let id = try ws.deviceID(home: home)
        var remounted = home
        remounted.device &+= 7
        #expect(try ws.deviceID(home: remounted) == id)
        #expect(try ws.deviceID(home: remounted) == id)
        #expect(try ws.deviceID(home: home) == id)
    }

    @Test func aCopyOrASnapshotGetsANewID() throws {
        let (dir, ws) = try workspace()
        defer { withExtendedLifetime(dir) {} }
        let home = try ws.deviceHome()
        let id = try ws.deviceID(home: home)
        var copied = home
        copied.inode &+= 1  // cp -r, a backup restored: another directory
        let copyID = try ws.deviceID(home: copied)
        #expect(copyID != id)
        var snapshot = copied
        snapshot.device &+= 1
        snapshot.fileSystem += "-snapshot"  // a btrfs snapshot: same inode, another file system
        #expect(try ws.deviceID(home: snapshot) != copyID)
    }
}
