#ifndef RECSYNC_CLIBGIT2_SHIM_H
#define RECSYNC_CLIBGIT2_SHIM_H

#include <git2.h>
#include <git2/sys/mempack.h>
#include <git2/sys/odb_backend.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>

/* git_libgit2_opts is variadic and cannot be called from Swift: one wrapper per option. */

static inline int recsync_git_enable_fsync_gitdir(int enabled) {
    return git_libgit2_opts(GIT_OPT_ENABLE_FSYNC_GITDIR, enabled);
}

static inline int recsync_git_enable_strict_object_creation(int enabled) {
    return git_libgit2_opts(GIT_OPT_ENABLE_STRICT_OBJECT_CREATION, enabled);
}

static inline int recsync_git_set_cache_max_size(long long bytes) {
    return git_libgit2_opts(GIT_OPT_SET_CACHE_MAX_SIZE, (ssize_t)bytes);
}

/* Pack windows (see GitPackWindows in RecSyncGit). */
static inline int recsync_git_set_mwindow_size(size_t bytes) {
    return git_libgit2_opts(GIT_OPT_SET_MWINDOW_SIZE, bytes);
}

static inline int recsync_git_set_mwindow_mapped_limit(size_t bytes) {
    return git_libgit2_opts(GIT_OPT_SET_MWINDOW_MAPPED_LIMIT, bytes);
}

static inline size_t recsync_git_get_mwindow_size(void) {
    size_t bytes = 0;
    git_libgit2_opts(GIT_OPT_GET_MWINDOW_SIZE, &bytes);
    return bytes;
}

static inline size_t recsync_git_get_mwindow_mapped_limit(void) {
    size_t bytes = 0;
    git_libgit2_opts(GIT_OPT_GET_MWINDOW_MAPPED_LIMIT, &bytes);
    return bytes;
}

/* The write-pack handle's methods are function pointers; call them through helpers. */
static inline int recsync_odb_writepack_append(git_odb_writepack *wp, const void *data, size_t size, git_indexer_progress *stats) {
    return wp->append(wp, data, size, stats);
}

static inline int recsync_odb_writepack_commit(git_odb_writepack *wp, git_indexer_progress *stats) {
    return wp->commit(wp, stats);
}

static inline void recsync_odb_writepack_free(git_odb_writepack *wp) {
    wp->free(wp);
}

/* Writes straight into one backend (the in-memory pack), skipping the object database's
   per-object existence checks across every backend. */
static inline int recsync_odb_backend_write(git_odb_backend *backend, const git_oid *oid, const void *data, size_t len, git_object_t type) {
    return backend->write(backend, oid, data, len, type);
}

/* A peer that hangs up mid-transfer must not kill the process with SIGPIPE: network calls
   run with SIGPIPE blocked on their thread, and a SIGPIPE they raised is consumed before the
   thread's mask is restored (the write itself fails with EPIPE, which libgit2 reports). */
typedef struct {
    sigset_t saved;
    int was_pending;
} recsync_sigpipe_guard;

static inline void recsync_sigpipe_block(recsync_sigpipe_guard *guard) {
    sigset_t pipe_set, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigemptyset(&pending);
    sigpending(&pending);
    guard->was_pending = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_set, &guard->saved);
}

static inline void recsync_sigpipe_restore(const recsync_sigpipe_guard *guard) {
    if (!guard->was_pending) {
        sigset_t pipe_set, pending;
        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        sigemptyset(&pending);
        sigpending(&pending);
        if (sigismember(&pending, SIGPIPE) == 1) {
            struct timespec zero = { 0, 0 };
            while (sigtimedwait(&pipe_set, NULL, &zero) == -1 && errno == EINTR) { }
        }
    }
    pthread_sigmask(SIG_SETMASK, &guard->saved, NULL);
}

#endif
