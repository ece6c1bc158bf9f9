/* static_doc.h - the documents that only change with the binary: the
 * viewer page (GET /) and the API document (GET /openapi.json).
 *
 * Each is served with a strong ETag and "no-cache" (clients keep it and ask
 * again; 304 when theirs is current). Like the compute replies, one over
 * --gzip-min-size goes gzipped to a client that takes gzip: compressed once
 * at start, at --gzip-level, and tagged apart (its ETag ends in "-gz"), so
 * that a cache never answers one coding's tag with the other's bytes.
 */
#ifndef SRV_STATIC_DOC_H
#define SRV_STATIC_DOC_H

#include <stddef.h>

#include "api/api.h"
#include "etag.h"

typedef struct {
    const char *text;                 /* the document (static) */
    size_t len;
    char etag[SRV_ETAG_SIZE];
    api_buf gz;                       /* its gzip, empty when not worth it or off */
    char gz_etag[SRV_ETAG_SIZE + 3];
} srv_static_doc;

/* Tags text and, when gzip_level > 0 and it has gzip_min bytes or more,
 * compresses it. 0, or -1 when memory ran out. */
int srv_static_doc_make(srv_static_doc *d, const char *text, int gzip_level, size_t gzip_min);
/* Accepts a zeroed document. */
void srv_static_doc_free(srv_static_doc *d);

#endif
