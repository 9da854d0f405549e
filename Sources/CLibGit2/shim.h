#ifndef RECSYNC_CLIBGIT2_SHIM_H
#define RECSYNC_CLIBGIT2_SHIM_H

#include <git2.h>
#include <git2/sys/mempack.h>
#include <git2/sys/odb_backend.h>

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

static inline int recsync_git_set_cache_object_limit(git_object_t type, size_t bytes) {
    return git_libgit2_opts(GIT_OPT_SET_CACHE_OBJECT_LIMIT, type, bytes);
}

/* The certificate authorities https connections trust: a PEM file, a directory, or both
   (either may be NULL, not both). */
static inline int recsync_git_set_ssl_cert_locations(const char *file, const char *directory) {
    return git_libgit2_opts(GIT_OPT_SET_SSL_CERT_LOCATIONS, file, directory);
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

#endif
