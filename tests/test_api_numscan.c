/* test_api_numscan.c - the fast reader of tensor arrays (api/numscan.c):
 * every number rounds as strtod then (float) does, on millions of random and
 * edge-case strings; invalid numbers are left to jansson; which arrays of a
 * body are taken out, and that replies are the same with and without it. */
#include <check.h>
#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dirent.h>

#include "api/numbers/numbers.h"
#include "core/attention.h"
#include "tests/support/files.h"
#include "tests/support/reply_check.h"
#include "tests/support/check_main.h"

/* The random cases: all of them in the optimised build; a twentieth under
 * the sanitizers, which check memory, not the numbers' spread, and run
 * these loops about 20 times slower (make asan's two slowest programs). */
#ifdef __SANITIZE_ADDRESS__
#define RANDOM_CASES(n) ((n) / 20)
#else
#define RANDOM_CASES(n) (n)
#endif

static uint64_t g_state = 0x2545f4914f6cdd1dull;

static uint64_t next_u64(void) { /* xorshift64* */
    g_state ^= g_state >> 12;
    g_state ^= g_state << 25;
    g_state ^= g_state >> 27;
    return g_state * 0x2545f4914f6cdd1dull;
}

static int rnd(int n) { return (int)(next_u64() % (uint64_t)n); }

/* The reference: the double strtod reads, then float32 as torch.tensor
 * makes it (jansson reads integers as int64, which gives the same double). */
static void expect_same(const char *s) {
    double got;
    size_t n = api__scan_number(s, s + strlen(s), &got);
    char *stop;
    double want = strtod(s, &stop);
    ck_assert_msg(n == strlen(s), "%s: took %zu of %zu characters", s, n, strlen(s));
    float fg = (float)got, fw = (float)want;
    ck_assert_msg(memcmp(&got, &want, sizeof got) == 0 || (strchr(s, '.') == NULL &&
                  strpbrk(s, "eE") == NULL && got == 0.0 && want == 0.0),
                  "%s: read %.17g, strtod %.17g", s, got, want);
    ck_assert_msg(memcmp(&fg, &fw, sizeof fg) == 0 || (fg == 0.0f && fw == 0.0f),
                  "%s: float %.9g, want %.9g", s, (double)fg, (double)fw);
}

START_TEST(test_edge_cases) {
    static const char *const cases[] = {
        "0", "1", "-1", "0.0", "-0.0", "0e0", "0E+5", "-0e-5", "1e0", "1E1", "1e-1",
        "0.1", "0.2", "0.3", "1.5", "-2.25", "3.4028234663852886e38", "3.4028235e38",
        "3.4028236e38", "1.1754943508222875e-38", "1.17549435e-38", "1.4e-45", "1e-45",
        "7e-46", "7.006492321624085e-46", "1.401298464324817e-45", "2.802596928649634e-45",
        "4.9406564584124654e-324", "2.2250738585072014e-308", "1.7976931348623157e308",
        "1e-400", "123456789", "123456789012345678", "9007199254740993", "9007199254740992.0",
        "9007199254740993.0", "0.000001", "0.0000000000000000000000000123", "1e22", "1e23",
        "1e-22", "1e-23", "12345678901234567890e-10", "1234567890123456789012345678901234e-20",
        "0.10000000149011612", "0.100000001490116119384765625", "16777217", "16777217.0",
        "33554435.0", "0.499999999999999999999999999", "1.00000005960464477539062500001",
        "1.000000059604644775390625", "1.0000000596046447753906249999", "4.35", "-0.43",
        "0.89", "0.55", "0.87", "0.66", "0.57", "0.85", "0.64", "0.22", "0.58", "0.33", "0.77",
        "0.25", "0.10", "0.05", "0.80", "0.55", "100", "-100", "1e38", "-1e38", "1e-38",
        "2.5e-39", "5e-324", "123.456e-7", "9.999999999999999e22", "8.98846567431158e307",
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) expect_same(cases[i]);
}
END_TEST

