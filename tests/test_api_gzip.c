/* test_api_gzip.c - gzip bodies and replies (api/gzip.c): round trips
 * through zlib, an independent implementation; bombs refused before they
 * are inflated; truncated, lying and concatenated members refused. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "tests/support/zref.h"
#include "tests/support/check_main.h"

static unsigned char *zlib_gzip(const void *in, size_t n, size_t *out_len) {
    unsigned char *z = zref_gzip(in, n, out_len);
    ck_assert_ptr_nonnull(z);
    return z;
}

static char *zlib_gunzip(const void *in, size_t n, size_t expect) {
    size_t len;
    char *out = zref_gunzip(in, n, expect, &len);
    ck_assert_ptr_nonnull(out);
    ck_assert_uint_eq(len, expect);
    return out;
}

static char *sample(size_t n) {
    char *s = malloc(n);
    unsigned x = 7;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        s[i] = "0123456789.,[] -e"[(x >> 16) % 17];
    }
    return s;
}

START_TEST(test_round_trips) {
    size_t sizes[] = {0, 1, 100, 65536, 3000001};
    for (int i = 0; i < 5; i++) {
        char *s = sample(sizes[i]);
        for (int level = 1; level <= 12; level += 5) {
            api_buf z = {0};
            ck_assert_int_eq(api_gzip(s, sizes[i], level, &z), 0);
            char *back = zlib_gunzip(z.data, z.len, sizes[i]);
            ck_assert_int_eq(memcmp(back, s, sizes[i]), 0);
            free(back);
            api_buf_free(&z);
        }
        size_t zn;
        unsigned char *zz = zlib_gzip(s, sizes[i], &zn);
        char *out;
        size_t len;
        ck_assert_int_eq(api_gunzip(zz, zn, sizes[i], &out, &len, NULL), API_GZ_OK);
        ck_assert_uint_eq(len, sizes[i]);
        ck_assert_int_eq(memcmp(out, s, len), 0);
        ck_assert_int_eq(out[len], '\0');
        free(out);
        free(zz);
        free(s);
    }
}
END_TEST

START_TEST(test_bomb_refused_before_inflating) {
    size_t n = 50u << 20, zn;
    char *zeros = calloc(n, 1);
    unsigned char *zz = zlib_gzip(zeros, n, &zn);
    free(zeros);
    ck_assert_uint_lt(zn, 100000); /* 50 MiB of zeros in ~50 KB */
    char *out = (char *)1, why[128];
    size_t len;
    ck_assert_int_eq(api_gunzip(zz, zn, 1 << 20, &out, &len, why), API_GZ_TOO_LARGE);
    ck_assert_ptr_null(out);
    /* A trailer that lies small: inflating stops at the stated size. */
    zz[zn - 4] = 0x10;
    zz[zn - 3] = zz[zn - 2] = zz[zn - 1] = 0;
    ck_assert_int_eq(api_gunzip(zz, zn, 1 << 20, &out, &len, why), API_GZ_INVALID);
    ck_assert_ptr_nonnull(strstr(why, "more than its trailer"));
    free(zz);
}
END_TEST

START_TEST(test_invalid_members) {
    const char *text = "{\"inputs\": [[1, 2], [3, 4]]}";
    size_t zn, len;
    unsigned char *zz = zlib_gzip(text, strlen(text), &zn);
    char *out, why[128];
    for (size_t cut = 0; cut < zn; cut++) { /* every truncation: its last bytes read as a size */
        int rc = api_gunzip(zz, cut, 1 << 20, &out, &len, why);
        ck_assert_msg(rc == API_GZ_INVALID || rc == API_GZ_TOO_LARGE, "cut at %zu: %d", cut, rc);
    }
    unsigned char *two = malloc(2 * zn);
    memcpy(two, zz, zn);
    memcpy(two + zn, zz, zn);
    ck_assert_int_eq(api_gunzip(two, 2 * zn, 1000, &out, &len, why), API_GZ_INVALID);
    ck_assert_ptr_nonnull(strstr(why, "one member"));
    zz[12] ^= 0xff; /* corrupt the stream */
    ck_assert_int_eq(api_gunzip(zz, zn, 1000, &out, &len, why), API_GZ_INVALID);
    ck_assert_int_eq(api_gunzip(text, strlen(text), 1000, &out, &len, why), API_GZ_INVALID);
    ck_assert_ptr_nonnull(strstr(why, "not gzip"));
    free(two);
    free(zz);
}
END_TEST

static Suite *gzip_suite(void) {
    Suite *s = suite_create("api_gzip");
    const TTest *tests[] = {test_round_trips, test_bomb_refused_before_inflating, test_invalid_members, NULL};
    tcase_with(s, "gzip", 60, tests);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {gzip_suite}};
