import RecSyncModel

extension StoreCore {
    /// Publishes the acting user's public keys at `users/<user>/key.json` (one commit; none
    /// when the same keys are already there). Whatever is there otherwise, unreadable
    /// included, is replaced.
    func publishUserPublicKey(_ key: [UInt8], signingKey: [UInt8]) throws(RecSyncError) -> UserPublicKey {
        guard key.count == 32 else { throw .invalidArguments("a public key must be 32 bytes of X25519, found \(key.count)") }
        guard signingKey.count == 32 else { throw .invalidArguments("a signing key must be 32 bytes of Ed25519, found \(signingKey.count)") }
        return try commitWithRetry(
            on: .shared,
            { (head: String?, time: Int64) throws(RecSyncError) in
                if let head, let bytes = try backend.userKey(user, at: head), let old = try? ZoneDocuments.decodeUserKey(bytes, user: user),
                    old.publicKey == key, old.signingPublicKey == signingKey
                {
                    return (old, [], "")
                }
                let published = UserPublicKey(userRecordName: user, publicKey: key, signingPublicKey: signingKey, created: time)
                return (published, [.saveUserKey(user, ZoneDocuments.encodeUserKey(published))], "\(user): published a public key\n")
            }, finish: { _, _, _ in })
    }

    /// A user's published public key, nil when they have published none.
    func fetchUserPublicKey(_ user: String) throws(RecSyncError) -> UserPublicKey? {
        try NameRules.validateOwnerName(user)
        guard let bytes = try backend.userKey(user, at: try backend.head()) else { return nil }
        return try ZoneDocuments.decodeUserKey(bytes, user: user)
    }
}