START_TEST(test_integer_minus_zero_is_zero) {
    double d;
    ck_assert_uint_eq(api__scan_number("-0", "-0" + 2, &d), 2);
    ck_assert(d == 0.0 && !signbit(d)); /* Python: json.loads("-0") is the int 0 */
    ck_assert_uint_eq(api__scan_number("-0.0", "-0.0" + 4, &d), 4);
    ck_assert(d == 0.0 && signbit(d));
}
END_TEST

START_TEST(test_left_to_jansson) {
    static const char *const bad[] = {
        "", "-", "+1", "01", "-01", "1.", ".5", "1e", "1e+", "1e-", "--1", "0x10", "Infinity",
        "NaN", "-Infinity", "1.e5", "e5", "1e400", "-1e400", "12345678901234567890",
        "1234567890123456789", "1.0000000000000000000000000000000000000000000000000000000000000001",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        double d = 42;
        const char *s = bad[i];
        size_t n = api__scan_number(s, s + strlen(s), &d);
        ck_assert_msg(n == 0 || n < strlen(s), "%s: taken whole (%zu), jansson rejects it", s, n);
    }
    /* A number stops at the first character that is not part of it. */
    double d;
    ck_assert_uint_eq(api__scan_number("1.5,2", "1.5,2" + 5, &d), 3);
    ck_assert_uint_eq(api__scan_number("1.5]", "1.5]" + 4, &d), 3);
    ck_assert_uint_eq(api__scan_number("7x", "7x" + 2, &d), 1);
}
END_TEST

/* Shortest and 9-digit decimals of random float32 bit patterns, and 17-digit
 * decimals of random doubles: the forms Python and JavaScript print. */
START_TEST(test_random_floats) {
    char s[64];
    for (int i = 0; i < RANDOM_CASES(1000000); i++) {
        uint32_t u = (uint32_t)next_u64();
        float f;
        memcpy(&f, &u, sizeof f);
        if (!isfinite(f)) continue;
        snprintf(s, sizeof s, "%.9g", (double)f);
        if (strchr(s, 'e') && !strchr(s, '.')) { /* "1e-05" is valid JSON too */ }
        expect_same(s);
        for (int p = 1; p <= 9; p++) {
            snprintf(s, sizeof s, "%.*g", p, (double)f);
            if (strtof(s, NULL) == f) break;
        }
        expect_same(s);
        uint64_t b = next_u64();
        double d;
        memcpy(&d, &b, sizeof d);
        if (!isfinite(d)) continue;
        snprintf(s, sizeof s, "%.17g", d);
        expect_same(s);
    }
}
END_TEST

/* Random decimal strings: 1 to 25 digits, a point anywhere, exponents
 * around the float32 range, long mantissas. */
START_TEST(test_random_decimals) {
    char s[80];
    for (int i = 0; i < RANDOM_CASES(2000000); i++) {
        int n = 0, digits = 1 + rnd(25);
        if (rnd(2)) s[n++] = '-';
        int point = rnd(digits + 1);
        s[n++] = (char)('1' + rnd(9));
        for (int d = 1; d < digits; d++) {
            if (d == point) s[n++] = '.';
            s[n++] = (char)('0' + rnd(10));
        }
        if (rnd(3) == 0) n += snprintf(s + n, sizeof s - (size_t)n, "e%d", rnd(101) - 60);
        s[n] = '\0';
        if (strchr(s, 'e') == NULL && strchr(s, '.') == NULL && digits > 18) continue;
        expect_same(s);
    }
}
END_TEST

/* Hard cases for the double rounding of decimal -> double -> float: decimals
 * at and next to the midpoint between two floats (where strtof and
 * (float)strtod can differ), and next to the midpoints between doubles. */
