import Foundation
import RecSyncTestSupport
import Testing

@testable import RecSyncGit

/// Fetch, push, guarded force push, remote deletes and `ls-remote` through `GitRemote`, against
/// a bare repository reached by a `file://` address (libgit2's local transport: no network).
@Suite struct GitRemoteTests {
    let alice = GitSignature(name: "Alice", email: "alice@example.com", time: 1_767_225_600)
    let main = "refs/heads/main"

    /// A local repository with a line of commits, a bare remote, and options that read nothing
    /// of this user's.
    struct Setup {
        let dir: TempDirectory
        let local: GitRepository
        let remotePath: String
        let remote: GitRemoteURL
        let options: GitNetworkOptions
    }

    func setup(_ name: String) throws -> Setup {
        let dir = TempDirectory(name)
        let local = try GitRepository.initBare(at: dir.file("local.git"))
        let remotePath = dir.file("remote.git")
        try GitCLI.run(["init", "-q", "--bare", remotePath], in: dir.path)
        let remote = try #require(GitRemoteURL("file://\(remotePath)"))
        let options = GitNetworkOptions(sshDirectory: dir.file("no-ssh"), knownHostsFiles: [], sshUser: "nobody")
        return Setup(dir: dir, local: local, remotePath: remotePath, remote: remote, options: options)
    }

    @Test func aPushLandsAndOneThatIsNoFastForwardIsRejected() throws {
        let s = try setup("git-remote-push")
        let line = try s.local.commitLine(2, on: nil, tag: "a", author: alice)
        #expect(try s.local.push(line[0], to: main, at: s.remote, options: s.options) == .accepted)
        #expect(try s.local.push(line[1], to: main, at: s.remote, options: s.options) == .accepted)
        #expect(try git(["rev-parse", main], in: s.remotePath) == line[1].hex)
        try git(["fsck", "--strict", "--no-dangling"], in: s.remotePath)
        // A commit beside the remote's head, and one behind it: neither replaces it.
        let beside = try s.local.commitLine(1, on: line[0], tag: "b", author: alice)[0]
        for commit in [beside, line[0]] {
            let result = try s.local.push(commit, to: main, at: s.remote, options: s.options)
            guard case .rejected = result else {
                Issue.record("\(result)")
                continue
            }
        }
        #expect(try git(["rev-parse", main], in: s.remotePath) == line[1].hex)
        // The push leaves no reference of its own behind in the local repository.
        #expect(try git(["for-each-ref", "--format=%(refname)"], in: s.local.path) == "")
    }

    @Test func aForcePushReplacesOnlyTheValueItExpects() throws {
        let s = try setup("git-remote-force")
        let line = try s.local.commitLine(2, on: nil, tag: "a", author: alice)
        #expect(try s.local.push(line[1], to: main, at: s.remote, options: s.options) == .accepted)
        let rewritten = try s.local.commitLine(1, on: nil, tag: "r", author: alice)[0]
        // Expecting another value than the remote holds: called off, the remote unchanged.
        let refused = try s.local.forcePush(rewritten, to: main, expecting: line[0], at: s.remote, options: s.options)
        guard case .rejected(let reason) = refused else {
            Issue.record("\(refused)")
            return
        }
        #expect(reason.contains(line[1].hex) && reason.contains("the store moved"), "\(reason)")
        #expect(try git(["rev-parse", main], in: s.remotePath) == line[1].hex)
        // Expecting what it holds: the history is replaced, though it is no fast-forward.
        #expect(try s.local.forcePush(rewritten, to: main, expecting: line[1], at: s.remote, options: s.options) == .accepted)
        #expect(try git(["rev-parse", main], in: s.remotePath) == rewritten.hex)
        #expect(try git(["rev-list", "--count", main], in: s.remotePath) == "1")
    }

    /// `holdOff` sees what the remote advertised before anything is sent; a reason from it
    /// calls the push off.
    @Test func aPushHeldOffSendsNothing() throws {
        let s = try setup("git-remote-holdoff")
        let line = try s.local.commitLine(2, on: nil, tag: "a", author: alice)
        #expect(try s.local.push(line[0], to: main, at: s.remote, options: s.options) == .accepted)
        try git(["update-ref", "refs/recsync/lease", line[0].hex], in: s.remotePath)
        var seen: [String] = []
        let result = try s.local.push(line[1], to: main, at: s.remote, options: s.options) { advertised in
            seen = advertised
            return advertised.contains("refs/recsync/lease") ? "a lease is held" : nil
        }
        #expect(result == .heldOff("a lease is held") && result.isHeldOff)
        #expect(seen.contains(main) && seen.contains("refs/recsync/lease"), "\(seen)")
        #expect(try git(["rev-parse", main], in: s.remotePath) == line[0].hex)
        #expect(throws: GitCLI.Failure.self) { try git(["cat-file", "-e", line[1].hex], in: s.remotePath) }
        // No reason: the push goes ahead.
        #expect(try s.local.push(line[1], to: main, at: s.remote, options: s.options) { _ in nil } == .accepted)
    }

