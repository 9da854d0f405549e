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

#include <signal.h>
#include <spawn.h>

/* Starts /bin/sh -c command in a process group of its own (so a whole pipeline, and
   anything it leaves running, can be signalled as one), with the signal dispositions and
   mask a fresh process has, stdin from stdin_fd and stdout on stdout_fd. Returns 0 and the
   pid, or an errno value. */
int recsync_spawn_shell(const char *command, char *const envp[], int stdin_fd, int stdout_fd, int *pid_out) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    sigset_t defaults, empty;
    int rc = posix_spawn_file_actions_init(&actions);
    if (rc != 0) return rc;
    rc = posix_spawnattr_init(&attr);
    if (rc != 0) { posix_spawn_file_actions_destroy(&actions); return rc; }
    posix_spawn_file_actions_adddup2(&actions, stdin_fd, 0);
    posix_spawn_file_actions_adddup2(&actions, stdout_fd, 1);
    /* The hook gets stdin, stdout and stderr only: not the delivery lock, a store's pack
       files or anything else of watch's that is not close-on-exec. */
    posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    sigfillset(&defaults);
    sigemptyset(&empty);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setsigmask(&attr, &empty);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    char *const argv[] = {"sh", "-c", (char *)command, NULL};
    pid_t pid = 0;
    rc = posix_spawn(&pid, "/bin/sh", &actions, &attr, argv, envp);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    if (rc == 0) *pid_out = (int)pid;
    return rc;
}

#include <fcntl.h>
#include <pthread.h>
#include <time.h>

int recsync_spawn_close_from(posix_spawn_file_actions_t *actions, int low_fd) {
    return posix_spawn_file_actions_addclosefrom_np(actions, low_fd);
}

int recsync_pipe_cloexec(int fds[2]) {
    return pipe2(fds, O_CLOEXEC);
}

static void recsync_sigpipe_only(sigset_t *set) {
    sigemptyset(set);
    sigaddset(set, SIGPIPE);
}

int recsync_sigpipe_block(recsync_sigpipe_guard *guard) {
    sigset_t pipe_only, pending;
    recsync_sigpipe_only(&pipe_only);
    if (pthread_sigmask(SIG_BLOCK, &pipe_only, &guard->saved) != 0) { errno = EINVAL; return -1; }
    /* Checked once blocked: a SIGPIPE pending from before is not this stretch's to consume. */
    guard->was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
    return 0;
}

void recsync_sigpipe_restore(const recsync_sigpipe_guard *guard) {
    int saved_errno = errno;
    if (!guard->was_pending) {
        sigset_t pipe_only, pending;
        recsync_sigpipe_only(&pipe_only);
        if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1) {
            struct timespec zero = { 0, 0 };
            while (sigtimedwait(&pipe_only, NULL, &zero) < 0 && errno == EINTR) {}
        }
    }
    pthread_sigmask(SIG_SETMASK, &guard->saved, NULL);
    errno = saved_errno;
}

ssize_t recsync_write_nosigpipe(int fd, const void *buffer, size_t count) {
    recsync_sigpipe_guard guard;
    if (recsync_sigpipe_block(&guard) != 0) return -1;
    ssize_t n = write(fd, buffer, count);
    recsync_sigpipe_restore(&guard);
    return n;
}

#if defined(__linux__)
#include <sys/vfs.h>
#endif

int recsync_statfs_type(const char *path, long long *type) {
#if defined(__linux__)
    struct statfs info;
    if (statfs(path, &info) != 0) return -1;
    *type = (long long)info.f_type;
    return 0;
#else
    (void)path;
    (void)type;
    errno = ENOSYS;
    return -1;
#endif
}

#if defined(__GLIBC__)
#include <malloc.h>
#endif

void recsync_keep_heap_compact(void) {
#if defined(__GLIBC__)
    mallopt(M_ARENA_MAX, 2);
    mallopt(M_TRIM_THRESHOLD, 128 * 1024);
#endif
}
