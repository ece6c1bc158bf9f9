/* etag.h - entity tags for the static replies (/openapi.json), and the
 * If-None-Match check that turns a repeated GET into a 304 (RFC 9110 8.8.3,
 * 13.1.2). */
#ifndef SRV_ETAG_H
#define SRV_ETAG_H

#include <stddef.h>

#define SRV_ETAG_SIZE 20   /* '"' + 16 hex digits + '"' + NUL */

/* A strong tag of the bytes: their 64-bit FNV-1a hash in quotes. */
void srv_etag_of(const void *data, size_t len, char out[SRV_ETAG_SIZE]);

/* 1 if an If-None-Match header value (NULL: absent) matches etag: "*", or a
 * comma-separated list with etag in it, compared weakly (W/ ignored), as
 * If-None-Match wants. */
int srv_etag_matches(const char *if_none_match, const char *etag);

#endif
