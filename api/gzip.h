/* gzip.h - gzip request bodies and replies, with libdeflate (private to api/
 * until the server uses it through api.h). */
#ifndef API_GZIP_H
#define API_GZIP_H

#include <stddef.h>

#include "api/api.h"

typedef enum {
    API_GZ_OK = 0,
    API_GZ_TOO_LARGE = -1,  /* inflates to more than the limit (checked before allocating) */
    API_GZ_INVALID = -2,    /* not one well-formed gzip member */
    API_GZ_NOMEM = -3,
} api_gz_status;

/* Inflates the gzip member in[0..n) into a new buffer *out (NUL-terminated,
 * *out_len bytes, free() it) if it inflates to at most max bytes. The size
 * in the gzip trailer is checked against max before anything is allocated,
 * and inflating stops at that size: a member that lies about it is invalid.
 * why (optional, 128 bytes) says what is wrong. */
int api_gunzip(const void *in, size_t n, size_t max, char **out, size_t *out_len, char *why);

/* Compresses in[0..n) as one gzip member at level 1 (fastest) to 12 into
 * out (reset first). 0, or -1 when memory runs out. */
int api_gzip(const void *in, size_t n, int level, api_buf *out);

#endif
