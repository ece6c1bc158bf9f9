/* test_core_clones.c - every instruction-set clone of the core's own
 * kernels that this CPU runs gives what the baseline (SSE2) clone gives, on
 * the same inputs:
 *   - bit for bit for the kernels without fused multiply-adds or reordered
 *     sums: row maximum, row scaling, GELU (erf and tanh forms), LayerNorm,
 *     scaled and masked score rows, flash tile masks, dropout multipliers,
 *     the residual add and the embedding;
 *   - for the softmax exponential, whose AVX2 and AVX-512 clones run the
 *     polynomial as FMAs (vexp.c), each value within 4 ulp (each clone is
 *     within 2 ulp of the correctly rounded exp) and the sum within that plus
 *     the rounding of its (n / 16 + 4) additions, relative.
 *
 * How the clones are reached: GCC's target_clones makes, for a function f,
 * local clones (f.arch_x86_64_v4, f.arch_x86_64_v3, f.default) and a global
 * resolver "f.resolver" that returns one by libgcc's CPU feature words
 * (__cpu_model.__cpu_features and __cpu_features2). Which words and bits a
 * resolver reads is the compiler's business (GCC 12.2 here reads the ISA
 * level bits of __cpu_features2[2]; the note of 2026-11-27 saw a machine
 * where clearing bits of __cpu_features2 alone did not reach the AVX2
 * clone), so the test does not depend on it: with every bit of every word
 * set, the resolver returns the best clone (AVX-512); with one bit cleared
 * at a time, the lesser ones; with none, the baseline. That finds all three
 * clones on any machine, whatever its CPU runs, and the count must be 3.
 * Only the clones the CPU runs (__builtin_cpu_supports("x86-64-v4"),
 * ("x86-64-v3")) are called; and the resolver with the real words must
 * pick the clone of the best level the CPU has, which ties the three found
 * to what production runs.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/layers/layers.h"
#include "core/rows.h"
#include "core/vexp.h"
#include "tests/support/check_main.h"

/* ==== the clones of a function ============================================= */

typedef void (*anyfn)(void);
#define RESOLVER(f) anyfn f##_resolver(void) __asm__(#f ".resolver");
RESOLVER(attn__row_max)
RESOLVER(attn__exp_shifted)
RESOLVER(attn__scale_row)
RESOLVER(attn__gelu_row)
RESOLVER(attn__norm)
RESOLVER(attn__scores_row)
RESOLVER(attn__mask_row)
RESOLVER(attn__mul_row)
RESOLVER(attn__add)
RESOLVER(attn__embed)

/* libgcc's feature words (libgcc/config/i386/cpuinfo.c of GCC 12): one in
 * __cpu_model after vendor, type and subtype, three in __cpu_features2. */
extern struct {
    unsigned int vendor, type, subtype;
    unsigned int features[1];
} __cpu_model;
extern unsigned int __cpu_features2[3];
#define N_WORDS 4
static unsigned int *const words[N_WORDS] = {&__cpu_model.features[0], &__cpu_features2[0],
                                             &__cpu_features2[1], &__cpu_features2[2]};

/* The clones, best first: AVX-512 (x86-64-v4), AVX2 (x86-64-v3), baseline. */
#define N_CLONES 3
static const char *const clone_names[N_CLONES] = {"AVX-512", "AVX2", "baseline"};

static void set_words(const unsigned *v) {
    for (int w = 0; w < N_WORDS; w++) *words[w] = v[w];
}

static void add_unique(anyfn *out, int *n, anyfn f) {
    for (int i = 0; i < *n; i++)
        if (out[i] == f) return;
    ck_assert_msg(*n < N_CLONES, "more than %d clones", N_CLONES);
    out[(*n)++] = f;
}

/* The level this CPU runs: 0 AVX-512, 1 AVX2, 2 baseline. */
static int cpu_level(void) {
    return __builtin_cpu_supports("x86-64-v4") ? 0 : __builtin_cpu_supports("x86-64-v3") ? 1 : 2;
}

/* Every clone of a function this CPU runs into run[], the baseline last;
 * returns how many. All three are found (and counted) on any machine. */
