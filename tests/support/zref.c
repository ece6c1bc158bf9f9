/* zref.c - gzip with zlib for the tests, see zref.h. */
#include "zref.h"

#include <stdlib.h>
#include <zlib.h>

unsigned char *zref_gzip(const void *in, size_t n, size_t *out_len) {
    z_stream z = {0};
    if (deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) return NULL;
    size_t cap = deflateBound(&z, n);
    unsigned char *out = malloc(cap);
    z.next_in = (unsigned char *)in;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    int rc = out ? deflate(&z, Z_FINISH) : Z_MEM_ERROR;
    *out_len = z.total_out;
    deflateEnd(&z);
    if (rc != Z_STREAM_END) {
        free(out);
        return NULL;
    }
    return out;
}

char *zref_gunzip(const void *in, size_t n, size_t max, size_t *out_len) {
    z_stream z = {0};
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return NULL;
    char *out = malloc(max + 1);
    z.next_in = (unsigned char *)in;
    z.avail_in = (uInt)n;
    z.next_out = (unsigned char *)out;
    z.avail_out = (uInt)max;
    int rc = out ? inflate(&z, Z_FINISH) : Z_MEM_ERROR;
    *out_len = z.total_out;
    inflateEnd(&z);
    if (rc != Z_STREAM_END) {
        free(out);
        return NULL;
    }
    out[*out_len] = '\0';
    return out;
}
