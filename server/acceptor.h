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
 */
#ifndef SRV_ACCEPTOR_H
#define SRV_ACCEPTOR_H

#include <pthread.h>

struct MHD_Daemon;

typedef struct {
    int fd;             /* the listening socket; -1 once closed */
    int wake[2];        /* a byte on this pipe stops the thread */
    pthread_t thread;
    int running;        /* the thread was started and not yet joined */
    int port;           /* the port actually bound (for --port 0) */
    struct MHD_Daemon *daemon;
} srv_acceptor;

/* Binds host:port and listens. Returns 0, or -1 with the reason logged. */
int srv_acceptor_listen(srv_acceptor *a, const char *host, int port);

/* Starts accepting into d (started with MHD_USE_NO_LISTEN_SOCKET and
 * MHD_USE_ITC). Returns 0, or -1 with the reason logged. */
int srv_acceptor_start(srv_acceptor *a, struct MHD_Daemon *d);

/* Stops the thread and closes the socket: new connections are refused.
 * The connections already waiting in the backlog are first handed to the
 * daemon, which keeps every connection it has. Idempotent. */
void srv_acceptor_close(srv_acceptor *a);

#endif
