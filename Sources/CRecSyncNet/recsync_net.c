#define _GNU_SOURCE
#include "recsync_net.h"

#include <git2.h>
#include <git2/sys/stream.h>

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Connections one operation holds open at once (an http fetch: one, and one to a proxy). */
#define RECSYNC_NET_MAX_SOCKETS 8

struct recsync_net_watch {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t timer;
    int timer_started;
    int stopping;
    /* The operation's own reference, and one per stream created under the watch. */
    int refs;
    int connect_ms;
    int idle_ms;
    int holds;
    recsync_net_outcome outcome;
    /* Monotonic milliseconds of the last byte our stream moved, or progress libgit2 reported. */
    _Atomic int64_t last_activity;
    int sockets[RECSYNC_NET_MAX_SOCKETS];
    int socket_count;
    recsync_net_watch *previous;
};

static __thread recsync_net_watch *current_watch;

/* The stream. Its first members are exactly libgit2 1.5's git_socket_stream
   (src/libgit2/streams/socket.h): the ssh transport takes the stream it gets from the
   registry for one of those and hands `s` to libssh2. */
typedef struct {
    git_stream parent;
    char *host;
    char *port;
    int s;
    /* Ours. */
    recsync_net_watch *watch;
    /* What libgit2 wrote and we have not sent yet (see stream_write). */
    char *pending;
    size_t pending_length;
} recsync_stream;

/* How much a stream holds before it sends: libgit2 writes a pack an object at a time, header
   and body apart (a two-byte write, then the deflated object), and the http client writes a
   request's headers and body apart. Sent one by one, small writes waited on Nagle's
   algorithm for the acknowledgement of the one before. */
#define RECSYNC_NET_WRITE_BUFFER (64 * 1024)

static int64_t monotonic_ms(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

static void touch(recsync_net_watch *watch) {
    if (watch) atomic_store_explicit(&watch->last_activity, monotonic_ms(), memory_order_relaxed);
}

static void watch_release(recsync_net_watch *watch) {
    pthread_mutex_lock(&watch->lock);
    int refs = --watch->refs;
    pthread_mutex_unlock(&watch->lock);
    if (refs > 0) return;
    pthread_cond_destroy(&watch->wake);
    pthread_mutex_destroy(&watch->lock);
    free(watch);
}

/* How long the connections have been silent: since the last activity our stream or libgit2
   saw, or the kernel saw on a socket (libssh2 reads and writes an ssh socket itself). */
static int64_t silence_ms(recsync_net_watch *watch, int64_t now) {
    int64_t silence = now - atomic_load_explicit(&watch->last_activity, memory_order_relaxed);
    for (int i = 0; i < watch->socket_count; i++) {
        struct tcp_info info;
        socklen_t length = sizeof info;
        memset(&info, 0, sizeof info);
        if (getsockopt(watch->sockets[i], IPPROTO_TCP, TCP_INFO, &info, &length) != 0) continue;
        if (length < offsetof(struct tcp_info, tcpi_last_data_recv) + sizeof info.tcpi_last_data_recv) continue;
        int64_t quiet = info.tcpi_last_data_recv < info.tcpi_last_data_sent ? info.tcpi_last_data_recv : info.tcpi_last_data_sent;
        if (quiet < silence) silence = quiet;
    }
    return silence;
}

static void *watch_timer(void *argument) {
    recsync_net_watch *watch = argument;
    /* Look often enough that a silent connection ends within a tenth of the limit of it. */
    int64_t tick = watch->idle_ms / 10;
    if (tick < 10) tick = 10;
    if (tick > 250) tick = 250;
    pthread_mutex_lock(&watch->lock);
    while (!watch->stopping) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += (long)(tick % 1000) * 1000000;
        until.tv_sec += tick / 1000 + until.tv_nsec / 1000000000;
        until.tv_nsec %= 1000000000;
        pthread_cond_timedwait(&watch->wake, &watch->lock, &until);
        if (watch->stopping) break;
        if (watch->outcome != RECSYNC_NET_OK || watch->holds > 0 || watch->socket_count == 0) continue;
        if (silence_ms(watch, monotonic_ms()) < watch->idle_ms) continue;
        watch->outcome = RECSYNC_NET_IDLE_TIMEOUT;
        /* Under the lock: a stream closes its socket only after taking it off this list,
           so the descriptor shut down here is never one reused for something else. */
        for (int i = 0; i < watch->socket_count; i++) shutdown(watch->sockets[i], SHUT_RDWR);
    }
    pthread_mutex_unlock(&watch->lock);
    return NULL;
}

