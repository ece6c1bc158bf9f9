/* bench_serialise.c - JSON numbers out and in, on one core (the scanner also
 * on a pool of 2, as the server runs it), in one run.
 *
 * Out: 1M floats (uniform in [-2, 2], like weights and activations) through
 * the reply writer (api__emit_floats), shortest and with precision 4, against
 * the printer api/fmt.c had before (bench/fmt_old.c) in the same loop,
 * snprintf("%.9g") and jansson (json_real + json_dumps).
 * In: request bodies of 1M numbers read by the tensor scanner
 * (api__scan_body) against strtod then (float) over the same text: our own
 * shortest replies, and a mix as Python's json.dumps writes it
 * ("-0.123456789, 0.0015, 0.0001234, ...").
 * Base64: a tensor's 4 MB both ways through api/codec.c against the table
 * loop it had before its AVX2 blocks.
 * Best of ROUNDS each; MB/s = bytes of text / time. Built and run by
 * `make bench` (build/bench/bench_serialise). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/model/model.h"
#include "api/module/module.h"
#include "api/numbers/numbers.h"
#include "api/numbers/numbers.h"
#include "api/numbers/numbers.h"

int bench_old_format_float(char *out, float v, int precision);

enum { N = 1000000, ROUNDS = 7 };

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t rng = 42;
static double uniform(void) { /* [0, 1) */
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng >> 11) / 9007199254740992.0;
}

/* The old printer in the loop api__emit_floats runs (one flat row). */
static size_t old_row(char *out, const float *x, size_t n, int precision) {
    char *o = out;
    *o++ = '[';
    for (size_t i = 0; i < n; i++) {
        if (i) *o++ = ',';
        o += bench_old_format_float(o, x[i], precision);
    }
    *o++ = ']';
    return (size_t)(o - out);
}

static void report(const char *what, double t, size_t bytes, double base) {
    printf("  %-40s %7.1f ms %7.0f MB/s", what, t * 1e3, (double)bytes / t / 1e6);
    if (base > 0) printf("  %5.2fx", base / t);
    printf("\n");
}

/* ==== Out ================================================================= */

static void bench_out(const float *x) {
    double best[6] = {1e9, 1e9, 1e9, 1e9, 1e9, 1e9};
    size_t bytes[6] = {0};
    char *out = malloc((size_t)N * (API_FLOAT_MAX + 1) + API_FLOAT_SLACK + 2);
    for (int r = 0; r < ROUNDS; r++) {
        for (int p = 0; p < 2; p++) {
            api_buf b = {0};
            api_fmt f = {.precision = p ? 4 : 0};
            /* the buffer grows once, before the clock starts */
            api__buf_reserve(&b, (size_t)N * (API_FLOAT_MAX + 1) + API_FLOAT_SLACK + 16);
            double t = now();
            api__emit_floats(&b, x, 1, (int[]){N}, &f, NULL);
            t = now() - t;
            if (t < best[2 * p]) best[2 * p] = t;
            bytes[2 * p] = b.len;
            api_buf_free(&b);

            t = now();
            size_t len = old_row(out, x, N, p ? 4 : 0);
            t = now() - t;
            if (t < best[2 * p + 1]) best[2 * p + 1] = t;
            bytes[2 * p + 1] = len;
        }

        size_t len = 0;
        double t = now();
        out[len++] = '[';
        for (int i = 0; i < N; i++) {
            if (i) out[len++] = ',';
            len += (size_t)snprintf(out + len, 18, "%.9g", (double)x[i]);
        }
        out[len++] = ']';
        t = now() - t;
        if (t < best[4]) best[4] = t;
        bytes[4] = len;

        if (r < 2) { /* slow: two rounds */
            t = now();
            json_t *a = json_array();
            for (int i = 0; i < N; i++) json_array_append_new(a, json_real(x[i]));
            char *d = json_dumps(a, JSON_COMPACT);
            json_decref(a);
            t = now() - t;
            if (t < best[5]) best[5] = t;
            bytes[5] = strlen(d);
            free(d);
        }
    }
    free(out);
    printf("JSON out, 1M floats in [-2, 2], best of %d (x = speed against the old printer):\n", ROUNDS);
    report("api__emit_floats, shortest", best[0], bytes[0], best[1]);
    report("old printer, shortest", best[1], bytes[1], best[1]);
    report("api__emit_floats, precision 4", best[2], bytes[2], best[3]);
    report("old printer, precision 4", best[3], bytes[3], best[3]);
    report("snprintf %.9g", best[4], bytes[4], best[1]);
    report("jansson json_real + json_dumps", best[5], bytes[5], best[1]);
}

/* ==== In ================================================================== */

/* strtod then (float) over every number of the text, as a reference. */
static float strtod_all(const char *text, size_t *count) {
    const char *p = text;
    float sum = 0;
    size_t n = 0;
    while (*p) {
        if ((*p >= '0' && *p <= '9') || *p == '-') {
            char *stop;
            sum += (float)strtod(p, &stop);
            p = stop;
            n++;
        } else {
            p++;
        }
    }
    *count = n;
    return sum;
}