static int clones_of(anyfn (*resolver)(void), anyfn run[N_CLONES]) {
    unsigned saved[N_WORDS], v[N_WORDS];
    for (int w = 0; w < N_WORDS; w++) saved[w] = *words[w];
    anyfn all[N_CLONES];
    int n = 0;
    memset(v, 0xff, sizeof v);
    set_words(v);
    anyfn best = resolver();
    add_unique(all, &n, best);
    for (int w = 0; w < N_WORDS; w++)
        for (int b = 0; b < 32; b++) {
            memset(v, 0xff, sizeof v);
            v[w] &= ~(1u << b);
            set_words(v);
            add_unique(all, &n, resolver());
        }
    memset(v, 0, sizeof v);
    set_words(v);
    anyfn base = resolver();
    add_unique(all, &n, base);
    set_words(saved);
    anyfn chosen = resolver();
    ck_assert_msg(n == N_CLONES, "%d clones found, %d compiled", n, N_CLONES);
    anyfn middle = NULL;
    for (int i = 0; i < n; i++)
        if (all[i] != best && all[i] != base) middle = all[i];
    all[0] = best, all[1] = middle, all[2] = base;
    int level = cpu_level();
    ck_assert_msg(chosen == all[level], "the resolver picks another clone than the %s one this "
                  "CPU runs", clone_names[level]);
    for (int i = level; i < N_CLONES; i++) run[i - level] = all[i];
    return N_CLONES - level;
}

/* ==== inputs =================================================================== */

static const int LENGTHS[] = {1, 7, 15, 16, 17, 64, 100, 257, 768, 1000, 3072};
#define N_LENGTHS ((int)(sizeof LENGTHS / sizeof LENGTHS[0]))
#define MAXN 3072

static uint64_t g_seed = 1;

static float uniform(float lo, float hi) {
    g_seed = g_seed * 6364136223846793005u + 1442695040888963407u;
    return lo + (hi - lo) * (float)((double)(g_seed >> 40) / (double)(1u << 24));
}

static void fill(float *x, int n, float lo, float hi) {
    for (int i = 0; i < n; i++) x[i] = uniform(lo, hi);
}

static void fill_mask(uint8_t *m, int n) {
    for (int i = 0; i < n; i++) m[i] = uniform(0, 1) < 0.3f;
}

static void expect_same_bits(const void *a, const void *b, size_t bytes, const char *what, int n,
                             int clone) {
    ck_assert_msg(memcmp(a, b, bytes) == 0, "%s, n = %d: clone %d differs from the baseline",
                  what, n, clone);
}

/* ==== bit-identical kernels ======================================================= */

START_TEST(test_row_kernels_identical) {
    typedef float (*max_fn)(const float *, int);
    typedef void (*scale_fn)(float *, float, int);
    typedef void (*gelu_fn)(float *, int, int);
    anyfn mx[N_CLONES], sc[N_CLONES], ge[N_CLONES];
    int n_clones = clones_of(attn__row_max_resolver, mx);
    ck_assert_int_eq(clones_of(attn__scale_row_resolver, sc), n_clones);
    ck_assert_int_eq(clones_of(attn__gelu_row_resolver, ge), n_clones);
    static float x[MAXN], want[MAXN], got[MAXN];
    for (int li = 0; li < N_LENGTHS; li++) {
        int n = LENGTHS[li];
        fill(x, n, -12.0f, 12.0f);
        if (n > 3) x[n / 3] = -INFINITY; /* a masked score */
        float m0 = ((max_fn)mx[n_clones - 1])(x, n);
        for (int c = 0; c < n_clones - 1; c++) {
            float m = ((max_fn)mx[c])(x, n);
            expect_same_bits(&m, &m0, sizeof m, "row_max", n, c);
        }
        for (int form = 0; form < 2; form++) {
            fill(x, n, -8.0f, 8.0f);
            memcpy(want, x, (size_t)n * sizeof *x);
            ((gelu_fn)ge[n_clones - 1])(want, n, form);
            for (int c = 0; c < n_clones - 1; c++) {
                memcpy(got, x, (size_t)n * sizeof *x);
                ((gelu_fn)ge[c])(got, n, form);
                expect_same_bits(got, want, (size_t)n * sizeof *got, form ? "gelu tanh" : "gelu erf",
                                 n, c);
            }
        }
        memcpy(want, x, (size_t)n * sizeof *x);
        ((scale_fn)sc[n_clones - 1])(want, 0.37f, n);
        for (int c = 0; c < n_clones - 1; c++) {
            memcpy(got, x, (size_t)n * sizeof *x);
            ((scale_fn)sc[c])(got, 0.37f, n);
            expect_same_bits(got, want, (size_t)n * sizeof *got, "scale_row", n, c);
        }
    }
}
END_TEST

