/* mhd_errors.c - see mhd_errors.h. One list per I/O thread, no lock: every
 * call for a connection comes on its own I/O thread. */
#include "mhd_errors.h"

#include <string.h>

static _Thread_local srv_head *heads;

void srv_heads_add(srv_head *h, struct MHD_Connection *conn) {
    h->conn = conn;
    h->prev = NULL;
    h->next = heads;
    if (heads) heads->prev = h;
    heads = h;
    h->listed = 1;
}

void srv_heads_remove(srv_head *h) {
    if (!h->listed) return;
    if (h->prev) h->prev->next = h->next;
    else heads = h->next;
    if (h->next) h->next->prev = h->prev;
    h->prev = h->next = NULL;
    h->listed = 0;
}

/* libmicrohttpd 0.9.75's lines before it answers a Content-Length itself
 * (connection.c, parse_connection_headers). */
static int length_failure(const char *line) {
    return strstr(line, "Failed to parse `Content-Length' header") != NULL ||
           strstr(line, "Too large value of 'Content-Length' header") != NULL;
}

void srv_heads_on_log(const char *line,
                      void (*answer)(srv_head *h, const srv_framing *why, void *ctx), void *ctx) {
    if (!length_failure(line)) return;
    for (srv_head *h = heads, *next; h; h = next) {
        next = h->next;
        srv_framing why;
        srv_framing_check_length(h->conn, &why);
        if (!why.status) continue;
        srv_heads_remove(h);
        answer(h, &why, ctx);
    }
}