START_TEST(test_midpoints) {
    char s[96];
    int differ = 0;
    for (int i = 0; i < RANDOM_CASES(400000); i++) {
        uint32_t u = (uint32_t)next_u64() & 0x7f7fffffu;
        float f, g;
        memcpy(&f, &u, sizeof f);
        g = nextafterf(f, INFINITY);
        if (!isfinite(g)) continue;
        double mid = ((double)f + (double)g) / 2; /* exact in double */
        snprintf(s, sizeof s, "%.17g", mid);
        expect_same(s);
        snprintf(s, sizeof s, "%.40e", mid); /* exact digits, cut at 41 */
        expect_same(s);
        snprintf(s, sizeof s, "%.17g", nextafter(mid, 0));
        expect_same(s);
        snprintf(s, sizeof s, "%.17g", nextafter(mid, INFINITY));
        expect_same(s);
        /* the decimal a hair above the float midpoint: strtof rounds it up,
         * while its double may be the midpoint itself, which rounds to even */
        snprintf(s, sizeof s, "%.30e", mid);
        size_t n = strlen(s);
        char *e = strchr(s, 'e');
        memmove(e + 1, e, n - (size_t)(e - s) + 1);
        *e = '1';
        expect_same(s);
        double d = strtod(s, NULL);
        differ += (float)d != strtof(s, NULL);
    }
    /* the double rounding is really exercised */
    ck_assert_int_gt(differ, 0);
}
END_TEST

/* Long mantissas (past 19 digits, up to the 63 characters taken), 17
 * significant digits, subnormal float decimals, exponents at and past the
 * ends of the table and of float32. */
START_TEST(test_long_and_extreme) {
    char s[96];
    for (int i = 0; i < RANDOM_CASES(1000000); i++) {
        int n = 0, digits = 17 + rnd(40);
        if (rnd(2)) s[n++] = '-';
        int point = 1 + rnd(digits);
        s[n++] = (char)('1' + rnd(9));
        for (int d = 1; d < digits; d++) {
            if (d == point) s[n++] = '.';
            /* runs of 0 and 9 after a few digits: values next to a short decimal */
            int kind = rnd(4);
            s[n++] = (char)(d > 9 && kind == 0 ? '0' : d > 9 && kind == 1 ? '9' : '0' + rnd(10));
        }
        int e = rnd(3) == 0 ? rnd(221) - 140 : -point - rnd(40) + 20;
        n += snprintf(s + n, sizeof s - (size_t)n, "e%d", e);
        s[n] = '\0';
        if (n > 63) continue; /* left to jansson (test_left_to_jansson) */
        expect_same(s);
    }
    static const char *const edges[] = {
        "1e-80", "1e-81", "9.999999999999999999e-81", "1e40", "1e41", "1.5e-45", "7.0064923e-46",
        "7.006492321624086e-46", "1.4012984643248170e-45", "1.1754942e-38", "1.17549421e-38",
        "3.40282356e38", "3.4028235677973366e38", "3.4028235677973367e38", "3.40282357e38",
        "-0.0", "-0e0", "-0.000e-7", "0.0e+99999", "1e-99999", "123456789012345678901234567890",
        "0.1234567890123456789012345678901234567890123456789012", "4.94065645841246544e-324",
        "2.47032822920623272e-324", "8.98846567431157854e307",
    };
    for (size_t i = 0; i < sizeof edges / sizeof *edges; i++) {
        double d;
        const char *t = edges[i];
        size_t n = api__scan_number(t, t + strlen(t), &d);
        if (strchr(t, '.') == NULL && strpbrk(t, "eE") == NULL) {
            ck_assert_uint_eq(n, 0); /* an integer past int64: jansson's error */
            continue;
        }
        expect_same(t);
    }
}
END_TEST

/* Beyond float32 stays an error: the array is left to jansson, which
 * reports the number; FLT_MAX itself is taken. */
START_TEST(test_float_overflow_left) {
    static const char *const bodies[] = {
        "{\"inputs\": [[3.5e38, 1]]}", "{\"inputs\": [[1, -3.41e38]]}",
        "{\"inputs\": [[1e39, 1]]}", "{\"inputs\": [[1, 1.7976931348623157e308]]}",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof *bodies; i++) {
        api_scan s;
        ck_assert_int_eq(api__scan_body(bodies[i], strlen(bodies[i]), 100, NULL, &s), 0);
        ck_assert_msg(s.n == 0, "%s: taken", bodies[i]);
        api__scan_free(&s);
    }
    const char *ok = "{\"inputs\": [[3.4028234663852886e38, -3.4028234663852886e38, 1.4e-45, -0.0]]}";
    api_scan s;
    ck_assert_int_eq(api__scan_body(ok, strlen(ok), 100, NULL, &s), 0);
    ck_assert_int_eq(s.n, 1);
    ck_assert(s.arrays[0].data[0] == FLT_MAX && s.arrays[0].data[1] == -FLT_MAX);
    ck_assert(s.arrays[0].data[2] == FLT_TRUE_MIN);
    ck_assert(s.arrays[0].data[3] == 0.0f && signbit(s.arrays[0].data[3]));
    api__scan_free(&s);
}
END_TEST

