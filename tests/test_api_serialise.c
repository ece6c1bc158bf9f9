/* test_api_serialise.c - the float printer (round trip, shortest, precision),
 * the tensor writer (nested, flat, null for -inf), string escaping and error
 * bodies. */
#include <check.h>
#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/model/model.h"
#include "api/module/module.h"
#include "api/numbers/numbers.h"
#include "tests/support/check_main.h"

/* The random cases: all of them in the optimised build; a twentieth under
 * the sanitizers, which check memory, not the numbers' spread, and run
 * these loops about 20 times slower (make asan's two slowest programs). */
#ifdef __SANITIZE_ADDRESS__
#define RANDOM_CASES(n) ((n) / 20)
#else
#define RANDOM_CASES(n) (n)
#endif

static uint64_t g_state = 0x9e3779b97f4a7c15ull;

static uint32_t next_u32(void) { /* xorshift64* */
    g_state ^= g_state >> 12;
    g_state ^= g_state << 25;
    g_state ^= g_state >> 27;
    return (uint32_t)((g_state * 0x2545f4914f6cdd1dull) >> 32);
}

static float from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* formats v, checks it is a JSON number that strtof reads back bit for bit */
static void expect_round_trip(float v) {
    char s[API_FLOAT_MAX + API_FLOAT_SLACK];
    int n = api__format_float(s, v, 0);
    ck_assert_int_gt(n, 0);
    ck_assert_int_le(n, API_FLOAT_MAX);
    s[n] = '\0';
    char *end;
    float r = strtof(s, &end);
    ck_assert_msg(*end == '\0', "%s: not all parsed", s);
    ck_assert_msg(memcmp(&r, &v, sizeof r) == 0, "%s reads back as %.9g, not %.9g", s, (double)r,
                  (double)v);
    /* JSON number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
    const char *p = s;
    if (*p == '-') p++;
    ck_assert_msg(*p >= '0' && *p <= '9', "%s", s);
    ck_assert_msg(!(p[0] == '0' && p[1] >= '0' && p[1] <= '9'), "leading zero: %s", s);
}

/* significant digits of a printed number */
static int sig_digits(const char *s) {
    int first = 0, n = 0, zeros = 0;
    for (; *s && *s != 'e'; s++) {
        if (*s < '0' || *s > '9') continue;
        if (!first && *s == '0') continue;
        first = 1;
        if (*s == '0') {
            zeros++;
        } else {
            n += zeros + 1;
            zeros = 0;
        }
    }
    return n ? n : 1;
}

/* api__format_float(v, precision) writes want. */
typedef struct {
    float v;
    int precision;
    const char *want;
} format_case;

static void expect_formats(const format_case *cases, size_t n) {
    for (size_t i = 0; i < n; i++) {
        char s[API_FLOAT_MAX + API_FLOAT_SLACK];
        int len = api__format_float(s, cases[i].v, cases[i].precision);
        s[len] = '\0';
        ck_assert_msg(strcmp(s, cases[i].want) == 0, "%.9g with precision %d: \"%s\", want \"%s\"",
                      (double)cases[i].v, cases[i].precision, s, cases[i].want);
    }
}

START_TEST(test_special_values) {
    static const float vals[] = {0.0f, 1.0f, -1.0f, 2.0f, 0.5f, 0.1f, 1e-38f, 3.4e38f, FLT_MAX,
                                 -FLT_MAX, FLT_MIN, FLT_TRUE_MIN, -FLT_TRUE_MIN, 1e-45f, 1e10f,
                                 16777216.0f, 16777217.0f, 123456789.0f, 1e-7f, 1e21f, 1e20f,
                                 0.3190183f, 1.0f / 3.0f, 9.999999e-8f, 1e-6f, 1e15f, 1e16f, -1.2221189e19f};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) expect_round_trip(vals[i]);
    char s[API_FLOAT_MAX + API_FLOAT_SLACK];
    int n = api__format_float(s, 0.0f, 0);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(s[0], '0');
    n = api__format_float(s, -0.0f, 0);
    s[n] = '\0';
    ck_assert(strcmp(s, "-0") == 0 || strcmp(s, "0") == 0);
    n = api__format_float(s, 2.0f, 0);
    s[n] = '\0';
    ck_assert(strcmp(s, "2") == 0 || strcmp(s, "2.0") == 0);
    static const format_case shortest[] = {
        {0.1f, 0, "0.1"}, {1e-38f, 0, "1e-38"}, {3.4e38f, 0, "3.4e38"},
        {-1.2221189e19f, 0, "-1.2221189e19"}, {1e15f, 0, "1000000000000000"},
    };
    expect_formats(shortest, sizeof shortest / sizeof shortest[0]);
    ck_assert_int_eq(api__format_float(s, NAN, 0), 0);
    ck_assert_int_eq(api__format_float(s, INFINITY, 0), 0);
    ck_assert_int_eq(api__format_float(s, -INFINITY, 3), 0);
}
END_TEST