static void bench_in_text(const char *name, const char *body, size_t len) {
    static attn_pool *two;
    if (!two) two = attn_pool_create(2);
    double best[3] = {1e9, 1e9, 1e9};
    size_t taken = 0, count = 0;
    float sink = 0;
    for (int r = 0; r < ROUNDS; r++) {
        api_scan s;
        double t = now();
        int rc = api__scan_body(body, len, (size_t)N * 2, NULL, &s);
        t = now() - t;
        if (t < best[0]) best[0] = t;
        taken = rc == 0 ? s.elements : 0;
        api__scan_free(&s);

        t = now();
        rc = api__scan_body(body, len, (size_t)N * 2, two, &s);
        t = now() - t;
        if (t < best[2]) best[2] = t;
        if (rc != 0 || s.elements != taken) taken = 0;
        api__scan_free(&s);

        t = now();
        sink += strtod_all(body, &count);
        t = now() - t;
        if (t < best[1]) best[1] = t;
    }
    printf("JSON in, %s (%.1f MB, %zu numbers, %zu read by the scanner), best of %d:\n", name,
           (double)len / 1e6, count, taken, ROUNDS);
    report("api__scan_body (tensor scanner)", best[0], len, best[1]);
    report("api__scan_body, a pool of 2", best[2], len, best[1]);
    report("strtod + (float), same text", best[1], len, best[1]);
    if (sink == 12345.0f) printf(" \n"); /* keeps the reference loop */
}

static void bench_in(const float *x) {
    size_t cap = (size_t)N * 24 + 64;
    char *body = malloc(cap);
    /* our replies: shortest floats, 1000 rows of 1000 */
    size_t len = (size_t)sprintf(body, "{\"inputs\":[");
    for (int i = 0; i < N; i++) {
        if (i % 1000 == 0) len += (size_t)sprintf(body + len, i ? "],[" : "[");
        else body[len++] = ',';
        len += (size_t)api__format_float(body + len, x[i], 0);
    }
    len += (size_t)sprintf(body + len, "]]}");
    bench_in_text("shortest floats as replies print them", body, len);

    /* Python json.dumps of a mix: 9 decimals, small values with 4 digits,
     * exponents */
    len = (size_t)sprintf(body, "{\"inputs\": [");
    for (int i = 0; i < N; i++) {
        if (i % 1000 == 0) len += (size_t)sprintf(body + len, i ? "], [" : "[");
        else len += (size_t)sprintf(body + len, ", ");
        double u = uniform();
        switch (i % 4) {
        case 0: len += (size_t)sprintf(body + len, "%.9f", u * 2 - 1); break;
        case 1: len += (size_t)sprintf(body + len, "%.1fe-%d", 1 + 8 * u, 1 + i % 7); break;
        case 2: len += (size_t)sprintf(body + len, "%.7f", u * 0.001); break;
        default: len += (size_t)sprintf(body + len, "%.17g", u * 4 - 2); break;
        }
    }
    len += (size_t)sprintf(body + len, "]]}");
    bench_in_text("a mix as Python writes it (-0.123456789, 4.5e-3, 0.0001234, 17 digits)", body, len);
    free(body);
}

/* ==== Base64 ============================================================== */

/* The table loop api/codec.c had before its AVX2 blocks, as the baseline. */
static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void old_b64_encode(const uint8_t *in, size_t n, char *o) { /* n % 3 == 0 */
    for (size_t i = 0; i < n; i += 3, o += 4) {
        uint32_t w = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        o[0] = B64[w >> 18], o[1] = B64[w >> 12 & 63], o[2] = B64[w >> 6 & 63], o[3] = B64[w & 63];
    }
}

static void old_b64_decode(const char *s, size_t m, uint8_t *out) { /* m % 4 == 0, valid */
    uint8_t v[256];
    for (int i = 0; i < 64; i++) v[(uint8_t)B64[i]] = (uint8_t)i;
    for (size_t i = 0; i < m; i += 4, out += 3) {
        uint32_t w = (uint32_t)v[(uint8_t)s[i]] << 18 | (uint32_t)v[(uint8_t)s[i + 1]] << 12 |
                     (uint32_t)v[(uint8_t)s[i + 2]] << 6 | v[(uint8_t)s[i + 3]];
        out[0] = (uint8_t)(w >> 16), out[1] = (uint8_t)(w >> 8), out[2] = (uint8_t)w;
    }
}

/* A tensor's bytes as base64, both ways: N float32 values (4 MB, a
 * T=1,024 GPT-2 layer's inputs are this size). */
static void bench_base64(const float *x) {
    size_t n = (size_t)N * 4 / 3 * 3, m = n / 3 * 4;
    char *text = malloc(m);
    uint8_t *back = malloc(n);
    double best[4] = {1e9, 1e9, 1e9, 1e9};
    for (int r = 0; r < ROUNDS; r++) {
        double t = now();
        api__b64_encode((const uint8_t *)x, n, text);
        best[0] = fmin(best[0], now() - t);
        t = now();
        old_b64_encode((const uint8_t *)x, n, text);
        best[1] = fmin(best[1], now() - t);
        t = now();
        size_t bad = api__b64_decode(text, m, back);
        best[2] = fmin(best[2], now() - t);
        t = now();
        old_b64_decode(text, m, back);
        best[3] = fmin(best[3], now() - t);
        if (bad || memcmp(back, x, n) != 0) {
            fprintf(stderr, "base64 round trip failed\n");
            exit(1);
        }
    }
    printf("Base64, %.1f MB of float32, best of %d (x = speed against the table loop):\n",
           (double)n / 1e6, ROUNDS);
    report("api__b64_encode", best[0], m, best[1]);
    report("table loop, encode", best[1], m, best[1]);
    report("api__b64_decode", best[2], m, best[3]);
    report("table loop, decode", best[3], m, best[3]);
    free(text);
    free(back);
}

int main(void) {
    float *x = malloc(N * sizeof *x);
    for (int i = 0; i < N; i++) x[i] = (float)(uniform() * 4.0 - 2.0);
    bench_out(x);
    bench_in(x);
    bench_base64(x);
    free(x);
    return 0;
}