static api_scan scan_text(const char *body, size_t budget) {
    api_scan s;
    ck_assert_int_eq(api__scan_body(body, strlen(body), budget, NULL, &s), 0);
    return s;
}

START_TEST(test_body_arrays_taken) {
    const char *body = "{\"module\": \"CausalAttention\", \"inputs\": [[0.43, 0.15], [0.55, 0.87]],"
                       " \"tokens\": [\"a [\", \"b\"], \"init\": {\"seed\": 123},"
                       " \"key_padding_mask\": {\"shape\": [1, 2], \"data\": [0, 1]},"
                       " \"state_dict\": {\"W_query.weight\": [[1, 2]], \"x\": {\"shape\": [2],"
                       " \"data\": [3e0, -4.5]}}}";
    api_scan s = scan_text(body, 1000);
    ck_assert_int_eq(s.n, 4);
    ck_assert_uint_eq(s.elements, 4 + 2 + 2 + 2);
    ck_assert_int_eq(s.arrays[0].rank, 2);
    ck_assert_int_eq(s.arrays[0].shape[0], 2);
    ck_assert_int_eq(s.arrays[0].shape[1], 2);
    ck_assert(s.arrays[0].data[1] == 0.15f && s.arrays[0].data[3] == 0.87f);
    ck_assert_int_eq(s.arrays[3].rank, 1);
    ck_assert(s.arrays[3].data[1] == -4.5f);
    /* The rest is the same JSON with strings where the arrays were. */
    s.text[s.len] = '\0';
    json_error_t je;
    json_t *root = json_loadb(s.text, s.len, 0, &je);
    ck_assert_msg(root != NULL, "%s: %s", s.text, je.text);
    ck_assert_str_eq(json_string_value(json_object_get(root, "module")), "CausalAttention");
    ck_assert_int_eq(json_array_size(json_object_get(root, "tokens")), 2);
    ck_assert_int_eq(json_array_size(json_object_get(json_object_get(root, "key_padding_mask"),
                                                     "shape")), 2);
    api__scan_set_current(&s);
    ck_assert_ptr_eq(api__scan_lookup(json_object_get(root, "inputs")), &s.arrays[0]);
    ck_assert_ptr_null(api__scan_lookup(json_object_get(root, "module")));
    api__scan_set_current(NULL);
    ck_assert_ptr_null(api__scan_lookup(json_object_get(root, "inputs")));
    json_decref(root);
    api__scan_free(&s);
}
END_TEST

START_TEST(test_body_arrays_left) {
    static const char *const bodies[] = {
        "{\"inputs\": [[1, 2], [3]]}",          /* ragged */
        "{\"inputs\": [[1, 2], 3]}",
        "{\"inputs\": [1, [2]]}",
        "{\"inputs\": []}",                      /* empty axis */
        "{\"inputs\": [[]]}",
        "{\"attn_mask\": [[true, false]]}",      /* booleans */
        "{\"attn_mask\": [[0, \"-inf\"]]}",
        "{\"inputs\": [[1, null]]}",
        "{\"inputs\": [[1e39]]}",                /* beyond float32 */
        "{\"inputs\": [[01]]}",                  /* invalid JSON */
        "{\"inputs\": [[1,]]}",
        "{\"inputs\": [[[[[1]]]]]}",             /* five axes */
        "{\"init\": {\"inputs\": [1, 2]}}",     /* not a tensor field there */
        "{\"return\": [1, 2], \"tokens\": [1]}",
        "[{\"inputs\": [1]}]",
        "{\"inputs\" [1, 2]}",                   /* malformed around it */
    };
    for (size_t i = 0; i < sizeof bodies / sizeof *bodies; i++) {
        api_scan s = scan_text(bodies[i], 1000);
        ck_assert_msg(s.n == 0, "%s: %d arrays taken", bodies[i], s.n);
        ck_assert_ptr_null(s.text);
        api__scan_free(&s);
    }
}
END_TEST

