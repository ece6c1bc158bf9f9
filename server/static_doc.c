/* static_doc.c - see static_doc.h. */
#include "static_doc.h"

#include <stdio.h>
#include <string.h>

int srv_static_doc_make(srv_static_doc *d, const char *text, int gzip_level, size_t gzip_min) {
    *d = (srv_static_doc){.text = text, .len = strlen(text)};
    srv_etag_of(text, d->len, d->etag);
    if (gzip_level <= 0 || d->len < gzip_min) return 0;
    if (api_gzip(text, d->len, gzip_level, &d->gz) != 0) {
        api_buf_free(&d->gz);
        return -1;
    }
    /* "0123456789abcdef" -> "0123456789abcdef-gz" */
    snprintf(d->gz_etag, sizeof d->gz_etag, "%.*s-gz\"", (int)strlen(d->etag) - 1, d->etag);
    return 0;
}

void srv_static_doc_free(srv_static_doc *d) {
    api_buf_free(&d->gz);
    *d = (srv_static_doc){0};
}
