/* etag.c - see etag.h. */
#include "etag.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

void srv_etag_of(const void *data, size_t len, char out[SRV_ETAG_SIZE]) {
    const unsigned char *p = data;
    uint64_t h = 14695981039346656037ULL;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    snprintf(out, SRV_ETAG_SIZE, "\"%016llx\"", (unsigned long long)h);
}

int srv_etag_matches(const char *inm, const char *etag) {
    if (!inm) return 0;
    size_t elen = strlen(etag);
    const char *p = inm;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == ',') p++;
        if (!*p) return 0;
        if (*p == '*') return 1;
        if (strncmp(p, "W/", 2) == 0) p += 2;
        if (*p != '"') return 0;   /* not an entity tag: the header is invalid */
        const char *close = strchr(p + 1, '"');
        if (!close) return 0;
        size_t n = (size_t)(close - p) + 1;
        if (n == elen && memcmp(p, etag, n) == 0) return 1;
        p = close + 1;
    }
}
