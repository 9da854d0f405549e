import Crypto
import Foundation
import Glibc
import RecSyncModel
import RecSyncStore
import RecSyncSystem

/// A user's key pair as `recsync keys` shows it.
public struct UserKeyReport: Sendable, Hashable {
    public var user: String
    /// The key file on this machine.
    public var path: String
    /// The X25519 public key (32 bytes).
    public var publicKey: [UInt8]
    /// The first 16 hex digits of the public key's SHA-256: what to compare between devices.
    public var fingerprint: String
    /// Whether the store's published key is this one (nil: not asked).
    public var published: Bool?
    /// Whether this call made a new key pair.
    public var created: Bool
    /// The encrypted zones a reset dropped on the store.
    public var zonesReset: [ZoneID] = []
}

/// `recsync keys`: making, showing, resetting and moving a user's encryption key.
public enum EncryptionKeys {
    /// The user's key pair, made if there is none on this machine, and its public key
    /// published on the store (refused when the store holds another key of theirs).
    ///
    /// A published key file that does not parse is replaced when this machine holds the
    /// user's key, and reported (with `keys reset` as the way out) when it does not.
    public static func initialize(user: String, keyStore: UserKeyStore, store: any RemoteStore) async throws(RecSyncError) -> UserKeyReport {
        var created = false
        let key: Curve25519.KeyAgreement.PrivateKey
        let local = try keyStore.load(user)
        let published: UserPublicKey?
        do { published = try await store.fetchUserPublicKey(user) } catch {
            guard case .storeCorrupt(let problem) = error.reason else { throw error }
            guard local != nil else {
                throw .storeCorrupt(
                    """
                    the public key file of \(user) on the store (users/\(NameEscaping.escape(user))/key.json) cannot\
                     be read (\(problem)), and this machine holds no key of \(user), so it cannot tell whether a key\
                     exists elsewhere. If one of your devices holds your key, publish it again from there or bring\
                     it here; if your key is lost, reset it, which replaces the file
                    """
                ).suggesting(.importKey, .resetKeys)
            }
            published = nil  // replaced below by this machine's key
        }
        if let local {
            key = local
        } else {
            if published != nil {
                throw .keyUnavailable(
                    """
                    \(user) already has a key published on the store, made on another device; bring it here, or\
                     reset it if it is lost
                    """
                ).suggesting(.importKey, .resetKeys)
            }
            key = Curve25519.KeyAgreement.PrivateKey()
            try keyStore.save(key, for: user)
            created = true
        }
        let (own, signing) = try publicKeys(of: key)
        if let published, published.publicKey != own {
            throw .keyUnavailable(
                """
                the key published for \(user) on the store is not the one in \(keyStore.path(for: user)); import\
                 the current one (exported on the device that made it), or reset it if it is lost
                """
            ).suggesting(.importKey, .resetKeys)
        }
        try await store.publishUserPublicKey(own, signingKey: signing)
        return report(user, keyStore, key, published: true, created: created)
    }

    /// The public halves of a user's key: the X25519 key others wrap zone keys for, and the
    /// Ed25519 key derived from it that checks the user's signatures of their zones' keys.
    static func publicKeys(of key: Curve25519.KeyAgreement.PrivateKey) throws(RecSyncError) -> (agreement: [UInt8], signing: [UInt8]) {
        (Array(key.publicKey.rawRepresentation), Array(try ZoneCrypto.signingKey(for: key).publicKey.rawRepresentation))
    }

    /// The user's key on this machine and whether the store publishes the same.
    public static func show(user: String, keyStore: UserKeyStore, store: any RemoteStore) async throws(RecSyncError) -> UserKeyReport {
        guard let key = try keyStore.load(user) else {
            throw .keyUnavailable("no encryption key of \(user) on this machine (\(keyStore.path(for: user)))").suggesting(.makeKey, .importKey)
        }
        let published = try await store.fetchUserPublicKey(user)
        let (own, signing) = try publicKeys(of: key)
        return report(user, keyStore, key, published: published?.publicKey == own && published?.signingPublicKey == signing, created: false)
    }

