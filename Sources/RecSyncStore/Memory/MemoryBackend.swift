import Foundation
import Glibc
import RecSyncGit
import RecSyncModel
import Synchronization

/// The versioned contents of an in-memory store, shared by every `MemoryStore` handle on it.
///
/// It keeps every commit as a full snapshot (zones copy on write), so it is meant for tests
/// and small data, with the same semantics as a git store.
public final class MemoryStorage: Sendable {
    struct Zone: Sendable {
        var document: [UInt8]
        var records: [String: String]
        var contentID: String
        var clientTokens: [String: [UInt8]] = [:]
    }

    struct Snapshot: Sendable {
        var zones: [ZoneID: Zone] = [:]
        var tombstones: [ZoneID: [UInt8]] = [:]
        var userKeys: [String: [UInt8]] = [:]
    }

    struct Commit: Sendable {
        var parent: String?
        var snapshot: Snapshot
        var message: String
        var author: String
    }

    struct State: Sendable {
        var commits: [String: Commit] = [:]
        /// The shared ref's head.
        var head: String = ""
        /// Each zone's ref's head, in a store with a ref per zone (`refPerZone`).
        var zoneHeads: [ZoneID: String] = [:]
        var blobs: [String: [UInt8]] = [:]
        /// Every version of every zone any commit held, by content ID (`zoneContent`).
        var zoneVersions: [String: Zone] = [:]
        /// Asset contents by blob ID (kept for good: a test store collects no garbage).
        var assets: [String: [UInt8]] = [:]
        var sequence = 0
        /// Test hook: how many upcoming commits lose their compare-and-swap as if another writer won.
        var simulatedLostRaces = 0
    }

    let manifest: StoreManifest
    let state = Mutex(State())
    /// Whether each zone's commits go on a ref of its own, as in store format 2
    /// (docs/zone-refs.md), rather than all on the shared ref. Such a store serves records,
    /// zones and keys; listing zones and database changes need the format's tokens, which it
    /// does not have yet, and fail.
    let refPerZone: Bool

    /// A new, empty store.
    public convenience init(storeID: String = UUID().uuidString.lowercased(), created: Int64 = 0, maxAssetBytes: Int64? = nil) {
        self.init(storeID: storeID, created: created, maxAssetBytes: maxAssetBytes, refPerZone: false)
    }

    /// A new, empty store; with `refPerZone`, one whose zones each have a ref of their own.
    package init(storeID: String = UUID().uuidString.lowercased(), created: Int64 = 0, maxAssetBytes: Int64? = nil, refPerZone: Bool) {
        self.refPerZone = refPerZone
        manifest = StoreManifest(storeID: storeID, created: created, maxAssetBytes: maxAssetBytes)
        state.withLock { s in
            s.commits["m0"] = Commit(parent: nil, snapshot: Snapshot(), message: "create store", author: "")
            s.head = "m0"
        }
    }

    /// Replaces the whole history by one new root commit with the same content, as a forced
    /// push of rewritten history would: every token issued before expires.
    public func rewriteHistory() {
        state.withLock { s in
            guard let head = s.commits[s.head] else { return }
            s.sequence += 1
            let id = "m\(s.sequence)r"
            s.commits = [id: Commit(parent: nil, snapshot: head.snapshot, message: "rewritten", author: "")]
            s.head = id
        }
    }

    /// Makes the next `count` commits fail their compare-and-swap once each, as if another writer won.
    package func simulateLostRaces(_ count: Int) {
        state.withLock { $0.simulatedLostRaces = count }
    }

    /// Commits `bytes` as a record's stored form, unchecked, as someone writing the store with
    /// plain git could (test hook: a record the store cannot decode). The zone must exist.
    public func commitRawRecord(_ id: RecordID, bytes: [UInt8]) {
        state.withLock { s in
            let parent = refPerZone ? s.zoneHeads[id.zoneID] : s.head
            guard let parent, var snap = s.commits[parent]?.snapshot, snap.zones[id.zoneID] != nil else { return }
            s.sequence += 1
            let tag = ContentHash.of(bytes)
            s.blobs[tag] = bytes
            snap.zones[id.zoneID]?.records[id.recordName] = tag
            snap.zones[id.zoneID]?.contentID = "v\(s.sequence):\(id.zoneID)"
            s.zoneVersions["v\(s.sequence):\(id.zoneID)"] = snap.zones[id.zoneID]
            let commit = "m\(s.sequence)"
            s.commits[commit] = Commit(parent: parent, snapshot: snap, message: "raw write of \(id)", author: "")
            if refPerZone { s.zoneHeads[id.zoneID] = commit } else { s.head = commit }
        }
    }

