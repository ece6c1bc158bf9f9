/* acceptor.h - the listening socket, and the thread that accepts on it.
 *
 * libmicrohttpd runs without a listening socket of its own
 * (MHD_USE_NO_LISTEN_SOCKET): this thread accepts each connection and hands
 * it to the daemon with MHD_add_connection, which gives it to one of its
 * epoll I/O threads. The reason is the graceful drain. Stopping MHD's own
 * socket takes MHD_quiesce_daemon, which in libmicrohttpd 0.9.75 races with
 * the epoll I/O threads: both remove the socket from the epoll sets, and the
 * loser's epoll_ctl fails with ENOENT and calls MHD_PANIC, which aborts the
 * process in the middle of its drain (seen here: "Fatal error in GNU
 * libmicrohttpd daemon.c:4976: Failed to remove listen FD from epoll set").
 * Closing our own socket cannot race, and from then on the kernel refuses
 * new connections at once, so a load balancer retries elsewhere at once.
 *
 * The thread also owns --max-connections: it takes a slot for each
 * connection (srv_conns_admit) before libmicrohttpd sees it, and answers a
 * connection over the limit itself: a 503 JSON reply with Retry-After,
 * written at once, the socket shut for writing and handed to the lingering
 * close (linger.h) so that the client reads the reply instead of a reset.
 * Why libmicrohttpd must never meet its own limit: conns.h.
 */
#ifndef SRV_ACCEPTOR_H
#define SRV_ACCEPTOR_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "conns.h"
#include "linger.h"

struct MHD_Daemon;

typedef struct {
    int fd;             /* the listening socket; -1 once closed */
    int wake[2];        /* a byte on this pipe stops the thread */
    pthread_t thread;
    int running;        /* the thread was started and not yet joined */
    int port;           /* the port actually bound (for --port 0) */
    struct MHD_Daemon *daemon;
    srv_conns *conns;       /* the slots of --max-connections */
    srv_linger *linger;     /* where a refused socket is read to its end */
    const char *refusal;    /* the whole reply to a connection over the limit */
    size_t refusal_len;
    atomic_ullong refused;  /* connections refused over the limit (/metrics) */
    double logged_at;       /* the last log line about refusals, and its count */
    unsigned long long logged;
} srv_acceptor;

/* Binds host:port and listens. Returns 0, or -1 with the reason logged. */
int srv_acceptor_listen(srv_acceptor *a, const char *host, int port);

/* Starts accepting into d (started with MHD_USE_NO_LISTEN_SOCKET and
 * MHD_USE_ITC), a connection for each slot of conns; over the limit the
 * `refusal` text (a whole HTTP reply, kept by the caller until
 * srv_acceptor_close) is sent instead and the socket lingers in `linger`
 * (may be NULL). Returns 0, or -1 with the reason logged. */
int srv_acceptor_start(srv_acceptor *a, struct MHD_Daemon *d, srv_conns *conns,
                       srv_linger *linger, const char *refusal, size_t refusal_len);

/* Raises the soft limit of open descriptors to the hard one (as Go and
 * systemd services do) and logs a warning when it is still below what
 * `max_connections` need. */
void srv_acceptor_fd_room(int max_connections);

/* Stops the thread and closes the socket: new connections are refused.
 * The connections already waiting in the backlog are first handed to the
 * daemon, which keeps every connection it has. Idempotent. */
void srv_acceptor_close(srv_acceptor *a);

#endif
