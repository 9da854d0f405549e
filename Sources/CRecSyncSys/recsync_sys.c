#define _GNU_SOURCE
#include <errno.h>
#include <unistd.h>
#include "recsync_sys.h"

int recsync_syncfs(int fd) {
#if defined(__linux__)
    return syncfs(fd);
#else
    (void)fd;
    errno = ENOSYS;
    return -1;
#endif
}

#if defined(__linux__)
#include <poll.h>
#include <sys/inotify.h>
#endif

int recsync_inotify_init(void) {
#if defined(__linux__)
    return inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
#else
    errno = ENOSYS;
    return -1;
#endif
}

int recsync_inotify_watch_directory(int fd, const char *path) {
#if defined(__linux__)
    return inotify_add_watch(fd, path, IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE | IN_MODIFY);
#else
    (void)fd; (void)path;
    errno = ENOSYS;
    return -1;
#endif
}

int recsync_inotify_wait(int fd, int timeout_ms) {
#if defined(__linux__)
    struct pollfd p = { .fd = fd, .events = POLLIN, .revents = 0 };
    int n = poll(&p, 1, timeout_ms);
    if (n <= 0) return n;
    char buffer[4096];
    int any = 0;
    for (;;) {
        ssize_t r = read(fd, buffer, sizeof buffer);
        if (r > 0) { any = 1; continue; }
        break;
    }
    return any;
#else
    (void)fd; (void)timeout_ms;
    errno = ENOSYS;
    return -1;
#endif
}
