import Foundation
import RecSyncTestSupport
import Testing

@testable import RecSyncGit

/// `GitError`: what a failing libgit2 call leaves behind (the function, libgit2's return code
/// and error class, its message), read from the calls that fail in practice.
@Suite struct GitErrorTests {
    /// libgit2's `git_error_t` values the tests look for (git2/errors.h).
    enum ErrorClass {
        static let reference: Int32 = 4
        static let repository: Int32 = 6
        static let odb: Int32 = 9
    }

    /// libgit2's `git_error_code` values the tests look for.
    enum Code {
        static let notFound: Int32 = -3
        static let exists: Int32 = -4
        static let invalidSpec: Int32 = -12
    }

    @Test func aMissingObjectIsNotFoundInTheObjectDatabase() throws {
        let dir = TempDirectory("git-error-missing")
        let repo = try GitRepository.initBare(at: dir.file("s.git"))
        let missing = try #require(GitOID(hex: "2222222222222222222222222222222222222222"))
        let error = try gitError { _ = try repo.blob(missing) }
        #expect(error.function == "git_blob_lookup" && error.code == Code.notFound)
        #expect(error.errorClass == ErrorClass.odb, "\(error)")
        #expect(error.isNotFound && !error.isModified && !error.isExists)
        #expect(error.message.contains(missing.hex), "\(error.message)")
    }

    @Test func aDirectoryThatIsNoRepositoryIsNotFoundAsARepository() throws {
        let dir = TempDirectory("git-error-open")
        let error = try gitError { _ = try GitRepository.open(at: dir.path) }
        #expect(error.function == "git_repository_open_ext" && error.isNotFound)
        #expect(error.errorClass == ErrorClass.repository, "\(error)")
        #expect(error.message.contains(dir.path), "\(error.message)")
    }

    @Test func creatingARepositoryWhereOneIsAlreadyIsAnExistsError() throws {
        let dir = TempDirectory("git-error-exists")
        let path = dir.file("s.git")
        _ = try GitRepository.initBare(at: path)
        let error = try gitError { _ = try GitRepository.initBare(at: path) }
        #expect(error.function == "git_repository_init_ext" && error.code == Code.exists && error.isExists, "\(error)")
        #expect(error.errorClass == ErrorClass.repository, "\(error)")
    }

    /// A name git would refuse is an error, not a lost race: a caller must not retry it.
    @Test(arguments: ["refs/heads/a..b", "refs/heads/x.lock", "refs/heads/sp ace", "refs/heads/end/", "main"])
    func aReferenceNameGitRefusesIsAnErrorNotALostRace(name: String) throws {
        let dir = TempDirectory("git-error-refname")
        let repo = try GitRepository.initBare(at: dir.file("s.git"))
        let tree = try repo.updateTree(base: nil, updates: [])
        let commit = try repo.createCommit(
            tree: tree, parents: [], author: GitSignature(name: "A", email: "a@example.com", time: 1_767_225_600), message: "m\n")
        let error = try gitError { _ = try repo.updateReference(name, to: commit, expected: nil, logMessage: "m") }
        #expect(error.code == Code.invalidSpec && error.errorClass == ErrorClass.reference, "\(error)")
        let read = try gitError { _ = try repo.referenceTarget(name) }
        #expect(read.code == Code.invalidSpec, "\(read)")
    }

    @Test func aCommitOnATreeThatIsNotThereNamesTheLookupThatFailed() throws {
        let dir = TempDirectory("git-error-commit")
        let repo = try GitRepository.initBare(at: dir.file("s.git"))
        let blob = try repo.createBlob(Array("not a tree".utf8))
        let author = GitSignature(name: "A", email: "a@example.com", time: 1_767_225_600)
        let error = try gitError { _ = try repo.createCommit(tree: blob, parents: [], author: author, message: "m") }
        #expect(error.function == "git_tree_lookup" && error.isNotFound, "\(error)")
        let tree = try repo.updateTree(base: nil, updates: [])
        let parent = try gitError { _ = try repo.createCommit(tree: tree, parents: [blob], author: author, message: "m") }
        #expect(parent.function == "git_commit_lookup" && parent.isNotFound, "\(parent)")
    }

    @Test func theDescriptionNamesTheFunctionTheCodeAndTheMessage() {
        let error = GitError(function: "git_reference_create_matching", code: -15, message: "old reference value does not match")
        #expect(error.description == "git_reference_create_matching failed (-15): old reference value does not match")
        #expect(error.isModified && !error.isNotFound && error.errorClass == nil)
        #expect(error != GitError(function: error.function, code: error.code, message: error.message, errorClass: ErrorClass.reference))
    }
}