START_TEST(test_random_bits_round_trip) {
    /* any float: random bit patterns cover every exponent, subnormals included */
    for (int i = 0; i < RANDOM_CASES(2000000); i++) {
        float v = from_bits(next_u32());
        if (!isfinite(v)) continue;
        expect_round_trip(v);
    }
}
END_TEST

START_TEST(test_subnormals_round_trip) {
    for (int i = 0; i < RANDOM_CASES(300000); i++) expect_round_trip(from_bits(next_u32() & 0x807fffffu));
    for (uint32_t u = 1; u < 5000; u++) expect_round_trip(from_bits(u));
    for (uint32_t u = 0x00800000u - 2000; u < 0x00800000u + 2000; u++) expect_round_trip(from_bits(u));
}
END_TEST

START_TEST(test_typical_values_round_trip) {
    /* attention weights and activations: uniform in [-2, 2], and powers of two */
    for (int i = 0; i < RANDOM_CASES(1000000); i++) {
        float v = ((float)next_u32() / 4294967296.0f) * 4.0f - 2.0f;
        expect_round_trip(v);
    }
    for (int e = -149; e <= 127; e++) {
        expect_round_trip(ldexpf(1.0f, e));
        expect_round_trip(nextafterf(ldexpf(1.0f, e), 0.0f));
        expect_round_trip(nextafterf(ldexpf(1.0f, e), INFINITY));
    }
    for (int k = -45; k <= 38; k++) { /* near powers of ten */
        float p = (float)pow(10.0, k);
        expect_round_trip(p);
        expect_round_trip(nextafterf(p, 0.0f));
        expect_round_trip(nextafterf(p, INFINITY));
    }
}
END_TEST

START_TEST(test_shortest) {
    /* never more digits than the fewest %.Ng that reads back */
    for (int i = 0; i < RANDOM_CASES(200000); i++) {
        float v = from_bits(next_u32());
        if (!isfinite(v)) continue;
        int p;
        char g[48];
        for (p = 1; p <= 9; p++) {
            snprintf(g, sizeof g, "%.*g", p, (double)v);
            if (strtof(g, NULL) == v) break;
        }
        char s[API_FLOAT_MAX + API_FLOAT_SLACK];
        int n = api__format_float(s, v, 0);
        s[n] = '\0';
        ck_assert_msg(sig_digits(s) <= p, "%s has more digits than %s", s, g);
    }
}
END_TEST

START_TEST(test_precision) {
    static const format_case rounded[] = {
        {0.123456789f, 4, "0.1235"}, {-12345.678f, 3, "-12300"}, {0.5f, 9, "0.5"},
        {9.99999f, 2, "10"},
    };
    expect_formats(rounded, sizeof rounded / sizeof rounded[0]);
    char s[API_FLOAT_MAX + API_FLOAT_SLACK];
    for (int p = 1; p <= 9; p++) {
        for (int i = 0; i < RANDOM_CASES(100000); i++) {
            float v = from_bits(next_u32());
            if (!isfinite(v) || v == 0.0f) continue;
            int n = api__format_float(s, v, p);
            s[n] = '\0';
            ck_assert_int_le(sig_digits(s), p);
            double r = strtod(s, NULL);
            ck_assert_msg(fabs(r - v) <= 0.5000001 * pow(10.0, floor(log10(fabs((double)v))) - p + 1) * 1.0000001,
                          "%.9g at %d digits: %s", (double)v, p, s);
            if (p == 9) ck_assert_msg(strtof(s, NULL) == v, "9 digits must round-trip: %s", s);
        }
    }
}
END_TEST