/* Adds a connected socket to the watch (starting its timer the first time). 0, or -1 with
   libgit2's error set. */
static int watch_add(recsync_net_watch *watch, int s) {
    if (!watch) return 0;
    int result = 0;
    pthread_mutex_lock(&watch->lock);
    if (watch->socket_count == RECSYNC_NET_MAX_SOCKETS) {
        git_error_set(GIT_ERROR_NET, "more than %d connections at once in one operation", RECSYNC_NET_MAX_SOCKETS);
        result = -1;
    } else {
        watch->sockets[watch->socket_count++] = s;
        touch(watch);
        if (watch->idle_ms > 0 && !watch->timer_started) {
            int error = pthread_create(&watch->timer, NULL, watch_timer, watch);
            if (error == 0) {
                watch->timer_started = 1;
            } else {
                watch->socket_count--;
                git_error_set(GIT_ERROR_OS, "cannot start the timer that bounds a silent connection: %s", strerror(error));
                result = -1;
            }
        }
    }
    pthread_mutex_unlock(&watch->lock);
    return result;
}

static void watch_remove(recsync_net_watch *watch, int s) {
    if (!watch) return;
    pthread_mutex_lock(&watch->lock);
    for (int i = 0; i < watch->socket_count; i++) {
        if (watch->sockets[i] != s) continue;
        watch->sockets[i] = watch->sockets[--watch->socket_count];
        break;
    }
    pthread_mutex_unlock(&watch->lock);
}

/* Connects one address without blocking, waiting at most timeout_ms (<= 0: no limit).
   0 and the connected (blocking) socket, or an errno value; ETIMEDOUT when it timed out. */
