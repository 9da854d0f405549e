import CRecSyncSys
import Glibc
import Testing

/// The one SIGPIPE guard (CRecSyncSys), behind network calls and `watch`'s pipe writes: a write
/// to a pipe nobody reads fails with EPIPE, the process lives on, and no SIGPIPE is left pending.
@Suite struct SigpipeGuardTests {
    /// A pipe whose read end is closed.
    func brokenPipe() throws -> Int32 {
        var fds: [Int32] = [0, 0]
        try #require(recsync_pipe_cloexec(&fds) == 0)
        close(fds[0])
        return fds[1]
    }

    func sigpipePending() -> Bool {
        var pending = sigset_t()
        sigemptyset(&pending)
        sigpending(&pending)
        return sigismember(&pending, SIGPIPE) == 1
    }

    @Test func aWriteToABrokenPipeFailsWithEPIPE() throws {
        let fd = try brokenPipe()
        defer { close(fd) }
        let bytes: [UInt8] = [1, 2, 3]
        let n = bytes.withUnsafeBytes { recsync_write_nosigpipe(fd, $0.baseAddress, $0.count) }
        let code = errno
        #expect(n == -1)
        #expect(code == EPIPE)
        #expect(!sigpipePending())
    }

    @Test func callsUnderTheGuardFailWithEPIPEAndTheMaskComesBack() throws {
        let fd = try brokenPipe()
        defer { close(fd) }
        var before = sigset_t()
        pthread_sigmask(SIG_SETMASK, nil, &before)
        var guardState = recsync_sigpipe_guard()
        #expect(recsync_sigpipe_block(&guardState) == 0)
        let bytes: [UInt8] = [1]
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let code = errno
        recsync_sigpipe_restore(&guardState)
        #expect(errno == code)  // restore leaves errno as the call set it
        #expect(n == -1 && code == EPIPE)
        #expect(!sigpipePending())
        var after = sigset_t()
        pthread_sigmask(SIG_SETMASK, nil, &after)
        #expect(sigismember(&after, SIGPIPE) == sigismember(&before, SIGPIPE))
    }
}