/* ==== against exact references =============================================== */

/* The shortest decimal that reads back, nearest to v, ties to an even digit,
 * found the slow way: glibc's %.*e is exact (ties to even), and where the
 * interval is narrower below (powers of two) the next p-digit decimal above
 * is tried too. Its value as a double (distinct decimals of at most 9 digits
 * are distinct doubles). */
static double ref_shortest(float v) {
    char s[64];
    float a = fabsf(v);
    uint32_t u;
    memcpy(&u, &a, sizeof u);
    int pow2 = (u & 0x7fffffu) == 0 && u >= 0x00800000u;
    for (int p = 1; p <= 9; p++) {
        snprintf(s, sizeof s, "%.*e", p - 1, (double)a);
        if (strtof(s, NULL) == a) return strtod(s, NULL);
        if (pow2 && strtod(s, NULL) < (double)a) {
            char digits[16];
            int nd = 0;
            const char *t = s;
            for (; *t != 'e'; t++)
                if (*t >= '0' && *t <= '9') digits[nd++] = *t;
            digits[nd] = '\0';
            snprintf(s, sizeof s, "%llue%d", strtoull(digits, NULL, 10) + 1, atoi(t + 1) - (nd - 1));
            if (strtof(s, NULL) == a) return strtod(s, NULL);
        }
    }
    ck_abort_msg("no decimal of 9 digits reads back as %a", (double)v);
    return 0;
}

/* v to p digits, halves away from zero, from its exact expansion. */
static double ref_rounded(float v, int p) {
    char s[200], r[64], digits[140];
    snprintf(s, sizeof s, "%.120e", fabs((double)v)); /* every float: exact */
    int nd = 0;
    const char *t = s;
    for (; *t != 'e'; t++)
        if (*t >= '0' && *t <= '9') digits[nd++] = *t;
    unsigned long long m = 0;
    for (int i = 0; i < p; i++) m = m * 10 + (unsigned long long)(digits[i] - '0');
    m += digits[p] >= '5';
    snprintf(r, sizeof r, "%llue%d", m, atoi(t + 1) - (p - 1));
    return strtod(r, NULL);
}

static void expect_shortest(float v) {
    char s[API_FLOAT_MAX + API_FLOAT_SLACK];
    int n = api__format_float(s, v, 0);
    s[n] = '\0';
    double want = ref_shortest(v);
    ck_assert_msg(strtod(s, NULL) == (v < 0 ? -want : want), "%a: \"%s\", want %.9g", (double)v, s,
                  want);
}

