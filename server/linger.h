/* linger.h - lingering close after an early reply, as nginx's lingering_close.
 *
 * When the server answers before it has read the request body (413 from
 * Content-Length), libmicrohttpd sends the reply, shuts the socket down for
 * writing and closes it. A client that sends its whole body without waiting
 * (no "Expect: 100-continue": urllib, fetch, most libraries) is still
 * writing then, and the kernel answers data that arrives on a closed socket
 * with a reset, which can destroy the 413 before the client has read it.
 *
 * So before answering early, the server hands a duplicate of the socket to
 * this module: the socket stays open after libmicrohttpd's close, and one
 * thread reads and discards what the client still sends until it closes its
 * side, it has sent `max_bytes`, it has been quiet for SRV_LINGER_IDLE_S
 * seconds, or SRV_LINGER_TOTAL_S seconds have passed (nginx: lingering_timeout
 * 5 s, lingering_time 30 s). At most `max_sockets` sockets linger at once;
 * past that, the socket closes at once as before.
 */
#ifndef SRV_LINGER_H
#define SRV_LINGER_H

#include <stddef.h>

#define SRV_LINGER_IDLE_S 5
#define SRV_LINGER_TOTAL_S 30

typedef struct srv_linger srv_linger;

/* Starts the thread. Returns NULL if memory, epoll or the thread cannot be had. */
srv_linger *srv_linger_start(size_t max_bytes, int max_sockets);

/* Takes a duplicate of the connected socket fd (the caller keeps fd) and
 * discards what arrives on it until one of the bounds. Returns 0, or -1 if it
 * does not linger (too many already, no descriptor); nothing changes then. */
int srv_linger_add(srv_linger *l, int fd);

/* Sockets lingering right now (for /metrics). */
int srv_linger_count(srv_linger *l);

/* Closes every lingering socket, joins the thread and frees l. Accepts NULL. */
void srv_linger_stop(srv_linger *l);

#endif
