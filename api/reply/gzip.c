/* gzip.c - gzip request bodies and replies with libdeflate, see api.h. */

#include "api/reply/reply.h"

#include <libdeflate.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void say(char *why, const char *text) {
    if (why) snprintf(why, 128, "%s", text);
}

/* Why an inflation into `cap` bytes failed, and which error that is. The
 * trailer's ISIZE says `size`; over `max` the output was capped at max, so
 * running out of room there is the body's real size, not a lie. */
static int gunzip_verdict(enum libdeflate_result r, size_t used, size_t n, size_t got, size_t size,
                          size_t max, char *why) {
    if (r == LIBDEFLATE_INSUFFICIENT_SPACE && size > max) {
        if (why) snprintf(why, 128, "the gzip body inflates to more than %zu bytes, more than this "
                          "server accepts", max);
        return API_GZ_TOO_LARGE;
    }
    say(why, r == LIBDEFLATE_INSUFFICIENT_SPACE ? "the gzip body inflates to more than its trailer says"
             : r != LIBDEFLATE_SUCCESS          ? "the gzip body is corrupt or truncated"
             : used != n                        ? "data after the gzip member (one member only)"
             : got != size                      ? "the gzip body inflates to other than its trailer says"
                                                : "the gzip body is corrupt");
    return API_GZ_INVALID;
}

int api_gunzip(const void *in, size_t n, size_t max, char **out, size_t *out_len, char *why) {
    const unsigned char *b = in;
    *out = NULL;
    *out_len = 0;
    /* 10-byte header, at least a 2-byte deflate stream, 8-byte trailer */
    if (n < 20 || b[0] != 0x1f || b[1] != 0x8b || b[2] != 8) {
        say(why, "the body is not gzip (no gzip header)");
        return API_GZ_INVALID;
    }
    /* ISIZE, the inflated size modulo 2^32, is the member's last 4 bytes. A
     * truncated body, or one with bytes after its member, ends in other
     * bytes: over max, the body is inflated into max bytes to tell a body
     * too large (413) from a broken one (400 invalid_gzip). */
    size_t size = (size_t)b[n - 4] | (size_t)b[n - 3] << 8 | (size_t)b[n - 2] << 16 |
                  (size_t)b[n - 1] << 24;
    size_t cap = size > max ? max : size;
    char *o = malloc(cap + 1);
    struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
    if (o == NULL || d == NULL) {
        free(o);
        libdeflate_free_decompressor(d);
        say(why, "out of memory");
        return API_GZ_NOMEM;
    }
    size_t used = 0, got = 0;
    enum libdeflate_result r = libdeflate_gzip_decompress_ex(d, in, n, o, cap, &used, &got);
    libdeflate_free_decompressor(d);
    if (r != LIBDEFLATE_SUCCESS || got != size || used != n) {
        free(o);
        return gunzip_verdict(r, used, n, got, size, max, why);
    }
    o[size] = '\0';
    *out = o;
    *out_len = size;
    return API_GZ_OK;
}

int api_gzip(const void *in, size_t n, int level, api_buf *out) {
    api_buf_free(out);
    if (level < 1) level = 1;
    if (level > 12) level = 12;
    struct libdeflate_compressor *c = libdeflate_alloc_compressor(level);
    if (c == NULL) return -1;
    size_t bound = libdeflate_gzip_compress_bound(c, n);
    out->data = malloc(bound + 1);
    if (out->data == NULL) {
        libdeflate_free_compressor(c);
        out->failed = 1;
        return -1;
    }
    out->cap = bound + 1;
    api__huge_pages(out->data, out->cap);
    out->len = libdeflate_gzip_compress(c, in, n, out->data, bound);
    libdeflate_free_compressor(c);
    if (out->len == 0) { /* cannot happen with the bound; stay safe */
        api_buf_free(out);
        out->failed = 1;
        return -1;
    }
    return 0;
}