START_TEST(test_shortest_exact) {
    for (int i = 0; i < RANDOM_CASES(1000000); i++) {
        float v = from_bits(next_u32());
        if (isfinite(v) && v != 0.0f) expect_shortest(v);
    }
    /* subnormals, the ends of the range, powers of two and ten and their
     * neighbours */
    for (uint32_t u = 1; u < 3000; u++) expect_shortest(from_bits(u));
    for (uint32_t u = 0x00800000u - 3000; u < 0x00800000u + 3000; u++) expect_shortest(from_bits(u));
    for (uint32_t u = 0x7f7fffffu - 3000; u <= 0x7f7fffffu; u++) expect_shortest(from_bits(u));
    for (int e = -149; e <= 127; e++) {
        float p = ldexpf(1.0f, e);
        expect_shortest(p);
        expect_shortest(-nextafterf(p, 0.0f));
        if (e < 127) expect_shortest(nextafterf(p, INFINITY));
    }
    for (int k = -45; k <= 38; k++) {
        float p = (float)pow(10.0, k);
        expect_shortest(p);
        expect_shortest(nextafterf(p, 0.0f));
        expect_shortest(nextafterf(p, INFINITY));
    }
    /* the text of some, pinned: ties go to the even digit (as numpy and
     * Python print float32), 9-digit ones, integers, exponents */
    static const format_case cases[] = {
        {0x1p-12f, 0, "0.00024414062"},  /* 0.000244140625: a tie at 8 digits */
        {0x1.1p-6f, 0, "0.016601562"},   /* 0.0166015625 */
        {3000000.25f, 0, "3000000.2"},
        {FLT_MAX, 0, "3.4028235e38"},
        {FLT_MIN, 0, "1.1754944e-38"},
        {FLT_TRUE_MIN, 0, "1e-45"},
        {-FLT_TRUE_MIN * 3, 0, "-4e-45"},
        {123456789.0f, 0, "123456790"},
        {16777216.0f, 0, "16777216"},
        {0.3190183f, 0, "0.3190183"},
        {1.0f / 3.0f, 0, "0.33333334"},
        {0.1f + 0.2f, 0, "0.3"},
        {1e-7f, 0, "0.0000001"},
        {1.2345e-8f, 0, "1.2345e-8"},
        {1e16f, 0, "1e16"},
        {123456e10f, 0, "1234560000000000"},
        {-2.5f, 0, "-2.5"},
        {100.0f, 0, "100"},
        {7.038531e-26f, 0, "7.038531e-26"},
    };
    expect_formats(cases, sizeof cases / sizeof *cases);
}
END_TEST

START_TEST(test_precision_exact) {
    char s[API_FLOAT_MAX + API_FLOAT_SLACK];
    for (int i = 0; i < RANDOM_CASES(150000); i++) {
        float v = from_bits(next_u32());
        if (i % 3 == 0) v = ((float)next_u32() / 4294967296.0f) * 4.0f - 2.0f;
        if (!isfinite(v) || v == 0.0f) continue;
        for (int p = 1; p <= 9; p++) {
            int n = api__format_float(s, v, p);
            s[n] = '\0';
            double want = ref_rounded(v, p);
            ck_assert_msg(strtod(s, NULL) == (v < 0 ? -want : want), "%a to %d digits: \"%s\", want %.17g",
                          (double)v, p, s, want);
        }
    }
    /* exact halves round away from zero; floats just below a half do not */
    static const format_case cases[] = {
        {0.125f, 2, "0.13"},   {-0.125f, 2, "-0.13"}, {2.5f, 1, "3"},      {1.5f, 1, "2"},
        {0.25f, 1, "0.3"},     {1.25f, 2, "1.3"},     {0.375f, 2, "0.38"}, {1e-45f, 1, "1e-45"},
        {0.35f, 1, "0.3"}, /* 0.3499999940395355 */   {0.45f, 1, "0.4"}, /* 0.4499999881 */
        {0.55f, 1, "0.6"}, /* 0.5500000119 */
        {999999.5f, 6, "1000000"}, {99.96f, 3, "100"}, {FLT_MAX, 1, "3e38"},
        {FLT_MAX, 9, "3.40282347e38"}, {123456789.0f, 9, "123456792"}, {1.0f, 9, "1"},
        {0.5f, 4, "0.5"}, {-0.0f, 3, "-0"},
    };
    expect_formats(cases, sizeof cases / sizeof *cases);
}
END_TEST

START_TEST(test_format_row) {
    const float x[] = {1.5f, -0.0f, 0.1f, 1e-40f, NAN, 2.0f};
    char s[16 * (API_FLOAT_MAX + 1) + API_FLOAT_SLACK];
    size_t done;
    size_t n = api__format_row(s, x, 6, 0, &done);
    s[n] = '\0';
    ck_assert_uint_eq(done, 4); /* stops before NaN */
    ck_assert_str_eq(s, "1.5,-0,0.1,1e-40");
    n = api__format_row(s, x + 5, 1, 2, &done);
    s[n] = '\0';
    ck_assert_uint_eq(done, 1);
    ck_assert_str_eq(s, "2");
    n = api__format_row(s, x + 4, 2, 0, &done);
    ck_assert_uint_eq(done, 0);
    ck_assert_uint_eq(n, 0);
}
END_TEST

