/* conns.h - open connections: their number against --max-connections, and
 * a deadline for each request head.
 *
 * The number: the acceptor takes a slot (srv_conns_admit) before it hands a
 * socket to libmicrohttpd, and the slot comes back when libmicrohttpd
 * reports the connection closed (MHD_CONNECTION_NOTIFY_CLOSED). So
 * libmicrohttpd never meets its own connection limit, which it is given far
 * above ours (http.c): in libmicrohttpd 0.9.75, a connection refused at that
 * limit after MHD_add_connection leaves the I/O thread's cleanup mutex locked
 * (daemon.c, new_connection_process_: the "Firm check under lock" returns
 * without unlocking), and from then on every I/O thread deadlocks in
 * MHD_cleanup_connections: no connection is served and SIGTERM cannot stop
 * the daemon. (One leak is left: a connection that libmicrohttpd drops for
 * want of memory before it reports it started keeps its slot.)
 *
 * libmicrohttpd's connection timeout (--timeout) counts idle time only: a
 * client that sends its request head a byte at a time (slowloris) keeps its
 * connection for ever, and enough of them take every slot of
 * --max-connections. So every connection must deliver a complete request
 * head within `head_timeout` seconds of being accepted or of its previous
 * reply (nginx's client_header_timeout). A thread looks five times a second
 * and shuts the late ones down (shutdown(2): libmicrohttpd then reads the end
 * of the stream and closes the connection itself). Bodies are not cut: a slow
 * body is bounded by the idle timeout and --max-body, and its request holds no
 * worker until it is complete.
 *
 * The same thread closes the connections whose client has hung up while the
 * server waits for a request head or a body. libmicrohttpd 0.9.75 misses
 * such an end of stream when it came with the data, before the connection
 * was in its epoll set (a client that sends half an upload and closes at
 * once, or a request and then shutdown(SHUT_WR)): it reads the data once,
 * never sees the end, and held the connection until --timeout, counted as
 * aborted:timeout. A connection whose request is complete stays open (its
 * reply is still sent), but its computation is told to stop: like nginx, a
 * client that closes its side while its request is computed is taken to
 * have left.
 */
#ifndef SRV_CONNS_H
#define SRV_CONNS_H

#include <microhttpd.h>
#include <stdatomic.h>

typedef struct srv_conns srv_conns;

/* Starts the watching thread, for at most max_open connections open at
 * once. NULL if memory or the thread cannot be had. */
srv_conns *srv_conns_start(int head_timeout_s, int max_open);

/* Takes one of the max_open slots for a connection about to be handed to
 * libmicrohttpd: 1, or 0 when every slot is taken (the caller refuses it). */
int srv_conns_admit(srv_conns *c);
/* Gives a slot back when the hand-over failed (libmicrohttpd closed the
 * socket without reporting it started). */
void srv_conns_unadmit(srv_conns *c);
/* Connections holding a slot now. */
int srv_conns_open(srv_conns *c);

/* Joins the thread and frees c; every connection must be closed (after
 * MHD_stop_daemon). Accepts NULL. */
void srv_conns_stop(srv_conns *c);

/* The MHD_OPTION_NOTIFY_CONNECTION callback, with c as its closure: watches
 * a started connection's head, gives the slot of a closed one back. */
void srv_conns_notify(void *c, struct MHD_Connection *conn, void **socket_context,
                      enum MHD_ConnectionNotificationCode code);

/* The connection's request head has arrived: no deadline while its body is
 * read; closed if the client hangs up before the body is complete. */
void srv_conns_head_done(srv_conns *c, struct MHD_Connection *conn);
/* Its body is complete: the request is served. If the client hangs up
 * while it is (no reply can reach it), *gone is set to 1 (nginx's "client
 * closed request"): the computation stops (attn_cancel_set). gone may be
 * NULL; it must stay valid until srv_conns_reply_done. */
void srv_conns_body_done(srv_conns *c, struct MHD_Connection *conn, atomic_int *gone);
/* Its reply is done: the next request head is due within the timeout. */
void srv_conns_reply_done(srv_conns *c, struct MHD_Connection *conn);

/* Connections cut because their request head came too slowly (/metrics). */
unsigned long long srv_conns_cut(srv_conns *c);
/* Connections closed because the client had hung up (/metrics). */
unsigned long long srv_conns_hung_up(srv_conns *c);

#endif
