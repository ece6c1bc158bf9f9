/* mhd_errors.h - the requests libmicrohttpd would answer itself.
 *
 * libmicrohttpd 0.9.75 parses Content-Length before it calls the access
 * handler, and answers a value it cannot parse (`-1`, `0x18`, empty,
 * `24, 24`) with its own HTML page, whose status line and headers it writes
 * twice, and which never reaches the access log or /metrics. No callback
 * comes between its parse and its reply, but it logs the failure first
 * (through MHD_OPTION_EXTERNAL_LOGGER), on the I/O thread of the connection,
 * in the middle of handling it.
 *
 * So each I/O thread keeps a list of its connections whose request line has
 * arrived (MHD_OPTION_URI_LOG_CALLBACK) and whose handler has not been
 * called yet. When libmicrohttpd logs a Content-Length failure, the heads on
 * that list whose Content-Length is one libmicrohttpd rejects
 * (srv_framing_check_length) are handed to the server, which writes its own
 * JSON reply on the socket and shuts it for writing: libmicrohttpd's reply
 * then fails to send, and it closes the connection. A connection on the
 * list is only ever answered for its own bad header, so another request's
 * log line can at worst answer it a moment early, with the error it was
 * about to get.
 */
#ifndef SRV_MHD_ERRORS_H
#define SRV_MHD_ERRORS_H

#include <microhttpd.h>

#include "framing.h"

/* A request between its request line and its handler; the server embeds it
 * in its per-request state. */
typedef struct srv_head {
    struct srv_head *prev, *next;
    struct MHD_Connection *conn;
    int listed;
} srv_head;

/* Adds h to this I/O thread's list (the URI log callback). */
void srv_heads_add(srv_head *h, struct MHD_Connection *conn);
/* Takes h off the list (its handler was called, or it is finished).
 * Idempotent. On the thread that added it. */
void srv_heads_remove(srv_head *h);

/* Called with every line libmicrohttpd logs, on the thread that logs it:
 * when the line is its Content-Length failure, calls answer(h, &why, ctx) for
 * each head of this thread that has such a Content-Length, after taking it
 * off the list. */
void srv_heads_on_log(const char *line,
                      void (*answer)(srv_head *h, const srv_framing *why, void *ctx), void *ctx);

#endif