START_TEST(test_mask_kernels_identical) {
    typedef void (*scores_fn)(float *, const float *, float, const float *, const uint8_t *, int);
    typedef void (*mask_fn)(float *, const float *, const uint8_t *, const uint8_t *, int, int);
    typedef void (*mul_fn)(float *, const float *, int);
    anyfn so[N_CLONES], ma[N_CLONES], mu[N_CLONES];
    int n_clones = clones_of(attn__scores_row_resolver, so);
    ck_assert_int_eq(clones_of(attn__mask_row_resolver, ma), n_clones);
    ck_assert_int_eq(clones_of(attn__mul_row_resolver, mu), n_clones);
    static float raw[MAXN], add[MAXN], want[MAXN], got[MAXN];
    static uint8_t m1[MAXN], m2[MAXN];
    for (int li = 0; li < N_LENGTHS; li++) {
        int n = LENGTHS[li];
        fill(raw, n, -20.0f, 20.0f), fill(add, n, -3.0f, 3.0f);
        fill_mask(m1, n), fill_mask(m2, n);
        add[n / 2] = -INFINITY;
        for (int v = 0; v < 4; v++) { /* with and without the additive mask and the boolean one */
            const float *a = v & 1 ? add : NULL;
            const uint8_t *m = v & 2 ? m1 : NULL;
            ((scores_fn)so[n_clones - 1])(want, raw, 0.125f, a, m, n);
            for (int c = 0; c < n_clones - 1; c++) {
                ((scores_fn)so[c])(got, raw, 0.125f, a, m, n);
                expect_same_bits(got, want, (size_t)n * sizeof *got, "scores_row", n, c);
            }
            int causal = v == 3 ? n / 2 : v == 2 ? -5 : n; /* partly, fully, not causal */
            memcpy(want, raw, (size_t)n * sizeof *raw);
            ((mask_fn)ma[n_clones - 1])(want, a, m, v & 1 ? m2 : NULL, causal, n);
            for (int c = 0; c < n_clones - 1; c++) {
                memcpy(got, raw, (size_t)n * sizeof *raw);
                ((mask_fn)ma[c])(got, a, m, v & 1 ? m2 : NULL, causal, n);
                expect_same_bits(got, want, (size_t)n * sizeof *got, "mask_row", n, c);
            }
        }
        memcpy(want, raw, (size_t)n * sizeof *raw);
        ((mul_fn)mu[n_clones - 1])(want, add, n);
        for (int c = 0; c < n_clones - 1; c++) {
            memcpy(got, raw, (size_t)n * sizeof *raw);
            ((mul_fn)mu[c])(got, add, n);
            expect_same_bits(got, want, (size_t)n * sizeof *got, "mul_row", n, c);
        }
    }
}
END_TEST

