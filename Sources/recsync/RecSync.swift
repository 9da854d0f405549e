import Glibc
import RecSyncCLI

/// The `recsync` executable: everything is in RecSyncCLI.
@main
struct Main {
    static func main() async {
        // Started with stdin, stdout or stderr closed, the next file recsync opens would take
        // that number and receive what is printed (a notification line into a lock file). As
        // git does, such descriptors are opened on /dev/null first, but read-only: writing
        // to them must still fail as it did on the closed descriptor, or `watch` would take
        // a notification line that went nowhere for delivered and move its cursor.
        for fd: Int32 in 0...2 where fcntl(fd, F_GETFD) == -1 && errno == EBADF {
            let opened = open("/dev/null", O_RDONLY)
            if opened >= 0 && opened != fd { close(opened) }
        }
        await RecSyncCommand.main()
    }
}
