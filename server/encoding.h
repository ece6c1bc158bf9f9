/* encoding.h - HTTP content codings: what a request body is in
 * (Content-Encoding) and whether a client takes gzip replies
 * (Accept-Encoding). */
#ifndef SRV_ENCODING_H
#define SRV_ENCODING_H

typedef enum {
    SRV_CODING_IDENTITY,  /* no header, empty, or "identity" */
    SRV_CODING_GZIP,      /* "gzip" or "x-gzip" */
    SRV_CODING_OTHER,     /* anything else: 415 */
} srv_coding;

/* The coding of a Content-Encoding header value (NULL = absent). A list of
 * several codings is SRV_CODING_OTHER. */
srv_coding srv_content_coding(const char *ce);

/* 1 if an Accept-Encoding header value accepts gzip with a q-value above 0
 * ("gzip", "x-gzip" or "*", the most specific entry deciding). */
int srv_accepts_gzip(const char *ae);

/* The q-value an Accept header value gives the media type `type`: from the
 * entry naming it exactly, else from its major type's wildcard entry
 * ("image" followed by slash-star), else from the any-type entry; -1 when none
 * of those is listed. */
double srv_accept_q(const char *accept, const char *type);

#endif
