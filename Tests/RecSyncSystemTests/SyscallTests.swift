import Glibc
import RecSyncModel
import RecSyncTestSupport
import Testing

@testable import RecSyncSystem

/// The one system call helper: EINTR is retried, and a failure keeps the call and its errno.
@Suite struct SyscallTests {
    @Test func anInterruptedCallIsMadeAgain() {
        var calls = 0
        let result = Syscall.attempt { () -> Int32 in
            calls += 1
            if calls < 3 { errno = EINTR; return -1 }
            return 7
        }
        #expect(calls == 3)
        #expect(result == .success(7))
    }

    @Test func aFailureIsReturnedOnceWithItsErrno() {
        var calls = 0
        let result = Syscall.attempt { () -> Int32 in
            calls += 1
            errno = EACCES
            return -1
        }
        #expect(calls == 1)
        #expect(result == .failure(Syscall.Errno(code: EACCES)))
    }

    @Test func aToleratedFailureIsNil() throws {
        let result = try Syscall.retrying("unlinkat", path: "/x", "cannot remove", tolerating: [ENOENT]) { () -> Int32 in
            errno = ENOENT
            return -1
        }
        #expect(result == nil)
    }

    @Test func aFailedCallOnTheDiskNamesTheCallAndErrno() throws {
        let dir = TempDirectory("syscall")
        try writeFile(dir.file("plain"), "a file, not a directory")
        let path = dir.file("plain/below")
        #expect(
            throws: RecSyncError.fileSystem(
                path: path, message: "cannot create directory: \(String(cString: strerror(ENOTDIR)))",
                cause: SystemCallFailure(call: "mkdir", errno: ENOTDIR))
        ) {
            try FileIO.makeDirectories(path)
        }
    }
}
