import Foundation
import RecSyncGit
import RecSyncModel

/// A recsync store kept in a bare git repository (DESIGN §2), through libgit2.
///
/// Each handle owns one repository handle; several handles (in one process or many) may
/// write the same store at once: the head moves only by compare-and-swap.
public actor GitStore: RemoteStore {
    public nonisolated let userRecordName: String
    public nonisolated let storeID: String
    public nonisolated let path: String
    let core: StoreCore<GitBackend>

    /// Opens an existing store as `actor`.
    public init(path: String, actor: StoreActor) throws(RecSyncError) {
        guard FileManager.default.fileExists(atPath: path) else {
            throw .invalidArguments("no store at '\(path)'; create one with 'recsync store init \(path)' or check the path")
        }
        let repository: GitRepository
        do { repository = try GitRepository.open(at: path) } catch {
            throw .invalidArguments("'\(path)' is not a git repository (\(error.message)); give the path of a recsync store")
        }
        let backend = try GitBackend(repository: repository)
        self.core = StoreCore(backend: backend, actor: actor)
        self.userRecordName = actor.userRecordName
        self.storeID = backend.manifest.storeID
        self.path = path
    }

    /// Creates a new, empty store: a bare repository whose first commit holds `recsync.json`.
    @discardableResult
    public static func create(at path: String, actor: StoreActor, storeID: String = UUID().uuidString.lowercased()) throws(RecSyncError) -> StoreManifest {
        let repository: GitRepository
        do { repository = try GitRepository.initBare(at: path) } catch {
            if error.isExists {
                throw .invalidArguments("'\(path)' is already a git repository; choose an empty or new directory")
            }
            throw .invalidArguments("cannot create a store at '\(path)': \(error.message)")
        }
        let time = actor.clock()
        let manifest = StoreManifest(storeID: storeID, created: time)
        do {
            let blob = try repository.createBlob(manifest.encoded())
            let tree = try repository.updateTree(base: nil, updates: [.upsertBlob(path: StoreLayout.manifestPath, oid: blob)])
            let signature = GitSignature(name: actor.displayName, email: actor.email, time: time / 1000)
            let commit = try repository.createCommit(tree: tree, parents: [], author: signature, message: "\(actor.userRecordName): create recsync store \(storeID)\n")
            guard try repository.updateReference(GitBackend.headRef, to: commit, expected: nil, logMessage: "recsync: create store") else {
                throw RecSyncError.invalidArguments("'\(path)' already has a \(GitBackend.headRef); it is not empty")
            }
        } catch let error as RecSyncError {
            throw error
        } catch let error as GitError {
            throw GitBackend.wrap(error, "creating the store")
        } catch {
            throw .internalError("\(error)")
        }
        return manifest
    }

    public func databaseChanges(scope: DatabaseScope, since token: ServerChangeToken?, resultsLimit: Int) throws(RecSyncError) -> DatabaseChanges {
        try core.databaseChanges(scope: scope, since: token, resultsLimit: resultsLimit)
    }

    public func recordZoneChanges(zone: ZoneID, since token: ServerChangeToken?, resultsLimit: Int, desiredKeys: [String]?) throws(RecSyncError) -> RecordZoneChanges {
        try core.recordZoneChanges(zone: zone, since: token, resultsLimit: resultsLimit, desiredKeys: desiredKeys)
    }

    public func modifyRecords(saving: [Record], deleting: [RecordDeletion], savePolicy: SavePolicy, atomically: Bool) throws(RecSyncError) -> ModifyRecordsResult {
        try core.modifyRecords(saving: saving, deleting: deleting, savePolicy: savePolicy, atomically: atomically)
    }

    public func modifyRecordZones(_ operations: [ZoneOperation]) throws(RecSyncError) -> [ZoneOperationResult] {
        try core.modifyRecordZones(operations)
    }

    public func fetchAllRecordZones(scope: DatabaseScope) throws(RecSyncError) -> [RecordZone] {
        try core.fetchAllRecordZones(scope: scope)
    }

    public func fetchRecords(_ ids: [RecordID], desiredKeys: [String]?) throws(RecSyncError) -> [RecordResult] {
        try core.fetchRecords(ids, desiredKeys: desiredKeys)
    }

    public func fetchRecordVersion(_ id: RecordID, changeTag: String) throws(RecSyncError) -> Record? {
        try core.fetchRecordVersion(id, changeTag: changeTag)
    }

    /// The change tags a record had, newest first, following the first-parent history
    /// (nil entries: the record did not exist at that commit). At most `limit` commits.
    public func recordHistory(_ id: RecordID, limit: Int = 10_000) throws(RecSyncError) -> [(commit: String, tag: String?)] {
        let repo = core.backend.repository
        var result: [(commit: String, tag: String?)] = []
        do {
            var next = try repo.referenceTarget(GitBackend.headRef)
            while let c = next, result.count < limit {
                let commit = try repo.commit(c)
                let entry = try repo.entry(atPath: StoreLayout.recordPath(id), inTree: commit.tree)
                result.append((c.hex, entry?.oid.hex))
                next = commit.parents.first
            }
        } catch {
            throw GitBackend.wrap(error, "reading history")
        }
        return result
    }
}

/// One commit of a store's history.
public struct StoreCommit: Sendable, Hashable {
    public var commit: String
    public var authorName: String
    public var authorEmail: String
    /// Seconds since the epoch.
    public var time: Int64
    public var message: String
}

extension GitStore {
    /// The store's history, newest first, following first parents: its change log. With a
    /// zone, only the commits that changed that zone (its subtree differs from the parent's).
    public func log(limit: Int = 100, zone: ZoneID? = nil) throws(RecSyncError) -> [StoreCommit] {
        let repo = core.backend.repository
        var result: [StoreCommit] = []
        do {
            var next = try repo.referenceTarget(GitBackend.headRef)
            while let c = next, result.count < limit {
                let commit = try repo.commit(c)
                next = commit.parents.first
                if let zone {
                    let path = StoreLayout.zoneDir(zone)
                    let mine = try repo.entry(atPath: path, inTree: commit.tree)?.oid
                    let parents = try next.map { p throws(GitError) in try repo.entry(atPath: path, inTree: repo.commit(p).tree)?.oid } ?? nil
                    if mine == parents { continue }
                }
                result.append(StoreCommit(commit: c.hex, authorName: commit.authorName, authorEmail: commit.authorEmail, time: commit.time, message: commit.message))
            }
        } catch {
            throw GitBackend.wrap(error, "reading history")
        }
        return result
    }
}
