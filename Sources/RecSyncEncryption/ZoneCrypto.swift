import Crypto
import Foundation
import RecSyncModel
import RecSyncStore

/// The cryptography of encrypted zones, all of it from swift-crypto: a zone key (32 random
/// bytes per generation) wrapped per participant with X25519 + HKDF-SHA256 + ChaChaPoly, and
/// each field sealed with ChaChaPoly under the zone key.
///
/// Associated data binds a wrapped key to (zone, user, generation) and a sealed field to
/// (store, zone, record name, field key, generation), so a ciphertext moved to another record,
/// field, zone or store fails to open.
///
/// A wrapped key says nothing of who wrapped it (the sender key is one-time), so the owner
/// signs the zone's whole `encryption` section with an Ed25519 key derived from their X25519
/// private key (the key file stays one 32-byte secret), and readers check that signature
/// before they unwrap or seal anything.
enum ZoneCrypto {
    /// The first byte of a sealed field: the format of what follows.
    static let fieldFormat: UInt8 = 1

    /// A fresh zone key.
    static func newZoneKey() -> SymmetricKey { SymmetricKey(size: .bits256) }

    /// Seals a zone key for a user's public key.
    static func wrap(_ zoneKey: SymmetricKey, generation: Int, zone: ZoneID, for user: String, publicKey: [UInt8]) throws(RecSyncError)
        -> WrappedZoneKey
    {
        do {
            let recipient = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: publicKey)
            let ephemeral = Curve25519.KeyAgreement.PrivateKey()
            let kek = try wrappingKey(
                ephemeral.sharedSecretFromKeyAgreement(with: recipient), ephemeral: Array(ephemeral.publicKey.rawRepresentation), recipient: publicKey
            )
            let raw = zoneKey.withUnsafeBytes { Array($0) }
            let box = try ChaChaPoly.seal(raw, using: kek, authenticating: keyBinding(zone: zone, user: user, generation: generation))
            return WrappedZoneKey(
                generation: generation, userRecordName: user, ephemeralPublicKey: Array(ephemeral.publicKey.rawRepresentation),
                sealedKey: Array(box.combined))
        } catch {
            throw .invalidValue(
                """
                cannot wrap the key of zone \(zone) for \(user): their published public key is not a valid\
                 X25519 key; \(user) must publish their key again
                """
            ).suggesting(.askToPublishKey(user: user))
        }
    }

    /// Opens a zone key wrapped for the holder of `privateKey`.
    static func unwrap(_ wrapped: WrappedZoneKey, zone: ZoneID, with privateKey: Curve25519.KeyAgreement.PrivateKey) throws(RecSyncError)
        -> SymmetricKey
    {
        do {
            let ephemeral = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: wrapped.ephemeralPublicKey)
            let own = Array(privateKey.publicKey.rawRepresentation)
            let kek = try wrappingKey(privateKey.sharedSecretFromKeyAgreement(with: ephemeral), ephemeral: wrapped.ephemeralPublicKey, recipient: own)
            let raw = try ChaChaPoly.open(
                ChaChaPoly.SealedBox(combined: wrapped.sealedKey), using: kek,
                authenticating: keyBinding(zone: zone, user: wrapped.userRecordName, generation: wrapped.generation))
            guard raw.count == 32 else { throw CryptoKitError.incorrectKeySize }
            return SymmetricKey(data: raw)
        } catch {
            throw .permissionFailure(
                """
                the key of zone \(zone) (generation \(wrapped.generation)) does not open with\
                 \(wrapped.userRecordName)'s private key on this machine: it was wrapped for another key (reset\
                 or not imported here) or was tampered with. Import your key, or ask the zone's owner to share\
                 the zone with you again
                """
            ).suggesting(.importKey)
        }
    }

    static func wrappingKey(_ secret: SharedSecret, ephemeral: [UInt8], recipient: [UInt8]) -> SymmetricKey {
        secret.hkdfDerivedSymmetricKey(
            using: SHA256.self, salt: Array("recsync zone key wrap v1".utf8), sharedInfo: ephemeral + recipient, outputByteCount: 32)
    }

    /// The user's Ed25519 signing key, derived from their X25519 private key (HKDF-SHA256),
    /// so that existing key files, `keys export` and `keys import` carry it unchanged.
    static func signingKey(for key: Curve25519.KeyAgreement.PrivateKey) throws(RecSyncError) -> Curve25519.Signing.PrivateKey {
        let seed = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: key.rawRepresentation), salt: Array("recsync signing key v1".utf8),
            info: Array("Ed25519".utf8), outputByteCount: 32)
        do { return try Curve25519.Signing.PrivateKey(rawRepresentation: seed.withUnsafeBytes { Array($0) }) } catch {
            throw .internalError("deriving the signing key from the encryption key failed: \(error)")
        }
    }

    /// What the owner signs of a zone's `encryption`: the store, the zone, the sealed-field
    /// list and every wrapped key, in a canonical order (the store may reorder JSON arrays).
    static func signedContent(_ encryption: ZoneEncryption, zone: ZoneID, storeID: String) -> [UInt8] {
        var parts = ["recsync zone encryption v1", storeID, zone.ownerName, zone.zoneName]
        if let fields = encryption.fields {
            let sorted = Set(fields).sorted()
            parts += ["fields", String(sorted.count)] + sorted
        } else {
            parts += ["all fields"]
        }
        let keys = encryption.keys.sorted { ($0.generation, $0.userRecordName) < ($1.generation, $1.userRecordName) }
        parts += ["keys", String(keys.count)]
        for k in keys {
            parts += [String(k.generation), k.userRecordName, Base64.encode(k.ephemeralPublicKey), Base64.encode(k.sealedKey)]
        }
        return lengthPrefixed(parts)
    }

    /// The section signed by the zone's owner.
    static func signed(_ encryption: ZoneEncryption, zone: ZoneID, storeID: String, by owner: Curve25519.KeyAgreement.PrivateKey) throws(RecSyncError)
        -> ZoneEncryption
    {
        var out = encryption
        out.signature = nil
        let key = try signingKey(for: owner)
        do { out.signature = Array(try key.signature(for: signedContent(out, zone: zone, storeID: storeID))) } catch {
            throw .internalError("signing the keys of zone \(zone) failed: \(error)")
        }
        return out
    }

    /// Checks that the zone's owner signed its `encryption` section; refuses it otherwise,
    /// naming the zone and its owner.
    static func verify(_ encryption: ZoneEncryption, zone: ZoneID, storeID: String, ownerSigningKey: [UInt8]) throws(RecSyncError) {
        let owner = zone.ownerName
        guard let signature = encryption.signature else {
            throw .permissionFailure(
                """
                the keys of encrypted zone \(zone) are not signed by its owner \(owner): written by an earlier\
                 recsync, or by someone writing to the store around recsync. Nothing is sealed with or opened by\
                 them. \(owner) can reset their key to make the zone again under signed keys (workspaces upload\
                 their copies again)
                """
            )
        }
        guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: ownerSigningKey),
            key.isValidSignature(signature, for: signedContent(encryption, zone: zone, storeID: storeID))
        else {
            throw .permissionFailure(
                """
                the keys of encrypted zone \(zone) do not carry a valid signature of its owner \(owner): someone\
                 writing to the store around recsync changed them (added a key generation or a reader, or\
                 dropped a sealed field), or \(owner) reset their key. Nothing is sealed with or opened by them.\
                 Ask \(owner), compare key fingerprints, and restore zone.json from the store's history
                """
            ).suggesting(.compareKeyFingerprints)
        }
    }

    /// Seals one field value: its typed store encoding, so the type is hidden too.
    static func seal(_ value: FieldValue, key: SymmetricKey, generation: Int, binding: FieldBinding) throws(RecSyncError) -> FieldValue {
        let plaintext = JSON.serialize(StoreEncoding.encodeValue(value), pretty: false)
        let box: ChaChaPoly.SealedBox
        do { box = try ChaChaPoly.seal(plaintext, using: key, authenticating: binding.associatedData(generation: generation)) } catch {
            throw .internalError("sealing field '\(binding.field)' of \(binding.recordName) failed: \(error)")
        }
        return .encrypted([fieldFormat] + bigEndian(UInt32(generation)) + Array(box.combined))
    }

    /// The generation a sealed field was written with; nil when it is not in a known format.
    static func generation(of sealed: [UInt8]) -> Int? {
        guard sealed.count >= 5 + 12 + 16, sealed[0] == fieldFormat else { return nil }
        return Int(sealed[1..<5].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
    }

    /// Opens one sealed field, or says which record and field would not open.
    static func open(_ sealed: [UInt8], keys: [Int: SymmetricKey], binding: FieldBinding) throws(RecSyncError) -> FieldValue {
        guard let generation = generation(of: sealed) else {
            throw .invalidValue(
                """
                \(binding.where): the field's ciphertext is not in a format this recsync knows (damaged, or\
                 written by a newer recsync); it was not applied
                """
            )
        }
        guard let key = keys[generation] else {
            throw .permissionFailure(
                """
                \(binding.where): sealed with key generation \(generation) of the zone, which you hold no key\
                 for (the zone's owner stopped sharing it with you, or your key was reset); it was not applied
                """
            )
        }
        let plaintext: Data
        do {
            plaintext = try ChaChaPoly.open(
                ChaChaPoly.SealedBox(combined: sealed[5...]), using: key, authenticating: binding.associatedData(generation: generation))
        } catch {
            throw .invalidValue(
                """
                \(binding.where): the ciphertext does not open with the zone key: it was tampered with, moved\
                 from another record or field, or sealed before the zone's key was reset. It was not applied. To\
                 replace the store's copy with yours, save over it whatever it holds (a forced save; an\
                 ordinary one refuses, since it cannot tell what it would overwrite); or restore the record\
                 from the store's history
                """
            ).suggesting(.forceSave)
        }
        let value: FieldValue
        do { value = try StoreEncoding.decodeValue(try JSON.parse(Array(plaintext)), key: binding.field) } catch {
            throw .invalidValue("\(binding.where): the opened value is not a typed field value (\(error.message)); it was not applied")
        }
        if case .encrypted = value { throw .invalidValue("\(binding.where): the opened value is itself ciphertext; it was not applied") }
        return value
    }

    static func keyBinding(zone: ZoneID, user: String, generation: Int) -> [UInt8] {
        lengthPrefixed(["recsync zone key v1", zone.ownerName, zone.zoneName, user, String(generation)])
    }

    static func bigEndian(_ n: UInt32) -> [UInt8] { [UInt8(n >> 24), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)] }

    /// Components joined unambiguously: each as a 4-byte length and its UTF-8.
    static func lengthPrefixed(_ parts: [String]) -> [UInt8] {
        var out: [UInt8] = []
        for p in parts {
            let bytes = Array(p.utf8)
            out += bigEndian(UInt32(bytes.count)) + bytes
        }
        return out
    }
}

/// What a sealed field is bound to.
struct FieldBinding {
    var storeID: String
    var zoneID: ZoneID
    var recordName: String
    var field: String

    var `where`: String { "record '\(recordName)' in zone \(zoneID), field '\(field)'" }

    func associatedData(generation: Int) -> [UInt8] {
        ZoneCrypto.lengthPrefixed(["recsync field v1", storeID, zoneID.ownerName, zoneID.zoneName, recordName, field, String(generation)])
    }
}