    /// What CloudKit calls resetting encrypted data, for a user who lost their key: every
    /// encrypted zone of theirs is dropped on the store with reason `encryptedDataReset`
    /// (devices that hold copies upload them again, under a new zone key), and a new key
    /// pair is made and published.
    ///
    /// The new key is saved beside the current one (`UserKeyStore.savePending`) before
    /// anything on the store changes and takes its place only once the zones are dropped: a
    /// reset cut short leaves this machine a key that matches the store, and a retried reset
    /// carries on with the same new key.
    public static func reset(user: String, keyStore: UserKeyStore, store: any RemoteStore) async throws(RecSyncError) -> UserKeyReport {
        let key: Curve25519.KeyAgreement.PrivateKey
        if let pending = try keyStore.loadPending(user) {
            key = pending
        } else {
            key = Curve25519.KeyAgreement.PrivateKey()
            try keyStore.savePending(key, for: user)
        }
        let encrypted = try await store.fetchAllRecordZones(scope: .private).filter { $0.encryption != nil }.map(\.zoneID)
        if !encrypted.isEmpty {
            for result in try await store.modifyRecordZones(encrypted.map { .markEncryptedDataReset($0) }) {
                if case .failure(let error) = result.result, error.code != .zoneNotFound { throw error }
            }
        }
        try keyStore.promotePending(user)
        let (own, signing) = try publicKeys(of: key)
        try await store.publishUserPublicKey(own, signingKey: signing)
        var out = report(user, keyStore, key, published: true, created: true)
        out.zonesReset = encrypted
        return out
    }

    /// The key file's content, to move the key to another device (`keys import` there).
    public static func export(user: String, keyStore: UserKeyStore) throws(RecSyncError) -> [UInt8] {
        guard let key = try keyStore.load(user) else {
            throw .keyUnavailable("no encryption key of \(user) on this machine (\(keyStore.path(for: user))); nothing to export")
        }
        return UserKeyStore.encode(key, user: user)
    }

    /// Installs a key exported on another device. A different key already here is replaced
    /// only with `replace` (it may be the only copy of what opens older data).
    public static func importKey(_ bytes: [UInt8], from source: String, user: String, keyStore: UserKeyStore, replace: Bool) throws(RecSyncError)
        -> UserKeyReport
    {
        let key = try UserKeyStore.decode(bytes, user: user, path: source)
        if let existing = try keyStore.load(user), existing.rawRepresentation != key.rawRepresentation, !replace {
            throw .alreadyExists(
                """
                \(keyStore.path(for: user)) already holds another key of \(user); export it first if it may still\
                 open data
                """
            ).suggesting(.replaceKey)
        }
        try keyStore.save(key, for: user)
        return report(user, keyStore, key, published: nil, created: false)
    }

    /// Writes a new file readable by its owner only (for `keys export`); refuses to overwrite.
    /// A failure leaves no file, never a partial one (`FileIO.createAtomically`).
    public static func writeNewPrivateFile(_ path: String, _ bytes: [UInt8]) throws(RecSyncError) {
        do { try FileIO.createAtomically(path, bytes, mode: 0o600) } catch {
            if case .fileSystem(_, _, let cause) = error.reason, cause?.errno == EEXIST {
                throw .fileSystem(path: path, message: "already exists; choose a new file name", cause: cause)
            }
            throw error
        }
    }

    static func report(_ user: String, _ keyStore: UserKeyStore, _ key: Curve25519.KeyAgreement.PrivateKey, published: Bool?, created: Bool)
        -> UserKeyReport
    {
        let publicKey = Array(key.publicKey.rawRepresentation)
        let digest = SHA256.hash(data: publicKey).map { String(format: "%02x", $0) }.joined()
        return UserKeyReport(
            user: user, path: keyStore.path(for: user), publicKey: publicKey, fingerprint: String(digest.prefix(16)), published: published,
            created: created)
    }
}