    @Test func deletingReferencesRemovesThoseTheRemoteHasAndIgnoresTheRest() throws {
        let s = try setup("git-remote-delete")
        let line = try s.local.commitLine(1, on: nil, tag: "a", author: alice)
        for ref in [main, "refs/heads/old", "refs/recsync/lease"] {
            #expect(try s.local.push(line[0], to: ref, at: s.remote, options: s.options) == .accepted)
        }
        let refused = try s.local.deleteRemoteReferences(
            ["refs/heads/old", "refs/recsync/lease", "refs/heads/never"], at: s.remote, options: s.options)
        #expect(refused.isEmpty)
        #expect(try git(["for-each-ref", "--format=%(refname)"], in: s.remotePath) == main)
        #expect(try s.local.deleteRemoteReferences(["refs/heads/never"], at: s.remote, options: s.options).isEmpty)
    }

    @Test func aRemoteReferenceIsReadWithoutFetchingAnything() throws {
        let s = try setup("git-remote-ls")
        #expect(try GitRepository.remoteReference(main, at: s.remote, options: s.options) == nil, "an empty remote")
        let line = try s.local.commitLine(1, on: nil, tag: "a", author: alice)
        #expect(try s.local.push(line[0], to: main, at: s.remote, options: s.options) == .accepted)
        #expect(try GitRepository.remoteReference(main, at: s.remote, options: s.options) == line[0])
        #expect(try GitRepository.remoteReference("refs/heads/other", at: s.remote, options: s.options) == nil)
        #expect(try GitRepository.remoteReference("refs/heads/mai", at: s.remote, options: s.options) == nil, "names match whole")
    }

    @Test func aFetchBringsTheObjectsAndMovesOnlyTheNamedReference() throws {
        let s = try setup("git-remote-fetch")
        let line = try s.local.commitLine(3, on: nil, tag: "a", author: alice)
        #expect(try s.local.push(line[2], to: main, at: s.remote, options: s.options) == .accepted)
        #expect(try s.local.push(line[0], to: "refs/heads/other", at: s.remote, options: s.options) == .accepted)
        try git(["tag", "v1", line[1].hex], in: s.remotePath)
        let mirror = try GitRepository.initBare(at: s.dir.file("mirror.git"))
        try mirror.fetch(["+refs/heads/main:refs/remotes/store/main"], from: s.remote, options: s.options)
        #expect(try mirror.referenceTarget("refs/remotes/store/main") == line[2])
        #expect(try mirror.referenceTarget("refs/heads/other") == nil && mirror.referenceTarget("refs/tags/v1") == nil)
        #expect(try mirror.commit(line[2]).parents == [line[1]] && mirror.contains(line[0]))
        // FETCH_HEAD names nothing (libgit2 leaves it there, emptied, whatever the options say).
        #expect((FileManager.default.contents(atPath: s.dir.file("mirror.git/FETCH_HEAD")) ?? Data()).isEmpty)
        try git(["fsck", "--strict", "--no-dangling"], in: mirror.path)
    }

    @Test func aRemoteThatIsNotThereIsUnreachable() throws {
        let s = try setup("git-remote-missing")
        let missing = try #require(GitRemoteURL("file://\(s.dir.file("nothing-here.git"))"))
        let line = try s.local.commitLine(1, on: nil, tag: "a", author: alice)
        let pushError = #expect(throws: GitNetworkError.self) { _ = try s.local.push(line[0], to: main, at: missing, options: s.options) }
        #expect(pushError?.kind == .unreachable, "\(String(describing: pushError))")
        #expect(pushError?.message.contains("cannot reach \(missing.redacted)") == true, "\(String(describing: pushError))")
        let fetchError = #expect(throws: GitNetworkError.self) { try s.local.fetch(["+\(main):\(main)"], from: missing, options: s.options) }
        #expect(fetchError?.kind == .unreachable)
        let lsError = #expect(throws: GitNetworkError.self) { _ = try GitRepository.remoteReference(main, at: missing, options: s.options) }
        #expect(lsError?.kind == .unreachable)
    }
}