static int connect_address(const struct addrinfo *address, int64_t timeout_ms, int *out) {
    int s = socket(address->ai_family, address->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, address->ai_protocol);
    if (s < 0) return errno;
    if (connect(s, address->ai_addr, address->ai_addrlen) != 0) {
        if (errno != EINPROGRESS) {
            int error = errno;
            close(s);
            return error;
        }
        int64_t deadline = monotonic_ms() + timeout_ms;
        for (;;) {
            int wait = -1;
            if (timeout_ms > 0) {
                int64_t left = deadline - monotonic_ms();
                wait = left > 0 ? (int)left : 0;
            }
            struct pollfd p = { .fd = s, .events = POLLOUT, .revents = 0 };
            int n = poll(&p, 1, wait);
            if (n > 0) break;
            if (n == 0) {
                close(s);
                return ETIMEDOUT;
            }
            if (errno != EINTR) {
                int error = errno;
                close(s);
                return error;
            }
        }
        int error = 0;
        socklen_t length = sizeof error;
        if (getsockopt(s, SOL_SOCKET, SO_ERROR, &error, &length) != 0) error = errno;
        if (error != 0) {
            close(s);
            return error;
        }
    }
    /* The stream holds small writes itself (stream_write); Nagle's algorithm would only
       hold the last segment of each batch back until the one before is acknowledged. */
    if (address->ai_family == AF_INET || address->ai_family == AF_INET6) {
        int on = 1;
        (void)setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    }
    int flags = fcntl(s, F_GETFL);
    if (flags < 0 || fcntl(s, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        int error = errno;
        close(s);
        return error;
    }
    *out = s;
    return 0;
}

static int stream_connect(git_stream *stream) {
    recsync_stream *st = (recsync_stream *)stream;
    /* An operation a limit has ended does not get to start again behind the watch's back
       (a transport that would reconnect after its connection was shut down). */
    if (st->watch && recsync_net_watch_outcome(st->watch) != RECSYNC_NET_OK) {
        git_error_set(GIT_ERROR_NET, "failed to connect to %s port %s: the operation already ran out of time", st->host, st->port);
        return -1;
    }
    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_family = AF_UNSPEC;
    struct addrinfo *addresses = NULL;
    int resolved = getaddrinfo(st->host, st->port, &hints, &addresses);
    if (resolved != 0) {
        git_error_set(GIT_ERROR_NET, "failed to resolve address for %s: %s", st->host, gai_strerror(resolved));
        return -1;
    }
    int count = 0;
    for (struct addrinfo *a = addresses; a; a = a->ai_next) count++;
    int64_t limit = st->watch ? st->watch->connect_ms : 0;
    int64_t deadline = monotonic_ms() + limit;
    int error = ECONNREFUSED, timed_out = 0, s = -1, tried = 0;
    for (struct addrinfo *a = addresses; a && s < 0; a = a->ai_next, tried++) {
        /* The time left is shared among the addresses left, so one that drops packets does
           not take all of it from the next (a name with an IPv6 and an IPv4 address). */
        int64_t share = 0;
        if (limit > 0) {
            share = (deadline - monotonic_ms()) / (count - tried);
            if (share < 1) share = 1;
        }
        error = connect_address(a, share, &s);
        if (error == ETIMEDOUT) timed_out = 1;
    }
    freeaddrinfo(addresses);
    if (s < 0) {
        if (timed_out) {
            if (st->watch) {
                pthread_mutex_lock(&st->watch->lock);
                if (st->watch->outcome == RECSYNC_NET_OK) st->watch->outcome = RECSYNC_NET_CONNECT_TIMEOUT;
                pthread_mutex_unlock(&st->watch->lock);
            }
            git_error_set(GIT_ERROR_NET, "failed to connect to %s port %s: no answer within %lld ms", st->host, st->port, (long long)limit);
        } else {
            git_error_set(GIT_ERROR_NET, "failed to connect to %s port %s: %s", st->host, st->port, strerror(error));
        }
        return -1;
    }
    if (watch_add(st->watch, s) != 0) {
        close(s);
        return -1;
    }
    st->s = s;
    return 0;
}

/* Sends all of data. 0, or -1 with libgit2's error set. */
static int send_all(recsync_stream *st, const char *data, size_t length) {
    while (length > 0) {
        ssize_t written = send(st->s, data, length, MSG_NOSIGNAL);
        if (written < 0 && errno == EINTR) continue;
        if (written < 0) {
            git_error_set(GIT_ERROR_NET, "error sending data: %s", strerror(errno));
            return -1;
        }
        touch(st->watch);
        data += written;
        length -= (size_t)written;
    }
    return 0;
}

/* Sends what the stream holds. 0, or -1 with libgit2's error set (what it held is dropped:
   the connection is broken then). */
static int stream_flush(recsync_stream *st) {
    if (st->pending_length == 0) return 0;
    size_t length = st->pending_length;
    st->pending_length = 0;
    return send_all(st, st->pending, length);
}

/* Writes are held (up to RECSYNC_NET_WRITE_BUFFER) until the stream is read from or closed,
   or the buffer fills: libgit2 only waits for the other side after it has written everything
   the other side needs, and it waits by reading this stream (the git:// and http transports;
   over TLS, mbedTLS reads and writes through it). The socket has TCP_NODELAY: what is sent
   then goes at once, in as few segments as its size needs. */
static ssize_t stream_write(git_stream *stream, const char *data, size_t length, int flags) {
    recsync_stream *st = (recsync_stream *)stream;
    (void)flags; /* libgit2 passes 0 */
    if (!st->pending) {
        st->pending = malloc(RECSYNC_NET_WRITE_BUFFER);
        if (!st->pending) {
            git_error_set_oom();
            return -1;
        }
    }
    if (st->pending_length + length > RECSYNC_NET_WRITE_BUFFER) {
        if (stream_flush(st) != 0) return -1;
    }
    if (length >= RECSYNC_NET_WRITE_BUFFER) {
        if (send_all(st, data, length) != 0) return -1;
    } else {
        memcpy(st->pending + st->pending_length, data, length);
        st->pending_length += length;
    }
    return (ssize_t)length;
}

static ssize_t stream_read(git_stream *stream, void *data, size_t length) {
    recsync_stream *st = (recsync_stream *)stream;
    if (stream_flush(st) != 0) return -1;
    ssize_t received;
    do {
        received = recv(st->s, data, length, 0);
    } while (received < 0 && errno == EINTR);
    if (received < 0) {
        git_error_set(GIT_ERROR_NET, "error receiving socket data: %s", strerror(errno));
        return -1;
    }
    if (received > 0) touch(st->watch);
    return received;
}

static int stream_close(git_stream *stream) {
    recsync_stream *st = (recsync_stream *)stream;
    if (st->s < 0) return 0;
    /* What is held still goes (the last words of a protocol: a flush packet); a connection
       that cannot take it is closed all the same. */
    int flushed = stream_flush(st);
    watch_remove(st->watch, st->s);
    int result = close(st->s);
    st->s = -1;
    return flushed != 0 ? -1 : result;
}

static void stream_free(git_stream *stream) {
    recsync_stream *st = (recsync_stream *)stream;
    if (st->s >= 0) stream_close(stream);
    if (st->watch) watch_release(st->watch);
    free(st->pending);
    free(st->host);
    free(st->port);
    free(st);
}

static int stream_new(git_stream **out, const char *host, const char *port) {
    recsync_stream *st = calloc(1, sizeof *st);
    if (!st) {
        git_error_set_oom();
        return -1;
    }
    st->host = strdup(host);
    st->port = strdup(port ? port : "");
    if (!st->host || !st->port) {
        free(st->host);
        free(st->port);
        free(st);
        git_error_set_oom();
        return -1;
    }
    st->parent.version = GIT_STREAM_VERSION;
    st->parent.connect = stream_connect;
    st->parent.write = stream_write;
    st->parent.read = stream_read;
    st->parent.close = stream_close;
    st->parent.free = stream_free;
    st->s = -1;
    st->watch = current_watch;
    if (st->watch) {
        pthread_mutex_lock(&st->watch->lock);
        st->watch->refs++;
        pthread_mutex_unlock(&st->watch->lock);
    }
    *out = &st->parent;
    return 0;
}

int recsync_net_register(void) {
    git_stream_registration registration;
    memset(&registration, 0, sizeof registration);
    registration.version = GIT_STREAM_VERSION;
    registration.init = stream_new;
    return git_stream_register(GIT_STREAM_STANDARD, &registration);
}

recsync_net_watch *recsync_net_watch_begin(int connect_ms, int idle_ms) {
    recsync_net_watch *watch = calloc(1, sizeof *watch);
    if (!watch) return NULL;
    pthread_condattr_t attributes;
    pthread_condattr_init(&attributes);
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
    pthread_cond_init(&watch->wake, &attributes);
    pthread_condattr_destroy(&attributes);
    pthread_mutex_init(&watch->lock, NULL);
    watch->refs = 1;
    watch->connect_ms = connect_ms > 0 ? connect_ms : 0;
    watch->idle_ms = idle_ms > 0 ? idle_ms : 0;
    touch(watch);
    watch->previous = current_watch;
    current_watch = watch;
    return watch;
}

void recsync_net_watch_end(recsync_net_watch *watch) {
    if (!watch) return;
    pthread_mutex_lock(&watch->lock);
    watch->stopping = 1;
    int started = watch->timer_started;
    pthread_cond_signal(&watch->wake);
    pthread_mutex_unlock(&watch->lock);
    if (started) pthread_join(watch->timer, NULL);
    /* Off this thread's stack of watches, even if one begun after it is still current. */
    if (current_watch == watch) {
        current_watch = watch->previous;
    } else {
        for (recsync_net_watch *later = current_watch; later; later = later->previous) {
            if (later->previous != watch) continue;
            later->previous = watch->previous;
            break;
        }
    }
    watch_release(watch);
}

recsync_net_outcome recsync_net_watch_outcome(recsync_net_watch *watch) {
    pthread_mutex_lock(&watch->lock);
    recsync_net_outcome outcome = watch->outcome;
    pthread_mutex_unlock(&watch->lock);
    return outcome;
}

void recsync_net_progress(void) {
    touch(current_watch);
}

void recsync_net_hold(void) {
    recsync_net_watch *watch = current_watch;
    if (!watch) return;
    pthread_mutex_lock(&watch->lock);
    watch->holds++;
    pthread_mutex_unlock(&watch->lock);
}

void recsync_net_release(void) {
    recsync_net_watch *watch = current_watch;
    if (!watch) return;
    pthread_mutex_lock(&watch->lock);
    if (watch->holds > 0) watch->holds--;
    touch(watch);
    pthread_mutex_unlock(&watch->lock);
}