START_TEST(test_layer_kernels_identical) {
    typedef void (*ln_fn)(attn_lm_norm, float *, const float *, const float *, const float *,
                          size_t, int, double);
    typedef void (*add_fn)(float *, const float *, size_t);
    typedef void (*embed_fn)(float *, const int32_t *, const float *, const float *, float, int,
                             int, int);
    anyfn ln[N_CLONES], ad[N_CLONES], em[N_CLONES];
    int n_clones = clones_of(attn__norm_resolver, ln);
    ck_assert_int_eq(clones_of(attn__add_resolver, ad), n_clones);
    ck_assert_int_eq(clones_of(attn__embed_resolver, em), n_clones);
    enum { ROWS = 5, V = 11, T = 5 };
    static float x[ROWS * MAXN], g[MAXN], b[MAXN], want[ROWS * MAXN], got[ROWS * MAXN];
    static float wte[V * MAXN], wpe[T * MAXN];
    int32_t idx[T] = {3, 10, 0, 3, 7};
    for (int li = 0; li < N_LENGTHS; li++) {
        int C = LENGTHS[li];
        size_t n = (size_t)ROWS * C;
        fill(x, (int)n, -4.0f, 6.0f), fill(g, C, 0.5f, 1.5f), fill(b, C, -0.5f, 0.5f);
        for (int kind = ATTN_LM_LAYERNORM; kind <= ATTN_LM_RMSNORM_1P; kind++) {
            ((ln_fn)ln[n_clones - 1])((attn_lm_norm)kind, want, x, g, b, ROWS, C, 1e-5);
            for (int c = 0; c < n_clones - 1; c++) {
                ((ln_fn)ln[c])((attn_lm_norm)kind, got, x, g, b, ROWS, C, 1e-5);
                expect_same_bits(got, want, n * sizeof *got, "norm", C, c);
            }
        }
        memcpy(want, x, n * sizeof *x);
        ((add_fn)ad[n_clones - 1])(want, g, (size_t)C);
        for (int c = 0; c < n_clones - 1; c++) {
            memcpy(got, x, n * sizeof *x);
            ((add_fn)ad[c])(got, g, (size_t)C);
            expect_same_bits(got, want, n * sizeof *got, "add", C, c);
        }
        fill(wte, V * C, -1.0f, 1.0f), fill(wpe, T * C, -1.0f, 1.0f);
        for (int scaled = 0; scaled < 2; scaled++) {
            float scale = scaled ? 11.3137083f : 1.0f; /* Gemma's sqrt(width) */
            ((embed_fn)em[n_clones - 1])(want, idx, wte, scaled ? NULL : wpe, scale, 1, T, C);
            for (int c = 0; c < n_clones - 1; c++) {
                ((embed_fn)em[c])(got, idx, wte, scaled ? NULL : wpe, scale, 1, T, C);
                expect_same_bits(got, want, (size_t)T * C * sizeof *got, "embed", C, c);
            }
        }
    }
}
END_TEST

/* ==== the exponential ============================================================ */

START_TEST(test_exp_within_ulps) {
    typedef float (*exp_fn)(float *, const float *, float, int);
    anyfn ex[N_CLONES];
    int n_clones = clones_of(attn__exp_shifted_resolver, ex);
    static float x[MAXN], want[MAXN], got[MAXN];
    double worst_ulps = 0;
    for (int li = 0; li < N_LENGTHS; li++) {
        int n = LENGTHS[li];
        fill(x, n, -90.0f, 0.0f); /* down to where exp underflows to 0 */
        x[0] = 0.0f;
        if (n > 2) x[n - 1] = -INFINITY;
        float s0 = ((exp_fn)ex[n_clones - 1])(want, x, 0.0f, n);
        for (int c = 0; c < n_clones - 1; c++) {
            float s = ((exp_fn)ex[c])(got, x, 0.0f, n);
            for (int j = 0; j < n; j++) {
                double ulp = want[j] > 0 ? (double)nextafterf(want[j], INFINITY) - want[j] : 0;
                double d = fabs((double)got[j] - want[j]);
                ck_assert_msg(d <= 4 * ulp, "exp, n = %d, clone %d, x = %g: %.9g against %.9g", n,
                              c, x[j], got[j], want[j]);
                if (ulp > 0 && d / ulp > worst_ulps) worst_ulps = d / ulp;
            }
            double tol = (4.0 + (n / 16 + 4)) * ldexp(1.0, -24) * s0;
            ck_assert_msg(fabs((double)s - s0) <= tol, "exp sum, n = %d, clone %d: %.9g against %.9g",
                          n, c, s, s0);
        }
    }
    int level = cpu_level();
    printf("clones: all %d of each kernel found; the %s one%s compared with the baseline here "
           "(%s); exp differs from the baseline's by at most %.0f ulp\n", N_CLONES,
           level == 0 ? "AVX-512 and the AVX2" : level == 1 ? "AVX2" : "no", level == 0 ? "s" : "",
           level == 0 ? "the CPU has AVX-512" : level == 1 ? "the CPU has AVX2, not AVX-512"
                                                          : "the CPU has neither AVX2 nor AVX-512",
           worst_ulps);
}
END_TEST

static Suite *clones_suite(void) {
    Suite *s = suite_create("clones");
    const TTest *tests[] = {test_row_kernels_identical, test_mask_kernels_identical,
                            test_layer_kernels_identical, test_exp_within_ulps, NULL};
    tcase_with(s, "clones", 0, tests);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {clones_suite}};
