/* fmt_all.c - checks the float printer (api/fmt.c) on all 2^32 bit patterns.
 *
 *   fmt_all [threads] [shortest|precision]
 *
 * shortest (default): for every finite float, the text must be a JSON number
 * that strtof reads back bit for bit, and equal the text of the printer fmt.c
 * had before (bench/fmt_old.c, double arithmetic checked with strtof). Where
 * the two differ, an exact reference decides: the shortest %.{p-1}e (glibc
 * prints exactly, ties to even) that reads back, or at a power of two the
 * next p-digit decimal above it; the new text must have its value.
 * precision: for p = 1..9, the text must equal the old printer's, and where
 * they differ the exact rounding (half away from zero) of the exact decimal
 * expansion of the float (%.120e) decides.
 * NaN and infinities must give 0. Prints the counts; exits 1 on any failure.
 * Not part of `make test` (minutes on two cores): `make fmt-all`. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/model/model.h"
#include "api/module/module.h"
#include "api/numbers/numbers.h"

int bench_old_format_float(char *out, float v, int precision);

static float from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static int same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

/* The exact shortest (ties to even) as printf text, for |v| > 0 finite. */
static void ref_shortest(float v, char *out, size_t n) {
    float a = fabsf(v);
    uint32_t u;
    memcpy(&u, &a, sizeof u);
    int pow2 = (u & 0x7fffffu) == 0 && u >= 0x00800000u;
    for (int p = 1; p <= 9; p++) {
        snprintf(out, n, "%.*e", p - 1, (double)a);
        if (same_bits(strtof(out, NULL), a)) return;
        if (pow2 && strtod(out, NULL) < (double)a) {
            /* the interval is narrower below: try the next decimal up */
            char digits[16];
            int nd = 0;
            const char *s = out;
            for (; *s && *s != 'e'; s++)
                if (*s >= '0' && *s <= '9') digits[nd++] = *s;
            int e = atoi(s + 1);
            digits[nd] = '\0';
            unsigned long long m = strtoull(digits, NULL, 10) + 1;
            snprintf(out, n, "%llue%d", m, e - (nd - 1));
            if (same_bits(strtof(out, NULL), a)) return;
        }
    }
    snprintf(out, n, "%.9g", (double)a);
}

/* v rounded to p significant digits, halves away from zero, exactly. */
static double ref_rounded(float v, int p) {
    char s[200];
    snprintf(s, sizeof s, "%.120e", fabs((double)v)); /* exact: a float has fewer digits */
    char digits[130];
    int nd = 0;
    const char *t = s;
    for (; *t && *t != 'e'; t++)
        if (*t >= '0' && *t <= '9') digits[nd++] = *t;
    int e = atoi(t + 1);
    unsigned long long m = 0;
    for (int i = 0; i < p; i++) m = m * 10 + (unsigned long long)(digits[i] - '0');
    if (digits[p] >= '5') m++; /* half up: any tail at 5 or more rounds up */
    char r[64];
    snprintf(r, sizeof r, "%llue%d", m, e - (p - 1));
    return strtod(r, NULL);
}

typedef struct {
    int mode, index, threads;
    unsigned long long checked, differ, failures;
} job;

static void fail(job *j, uint32_t u, int p, const char *got, const char *want) {
    if (j->failures++ < 20)
        fprintf(stderr, "FAIL 0x%08x (%.9g) precision %d: \"%s\", want \"%s\"\n", u,
                (double)from_bits(u), p, got, want);
}

static void *run(void *arg) {
    job *j = arg;
    char s[API_FLOAT_MAX + API_FLOAT_SLACK], o[API_FLOAT_MAX + API_FLOAT_SLACK], r[64];
    uint64_t from = ((uint64_t)1 << 32) * (uint64_t)j->index / (uint64_t)j->threads;
    uint64_t to = ((uint64_t)1 << 32) * (uint64_t)(j->index + 1) / (uint64_t)j->threads;
    for (uint64_t w = from; w < to; w++) {
        uint32_t u = (uint32_t)w;
        float v = from_bits(u);
        if (!isfinite(v)) {
            if (api__format_float(s, v, 0) != 0 || api__format_float(s, v, 3) != 0) fail(j, u, 0, "text", "0");
            continue;
        }
        for (int p = j->mode ? 1 : 0; p <= (j->mode ? 9 : 0); p++) {
            int n = api__format_float(s, v, p), m = bench_old_format_float(o, v, p);
            j->checked++;
            if (n <= 0 || n > API_FLOAT_MAX) {
                fail(j, u, p, "bad length", "");
                continue;
            }
            s[n] = o[m] = '\0';
            if (p == 0) {
                char *end;
                float back = strtof(s, &end);
                if (*end != '\0' || !same_bits(back, v)) {
                    fail(j, u, p, s, "a round trip");
                    continue;
                }
            }
            if (n == m && memcmp(s, o, (size_t)n) == 0) continue;
            j->differ++;
            if (v == 0.0f) {
                fail(j, u, p, s, o);
                continue;
            }
            double want;
            if (p == 0) {
                ref_shortest(v, r, sizeof r);
                want = strtod(r, NULL);
            } else {
                want = ref_rounded(v, p);
                snprintf(r, sizeof r, "%.17g", want);
            }
            if (strtod(s, NULL) != (v < 0 ? -want : want)) fail(j, u, p, s, r);
            else if (j->differ <= 5)
                printf("  differs from the old printer, exact reference agrees: 0x%08x \"%s\" (old \"%s\")\n",
                       u, s, o);
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    int mode = argc > 2 && strcmp(argv[2], "precision") == 0;
    if (threads < 1 || threads > 64) threads = 2;
    pthread_t t[64];
    job jobs[64];
    for (int i = 0; i < threads; i++) {
        jobs[i] = (job){.mode = mode, .index = i, .threads = threads};
        pthread_create(&t[i], NULL, run, &jobs[i]);
    }
    unsigned long long checked = 0, differ = 0, failures = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        checked += jobs[i].checked;
        differ += jobs[i].differ;
        failures += jobs[i].failures;
    }
    printf("%s: %llu finite cases of 2^32 bit patterns checked, %llu differ from the old printer "
           "(each confirmed by the exact reference unless counted as a failure), %llu failures\n",
           mode ? "precision 1..9" : "shortest", checked, differ, failures);
    return failures ? 1 : 0;
}
