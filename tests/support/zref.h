/* zref.h - gzip with zlib, the reference the tests check libdeflate's gzip
 * (api/gzip.c) against: an independent implementation. */
#ifndef TESTS_SUPPORT_ZREF_H
#define TESTS_SUPPORT_ZREF_H

#include <stddef.h>

/* One gzip member of in[0..n) (malloc'd, *out_len bytes); NULL on failure. */
unsigned char *zref_gzip(const void *in, size_t n, size_t *out_len);
/* The inflated bytes of one gzip member, NUL-terminated (malloc'd, *out_len
 * bytes), if they are at most max bytes; NULL otherwise or on bad data. */
char *zref_gunzip(const void *in, size_t n, size_t max, size_t *out_len);

#endif
