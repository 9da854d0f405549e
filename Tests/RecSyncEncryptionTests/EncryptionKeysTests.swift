import Foundation
import Glibc
import RecSyncModel
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

@testable import RecSyncEncryption
@testable import RecSyncStore

/// `recsync keys` and the key files on this machine: what a reset cut short leaves, a
/// published key file that does not parse, and key files or directories others could swap.
@Suite(.ownThreads) struct EncryptionKeysTests {
    typealias Pair = EncryptedZoneTests.Pair

    /// The new key is saved before anything on the store changes: a reset that cannot save
    /// it drops no zone.
    @Test func aResetThatCannotSaveTheNewKeyDropsNothing() async throws {
        let p = try Pair(.git)
        let zone = try await p.diary()
        let lost = UserKeyStore(directory: p.keys.file("lost-device"))
        try Data("not a directory".utf8).write(to: URL(fileURLWithPath: lost.directory))
        do throws(RecSyncError) {
            _ = try await EncryptionKeys.reset(user: "alice", keyStore: lost, store: p.alice)
            Issue.record("the reset went ahead without saving a key")
        } catch {
            guard case .fileSystem(let path, _, _) = error.reason else { Issue.record("\(error)"); return }
            #expect(path.hasPrefix(lost.directory), "\(error)")
        }
        #expect(try await p.alice.fetchZoneDeletions([zone]).isEmpty, "the zone was dropped though no new key was saved")
        #expect(try await p.fixture.store(as: "alice").fetchAllRecordZones(scope: .private).map(\.zoneID) == [zone])
    }

    /// A reset cut short after the store dropped the zones leaves the new key on this
    /// machine; run again, it carries on with that same key.
    @Test func aResetCutShortIsFinishedByRunningItAgain() async throws {
        let p = try Pair(.git)
        let zone = try await p.diary()
        let keys = UserKeyStore(directory: p.keys.file("lost-device"))
        let faulty = FaultInjectingStore(try p.fixture.store(as: "alice"), fault: .afterWrite)
        await #expect(throws: RecSyncError.self) { try await EncryptionKeys.reset(user: "alice", keyStore: keys, store: faulty) }
        #expect(try await p.alice.fetchZoneDeletions([zone]) == [ZoneDeletion(zoneID: zone, reason: .encryptedDataReset)])
        let pending = try #require(try keys.loadPending("alice"), "the new key was saved before the store changed")
        #expect(try keys.load("alice") == nil)

        let report = try await EncryptionKeys.reset(user: "alice", keyStore: keys, store: faulty)
        #expect(report.publicKey == Array(pending.publicKey.rawRepresentation), "the retry used the key already saved")
        #expect(try keys.load("alice")?.rawRepresentation == pending.rawRepresentation)
        #expect(try keys.loadPending("alice") == nil)
        let published = try #require(try await p.alice.fetchUserPublicKey("alice"))
        let signing = try EncryptionKeys.publicKeys(of: pending).signing
        #expect(published.publicKey == report.publicKey && published.signingPublicKey == signing)
    }

    /// A published key file that does not parse: `keys init` on a device with no key says
    /// what it is and what to do (not "run keys init" again); `keys reset` replaces it.
    @Test func aGarbageKeyFileOnTheStoreIsReportedAndResetReplacesIt() async throws {
        let p = try Pair(.git)
        try GitCLI.commitFiles([(StoreLayout.userKeyPath("alice"), Array("garbage".utf8))], toStore: p.fixture.path)
        do throws(RecSyncError) {
            _ = try await EncryptionKeys.initialize(user: "alice", keyStore: p.keyStore("alice"), store: p.alice)
            Issue.record("keys init went ahead over a garbage key file")
        } catch {
            guard case .storeCorrupt(let message) = error.reason else { Issue.record("\(error)"); return }
            #expect(message.contains("users/alice/key.json") && message.contains("holds no key of alice"), "\(message)")
            #expect(error.remedies == [.importKey, .resetKeys])
        }
        #expect(try p.keyStore("alice").load("alice") == nil, "no key was made over an unreadable published one")
        let report = try await EncryptionKeys.reset(user: "alice", keyStore: p.keyStore("alice"), store: p.alice)
        #expect(try await p.alice.fetchUserPublicKey("alice")?.publicKey == report.publicKey)
        #expect(try await EncryptionKeys.initialize(user: "alice", keyStore: p.keyStore("alice"), store: p.alice).created == false)
    }

    /// With the key on this machine, `keys init` publishes it over a garbage file.
    @Test func keysInitWithAKeyReplacesAGarbageKeyFile() async throws {
        let p = try Pair(.git)
        let made = try await EncryptionKeys.initialize(user: "alice", keyStore: p.keyStore("alice"), store: p.alice)
        try GitCLI.commitFiles([(StoreLayout.userKeyPath("alice"), Array("{}".utf8))], toStore: p.fixture.path)
        let again = try await EncryptionKeys.initialize(user: "alice", keyStore: p.keyStore("alice"), store: p.alice)
        #expect(again.publicKey == made.publicKey && again.published == true)
        #expect(try await p.alice.fetchUserPublicKey("alice")?.publicKey == made.publicKey)
    }

    /// A key file is opened without following links or waiting on a FIFO and checked on the
    /// open descriptor; a key directory others own or may write is refused.
    @Test func keyFilesAndDirectoriesOthersCouldSwapAreRefused() async throws {
        let p = try Pair(.memory)
        _ = try await EncryptionKeys.initialize(user: "alice", keyStore: p.keyStore("alice"), store: p.alice)
        let keys = p.keyStore("alice")
        let file = keys.path(for: "alice")

        chmod(keys.directory, 0o777)
        #expect(
            throws: RecSyncError.permissionFailure(
                """
                the key directory \(keys.directory) can be written by other users (mode 777), who could swap\
                 your key file; run 'chmod 700 \(keys.directory)', then check your key's fingerprint
                """
            )
        ) {
            try keys.load("alice")
        }
        chmod(keys.directory, 0o700)
        chown(keys.directory, 4242, 4242)
        do throws(RecSyncError) { _ = try keys.load("alice"); Issue.record("a key directory of another user was used") } catch {
            #expect(error.message.contains("belongs to another user (uid 4242)"), "\(error.message)")
        }
        chown(keys.directory, getuid(), getgid())
        chown(file, 4242, 4242)
        do throws(RecSyncError) { _ = try keys.load("alice"); Issue.record("a key file of another user was used") } catch {
            #expect(error.message.contains("belongs to another user (uid 4242)"), "\(error.message)")
        }
        chown(file, getuid(), getgid())

        let real = p.keys.file("elsewhere.key")
        #expect(rename(file, real) == 0 && symlink(real, file) == 0)
        do throws(RecSyncError) { _ = try keys.load("alice"); Issue.record("a link was followed") } catch {
            guard case .fileSystem(_, let message, _) = error.reason else { Issue.record("\(error)"); return }
            #expect(message.contains("symbolic link"), "\(message)")
        }
        #expect(unlink(file) == 0 && mkfifo(file, 0o600) == 0)
        do throws(RecSyncError) { _ = try keys.load("alice"); Issue.record("a FIFO was read") } catch {
            guard case .fileSystem(_, let message, _) = error.reason else { Issue.record("\(error)"); return }
            #expect(message.contains("not a regular file"), "\(message)")
        }
    }
}
