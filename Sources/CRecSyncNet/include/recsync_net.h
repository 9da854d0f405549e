#ifndef RECSYNC_NET_H
#define RECSYNC_NET_H

/* Time limits on libgit2's network connections (libgit2 1.5 has no option for them).

   recsync_net_register() makes libgit2 open every TCP connection (git://, http(s):// under
   TLS, and ssh://, whose transport takes the socket of the stream) through a stream of ours
   that connects without blocking, bounded by a timeout. A watch, begun on the thread that
   runs one network operation, then bounds silence: when nothing is received or sent on its
   connections and libgit2 reports no progress for the idle timeout, the watch shuts the
   sockets down, so whatever libgit2 (or libssh2, which reads the socket itself) is blocked
   in returns, and the operation fails.

   This header uses no libgit2 type on purpose: libgit2's headers belong to the CLibGit2
   module. */

/* Registers the stream as libgit2's standard socket stream, once per process (after
   git_libgit2_init). 0, or libgit2's error code. */
int recsync_net_register(void);

typedef struct recsync_net_watch recsync_net_watch;

/* What ended a watched operation early. */
typedef enum {
    RECSYNC_NET_OK = 0,
    /* No address of the host accepted a connection within the connect timeout. */
    RECSYNC_NET_CONNECT_TIMEOUT = 1,
    /* A connection stayed silent for the idle timeout and was shut down. */
    RECSYNC_NET_IDLE_TIMEOUT = 2
} recsync_net_outcome;

/* Begins watching the network operations of the calling thread until
   recsync_net_watch_end: connections give up after connect_ms, and silence longer than
   idle_ms ends them (0: no limit, as libgit2 does). NULL when memory runs out. */
recsync_net_watch *recsync_net_watch_begin(int connect_ms, int idle_ms);

/* Stops the watch (joining its timer thread), makes the thread's previous watch current
   again, and frees it once no stream holds it. Call on the thread that began it. */
void recsync_net_watch_end(recsync_net_watch *watch);

/* What ended the watched operation early, if anything. */
recsync_net_outcome recsync_net_watch_outcome(recsync_net_watch *watch);

/* The calling thread's operation made progress (a libgit2 progress callback ran: objects
   indexed, a pack being built or sent, a message from the server): not silence. */
void recsync_net_progress(void);

/* While held (calls nest), the calling thread's operation is waiting for something other
   than the network (a credential helper asking the user): silence does not count. */
void recsync_net_hold(void);
void recsync_net_release(void);

#endif