/* ==== tensors ================================================================ */

static char *emit(const float *x, int rank, const int *shape, int flat, int precision,
                  int *nonfinite) {
    api_buf b = {0};
    api_fmt f = {.precision = precision, .flat = flat};
    api__emit_floats(&b, x, rank, shape, &f, nonfinite);
    if (b.failed) {
        api_buf_free(&b);
        return NULL;
    }
    return b.data;
}

START_TEST(test_nested_and_flat) {
    float x[24];
    for (int i = 0; i < 24; i++) x[i] = (float)i + 0.5f;
    int nf = 0;
    char *s = emit(x, 2, (int[]){2, 3}, 0, 0, &nf);
    ck_assert_str_eq(s, "[[0.5,1.5,2.5],[3.5,4.5,5.5]]");
    free(s);
    s = emit(x, 2, (int[]){2, 3}, 1, 0, &nf);
    ck_assert_str_eq(s, "{\"shape\":[2,3],\"data\":[0.5,1.5,2.5,3.5,4.5,5.5]}");
    free(s);
    s = emit(x, 1, (int[]){3}, 0, 0, &nf);
    ck_assert_str_eq(s, "[0.5,1.5,2.5]");
    free(s);
    s = emit(x, 3, (int[]){2, 1, 2}, 0, 0, &nf);
    ck_assert_str_eq(s, "[[[0.5,1.5]],[[2.5,3.5]]]");
    free(s);
    /* rank 4, checked against the indices with jansson */
    s = emit(x, 4, (int[]){2, 3, 2, 2}, 0, 0, &nf);
    json_t *j = json_loads(s, 0, NULL);
    ck_assert_ptr_nonnull(j);
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 2; c++)
                for (int d = 0; d < 2; d++) {
                    json_t *v = json_array_get(json_array_get(json_array_get(json_array_get(j, a), b), c), d);
                    ck_assert_double_eq(json_number_value(v), x[((a * 3 + b) * 2 + c) * 2 + d]);
                }
    ck_assert_int_eq(json_array_size(j), 2);
    ck_assert_int_eq(json_array_size(json_array_get(j, 1)), 3);
    json_decref(j);
    free(s);
    ck_assert_int_eq(nf, 0);
}
END_TEST

START_TEST(test_neg_inf_null_and_nan) {
    float x[3] = {1.0f, -INFINITY, 2.0f};
    int nf = 0;
    char *s = emit(x, 1, (int[]){3}, 0, 0, &nf);
    ck_assert_str_eq(s, "[1,null,2]");
    free(s);
    x[1] = NAN;
    s = emit(x, 1, (int[]){3}, 0, 0, &nf);
    ck_assert_ptr_null(s);
    ck_assert_int_eq(nf, 1);
}
END_TEST

START_TEST(test_bytes) {
    uint8_t m[6] = {0, 1, 1, 0, 0, 1};
    api_buf b = {0};
    api_fmt f = {0};
    api__emit_bytes(&b, m, 2, (int[]){2, 3}, &f);
    ck_assert_str_eq(b.data, "[[0,1,1],[0,0,1]]");
    api_buf_free(&b);
    f.flat = 1;
    api__emit_bytes(&b, m, 2, (int[]){3, 2}, &f);
    ck_assert_str_eq(b.data, "{\"shape\":[3,2],\"data\":[0,1,1,0,0,1]}");
    api_buf_free(&b);
    api_buf_free(&b); /* twice: a freed buffer is a zeroed one */
}
END_TEST

