import Crypto
import RecSyncModel
import RecSyncStore
import RecSyncSystem
import RecSyncWorkspace

/// What reading a zone's scope again came to, per zone, for one page of records: none is
/// read twice for a page.
enum PageZoneRead {
    case done
    /// The read failed: the rest of the page fails the same way for that zone.
    case failed(RecSyncError)
}

typealias PageZoneReads = [ZoneID: PageZoneRead]

/// A store as a client of encrypted zones sees it: fields of records in an encrypted zone
/// are sealed before they leave for the store and opened when they come back, and zone keys
/// are minted, wrapped for participants and rotated as zones are created and shared.
///
/// The store underneath (the "server") sees only ciphertext; everything above (pull, push,
/// the workspace) sees plaintext. Zones that are not encrypted pass through untouched.
public actor EncryptingStore: RemoteStore {
    let inner: any RemoteStore
    let keyStore: UserKeyStore
    /// What each zone's `zone.json` said last time it was looked at.
    var zones: [ZoneID: RecordZone] = [:]
    /// Opened zone keys by generation.
    var zoneKeys: [ZoneID: [Int: SymmetricKey]] = [:]
    /// Key generations of each zone looked for, with the zone read again, and not opened:
    /// a field sealed with one fails without the zone and the key file being read again,
    /// until the zone's `zone.json` or this user's key changes, or `databaseChanges` lists
    /// the zone as changed.
    var missingGenerations: [ZoneID: Set<Int>] = [:]
    /// Why a generation of a zone's key did not open, when more is known than that none is
    /// wrapped for this user (the entry for them did not unwrap, or no key could be opened).
    var keyFailures: [ZoneID: [Int: RecSyncError]] = [:]
    /// This user's private key as last read, with the key file's stamp then: read (and its
    /// permissions checked) again when the file or its directory changed (a key reset or
    /// import, a `chmod`).
    var ownKey: (stamp: KeyFileStamp, key: Curve25519.KeyAgreement.PrivateKey)?
    /// Zones looked for and not found: not looked for again for every record.
    var unknownZones: Set<ZoneID> = []
    /// Where what must not change behind this client's back is remembered (see `init`); nil:
    /// not kept.
    let state: (any ClientStateStore)?
    /// Where the zones once seen encrypted are remembered, as a message names it; nil: not kept.
    var pinFile: String? { state?.describeState(Self.pinsName) }
    /// Where other users' public keys, once used, are remembered; nil: not kept.
    var knownKeysFile: String? { state?.describeState(Self.knownKeysName) }
    /// Zones once seen encrypted, with the newest key generation seen, loaded from `pinFile`
    /// on first use.
    var pinned: [ZoneID: Int]?
    /// Where the sealed-field list of each encrypted zone, once checked, is remembered; nil:
    /// not kept.
    var sealedFieldsFile: String? { state?.describeState(Self.sealedFieldsName) }
    /// The sealed-field lists loaded from `sealedFieldsFile` on first use.
    var sealedPins: [ZoneID: SealedFields]?
    /// Each zone's `encryption` as it was when its owner's signature last checked.
    var verified: [ZoneID: ZoneEncryption] = [:]
    /// Other owners' signing keys as published and checked against `known-keys`.
    var signers: [String: [UInt8]] = [:]

    /// Opens `inner` through this client's keys.
    ///
    /// - Parameters:
    ///   - inner: the store to read and write; it only ever sees sealed values of the fields
    ///     an encrypted zone seals.
    ///   - keyStore: where this user's private key is (`UserKeyStore(environment:)`: the key
    ///     directory under `$XDG_CONFIG_HOME/recsync/keys/`).
    ///   - state: where this client (a workspace, or `DirectoryClientState` for an app)
    ///     remembers what the store must not be able to change behind its back: every zone once
    ///     seen encrypted (`encrypted-zones`), so that a `zone.json` stripped of its
    ///     `encryption` by someone writing around recsync does not make it push that zone's
    ///     values in clear; and the public key of each user it wrapped a zone key for
    ///     (`known-keys`), so that a published key swapped by such a writer is refused, not
    ///     given the zone key; and the fields each encrypted zone seals (`sealed-fields`), so
    ///     that a list shortened on the store, even one signed again after the owner's key
    ///     reset, does not make it push a field in clear.
    public init(_ inner: any RemoteStore, keyStore: UserKeyStore, state: (any ClientStateStore)? = nil) {
        self.inner = inner
        self.keyStore = keyStore
        self.state = state
    }

    /// `init(_:keyStore:state:)` with the state as files in `pinDirectory`.
    public init(_ inner: any RemoteStore, keyStore: UserKeyStore, pinDirectory: String?) {
        self.init(inner, keyStore: keyStore, state: pinDirectory.map { DirectoryClientState(directory: $0) })
    }

    /// The names of what this store keeps in its client's state.
    static let pinsName = "encrypted-zones", knownKeysName = "known-keys", sealedFieldsName = "sealed-fields"

    public nonisolated var userRecordName: String { inner.userRecordName }
    public nonisolated var storeID: String { inner.storeID }
    public nonisolated var remote: String? { inner.remote }
    public nonisolated func changeSignal() throws(RecSyncError) -> StoreChangeSignal? { try inner.changeSignal() }
    public nonisolated func prepareForBulkRead() { inner.prepareForBulkRead() }
    public func beginOperation(fromLastLook: Bool) async { await inner.beginOperation(fromLastLook: fromLastLook) }
    public func endOperation() async { await inner.endOperation() }

    public func databaseChanges(scope: DatabaseScope, since token: ServerChangeToken?, resultsLimit: Int) async throws(RecSyncError)
        -> DatabaseChanges
    {
        let changes = try await inner.databaseChanges(scope: scope, since: token, resultsLimit: resultsLimit)
        // A key generation found missing in a zone that changed since may be there now (the
        // zone shared again, its generation wrapped for this user): it is looked for again,
        // with the zone read again, when next needed. Without this a long-lived handle with
        // no pin directory (the embedded engine's), which reads zones only when a record
        // needs it, refused those fields until it was made anew.
        for zoneID in changes.modifications {
            missingGenerations[zoneID] = nil
            keyFailures[zoneID] = nil
        }
        // Zones changed are looked at now, so that a zone seen encrypted is remembered (see
        // `init`) from the first pull or clone on, not only once a record of it is read.
        if pinFile != nil, !changes.modifications.isEmpty { try await refreshZones(scope) }
        return changes
    }

    public func recordZoneChanges(zone: ZoneID, since token: ServerChangeToken?, resultsLimit: Int, desiredKeys: [String]?) async throws(RecSyncError)
        -> RecordZoneChanges
    {
        var changes = try await inner.recordZoneChanges(zone: zone, since: token, resultsLimit: resultsLimit, desiredKeys: desiredKeys)
        changes.modifications = await opened(changes.modifications)
        return changes
    }

    public func modifyRecords(
        saving: [Record], deleting: [RecordDeletion], savePolicy: SavePolicy, atomically: Bool, clientChangeTokenData: String?
    ) async throws(RecSyncError) -> ModifyRecordsResult {
        let sealed = try await sealed(saving)
        var result = try await inner.modifyRecords(
            saving: sealed, deleting: deleting, savePolicy: savePolicy, atomically: atomically, clientChangeTokenData: clientChangeTokenData)
        result.saveResults = await opened(result.saveResults)
        return result
    }

    public func modifyRecordZones(_ operations: [ZoneOperation]) async throws(RecSyncError) -> [ZoneOperationResult] {
        var sent: [ZoneOperation] = []
        // The sections signed here (`keyed` signs exactly those it changes).
        var justSigned: [ZoneID: ZoneEncryption] = [:]
        try await refreshZones(.private)
        for operation in operations {
            let before = zones[operation.zoneID]?.encryption
            switch operation {
            case .save(let zone): sent.append(.save(try await keyed(zone, resetUpload: false)))
            case .recreate(let zone): sent.append(.recreate(try await keyed(zone, resetUpload: false)))
            case .uploadAfterReset(let zone): sent.append(.uploadAfterReset(try await keyed(zone, resetUpload: true)))
            default: sent.append(operation)
            }
            switch sent.last {
            case .save(let z)?, .recreate(let z)?, .uploadAfterReset(let z)?: if let e = z.encryption, e != before { justSigned[z.zoneID] = e }
            default: break
            }
        }
        let results = try await inner.modifyRecordZones(sent)
        var saved: [RecordZone] = []
        for r in results {
            forgetKeys(r.operation.zoneID)
            if case .success(let zone) = r.result {
                zones[r.operation.zoneID] = zone
                if let zone { saved.append(zone) }
            }
        }
        // What this client just signed for its own zone is the list from now on (a zone
        // deleted and created again may seal fewer fields: its owner said so). A section
        // passed through unchanged is not taken: it was not checked.
        for zone in saved {
            if let e = zone.encryption, justSigned[zone.zoneID] == e { try pinSealedFields(SealedFields(e.fields), of: zone.zoneID) }
        }
        if pinFile != nil, !saved.isEmpty {
            var pins = try loadPins()
            pinGenerations(saved, in: &pins)
            if pins != pinned { try savePins(pins) }
        }
        return results
    }

    public func fetchAllRecordZones(scope: DatabaseScope) async throws(RecSyncError) -> [RecordZone] {
        let all = try await inner.fetchAllRecordZones(scope: scope)
        try await remember(all, scope: scope)
        return all
    }

    public func fetchZoneDeletions(_ zoneIDs: [ZoneID]) async throws(RecSyncError) -> [ZoneDeletion] {
        try await inner.fetchZoneDeletions(zoneIDs)
    }

    @discardableResult
    public func publishUserPublicKey(_ key: [UInt8], signingKey: [UInt8]) async throws(RecSyncError) -> UserPublicKey {
        try await inner.publishUserPublicKey(key, signingKey: signingKey)
    }

    public func fetchUserPublicKey(_ user: String) async throws(RecSyncError) -> UserPublicKey? {
        try await inner.fetchUserPublicKey(user)
    }

    /// Assets pass through in clear: a zone that seals a field refuses a file in it, so only
    /// files in fields a zone leaves in clear get here.
    public nonisolated var maxAssetBytes: Int64 { inner.maxAssetBytes }

    /// Uploads a file for a field its zone leaves in clear; one for a field the zone seals
    /// is refused before the store sees a byte of it.
    ///
    /// The store checks that too, against its `zone.json`; this checks against what this
    /// client trusts (see `init`), so a `zone.json` stripped of its `encryption` or of a
    /// sealed field around recsync does not make it send the file in clear either.
    public func uploadAsset(fd: Int32, path: String, for recordID: RecordID, field: String) async throws(RecSyncError) -> AssetReference {
        let zoneID = recordID.zoneID
        if zones[zoneID] == nil { try await refreshZones(zoneID.ownerName == userRecordName ? .private : .shared) }
        if let encryption = try await sealing(zoneID), encryption.seals(field) {
            throw ZoneEncryption.fileInSealedField(recordID, field: field)
        }
        return try await inner.uploadAsset(fd: fd, path: path, for: recordID, field: field)
    }

    public func downloadAsset(_ asset: AssetReference, zone: ZoneID, fd: Int32, path: String) async throws(RecSyncError) {
        try await inner.downloadAsset(asset, zone: zone, fd: fd, path: path)
    }

    public func currentDatabaseToken(scope: DatabaseScope) async throws(RecSyncError) -> ServerChangeToken {
        try await inner.currentDatabaseToken(scope: scope)
    }

    public func checkSubscriptions(_ subscriptions: [Subscription], scope: DatabaseScope, since token: ServerChangeToken?) async throws(RecSyncError)
        -> SubscriptionCheck
    {
        try await inner.checkSubscriptions(subscriptions, scope: scope, since: token)
    }

    public func fetchRecords(_ ids: [RecordID], desiredKeys: [String]?) async throws(RecSyncError) -> [RecordResult] {
        await opened(try await inner.fetchRecords(ids, desiredKeys: desiredKeys))
    }

    public func fetchRecordVersion(_ id: RecordID, changeTag: String) async throws(RecSyncError) -> Record? {
        guard let record = try await inner.fetchRecordVersion(id, changeTag: changeTag) else { return nil }
        // An old version (a merge's ancestor) sealed under a key since reset is unavailable,
        // like one pruned: the merge falls back to a conflict instead of failing the pull.
        var read: PageZoneReads = [:]
        return try? await open(record, read: &read)
    }

    // MARK: Fields

    /// Records as the store returned them, opened; a record that will not open fails alone.
    ///
    /// A zone is read again at most once for the whole page (see `open`).
    func opened(_ results: [RecordResult]) async -> [RecordResult] {
        var out: [RecordResult] = []
        out.reserveCapacity(results.count)
        var read: PageZoneReads = [:]
        for item in results {
            switch item.result {
            case .success(let record):
                do throws(RecSyncError) {
                    out.append(RecordResult(recordID: item.recordID, result: .success(try await open(record, read: &read))))
                } catch {
                    out.append(RecordResult(recordID: item.recordID, result: .failure(error)))
                }
            case .failure(let failure) where failure.kind == .serverRecordChanged:
                guard case .serverRecordChanged(var conflict) = failure.reason else { continue }
                do throws(RecSyncError) {
                    if let r = conflict.server { conflict.server = try await open(r, read: &read) }
                    if let r = conflict.client { conflict.client = try await open(r, read: &read) }
                    if let r = conflict.ancestor { conflict.ancestor = try? await open(r, read: &read) }  // see fetchRecordVersion
                    out.append(RecordResult(recordID: item.recordID, result: .failure(.serverRecordChanged(conflict))))
                } catch {
                    out.append(RecordResult(recordID: item.recordID, result: .failure(error)))
                }
            case .failure:
                out.append(item)
            }
        }
        return out
    }

    /// One record with its sealed fields opened. A clear value where the zone seals the field
    /// is refused too (a reader of the store must not be able to slip values in), except in
    /// `history`, where an old version may predate the zone's current settings.
    ///
    /// `read` holds the zones whose scope was read again for the page this record is part
    /// of: none is read twice for one page, however many of its records or fields need a key
    /// generation not opened yet.
    func open(_ record: Record, history: Bool = false, read: inout PageZoneReads) async throws(RecSyncError) -> Record {
        let zoneID = record.recordID.zoneID
        let sealed = record.fields.contains { if case .encrypted = $0.value { true } else { false } }
        // A zone not seen yet is looked up once (its scope read again), so that a clear value
        // where an encrypted zone seals the field is caught on a first pull too.
        if zones[zoneID] == nil && (sealed || !unknownZones.contains(zoneID)) {
            switch read[zoneID] {
            case .done?:
                break
            case .failed(let error)?:
                // Not tried again by every later record of the page, and no record of a zone
                // that could not be looked up passes unchecked: each fails as the read did.
                throw error
            case nil:
                do throws(RecSyncError) {
                    try await refreshZones(zoneID.ownerName == userRecordName ? .private : .shared)
                } catch {
                    read[zoneID] = .failed(error)
                    throw error
                }
                read[zoneID] = .done
                if zones[zoneID] == nil { unknownZones.insert(zoneID) }
            }
        }
        if !sealed && zones[zoneID]?.encryption == nil { return record }
        let encryption = try await trustedEncryption(zoneID)
        guard let encryption else {
            throw .invalidValue(
                "record '\(record.recordID.recordName)' in zone \(zoneID) holds encrypted fields, but the zone is not encrypted; it was not applied")
        }
        var out = record
        for (key, value) in record.fields {
            let binding = FieldBinding(storeID: storeID, zoneID: zoneID, recordName: record.recordID.recordName, field: key)
            guard case .encrypted(let bytes) = value else {
                if encryption.seals(key) && !history {
                    throw .invalidValue("\(binding.where): the value is in clear in an encrypted zone (written around recsync); it was not applied")
                }
                continue
            }
            let generation = ZoneCrypto.generation(of: bytes) ?? 0
            let keys = await keys(of: zoneID, holding: generation, read: &read)
            if keys[generation] == nil, let failure = keyFailures[zoneID]?[generation] {
                guard case .permissionFailure(let why) = failure.reason else { throw failure }
                throw .permissionFailure(
                    "\(binding.where): sealed with key generation \(generation) of the zone, which you hold no key for here: \(why)")
            }
            out.fields[key] = try ZoneCrypto.open(bytes, keys: keys, binding: binding)
        }
        return out
    }

    /// Records to save, with the fields their zones seal sealed under the current key.
    ///
    /// Every save seals afresh (a new nonce), unchanged fields too: the store stamps
    /// `modified` on every save, so the blob and its change tag change anyway, and keeping
    /// an unchanged field's old ciphertext would only tell a reader of the store which
    /// fields an edit touched.
    func sealed(_ records: [Record]) async throws(RecSyncError) -> [Record] {
        guard !records.isEmpty else { return records }
        try await refreshZones(.private)
        if records.contains(where: { $0.recordID.zoneID.ownerName != userRecordName }) { try await refreshZones(.shared) }
        var out: [Record] = []
        out.reserveCapacity(records.count)
        for record in records {
            let zoneID = record.recordID.zoneID
            guard let encryption = try await sealing(zoneID) else {
                out.append(record)
                continue
            }
            let generation = encryption.currentGeneration
            if pinFile != nil, let newest = try loadPins()[zoneID], generation < newest {
                throw .permissionFailure(
                    """
                    zone \(zoneID) on the store has key generation \(generation), older than generation \(newest)\
                     seen before: its zone.json was put back (written around recsync?), perhaps to give a removed\
                     participant the key again; its records are not pushed
                    """
                )
            }
            var keys = zoneKeys[zoneID] ?? [:]
            if keys[generation] == nil { keys = try await openKeys(zoneID, refresh: false) }
            if keys[generation] == nil, let failure = keyFailures[zoneID]?[generation] {
                guard case .permissionFailure = failure.reason else { throw failure }  // the network, say: as it came
                throw .permissionFailure(
                    """
                    records of zone \(zoneID) were not pushed: generation \(generation) of its key, the one new\
                     writes use, does not open here (\(failure.message)). Import the key exported on the device\
                     that opens it, or reset it if it is lost
                    """
                ).suggesting(.importKey, .resetKeys)
            }
            guard let key = keys[generation] else {
                throw .permissionFailure(
                    "zone \(zoneID) is encrypted and its current key is not wrapped for \(userRecordName); ask its owner to share it with you again")
            }
            var sealedRecord = record
            for (field, value) in record.fields where encryption.seals(field) {
                let binding = FieldBinding(storeID: storeID, zoneID: zoneID, recordName: record.recordID.recordName, field: field)
                if case .encrypted = value {
                    throw .invalidValue("\(binding.where): the value is already ciphertext; write the field's plain value")
                }
                // Files are not sealed (yet): left in clear, the store refuses this record alone.
                if case .asset = value { continue }
                sealedRecord.fields[field] = try ZoneCrypto.seal(value, key: key, generation: generation, binding: binding)
            }
            out.append(sealedRecord)
        }
        return out
    }

    /// The `encryption` that what is sent into `zoneID` must follow (`trustedEncryption`);
    /// nil for a zone that is not encrypted. A zone once seen encrypted whose `zone.json`
    /// no longer says so is refused: nothing is sent into it in clear.
    func sealing(_ zoneID: ZoneID) async throws(RecSyncError) -> ZoneEncryption? {
        if let encryption = try await trustedEncryption(zoneID) { return encryption }
        if try isPinned(zoneID) {
            throw .permissionFailure(
                """
                zone \(zoneID) was encrypted, and its zone.json on the store no longer says so (written around\
                 recsync?); its records and files are not pushed in clear. If its owner really deleted it and\
                 created it again without encryption, remove its line from \(pinFile ?? "the pin file") and push\
                 again
                """
            )
        }
        return nil
    }

    // MARK: Keys

    /// Reads a scope's zones again: changed ones forget their opened keys, and zones gone
    /// from the store (deleted, reset, unshared) are forgotten.
    func refreshZones(_ scope: DatabaseScope) async throws(RecSyncError) {
        let all = try await inner.fetchAllRecordZones(scope: scope)
        try await remember(all, scope: scope)
    }

    func remember(_ all: [RecordZone], scope: DatabaseScope) async throws(RecSyncError) {
        let present = Set(all.map(\.zoneID))
        if pinFile != nil {
            // A zone gone (deleted, reset, unshared) may come back with a key of generation 1;
            // that it was encrypted is kept. One of the user's own zones counts as gone only
            // with a tombstone: a zone.json someone made unreadable hides the zone without
            // one, and lowering its pin then would let an older zone.json put back after it
            // pass (a removed participant's key in use again). A zone shared with the user
            // has no tombstone the user can read; its going (unshared, or reset) is trusted.
            // A generation is pinned only once its owner's signature checks: a forged one
            // pinned would make the genuine zone.json, put back, look rolled back. A zone
            // whose signature does not check is still remembered as encrypted. (Checked
            // before the pins are read, so no await falls between reading and saving them.)
            var signed: Set<ZoneID> = []
            for z in all {
                if let e = z.encryption, await signatureHolds(e, of: z.zoneID) { signed.insert(z.zoneID) }
            }
            var pins = try loadPins()
            let vanished = pins.filter { $0.value > 0 && ($0.key.ownerName == userRecordName) == (scope == .private) && !present.contains($0.key) }
                .map(\.key)
            let gone =
                scope == .private && !vanished.isEmpty
                ? Set(try await inner.fetchZoneDeletions(vanished).map(\.zoneID)) : Set(vanished)
            for id in vanished where gone.contains(id) {
                pins[id] = 0
            }
            pinGenerations(all.filter { signed.contains($0.zoneID) }, in: &pins)
            for z in all where z.encryption != nil && pins[z.zoneID] == nil { pins[z.zoneID] = 0 }
            if pins != pinned { try savePins(pins) }
        }
        for id in zones.keys where (id.ownerName == userRecordName) == (scope == .private) && !present.contains(id) {
            zones[id] = nil
            forgetKeys(id)
        }
        for z in all {
            unknownZones.remove(z.zoneID)
            if zones[z.zoneID] != z { forgetKeys(z.zoneID) }
            zones[z.zoneID] = z
        }
    }

    /// Forgets what was opened, or found not to open, of a zone's keys (its `zone.json` changed).
    func forgetKeys(_ zoneID: ZoneID) {
        zoneKeys[zoneID] = nil
        missingGenerations[zoneID] = nil
        keyFailures[zoneID] = nil
    }

    func pinGenerations(_ zones: [RecordZone], in pins: inout [ZoneID: Int]) {
        for z in zones {
            if let e = z.encryption, (pins[z.zoneID] ?? -1) < e.currentGeneration { pins[z.zoneID] = e.currentGeneration }
        }
    }

    func isPinned(_ zoneID: ZoneID) throws(RecSyncError) -> Bool {
        guard pinFile != nil else { return false }
        return try loadPins()[zoneID] != nil
    }

    /// The pin file: one line per zone, `owner/zone generation` with both names escaped as in
    /// the store.
    func loadPins() throws(RecSyncError) -> [ZoneID: Int] {
        if let pinned { return pinned }
        var out: [ZoneID: Int] = [:]
        if let bytes = try state?.readState(Self.pinsName) {
            for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
                let fields = line.split(separator: " ")
                let parts = (fields.first ?? "").split(separator: "/", omittingEmptySubsequences: false)
                guard parts.count == 2, let owner = NameEscaping.unescape(String(parts[0])), let zone = NameEscaping.unescape(String(parts[1])),
                    let id = try? ZoneID(zoneName: zone, ownerName: owner)
                else { continue }
                out[id] = fields.count > 1 ? Int(fields[1]) ?? 0 : 0
            }
        }
        pinned = out
        return out
    }

    func savePins(_ pins: [ZoneID: Int]) throws(RecSyncError) {
        guard let state else { return }
        let lines = pins.map { "\(NameEscaping.escape($0.key.ownerName))/\(NameEscaping.escape($0.key.zoneName)) \($0.value)\n" }.sorted()
        try state.writeState(Self.pinsName, Array(lines.joined().utf8))
        pinned = pins
    }

    /// This user's private key, read from the key store once and again only when the key
    /// file changed. Another key than before (imported, or a first one) may open what did
    /// not open without it: the generations found missing are looked for again.
    func privateKey() throws(RecSyncError) -> Curve25519.KeyAgreement.PrivateKey {
        let stamp = keyStore.stamp(of: userRecordName)
        if let ownKey, ownKey.stamp == stamp { return ownKey.key }
        guard let key = try keyStore.load(userRecordName) else {
            throw .permissionFailure(
                """
                no encryption key of \(userRecordName) on this machine (\(keyStore.path(for: userRecordName)));\
                 make a new one, or bring yours from another device
                """
            ).suggesting(.makeKey, .importKey)
        }
        if ownKey?.key.rawRepresentation != key.rawRepresentation {
            zoneKeys = [:]
            missingGenerations = [:]
            keyFailures = [:]
        }
        ownKey = stamp.map { ($0, key) }
        return key
    }

    /// Every generation of a zone's key wrapped for this user that opens. An entry that does
    /// not (wrapped for a key this machine does not hold) costs only the fields sealed with
    /// its generation: why is kept in `keyFailures`.
    func openKeys(_ zoneID: ZoneID, refresh: Bool) async throws(RecSyncError) -> [Int: SymmetricKey] {
        if refresh { try await refreshZones(zoneID.ownerName == userRecordName ? .private : .shared) }
        guard let encryption = try await trustedEncryption(zoneID) else { return [:] }
        let own = try privateKey()
        var keys: [Int: SymmetricKey] = [:]
        var failures: [Int: RecSyncError] = [:]
        for wrapped in encryption.keys where wrapped.userRecordName == userRecordName {
            do { keys[wrapped.generation] = try ZoneCrypto.unwrap(wrapped, zone: zoneID, with: own) } catch { failures[wrapped.generation] = error }
        }
        for generation in keys.keys { failures[generation] = nil }
        zoneKeys[zoneID] = keys
        keyFailures[zoneID] = failures
        return keys
    }

    /// The opened keys of a zone, `generation` among them when this user holds it.
    ///
    /// A generation not opened yet is looked for in the zone as known, then with the zone
    /// read again, unless `read` says it was read for this page already. One still missing
    /// once the zone was read (or whose entry did not open: `keyFailures`) is not looked
    /// for again until the zone's `zone.json` or this user's key changes, or a pull sees the
    /// zone changed (`databaseChanges`), so a page of fields sealed with a key this user
    /// lacks reads the zone and the key file once, not once per field. A read that failed (the network, say) stands for the rest of the
    /// page only: a later page looks again.
    func keys(of zoneID: ZoneID, holding generation: Int, read: inout PageZoneReads) async -> [Int: SymmetricKey] {
        var keys = zoneKeys[zoneID]
        if let keys, keys[generation] != nil { return keys }
        if missingGenerations[zoneID]?.contains(generation) == true {
            // Still missing unless the private key changed since (imported): `privateKey`,
            // which only looks at the key file's stamp then, forgets what was found missing.
            do { _ = try privateKey() } catch { keyFailures[zoneID, default: [:]][generation] = error }
            if missingGenerations[zoneID]?.contains(generation) == true { return keys ?? [:] }
        }
        if case .failed? = read[zoneID] { return keys ?? [:] }
        do throws(RecSyncError) {
            if keys == nil { keys = try await openKeys(zoneID, refresh: false) }
            if keys?[generation] == nil, read[zoneID] == nil {
                do throws(RecSyncError) { keys = try await openKeys(zoneID, refresh: true) } catch {
                    read[zoneID] = .failed(error)
                    throw error
                }
                read[zoneID] = .done
            }
        } catch {
            keyFailures[zoneID, default: [:]][generation] = error
            return keys ?? [:]
        }
        if keys?[generation] == nil { missingGenerations[zoneID, default: []].insert(generation) }
        return keys ?? [:]
    }

    /// A zone to save with its keys as they must be: minted for a new encrypted zone (or one
    /// uploaded again after a reset), wrapped for participants added, rotated when one left.
    func keyed(_ zone: RecordZone, resetUpload: Bool) async throws(RecSyncError) -> RecordZone {
        var zone = zone
        let existing = zones[zone.zoneID]?.encryption
        if let existing {
            zone.encryption = try await rewrapped(existing, zone: zone, previous: zones[zone.zoneID]?.participants ?? [])
        } else if var requested = resetUpload && zone.encryption == nil ? ZoneEncryption(fields: try fieldsBeforeReset(zone.zoneID)) : zone.encryption
        {
            // Only encrypted zones are reset, so a zone uploaded again after one is encrypted.
            let key = ZoneCrypto.newZoneKey()
            requested.keys = []
            for user in [zone.zoneID.ownerName] + zone.participants.map(\.userRecordName) {
                requested.keys.append(try ZoneCrypto.wrap(key, generation: 1, zone: zone.zoneID, for: user, publicKey: try await publicKey(of: user)))
            }
            zone.encryption = requested
            zoneKeys[zone.zoneID] = [1: key]
        }
        if let encryption = zone.encryption, encryption != existing {
            zone.encryption = try ZoneCrypto.signed(encryption, zone: zone.zoneID, storeID: storeID, by: try privateKey())
        }
        return zone
    }

    /// The fields a zone uploaded again after a key reset seals: those it sealed before, as
    /// this workspace pinned them (`sealed-fields`) or, without a pin, as last seen signed
    /// by its owner through this handle; every field when neither is known. Sealing every
    /// field would lose the zone's choice of fields left in clear, and the files kept in
    /// them would be refused half-way through the push that creates the zone again.
    func fieldsBeforeReset(_ zoneID: ZoneID) throws(RecSyncError) -> [String]? {
        let before = try loadSealedPins()[zoneID] ?? verified[zoneID].map { SealedFields($0.fields) }
        switch before {
        case .only(let fields)?: return fields.sorted()
        case .all?, nil: return nil
        }
    }

    /// The zone's keys wrapped again after its participants changed.
    ///
    /// Who holds the key before is what the owner signed (the users keys are wrapped for),
    /// not the share list in `zone.json`, which anyone who can push may edit: a user put on
    /// that list around recsync is given the key only when this save adds them, and one
    /// taken off it loses it (a new generation) rather than keeping it.
    func rewrapped(_ encryption: ZoneEncryption, zone: RecordZone, previous: [ShareParticipant]) async throws(RecSyncError) -> ZoneEncryption {
        let listed = Set(zone.participants.map(\.userRecordName))
        let listedBefore = Set(previous.map(\.userRecordName))
        guard listed != listedBefore else { return encryption }
        var keys = try await openKeys(zone.zoneID, refresh: false)  // checks the owner's signature
        // Wrapped again without a generation that did not open, it would be lost to everyone.
        if let (generation, failure) = keyFailures[zone.zoneID]?.min(by: { $0.key < $1.key }) {
            guard case .permissionFailure = failure.reason else { throw failure }  // the network, say: as it came
            throw .permissionFailure(
                """
                changing who shares zone \(zone.zoneID) was refused: generation \(generation) of its key does\
                 not open here (\(failure.message)), and wrapping the keys again without it would leave the\
                 fields it sealed unreadable to everyone. Import the key exported on the device that opens it,\
                 or reset it if it is lost
                """
            ).suggesting(.importKey, .resetKeys)
        }
        let owner = zone.zoneID.ownerName
        let before = Set([owner] + encryption.keys.map(\.userRecordName))
        let readers = Set([owner]).union(listed.intersection(before)).union(listed.subtracting(listedBefore))
        guard readers != before else { return encryption }
        var generation = encryption.currentGeneration
        if !before.subtracting(readers).isEmpty {
            // Someone left: new writes use a key they never had.
            generation += 1
            keys[generation] = ZoneCrypto.newZoneKey()
        }
        var out = ZoneEncryption(fields: encryption.fields)
        for user in readers.sorted() {
            let publicKey = try await publicKey(of: user)
            for (g, key) in keys.sorted(by: { $0.key < $1.key }) {
                out.keys.append(try ZoneCrypto.wrap(key, generation: g, zone: zone.zoneID, for: user, publicKey: publicKey))
            }
        }
        return out
    }

    /// A user's public key: this machine's for the acting user (published if the store has
    /// none), the published one for anyone else.
    func publicKey(of user: String) async throws(RecSyncError) -> [UInt8] {
        if user == userRecordName {
            let (own, signing) = try EncryptionKeys.publicKeys(of: try privateKey())
            let published = try await inner.fetchUserPublicKey(user)
            guard published == nil || published?.publicKey == own else {
                throw .permissionFailure(
                    """
                    the public key published for \(user) is not the one of the private key on this machine (it was\
                     reset on another device); import the key exported there
                    """
                ).suggesting(.importKey)
            }
            if published?.signingPublicKey != signing { try await inner.publishUserPublicKey(own, signingKey: signing) }
            return own
        }
        guard let published = try await inner.fetchUserPublicKey(user) else {
            throw .keyUnavailable(
                """
                \(user) has published no public key, so the encrypted zone cannot be shared with them until\
                 they do; then try again
                """
            ).suggesting(.askToPublishKey(user: user))
        }
        try checkKnownKey(published)
        return published.publicKey
    }

    /// The public key that checks `owner`'s signatures of their zones' keys: derived from
    /// this machine's private key for the acting user, the published one (pinned as
    /// `checkKnownKey` does) for anyone else.
    func signingPublicKey(of owner: String, zone: ZoneID) async throws(RecSyncError) -> [UInt8] {
        if owner == userRecordName { return try EncryptionKeys.publicKeys(of: try privateKey()).signing }
        if let known = signers[owner] { return known }
        guard let published = try await inner.fetchUserPublicKey(owner), let signing = published.signingPublicKey else {
            throw .permissionFailure(
                """
                the keys of encrypted zone \(zone) cannot be checked: its owner \(owner) has published no\
                 signing key (users/\(owner)/key.json is missing or was written by an earlier recsync). Nothing\
                 is sealed with or opened by them until they publish one; then try again
                """
            ).suggesting(.askToPublishKey(user: owner))
        }
        try checkKnownKey(published)
        signers[owner] = signing
        return signing
    }

    /// Whether the owner's signature of `encryption` checks. Why it does not is not reported
    /// here: the section is refused, saying why, when it is used (`trustedEncryption`).
    func signatureHolds(_ encryption: ZoneEncryption, of zoneID: ZoneID) async -> Bool {
        do throws(RecSyncError) {
            let signer = try await signingPublicKey(of: zoneID.ownerName, zone: zoneID)
            try ZoneCrypto.verify(encryption, zone: zoneID, storeID: storeID, ownerSigningKey: signer)
            return true
        } catch {
            return false
        }
    }

    /// A zone's `encryption` once its owner's signature checks and it seals every field it
    /// sealed before (see `init`); nil for a zone not encrypted. Nothing may be unwrapped,
    /// sealed or opened with a section that did not pass.
    func trustedEncryption(_ zoneID: ZoneID) async throws(RecSyncError) -> ZoneEncryption? {
        guard let encryption = zones[zoneID]?.encryption else { return nil }
        if verified[zoneID] != encryption {
            let signer = try await signingPublicKey(of: zoneID.ownerName, zone: zoneID)
            try ZoneCrypto.verify(encryption, zone: zoneID, storeID: storeID, ownerSigningKey: signer)
            try checkSealedFields(encryption, of: zoneID)
            verified[zoneID] = encryption
        }
        return encryption
    }

    /// Refuses a sealed-field list that leaves out a field pinned before; pins it otherwise.
    func checkSealedFields(_ encryption: ZoneEncryption, of zoneID: ZoneID) throws(RecSyncError) {
        guard let sealedFieldsFile else { return }
        let now = SealedFields(encryption.fields)
        if let before = try loadSealedPins()[zoneID], let named = now.dropped(from: before) {
            throw .permissionFailure(
                """
                encrypted zone \(zoneID) of \(zoneID.ownerName) no longer seals \(named) on the store, which\
                 this workspace saw sealed: its zone.json was changed around recsync (or signed again after a\
                 key reset). Nothing was sealed or pushed with it, so no value goes out in clear. If\
                 \(zoneID.ownerName) really stopped sealing them, remove the zone's line from\
                 \(sealedFieldsFile) and try again
                """
            )
        }
        try pinSealedFields(now, of: zoneID)
    }

    func pinSealedFields(_ fields: SealedFields, of zoneID: ZoneID) throws(RecSyncError) {
        guard let state else { return }
        var pins = try loadSealedPins()
        guard pins[zoneID] != fields else { return }
        pins[zoneID] = fields
        let lines = pins.map { "\(NameEscaping.escape($0.key.ownerName))/\(NameEscaping.escape($0.key.zoneName))\($0.value.pinText)\n" }.sorted()
        try state.writeState(Self.sealedFieldsName, Array(lines.joined().utf8))
        sealedPins = pins
    }

    /// The sealed-field pins: one line per zone, `owner/zone` (every field sealed) or
    /// `owner/zone<TAB>field<TAB>field…`, names escaped as in the store (so no tab in them).
    func loadSealedPins() throws(RecSyncError) -> [ZoneID: SealedFields] {
        if let sealedPins { return sealedPins }
        var out: [ZoneID: SealedFields] = [:]
        if let sealedFieldsFile, let bytes = try state?.readState(Self.sealedFieldsName) {
            for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
                // A line that does not parse is refused, not skipped: skipping it would drop
                // the zone's pin.
                let bad = RecSyncError.fileSystem(
                    path: sealedFieldsFile,
                    message:
                        """
                        the line '\(line)' is not 'owner/zone' followed by tab-separated field names; fix it, or remove\
                         it to pin that zone's fields afresh
                        """
                )
                let columns = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
                let parts = columns[0].split(separator: "/", omittingEmptySubsequences: false)
                guard parts.count == 2, let owner = NameEscaping.unescape(String(parts[0])), let zone = NameEscaping.unescape(String(parts[1])) else {
                    throw bad
                }
                let id: ZoneID
                do { id = try ZoneID(zoneName: zone, ownerName: owner) } catch { throw bad }
                var fields: Set<String> = []
                for column in columns.dropFirst() where !column.isEmpty {
                    guard let name = NameEscaping.unescape(column) else { throw bad }
                    fields.insert(name)
                }
                out[id] = columns.count == 1 ? .all : .only(fields)
            }
        }
        sealedPins = out
        return out
    }

    /// Trust on first use: the first public keys of a user this client wraps a zone key for,
    /// or checks a signature of, are remembered; different ones later are refused until the
    /// user is asked. A line from before signing keys gets the signing key added.
    func checkKnownKey(_ key: UserPublicKey) throws(RecSyncError) {
        guard let state, let knownKeysFile else { return }
        let user = key.userRecordName
        var known: [String: [String]] = [:]
        if let bytes = try state.readState(Self.knownKeysName) {
            for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
                let parts = line.split(separator: " ").map(String.init)
                if parts.count >= 2, let name = NameEscaping.unescape(parts[0]) { known[name] = Array(parts.dropFirst()) }
            }
        }
        let text = Base64.encode(key.publicKey)
        let signing = key.signingPublicKey.map { Base64.encode($0) }
        let remedy =
            """
            someone writing to the store may have swapped it. If \(user) really reset their key, check the\
             new fingerprint with them, remove their line from \(knownKeysFile) and try again
            """
        if let pinnedKeys = known[user] {
            guard pinnedKeys[0] == text else {
                throw .permissionFailure(
                    """
                    the public key published for \(user) (fingerprint \(Self.fingerprint(key.publicKey))) is not the\
                     one this workspace used before (\(Self.fingerprint(Base64.decode(pinnedKeys[0]) ?? []))):\
                     \(remedy)
                    """
                ).suggesting(.compareKeyFingerprints)
            }
            if pinnedKeys.count > 1 {
                guard signing == pinnedKeys[1] else {
                    throw .permissionFailure(
                        "the signing key published for \(user) is not the one this workspace used before, though their encryption key is: \(remedy)"
                    ).suggesting(.compareKeyFingerprints)
                }
                return
            }
            guard signing != nil else { return }
        }
        known[user] = [text] + (signing.map { [$0] } ?? [])
        let lines = known.map { "\(NameEscaping.escape($0.key)) \($0.value.joined(separator: " "))\n" }.sorted()
        try state.writeState(Self.knownKeysName, Array(lines.joined().utf8))
    }

    static func fingerprint(_ key: [UInt8]) -> String {
        String(SHA256.hash(data: key).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined().prefix(16))
    }
}

