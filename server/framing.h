/* framing.h - a request head's framing, checked before any body byte is
 * read, as RFC 9112 (sections 6.1 and 6.3), nginx and HAProxy hold it:
 *
 *   - an HTTP/1.1 request without Host, or with two: 400;
 *   - Content-Length given twice (even with one value: nginx), or not a
 *     plain decimal number: 400 (over 2^64 - 1: 413);
 *   - Transfer-Encoding with Content-Length, in an HTTP/1.0 request, or whose
 *     last coding is not chunked (`identity`, `gzip`): 400, since the body's
 *     end cannot be known; chunked after another coding (`gzip, chunked`)
 *     or twice: 501, a coding the server does not implement (400 for twice);
 *   - POST, PUT or PATCH with neither Content-Length nor Transfer-Encoding:
 *     411, since the bytes that follow would be read as the next request.
 *
 * Each is answered with "Connection: close" (the server cannot know where
 * the next request would begin). The libmicrohttpd of Debian bookworm
 * (0.9.75) already takes the first of two Content-Length headers, reads
 * `gzip, chunked` until the timeout, and answers a malformed Content-Length
 * itself with an HTML page whose status line and headers it writes twice;
 * http.c answers those with JSON before it does (mhd_errors.h).
 */
#ifndef SRV_FRAMING_H
#define SRV_FRAMING_H

#include <microhttpd.h>

#include "api/api.h"

typedef struct {
    int status;          /* 0: the framing is sound; else the status of err's row */
    api_error err;       /* BAD_REQUEST (400), LENGTH_REQUIRED (411), TOO_LARGE (413),
                            NOT_IMPLEMENTED (501); OVERLOADED (503) from http.c */
    char message[256];   /* what is wrong, one line, the client's text clamped */
} srv_framing;

/* Checks conn's request head; version and method as libmicrohttpd gives
 * them to the access handler. Fills *out. */
void srv_framing_check(struct MHD_Connection *conn, const char *version, const char *method,
                       srv_framing *out);

/* The Content-Length headers of conn alone (libmicrohttpd's own test):
 * fills *out with 400 or 413 when one is not a decimal number that fits 64
 * bits, else out->status = 0. */
void srv_framing_check_length(struct MHD_Connection *conn, srv_framing *out);

/* Sets f to err's row with a printf-style message (non-printable bytes of
 * the client's text become '?'). */
void srv_framing_fail(srv_framing *f, api_error err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The error reply for f into a fresh buf (api_error_reply). 0, -1 on OOM. */
int srv_framing_body(const srv_framing *f, api_buf *buf);

#endif