START_TEST(test_large_tensor_parses_back) {
    size_t n = 300000;
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++) {
        float v;
        do v = from_bits(next_u32()); while (!isfinite(v));
        x[i] = v;
    }
    int nf = 0;
    char *s = emit(x, 2, (int[]){300, 1000}, 1, 0, &nf);
    ck_assert_ptr_nonnull(s);
    json_error_t je;
    json_t *j = json_loads(s, 0, &je);
    ck_assert_msg(j != NULL, "%s at %d: %.40s", je.text, je.position, s + (je.position > 20 ? je.position - 20 : 0));
    json_t *data = json_object_get(j, "data");
    ck_assert_uint_eq(json_array_size(data), n);
    for (size_t i = 0; i < n; i += 997) /* jansson reads doubles: round to float */
        ck_assert((float)json_number_value(json_array_get(data, i)) == x[i]);
    json_decref(j);
    free(s);
    free(x);
}
END_TEST

/* A large tensor printed by a pool's threads is the same text as printed by
 * one, in every text format, for row widths below and above a piece; a NaN
 * anywhere (here in the last piece) fails it the same way. */
START_TEST(test_pool_prints_the_same_text) {
    static const int shapes[][3] = {{3, 300, 257}, {2, 40000, 3}, {1, 4, 70001}, {1, 1, 200000}};
    attn_pool *pool = attn_pool_create(3);
    ck_assert_ptr_nonnull(pool);
    int compared = 0;
    for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++) {
        size_t n = (size_t)shapes[k][0] * (size_t)shapes[k][1] * (size_t)shapes[k][2];
        float *x = malloc(n * sizeof *x);
        ck_assert_ptr_nonnull(x);
        for (size_t i = 0; i < n; i++) {
            float v;
            do v = from_bits(next_u32()); while (isnan(v) || v == INFINITY);
            x[i] = i % 101 == 7 ? -INFINITY : v;
        }
        for (int variant = 0; variant < 4; variant++) {
            api_fmt one = {.flat = variant & 1, .precision = variant & 2 ? 4 : 0};
            api_fmt many = one;
            many.pool = pool;
            api_buf a = {0}, b = {0};
            int nfa = 0, nfb = 0;
            api__emit_floats(&a, x, 3, shapes[k], &one, &nfa);
            api__emit_floats(&b, x, 3, shapes[k], &many, &nfb);
            ck_assert(!a.failed && !b.failed);
            ck_assert_uint_eq(a.len, b.len);
            ck_assert_msg(memcmp(a.data, b.data, a.len) == 0, "shape %zu variant %d differs", k, variant);
            api_buf_free(&a);
            api_buf_free(&b);
            compared++;
        }
        x[n - 2] = NAN;
        api_fmt many = {.pool = pool};
        api_buf b = {0};
        int nf = 0;
        api__emit_floats(&b, x, 3, shapes[k], &many, &nf);
        ck_assert(b.failed);
        ck_assert_int_eq(nf, 1);
        api_buf_free(&b);
        free(x);
    }
    ck_assert_int_eq(compared, 16);
    attn_pool_destroy(pool);
}
END_TEST

/* ==== strings and errors ===================================================== */

START_TEST(test_json_string_escaping) {
    const char *in = "a\"b\\c\nd\te\x01 f\x7f \xc3\xa9";
    api_buf b = {0};
    api__buf_json_string(&b, in);
    json_error_t je;
    json_t *j = json_loads(b.data, JSON_DECODE_ANY, &je);
    ck_assert_msg(j != NULL, "%s: %s", b.data, je.text);
    ck_assert_str_eq(json_string_value(j), in);
    json_decref(j);
    api_buf_free(&b);
    api__buf_json_string(&b, NULL);
    ck_assert_str_eq(b.data, "null");
    api_buf_free(&b);
}
END_TEST

/* Bytes that are not UTF-8 come out as U+FFFD, so the body always parses;
 * valid characters of 2, 3 and 4 bytes pass unchanged. */