    /// The commit messages from the head back to the root.
    public func history() -> [String] { history(from: { $0.head }) }

    /// The commit messages of the ref that holds a zone's commits, from its head back to the
    /// root (none: the ref does not exist).
    package func history(of zone: ZoneID) -> [String] { history(from: { refPerZone ? $0.zoneHeads[zone] : $0.head }) }

    private func history(from head: (State) -> String?) -> [String] {
        state.withLock { s in
            var out: [String] = []
            var next: String? = head(s)
            while let c = next, let commit = s.commits[c] {
                out.append(commit.message)
                next = commit.parent
            }
            return out
        }
    }

}

/// `StoreBackend` over `MemoryStorage`.
final class MemoryBackend: StoreBackend {
    let storage: MemoryStorage
    var manifest: StoreManifest { storage.manifest }

    init(storage: MemoryStorage) { self.storage = storage }

    private func snapshot(_ commit: String) throws(RecSyncError) -> MemoryStorage.Snapshot {
        guard let s = storage.state.withLock({ $0.commits[commit]?.snapshot }) else {
            throw .changeTokenExpired("commit \(commit)")
        }
        return s
    }

    func ref(of zone: ZoneID) -> StoreRef { storage.refPerZone ? .zone(zone) : .shared }
    var zonesHaveOwnRefs: Bool { storage.refPerZone }

    func zoneRefs(owner: String?) throws(RecSyncError) -> (refs: [ZoneRefState], warnings: [StoreWarning]) {
        let heads = storage.state.withLock { $0.zoneHeads }
        let refs = heads.filter { owner == nil || $0.key.ownerName == owner }.map {
            ZoneRefState(zoneID: $0.key, suffix: RefNames.suffix(for: $0.key), head: $0.value)
        }
        return (refs.sorted { $0.suffix.utf8.lexicographicallyPrecedes($1.suffix.utf8) }, [])
    }

    func head(of ref: StoreRef) throws(RecSyncError) -> String? {
        storage.state.withLock { s in
            switch ref {
            case .shared: s.head
            case .zone(let id): storage.refPerZone ? s.zoneHeads[id] : s.head
            }
        }
    }

    /// Listing zones reads the shared ref, which holds none in a store with a ref per zone.
    private func requireSharedZones() throws(RecSyncError) {
        if storage.refPerZone {
            throw .internalError("a memory store with a ref per zone cannot list its zones yet: that needs the format's database tokens")
        }
    }

    func commitInfo(_ commit: String) throws(RecSyncError) -> (parent: String?, message: String) {
        guard let c = storage.state.withLock({ $0.commits[commit] }) else {
            throw .internalError("the memory store has no commit \(commit)")
        }
        return (c.parent, c.message)
    }

    func zoneChanges(from base: String?, to target: String, owner: String?) throws(RecSyncError) -> (changes: [ZoneChange], warnings: [StoreWarning])
    {
        try requireSharedZones()
        return try zoneChangesByListing(from: base, to: target, owner: owner)
    }

    func isInHistory(_ commit: String, head: String) throws(RecSyncError) -> Bool {
        storage.state.withLock { s in
            var next: String? = head
            while let c = next {
                if c == commit { return true }
                next = s.commits[c]?.parent
            }
            return false
        }
    }

    /// The in-memory store is never compacted: nothing is replayed.
    func rewrittenCommit(_ commit: String, head: String) throws(RecSyncError) -> String? { nil }

    func commitBeforeUpgrade(_ commit: String) throws(RecSyncError) -> String? { nil }

    func commit(_ batch: [RefCommit], actor: StoreActor, time: Int64) throws(RecSyncError) -> [CommitOutcome] {
        try commitEach(batch, actor: actor, time: time)
    }

    func zones(at commit: String, owner: String?) throws(RecSyncError) -> (zones: [ZoneEntry], warnings: [StoreWarning]) {
        try requireSharedZones()
        let snap = try snapshot(commit)
        let zones = snap.zones.filter { owner == nil || $0.key.ownerName == owner }.map { id, zone in
            ZoneEntry(
                zoneID: id, contentID: ZoneContentID(rawValue: zone.contentID),
                zone: Result { () throws(RecSyncError) in
                    try ZoneDocuments.decodeZone(zone.document, zoneID: id, path: StoreLayout.zoneFilePath(id))
                })
        }
        return (zones.sorted { $0.zoneID < $1.zoneID }, [])
    }