START_TEST(test_body_budget) {
    const char *body = "{\"query\": [1, 2, 3], \"key\": [4, 5, 6], \"value\": [7, 8]}";
    api_scan s = scan_text(body, 7);
    ck_assert_int_eq(s.n, 2); /* value would pass the budget: left to jansson */
    ck_assert_uint_eq(s.elements, 6);
    api__scan_free(&s);
    s = scan_text(body, 0);
    ck_assert_int_eq(s.n, 0);
    api__scan_free(&s);
}
END_TEST

/* ==== The same replies with and without the scanner ======================= */

/* The reply without its "timing" object (milliseconds differ run to run). */
static char *without_timing(const api_reply *r) {
    char *s = strndup(r->body.data ? r->body.data : "", r->body.len);
    char *t = strstr(s, "\"timing\":{");
    if (t) {
        char *close = strchr(t, '}');
        memmove(t, close + 1, strlen(close + 1) + 1);
    }
    return s;
}

static void expect_same_reply(api_endpoint ep, const char *body, size_t len, const char *what) {
    api_limits lim = {.max_elements = REPLY_CHECK_MAX_ELEMENTS};
    api_reply fast, slow;
    api__scan_enable(1);
    api_handle(ep, body, len, &lim, &fast);
    api__scan_enable(0);
    api_handle(ep, body, len, &lim, &slow);
    api__scan_enable(1);
    char *a = without_timing(&fast), *b = without_timing(&slow);
    ck_assert_msg(fast.status == slow.status && strcmp(a, b) == 0,
                  "%s: with the scanner %d %.300s\nwithout %d %.300s", what, fast.status, a,
                  slow.status, b);
    free(a);
    free(b);
    api_buf_free(&fast.body);
    api_buf_free(&slow.body);
}

/* Every input the fuzzer kept (edge cases of every field, malformed JSON). */
START_TEST(test_corpus_same_replies) {
    char dir[1024], path[1400];
    tfile_path(dir, sizeof dir, "tests/fuzz/corpus");
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        size_t len;
        char *data = tfile_read(path, &len);
        ck_assert_ptr_nonnull(data);
        if (len > 0) {
            expect_same_reply(reply_check_endpoint((uint8_t)data[0]), data + 1, len - 1, de->d_name);
            n++;
        }
        free(data);
    }
    closedir(d);
    ck_assert_int_gt(n, 400);
}
END_TEST