START_TEST(test_json_string_invalid_utf8) {
    static const struct { const char *in, *want; } cases[] = {
        {"a\xa3z\xde", "a\xef\xbf\xbdz\xef\xbf\xbd"},          /* stray continuation, lone lead */
        {"\xc3", "\xef\xbf\xbd"},                                  /* cut short at the end */
        {"\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd"},                  /* overlong '/' */
        {"\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},  /* a surrogate */
        {"\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"}, /* > U+10FFFF */
        {"\xff", "\xef\xbf\xbd"},
        {"\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        api_buf b = {0};
        api__buf_json_string(&b, cases[i].in);
        json_error_t je;
        json_t *j = json_loads(b.data, JSON_DECODE_ANY, &je);
        ck_assert_msg(j != NULL, "case %zu: %s", i, je.text);
        ck_assert_msg(strcmp(json_string_value(j), cases[i].want) == 0, "case %zu", i);
        json_decref(j);
        api_buf_free(&b);
    }
}
END_TEST

START_TEST(test_error_body) {
    api_buf b;
    ck_assert_int_eq(api_error_body(&b, 400, "invalid_shape", "inputs[1] has 2 values, expected 3",
                                    "inputs[1]"), 0);
    ck_assert_str_eq(b.data, "{\"error\":{\"status\":400,\"code\":\"invalid_shape\",\"message\":"
                             "\"inputs[1] has 2 values, expected 3\",\"field\":\"inputs[1]\"}}\n");
    api_buf_free(&b);
    ck_assert_int_eq(api_error_body(&b, 404, "not_found", "no \"such\" path", NULL), 0);
    json_t *j = json_loads(b.data, 0, NULL);
    ck_assert_ptr_nonnull(j);
    ck_assert(json_is_null(json_object_get(json_object_get(j, "error"), "field")));
    json_decref(j);
    api_buf_free(&b);
}
END_TEST

START_TEST(test_echo) {
    char out[API_ECHO_MAX + 4], in[400];
    memset(in, 'x', sizeof in);
    in[399] = '\0';
    in[3] = '\n';
    api__echo(out, sizeof out, in);
    ck_assert_uint_eq(strlen(out), API_ECHO_MAX + 3);
    ck_assert_int_eq(out[3], '?');
    /* a cut inside a UTF-8 sequence backs off to its start */
    memset(in, 0, sizeof in);
    memset(in, 'y', API_ECHO_MAX - 1);
    memcpy(in + API_ECHO_MAX - 1, "\xc3\xa9zz", 4);
    api__echo(out, sizeof out, in);
    ck_assert_uint_eq(strlen(out), API_ECHO_MAX - 1 + 3);
}
END_TEST

/* ==== through api_handle ====================================================== */

START_TEST(test_handle_precision_and_flat) {
    const char *body = "{\"inputs\":[[0.43,0.15,0.89],[0.55,0.87,0.66]],\"precision\":3,"
                       "\"output_format\":\"flat\",\"return\":[\"attn_scores\",\"mask\"]}";
    api_limits lim = {.max_elements = 1000000};
    api_reply r;
    ck_assert_int_eq(api_handle(API_EP_SIMPLE, body, strlen(body), &lim, &r), 200);
    /* 0.43^2 + 0.15^2 + 0.89^2 = 0.9995 (0.99949998 in float32), 0.43*0.55 + 0.15*0.87 +
     * 0.89*0.66 = 0.9544, 0.55^2 + 0.87^2 + 0.66^2 = 1.495 */
    ck_assert_msg(strstr(r.body.data, "\"attn_scores\":{\"shape\":[2,2],\"data\":[0.999,0.954,0.954,1.5]}") != NULL,
                  "%s", r.body.data);
    ck_assert_ptr_nonnull(strstr(r.body.data, "\"mask\":{\"shape\":[2,2],\"data\":[0,0,0,0]}"));
    api_buf_free(&r.body);
}
END_TEST

static Suite *serialise_suite(void) {
    Suite *s = suite_create("api_serialise");
    const TTest *tests[] = {
        test_special_values, test_random_bits_round_trip, test_subnormals_round_trip,
        test_typical_values_round_trip, test_shortest, test_precision, test_shortest_exact,
        test_precision_exact, test_format_row, test_nested_and_flat,
        test_neg_inf_null_and_nan, test_bytes, test_large_tensor_parses_back,
        test_pool_prints_the_same_text,
        test_json_string_escaping, test_json_string_invalid_utf8, test_error_body, test_echo,
        test_handle_precision_and_flat, NULL};
    tcase_with(s, "serialise", 120, tests);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {serialise_suite}};