    func zone(_ id: ZoneID, at commit: String) throws(RecSyncError) -> ZoneEntry? {
        guard let zone = try snapshot(commit).zones[id] else { return nil }
        return ZoneEntry(
            zoneID: id, contentID: ZoneContentID(rawValue: zone.contentID),
            zone: Result { () throws(RecSyncError) in
                try ZoneDocuments.decodeZone(zone.document, zoneID: id, path: StoreLayout.zoneFilePath(id))
            })
    }

    func zoneContent(_ id: ZoneID, at commit: String) throws(RecSyncError) -> ZoneContentID? {
        try snapshot(commit).zones[id].map { ZoneContentID(rawValue: $0.contentID) }
    }

    /// A version of a zone by its content ID (nil: no zone).
    private func zoneVersion(_ content: ZoneContentID?) throws(RecSyncError) -> MemoryStorage.Zone? {
        guard let content else { return nil }
        guard let zone = storage.state.withLock({ $0.zoneVersions[content.rawValue] }) else {
            throw .internalError("the memory store has no zone version \(content)")
        }
        return zone
    }

    /// Never: a memory store's zones hold what its writes put there, shaped as they put it.
    func zoneShapeProblem(_ id: ZoneID, at commit: String) throws(RecSyncError) -> String? { nil }

    func tombstone(_ id: ZoneID, at commit: String) throws(RecSyncError) -> ZoneDeletionReason? {
        try snapshot(commit).tombstones[id].map(ZoneDocuments.decodeTombstone)
    }

    func clientToken(_ zone: ZoneID, client: String, in content: ZoneContentID) throws(RecSyncError) -> [UInt8]? {
        try zoneVersion(content)?.clientTokens[client]
    }

    func userKey(_ user: String, at commit: String) throws(RecSyncError) -> [UInt8]? {
        try snapshot(commit).userKeys[user]
    }

    func recordTag(_ id: RecordID, at commit: String) throws(RecSyncError) -> String? {
        try snapshot(commit).zones[id.zoneID]?.records[id.recordName]
    }

    func blob(_ tag: String) throws(RecSyncError) -> [UInt8]? {
        storage.state.withLock { $0.blobs[tag] }
    }

    func blobSize(_ tag: String) throws(RecSyncError) -> Int? {
        storage.state.withLock { $0.blobs[tag]?.count }
    }

    func recordChanges(zone: ZoneID, from base: ZoneContentID?, to target: ZoneContentID?, after: String?, limit: Int) throws(RecSyncError)
        -> RawRecordChangeBatch
    {
        let old = try zoneVersion(base)?.records ?? [:]
        let new = try zoneVersion(target)?.records ?? [:]
        var names = Set(old.keys).union(new.keys).filter { old[$0] != new[$0] }
        if let after { names = names.filter { $0.utf8.lexicographicallyPrecedes(after.utf8) == false && $0 != after } }
        let sorted = names.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        let page = sorted.prefix(limit)
        return RawRecordChangeBatch(
            changes: page.map { RawRecordChange(key: $0, recordName: $0, old: old[$0], new: new[$0], problem: nil) },
            more: sorted.count > limit, warnings: [])
    }

    func recordChangeCountEstimate(zone: ZoneID, from base: ZoneContentID?, to target: ZoneContentID?) throws(RecSyncError) -> Int {
        try recordChanges(zone: zone, from: base, to: target, after: nil, limit: Int.max).changes.count
    }

    func recordCountEstimate(zone: ZoneID, in content: ZoneContentID?) throws(RecSyncError) -> Int {
        try zoneVersion(content)?.records.count ?? 0
    }

    func allRecords(zone: ZoneID, in content: ZoneContentID?) throws(RecSyncError) -> [(recordName: String, tag: String)] {
        (try zoneVersion(content)?.records ?? [:]).map { ($0.key, $0.value) }
    }

    func storeAsset(fd: Int32, size: Int64, path: String) throws(RecSyncError) -> AssetReference {
        // A test store: the content is held in memory, read in chunks like a git store's.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Int(size))
        let start = lseek(fd, 0, SEEK_CUR)
        let digest: BlobDigest
        do {
            digest = try BlobDigest.of(fd: fd, size: size, path: path)
            _ = lseek(fd, start, SEEK_SET)
            try BlobDigest.readChunks(fd: fd, size: size, path: path) { chunk in bytes.append(contentsOf: chunk) }
        } catch {
            throw GitBackend.wrap(error, "reading \(path)")
        }
        let asset = try AssetReference(oid: digest.oid.hex, size: size, sha256: digest.sha256)
        storage.state.withLock { $0.assets[asset.oid] = bytes }
        return asset
    }