/* Requests whose tensors the scanner takes, with values that make errors. */
START_TEST(test_errors_same_replies) {
    static const struct {
        api_endpoint ep;
        const char *body;
    } cases[] = {
        {API_EP_SIMPLE, "{\"inputs\": [[1, 2], [3, 4]], \"key_padding_mask\": [0, 2]}"},
        {API_EP_SIMPLE, "{\"inputs\": [[[[1, 2]]]]}"},
        {API_EP_SIMPLE, "{\"inputs\": [1, 2]}"},
        {API_EP_SIMPLE, "{\"inputs\": {\"shape\": [2, 2], \"data\": [1, 2, 3]}}"},
        {API_EP_SIMPLE, "{\"inputs\": {\"shape\": [2, 2], \"data\": [[1, 2], [3, 4]]}}"},
        {API_EP_SIMPLE, "{\"inputs\": {\"shape\": [2, 2], \"data\": [1, 2, 3, 4]}}"},
        {API_EP_SIMPLE, "{\"inputs\": {\"shape\": [2, 2], \"data\": [1, 2, 3, 4]},"
                        " \"attn_mask\": [[0, -1e30], [0, 0]]}"},
        {API_EP_SIMPLE, "{\"inputs\": [[1, 2], [3, 4]], \"attn_mask\": [[0, 1], [0, 0]]}"},
        {API_EP_SIMPLE, "{\"inputs\": [[1, 2], [3, 4]], \"attn_mask\": [[[0, 1], [0, 0]]]}"},
        {API_EP_SIMPLE, "{\"inputs\": [[1, 2], [3, 4]], \"key_padding_mask\": "
                        "{\"shape\": [1, 2], \"data\": [0, 0.5]}}"},
        {API_EP_SIMPLE, "{\"inputs\": [[1, 2], [3, 4]], \"inputs\": [[1, 2]]}"},
        {API_EP_SIMPLE, "{\"inputs\": [[1, 2], [3, 4]], \"return\": [\"context\"], }"},
        {API_EP_SIMPLE, "{\"inputs\": [[1, 2], [3, 4]] \"return\": [\"context\"]}"},
        {API_EP_SDPA, "{\"query\": [[[1, 2]]], \"key\": [[[1, 2]]], \"value\": [[[1, 2]]]}"},
        {API_EP_SDPA, "{\"query\": [[[1, 2]]], \"key\": [[[1, 2, 3]]], \"value\": [[[1, 2]]]}"},
        {API_EP_SELF, "{\"module\": \"SelfAttention_v1\", \"d_in\": 2, \"d_out\": 1,"
                      " \"inputs\": [[1, 2]], \"state_dict\": {\"W_query\": [[1], [2]],"
                      " \"W_key\": [[1, 2]], \"W_value\": {\"shape\": [2, 1], \"data\": [1, 2]}}}"},
        {API_EP_SELF, "{\"module\": \"SelfAttention_v1\", \"d_in\": 2, \"d_out\": 1,"
                      " \"inputs\": [[1, 2]], \"state_dict\": {\"W_query\": [[1], [2]],"
                      " \"W_key\": [[1], [2]], \"W_value\": {\"shape\": [2, 1], \"data\": [1, 2]}}}"},
        {API_EP_SIMPLE, "{\"inputs\": {\"shape\": [2, 3], \"base64\": \"9ijcPpqZGT4K12M/zcwMP1K4Xj/D9Sg/\"}}"},
        {API_EP_SIMPLE, "{\"inputs\": {\"shape\": [2, 3], \"base64\": \"9ijcPpqZGT4K12M\\/zcwMP1K4Xj\\/D9Sg\\/\"}}"},
        {API_EP_SIMPLE, "{\"inputs\": {\"shape\": [2, 3], \"base64\": \"9ijcPpqZGT4K12M/zcwMP1K4Xj/D9Sg\"}}"},
        {API_EP_SIMPLE, "{\"inputs\": {\"shape\": [2, 3], \"base64\": \"9ijcPpqZGT4K12M-zcwMP1K4Xj/D9Sg/\"}}"},
        {API_EP_SIMPLE, "{\"inputs\": {\"shape\": [1, 1], \"dtype\": \"float16\", \"base64\": \"ADw=\"}}"},
        {API_EP_SIMPLE, "{\"inputs\": {\"base64\": \"ADw=\", \"shape\": [1, 2], \"dtype\": \"float16\"}}"},
        {API_EP_SIMPLE, "{\"inputs\": {\"shape\": [1, 1], \"base64\": \"AADAfw==\"}}"},
        {API_EP_SIMPLE, "{\"inputs\": {\"shape\": [1, 1], \"base64\": [1]}}"},
        {API_EP_SIMPLE, "{\"inputs\": [[1, 2]], \"key_padding_mask\": {\"shape\": [1, 1], \"dtype\": "
                        "\"uint8\", \"base64\": \"Ag==\"}}"},
        {API_EP_SELF, "{\"module\": \"SelfAttention_v1\", \"d_in\": 2, \"d_out\": 1, \"inputs\": [[1, 2]],"
                      " \"state_dict\": {\"W_query\": {\"shape\": [2, 1], \"base64\": \"AACAPwAAAEA=\"},"
                      " \"W_key\": [[1], [2]], \"W_value\": {\"shape\": [2, 2], \"base64\": \"AACAPwAAAEA=\"}}}"},
        {API_EP_CAUSAL, "{\"d_in\": 2, \"d_out\": 2, \"inputs\": [[1, 2], [3, 4]],"
                        " \"init\": {\"seed\": 1}, \"state_dict\": {\"mask\": [[0, 1], [1, 0]]}}"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        expect_same_reply(cases[i].ep, cases[i].body, strlen(cases[i].body), cases[i].body);
}
END_TEST

/* Large random tensors in every number form a client prints. */
START_TEST(test_large_same_replies) {
    size_t cap = 1 << 20, n = 0;
    char *b = malloc(cap);
    n += (size_t)snprintf(b + n, cap - n, "{\"module\": \"MultiHeadAttention\", \"d_in\": 16,"
                          " \"d_out\": 8, \"num_heads\": 2, \"init\": {\"seed\": 7},"
                          " \"return\": [\"context\", \"attn_weights\"], \"inputs\": [");
    for (int bt = 0; bt < 2; bt++) {
        n += (size_t)snprintf(b + n, cap - n, "%s[", bt ? ", " : "");
        for (int t = 0; t < 40; t++) {
            n += (size_t)snprintf(b + n, cap - n, "%s[", t ? ",\n " : "");
            for (int c = 0; c < 16; c++) {
                uint64_t r = next_u64();
                double v = ((double)(r >> 11) / 9007199254740992.0 - 0.5) * 4.0;
                const char *fmt[] = {"%.9g", "%.17g", "%.3f", "%.6e", "%.2E"};
                if (c) n += (size_t)snprintf(b + n, cap - n, (r & 1) ? ", " : ",");
                n += (size_t)snprintf(b + n, cap - n, fmt[r % 5], v);
            }
            n += (size_t)snprintf(b + n, cap - n, "]");
        }
        n += (size_t)snprintf(b + n, cap - n, "]");
    }
    n += (size_t)snprintf(b + n, cap - n, "]}");
    expect_same_reply(API_EP_MULTIHEAD, b, n, "random MultiHeadAttention");
    free(b);
}
END_TEST

/* ==== Large tensors on a pool ================================================ */

/* Appends a tensor of the given shape (rank 2 or 3) as text, numbers in
 * mixed forms and spacing. */
static void put_tensor(api_buf *b, int rank, const int *shape) {
    static const char *const fmt[] = {"%.9g", "%.17g", "%.3f", "%.6e", "%d"};
    int rows = shape[0], inner = rank == 3 ? shape[1] : 1, width = shape[rank - 1];
    api__buf_puts(b, "[");
    for (int i = 0; i < rows; i++) {
        api__buf_puts(b, i ? (rnd(3) ? "," : " ,\n ") : (rnd(2) ? "" : " "));
        if (rank == 3) api__buf_puts(b, "[");
        for (int j = 0; j < inner; j++) {
            if (rank == 3 && j) api__buf_puts(b, ",");
            api__buf_puts(b, "[");
            for (int c = 0; c < width; c++) {
                double v = ((double)(next_u64() >> 11) / 9007199254740992.0 - 0.5) * 8.0;
                int f = rnd(5);
                if (c) api__buf_puts(b, rnd(2) ? "," : ", ");
                if (f == 4) api__buf_printf(b, fmt[f], (int)(v * 100));
                else api__buf_printf(b, fmt[f], v);
            }
            api__buf_puts(b, "]");
        }
        if (rank == 3) api__buf_puts(b, "]");
    }
    api__buf_puts(b, "]");
}

/* The same scan, field by field and bit by bit. */
static void expect_same_scan(const char *what, const char *body, size_t len, size_t budget,
                             attn_pool *pool) {
    api_scan one, par;
    ck_assert_int_eq(api__scan_body(body, len, budget, NULL, &one), 0);
    ck_assert_int_eq(api__scan_body(body, len, budget, pool, &par), 0);
    ck_assert_msg(one.n == par.n, "%s: %d arrays taken alone, %d on the pool", what, one.n, par.n);
    ck_assert_uint_eq(one.len, par.len);
    if (one.text) ck_assert_int_eq(memcmp(one.text, par.text, one.len), 0);
    for (int i = 0; i < one.n; i++) {
        const api_scanned *a = &one.arrays[i], *b = &par.arrays[i];
        ck_assert_int_eq(a->rank, b->rank);
        ck_assert_int_eq(memcmp(a->shape, b->shape, sizeof a->shape), 0);
        ck_assert_uint_eq(a->count, b->count);
        if (a->data) ck_assert_msg(memcmp(a->data, b->data, a->count * sizeof(float)) == 0, "%s", what);
    }
    api__scan_free(&one);
    api__scan_free(&par);
}

/* A tensor of 256 KB or more is read on the pool: the same arrays, bits and
 * verdicts as one thread, for rank 2 and 3, and for every way a row can be
 * wrong: ragged inside a group and between groups, a number before the
 * first row, a bad separator, a string, a bare number as a row, unclosed,
 * over the budget. */
START_TEST(test_large_tensors_on_a_pool) {
    attn_pool *pool = attn_pool_create(2);
    ck_assert_ptr_nonnull(pool);
    static const struct { int rank, shape[3]; } shapes[] = {
        {2, {3000, 24}}, {2, {130, 400}}, {3, {40, 30, 40}}, {2, {9, 5000}}, {2, {20000, 3}},
    };
    int cases = 0;
    for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++)
        for (int fault = 0; fault < 9; fault++) {
            api_buf b = {0};
            api__buf_puts(&b, "{\"module\": \"MultiHeadAttention\", \"inputs\": ");
            size_t at = b.len;
            api_buf tensor = {0};
            put_tensor(&tensor, shapes[k].rank, shapes[k].shape);
            if (fault == 2) api__buf_puts(&b, "[5, "); /* a number before the first row */
            api__buf_put(&b, fault == 2 ? tensor.data + 1 : tensor.data, tensor.len - (fault == 2));
            api_buf_free(&tensor);
            size_t stop = b.len;
            api__buf_puts(&b, ", \"d_in\": 4, \"query\": [[1, 2], [3, 4]]}");
            ck_assert_uint_ge(stop - at, 256 * 1024);
            char *t = b.data;
            size_t budget = (size_t)1 << 30, mid = at + (stop - at) * 5 / 8;
            char *row = memchr(t + mid, '[', stop - mid); /* a row in a later group */
            ck_assert_ptr_nonnull(row);
            if (shapes[k].rank == 3) row = memchr(row + 1, '[', (size_t)(t + stop - row));
            switch (fault) {
            case 0: break;
            case 1: { char *c = memchr(row, ',', (size_t)(t + stop - row)); *c = ' '; break; } /* ragged: one number fewer */
            case 2: break; /* made above: rank 1 to the scan, read alone */
            case 3: { char *c = memchr(row, ']', (size_t)(t + stop - row)); c[1] = c[1] == ',' ? ';' : c[1]; break; }
            case 4: { char *c = memchr(row, ',', (size_t)(t + stop - row)); *c = '"'; break; }
            case 5: t[stop - 1] = ' '; break; /* unclosed: the next ']' is the query's */
            case 6: budget = shapes[k].shape[0] * 2; break;
            case 7: { char *c = memchr(t + at + 1, '[', 64); c[0] = c[0] == '[' ? '7' : c[0]; break; } /* a bare number as row 0 */
            case 8: { /* a ragged row between groups: drop the last number of the last row */
                char *c = t + stop - 2 - (shapes[k].rank == 3);
                while (*c != ',') c--;
                memset(c, ' ', (size_t)(t + stop - 1 - (shapes[k].rank == 3) - c) - 1);
                break;
            }
            }
            char what[64];
            snprintf(what, sizeof what, "shape %zu, fault %d", k, fault);
            expect_same_scan(what, b.data, b.len, budget, pool);
            api_buf_free(&b);
            cases++;
        }
    ck_assert_int_eq(cases, 45);
    attn_pool_destroy(pool);
}
END_TEST

static Suite *numscan_suite(void) {
    Suite *s = suite_create("api_numscan");
    const TTest *tests[] = {test_edge_cases, test_integer_minus_zero_is_zero, test_left_to_jansson, test_random_floats, test_random_decimals, test_midpoints, test_long_and_extreme, test_float_overflow_left, test_body_arrays_taken, test_body_arrays_left, test_body_budget, test_corpus_same_replies, test_errors_same_replies, test_large_same_replies, test_large_tensors_on_a_pool, NULL};
    tcase_with(s, "numscan", 120, tests);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {numscan_suite}};
