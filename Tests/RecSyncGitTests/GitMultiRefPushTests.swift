import Foundation
import RecSyncTestSupport
import RecSyncTestTraits
import Testing

@testable import RecSyncGit

/// A push of several references in one connection (`GitRepository.push(_:at:options:holdOff:)`),
/// against a bare repository served by a real `git daemon` on 127.0.0.1 (git's receive-pack)
/// and reached by a `file://` address (libgit2's local transport).
@Suite(.ownThreads, .enabled(if: Machine.hasGitDaemon, "needs git and git daemon (apt-get install git)"))
struct GitMultiRefPushTests {
    let alice = GitSignature(name: "Alice", email: "alice@example.com", time: 1_767_225_600)
    let refs = ["refs/heads/main", "refs/recsync/zones/alice/notes", "refs/recsync/zones/bob/photos"]

    /// How the test reaches the bare repository.
    enum Served: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case gitDaemon
        case path

        var testDescription: String { rawValue }
    }

    /// A local repository, a bare remote served as asked, and options that read nothing of this
    /// user's.
    struct Setup {
        let dir: TempDirectory
        let local: GitRepository
        let remotePath: String
        let remote: GitRemoteURL
        let options: GitNetworkOptions
        /// The daemon serving the remote, when it is served by one.
        let daemon: GitDaemon?

        /// The remote's references and what they name, as git reads them.
        func served() throws -> [String: String] {
            let lines = try git(["for-each-ref", "--format=%(refname) %(objectname)"], in: remotePath).split(separator: "\n")
            return Dictionary(
                uniqueKeysWithValues: lines.map { line in
                    let parts = line.split(separator: " ")
                    return (String(parts[0]), String(parts[1]))
                })
        }

        /// The local references a push names its commits with while it runs.
        func pushSources() throws -> String {
            try git(["for-each-ref", "--format=%(refname)", "refs/recsync/"], in: local.path)
        }
    }

    func setup(_ name: String, _ served: Served) throws -> Setup {
        let dir = TempDirectory("\(name)-\(served.rawValue)")
        let local = try GitRepository.initBare(at: dir.file("local.git"))
        let remotePath = dir.file("served/remote.git")
        try GitCLI.run(["init", "-q", "--bare", remotePath], in: dir.path)
        let options = GitNetworkOptions(sshDirectory: dir.file("no-ssh"), knownHostsFiles: [], sshUser: "nobody")
        switch served {
        case .gitDaemon:
            let daemon = try GitDaemon(basePath: dir.file("served"))
            let remote = try #require(GitRemoteURL(daemon.url("remote.git")))
            return Setup(dir: dir, local: local, remotePath: remotePath, remote: remote, options: options, daemon: daemon)
        case .path:
            let remote = try #require(GitRemoteURL("file://\(remotePath)"))
            return Setup(dir: dir, local: local, remotePath: remotePath, remote: remote, options: options, daemon: nil)
        }
    }

    /// One commit per reference, each on its own root, created on the remote in one push.
    func created(_ s: Setup) throws -> [GitOID] {
        let bases = try refs.indices.map { try s.local.commitLine(1, on: nil, tag: "base\($0)", author: alice)[0] }
        let updates = zip(bases, refs).map { GitRefUpdate($0, to: $1, expected: nil) }
        #expect(try s.local.push(updates, at: s.remote, options: s.options) == .pushed([.accepted, .accepted, .accepted]))
        return bases
    }

    /// Updates of the references to `commits`, each over the value in `expected`.
    func moving(_ commits: [GitOID], over expected: [GitOID]) -> [GitRefUpdate] {
        zip(commits, zip(refs, expected)).map { GitRefUpdate($0, to: $1.0, expected: $1.1) }
    }

    /// A commit on each of `bases`.
    func next(_ s: Setup, on bases: [GitOID]) throws -> [GitOID] {
        try bases.enumerated().map { i, base in try s.local.commitLine(1, on: base, tag: "next\(i)", author: alice)[0] }
    }

    @Test(arguments: Served.allCases) func threeReferencesAreCreatedInOnePush(_ served: Served) throws {
        let s = try setup("multi-push-create", served)
        let commits = try created(s)
        #expect(try s.served() == Dictionary(uniqueKeysWithValues: zip(refs, commits.map(\.hex))))
        try git(["fsck", "--strict", "--no-dangling"], in: s.remotePath)
        #expect(try s.pushSources() == "")

        // Each moves on from there, over the value it expects.
        let moved = try next(s, on: commits)
        let updates = moving(moved, over: commits)
        let before = s.daemon?.connectionsAccepted
        #expect(try s.local.push(updates, at: s.remote, options: s.options) == .pushed([.accepted, .accepted, .accepted]))
        if let daemon = s.daemon, let before {
            #expect(daemon.connectionsAccepted - before == 1, "one connection for the three references")
        }
        #expect(try s.served() == Dictionary(uniqueKeysWithValues: zip(refs, moved.map(\.hex))))
        #expect(try s.pushSources() == "")
    }

    /// Another device moved one reference first: that update is not sent and reports the
    /// remote's value; the others land.
    @Test(arguments: Served.allCases) func aReferenceThatMovedIsReportedAndTheOthersLand(_ served: Served) throws {
        let s = try setup("multi-push-moved", served)
        let bases = try created(s)
        let other = try GitRepository.initBare(at: s.dir.file("other.git"))
        try other.fetch(refs.map { "+\($0):\($0)" }, from: s.remote, options: s.options)
        let theirs = try other.commitLine(1, on: bases[1], tag: "theirs", author: alice)[0]
        #expect(try other.push(theirs, to: refs[1], at: s.remote, options: s.options) == .accepted)

        let ours = try next(s, on: bases)
        let updates = moving(ours, over: bases)
        #expect(try s.local.push(updates, at: s.remote, options: s.options) == .pushed([.accepted, .moved(advertised: theirs), .accepted]))
        #expect(try s.served() == [refs[0]: ours[0].hex, refs[1]: theirs.hex, refs[2]: ours[2].hex])
        // Nothing of the update that was not sent reached the remote.
        #expect(throws: GitCLI.Failure.self) { try git(["cat-file", "-e", ours[1].hex], in: s.remotePath) }
        try git(["fsck", "--strict", "--no-dangling"], in: s.remotePath)
        #expect(try s.pushSources() == "")
    }

    /// A reference expected absent that exists, and one expected present that is gone: both
    /// reported with what the remote holds, the third lands.
    @Test(arguments: Served.allCases) func aReferenceThatExistsOrIsMissingAgainstExpectationIsReported(_ served: Served) throws {
        let s = try setup("multi-push-presence", served)
        let bases = try created(s)
        #expect(try s.local.deleteRemoteReferences([refs[2]], at: s.remote, options: s.options).isEmpty)
        let ours = try next(s, on: bases)
        let updates = [
            GitRefUpdate(ours[0], to: refs[0], expected: bases[0]),
            GitRefUpdate(ours[1], to: refs[1], expected: nil),
            GitRefUpdate(ours[2], to: refs[2], expected: bases[2]),
        ]
        #expect(
            try s.local.push(updates, at: s.remote, options: s.options)
                == .pushed([.accepted, .moved(advertised: bases[1]), .moved(advertised: nil)]))
        #expect(try s.served() == [refs[0]: ours[0].hex, refs[1]: bases[1].hex])
        #expect(try s.pushSources() == "")
    }

    /// An update whose commit does not descend from the value it expects is not sent (libgit2
    /// would fail the whole push for it); the others land.
    @Test(arguments: Served.allCases) func anUpdateThatIsNoFastForwardDoesNotStopTheOthers(_ served: Served) throws {
        let s = try setup("multi-push-no-fast-forward", served)
        let bases = try created(s)
        var ours = try next(s, on: bases)
        ours[1] = try s.local.commitLine(1, on: nil, tag: "unrelated", author: alice)[0]
        let updates = moving(ours, over: bases)
        guard case .pushed(let results) = try s.local.push(updates, at: s.remote, options: s.options), results.count == 3,
            case .rejected(let reason) = results[1]
        else {
            Issue.record("the unrelated commit was not refused on its own")
            return
        }
        #expect(results[0] == .accepted && results[2] == .accepted, "\(results)")
        #expect(reason.contains("no fast-forward"), "\(reason)")
        #expect(try s.served() == [refs[0]: ours[0].hex, refs[1]: bases[1].hex, refs[2]: ours[2].hex])
        #expect(try s.pushSources() == "")
    }

    /// A reference that moves after the advertisement (here in `holdOff`, which runs right
    /// after it) is refused by git's receive-pack under the reference's lock, alone.
    ///
    /// libgit2 1.5's local transport (`file://`) writes each reference without checking its
    /// old value, so there the other writer's update is overwritten: a known issue, recorded
    /// as such so that this test says so when a libgit2 release checks.
    @Test(arguments: Served.allCases) func aReferenceThatMovesAfterTheAdvertisementIsRefusedAlone(_ served: Served) throws {
        let s = try setup("multi-push-race", served)
        let bases = try created(s)
        let ours = try next(s, on: bases)
        let updates = moving(ours, over: bases)
        var advertised: [String] = []
        let result = try s.local.push(updates, at: s.remote, options: s.options) { names in
            advertised = names
            do {
                try git(["update-ref", refs[1], bases[0].hex, bases[1].hex], in: s.remotePath)
            } catch {
                Issue.record("cannot move \(refs[1]) on the server: \(error)")
            }
            return nil
        }
        #expect(Set(refs).isSubset(of: advertised), "\(advertised)")
        guard case .pushed(let results) = result, results.count == 3 else {
            Issue.record("\(result)")
            return
        }
        #expect(results[0] == .accepted && results[2] == .accepted, "\(results)")
        let after = try s.served()
        #expect(after[refs[0]] == ours[0].hex && after[refs[2]] == ours[2].hex)
        let refused: Bool = if case .rejected = results[1] { true } else { false }
        withKnownIssue("libgit2 1.5's local transport does not check the old value") {
            #expect(refused, "\(results)")
            #expect(after[refs[1]] == bases[0].hex, "the other writer's value stays")
        } when: {
            served == .path
        }
        try git(["fsck", "--strict"], in: s.remotePath)
        #expect(try s.pushSources() == "")
    }

    @Test(arguments: Served.allCases) func aPushHeldOffSendsNothing(_ served: Served) throws {
        let s = try setup("multi-push-held-off", served)
        let bases = try created(s)
        let ours = try next(s, on: bases)
        let updates = moving(ours, over: bases)
        let result = try s.local.push(updates, at: s.remote, options: s.options) { advertised in
            advertised.contains(refs[2]) ? "a lease is held" : nil
        }
        #expect(result == .heldOff("a lease is held"))
        #expect(try s.served() == Dictionary(uniqueKeysWithValues: zip(refs, bases.map(\.hex))))
        #expect(try s.pushSources() == "")
    }

    /// The temporary references go whatever happens: a remote that is not there, and a server
    /// that dies after advertising (the push's connection is cut).
    @Test(arguments: Served.allCases) func aFailedPushLeavesNoReferenceBehind(_ served: Served) throws {
        let s = try setup("multi-push-failed", served)
        let commits = try refs.indices.map { try s.local.commitLine(1, on: nil, tag: "c\($0)", author: alice)[0] }
        let updates = zip(commits, refs).map { GitRefUpdate($0, to: $1, expected: nil) }
        let missing = try #require(
            GitRemoteURL(s.daemon.map { $0.url("nothing-here.git") } ?? "file://\(s.dir.file("nothing-here.git"))"))
        let unreachable = #expect(throws: GitNetworkError.self) { _ = try s.local.push(updates, at: missing, options: s.options) }
        #expect(unreachable != nil)
        #expect(try s.pushSources() == "")
        guard let daemon = s.daemon else { return }
        let cut = #expect(throws: GitNetworkError.self) {
            _ = try s.local.push(updates, at: s.remote, options: s.options) { _ in
                daemon.stop()
                return nil
            }
        }
        #expect(cut?.kind == .interrupted, "\(String(describing: cut))")
        #expect(try s.pushSources() == "")
        #expect(try s.served().isEmpty)
    }
}
