#ifndef RECSYNC_SYS_H
#define RECSYNC_SYS_H

/* Linux calls Swift's Glibc module does not expose. */

/* syncfs(2): flush every dirty page of the file system holding fd; -1 with errno where unsupported. */
int recsync_syncfs(int fd);

// Two malloc arenas and a fixed trim threshold (glibc; elsewhere nothing): see HeapTuning.
void recsync_keep_heap_compact(void);

#endif

#ifndef RECSYNC_SYS_INOTIFY_H
#define RECSYNC_SYS_INOTIFY_H
/* inotify(7): a non-blocking, close-on-exec instance; -1 with errno where unsupported. */
int recsync_inotify_init(void);
/* Watches a directory for entries created, moved in, written or deleted; returns the watch descriptor. */
int recsync_inotify_watch_directory(int fd, const char *path);
/* Waits up to timeout_ms for events, then drains them; returns 1 if any arrived, 0 on timeout, -1 on error. */
int recsync_inotify_wait(int fd, int timeout_ms);
#endif

#ifndef RECSYNC_SYS_SPAWN_H
#define RECSYNC_SYS_SPAWN_H
/* posix_spawn(3) of /bin/sh -c command in a new process group, with default signal
   dispositions and an empty mask, stdin from stdin_fd and stdout on stdout_fd; 0 and the pid,
   or an errno value. */
int recsync_spawn_shell(const char *command, char *const envp[], int stdin_fd, int stdout_fd, int *pid_out);
/* posix_spawn_file_actions_addclosefrom_np(3): the spawned process keeps no descriptor from
   low_fd up (Swift's Glibc module does not expose it). */
#include <spawn.h>
int recsync_spawn_close_from(posix_spawn_file_actions_t *actions, int low_fd);
/* pipe2(2) with both ends close-on-exec, so a spawned command inherits only what it is given. */
int recsync_pipe_cloexec(int fds[2]);
/* write(2) that fails with EPIPE rather than raising SIGPIPE, without changing the process's
   disposition of SIGPIPE (other writes still end the process on a closed pipe). */
#include <sys/types.h>
ssize_t recsync_write_nosigpipe(int fd, const void *buffer, size_t count);
#endif

#ifndef RECSYNC_SYS_SIGPIPE_H
#define RECSYNC_SYS_SIGPIPE_H
#include <signal.h>
/* SIGPIPE blocked on the calling thread for a stretch of calls (a network fetch or push, a
   write to a pipe), so that a peer that hangs up makes a write fail with EPIPE instead of
   ending the process. A SIGPIPE raised meanwhile is consumed before the thread's mask is
   restored; the process's disposition of SIGPIPE never changes. */
typedef struct {
    sigset_t saved;
    int was_pending;
} recsync_sigpipe_guard;
/* Blocks SIGPIPE on this thread; 0, or -1 with errno if the mask cannot be changed. */
int recsync_sigpipe_block(recsync_sigpipe_guard *guard);
/* Consumes a SIGPIPE raised since recsync_sigpipe_block and restores the thread's mask.
   Leaves errno as it was. */
void recsync_sigpipe_restore(const recsync_sigpipe_guard *guard);
#endif

#ifndef RECSYNC_SYS_STATFS_H
#define RECSYNC_SYS_STATFS_H
/* The statfs(2) magic number (f_type) of the file system holding path, in *type; 0, or -1
   with errno. (Glibc's module map does not bring in <sys/vfs.h>.) */
int recsync_statfs_type(const char *path, long long *type);
#endif