/// The store's history (`log`, `show`) with fields of encrypted zones opened, for a store
/// that keeps one (a git store).
extension EncryptingStore: StoreHistory {
    func history() throws(RecSyncError) -> any StoreHistory {
        guard let history = inner as? any StoreHistory else {
            throw .unsupported("this store keeps no readable history")
        }
        return history
    }

    public func log(limit: Int, zone: ZoneID?) async throws(RecSyncError) -> [StoreCommit] {
        try await history().log(limit: limit, zone: zone)
    }

    public func recordHistory(_ id: RecordID, limit: Int) async throws(RecSyncError) -> [(commit: String, tag: String?)] {
        try await history().recordHistory(id, limit: limit)
    }

    public func records(in zone: ZoneID, at commit: String) async throws(RecSyncError) -> [String: String] {
        try await history().records(in: zone, at: commit)
    }

    public func recordChanges(in zone: ZoneID, commit: String) async throws(RecSyncError) -> [RecordVersionChange] {
        try await history().recordChanges(in: zone, commit: commit)
    }

    public func historyCommit(_ commit: String) async throws(RecSyncError) -> StoreCommit {
        try await history().historyCommit(commit)
    }

    public func recordVersion(_ id: RecordID, changeTag: String) async throws(RecSyncError) -> Record? {
        guard let record = try await history().recordVersion(id, changeTag: changeTag) else { return nil }
        var read: PageZoneReads = [:]
        return try await open(record, history: true, read: &read)
    }
}

/// The fields an encrypted zone seals, as pinned in a workspace.
enum SealedFields: Hashable {
    /// Every field (the zone lists none).
    case all
    /// These fields only.
    case only(Set<String>)

    init(_ fields: [String]?) {
        self = fields.map { .only(Set($0)) } ?? .all
    }

    /// The fields `before` sealed that this does not, as a message names them; nil when
    /// there are none.
    func dropped(from before: SealedFields) -> String? {
        switch (before, self) {
        case (_, .all): return nil
        case (.all, .only): return "the fields it does not list (it sealed every field)"
        case (.only(let was), .only(let now)):
            let gone = was.subtracting(now).sorted()
            return gone.isEmpty ? nil : gone.map { "'\($0)'" }.joined(separator: ", ")
        }
    }

    /// The pin line's tail after the zone.
    var pinText: String {
        switch self {
        case .all: ""
        case .only(let fields): "\t" + fields.sorted().map(NameEscaping.escape).joined(separator: "\t")
        }
    }
}
