/* conns.h - open connections, and a deadline for each request head.
 *
 * libmicrohttpd's connection timeout (--timeout) counts idle time only: a
 * client that sends its request head a byte at a time (slowloris) keeps its
 * connection for ever, and enough of them take every slot of
 * --max-connections. So every connection must deliver a complete request
 * head within `head_timeout` seconds of being accepted or of its previous
 * reply (nginx's client_header_timeout). A thread looks twice a second and
 * shuts the late ones down (shutdown(2): libmicrohttpd then reads the end of
 * the stream and closes the connection itself). Bodies are not cut: a slow
 * body is bounded by the idle timeout and --max-body, and its request holds no
 * worker until it is complete.
 */
#ifndef SRV_CONNS_H
#define SRV_CONNS_H

#include <microhttpd.h>

typedef struct srv_conns srv_conns;

/* Starts the watching thread. NULL if memory or the thread cannot be had. */
srv_conns *srv_conns_start(int head_timeout_s);

/* Joins the thread and frees c; every connection must be closed (after
 * MHD_stop_daemon). Accepts NULL. */
void srv_conns_stop(srv_conns *c);

/* The MHD_OPTION_NOTIFY_CONNECTION callback, with c as its closure. */
void srv_conns_notify(void *c, struct MHD_Connection *conn, void **socket_context,
                      enum MHD_ConnectionNotificationCode code);

/* The connection's request head has arrived: no deadline while it is served. */
void srv_conns_head_done(srv_conns *c, struct MHD_Connection *conn);
/* Its reply is done: the next request head is due within the timeout. */
void srv_conns_reply_done(srv_conns *c, struct MHD_Connection *conn);

/* Connections cut because their request head came too slowly (/metrics). */
unsigned long long srv_conns_cut(srv_conns *c);

#endif