    func assetSize(_ oid: String) throws(RecSyncError) -> Int64? {
        storage.state.withLock { $0.assets[oid].map { Int64($0.count) } }
    }

    func readAsset(_ oid: String, toFD fd: Int32, path: String) throws(RecSyncError) -> AssetReference? {
        guard let bytes = storage.state.withLock({ $0.assets[oid] }) else { return nil }
        let digest = BlobDigest.of(bytes)
        let written: Result<Void, GitError> = bytes.withUnsafeBytes { buf in
            Result { () throws(GitError) in try GitRepository.writeAll(fd, buf, path: path) }
        }
        do { try written.get() } catch { throw GitBackend.wrap(error, "writing \(path)") }
        return try AssetReference(oid: digest.oid.hex, size: digest.size, sha256: digest.sha256)
    }

    func assetSHA256(_ oid: String) throws(RecSyncError) -> String? {
        storage.state.withLock { $0.assets[oid] }.map { BlobDigest.of($0).sha256 }
    }

    func recordAssetBlobs(_ id: RecordID, at commit: String) throws(RecSyncError) -> Set<String> {
        // No asset tree here: the record's stored version names its assets (what the git
        // store's asset tree holds for it, kept in step with its fields).
        guard let tag = try recordTag(id, at: commit), let bytes = try blob(tag) else { return [] }
        let record: Record
        do { record = try StoreEncoding.decode(bytes, zoneID: id.zoneID, changeTag: tag) } catch {
            return []  // a record that does not decode holds no asset a save could keep
        }
        return Set(record.assetFields.values.map(\.oid))
    }

    func commit(on ref: StoreRef, parent: String?, writes: [StoreWrite], message: String, actor: StoreActor, time: Int64) throws(RecSyncError)
        -> CommitOutcome
    {
        let zoneRef: ZoneID? =
            if storage.refPerZone, case .zone(let id) = ref { id } else { nil }
        return storage.state.withLock { s -> CommitOutcome in
            if s.simulatedLostRaces > 0 {
                s.simulatedLostRaces -= 1
                return .headMoved
            }
            let current: String? = if let zoneRef { s.zoneHeads[zoneRef] } else { s.head }
            guard current == parent else { return .headMoved }
            var snap = MemoryStorage.Snapshot()
            if let parent {
                guard let found = s.commits[parent]?.snapshot else { return .headMoved }
                snap = found
            }
            s.sequence += 1
            let version = "v\(s.sequence)"
            var tags: [RecordID: String] = [:]
            var touched = Set<ZoneID>()
            for write in writes {
                switch write {
                case .saveRecord(let id, let bytes, _):
                    let tag = ContentHash.of(bytes)
                    s.blobs[tag] = bytes
                    tags[id] = tag
                    snap.zones[id.zoneID]?.records[id.recordName] = tag
                    touched.insert(id.zoneID)
                case .deleteRecord(let id):
                    snap.zones[id.zoneID]?.records[id.recordName] = nil
                    touched.insert(id.zoneID)
                case .saveZone(let id, let bytes):
                    if snap.zones[id] == nil {
                        snap.zones[id] = MemoryStorage.Zone(document: bytes, records: [:], contentID: version)
                    } else {
                        snap.zones[id]?.document = bytes
                    }
                    touched.insert(id)
                case .removeZone(let id):
                    snap.zones[id] = nil
                case .saveTombstone(let id, let bytes):
                    snap.tombstones[id] = bytes
                case .removeTombstone(let id):
                    snap.tombstones[id] = nil
                case .saveClientToken(let id, let client, let bytes):
                    snap.zones[id]?.clientTokens[client] = bytes
                    touched.insert(id)
                case .saveUserKey(let user, let bytes):
                    snap.userKeys[user] = bytes
                }
            }
            for id in touched where snap.zones[id] != nil {
                snap.zones[id]?.contentID = "\(version):\(id)"
                s.zoneVersions["\(version):\(id)"] = snap.zones[id]
            }
            let commit = "m\(s.sequence)"
            s.commits[commit] = MemoryStorage.Commit(parent: parent, snapshot: snap, message: message, author: actor.userRecordName)
            if let zoneRef { s.zoneHeads[zoneRef] = commit } else { s.head = commit }
            return .committed(commit: commit, tags: tags)
        }
    }
}
