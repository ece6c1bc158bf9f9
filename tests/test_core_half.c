/* test_core_half.c - half-size weights (core/half.h, lm.h's weights_dtype):
 *
 *   conversions: every F16 and BF16 value widened against its definition
 *     (sign, exponent, fraction in double); float32 rounded to F16 and BF16
 *     is the nearest value, ties to even, on special and random values (and
 *     equal to the CPU's F16C conversion where it has one);
 *   kernels: the few-row products (attn__half_dot) of both dtypes, odd
 *     sizes, several rows, strides, with and without bias, on the AVX2 set
 *     (where the CPU has it) and on the portable one forced, each against a
 *     double-precision sum within 2e-6 of the sum of |products|; the two
 *     sets within that of each other; the many-row products (linear.c)
 *     equal to float32's bit for bit on the widened weights, the step's
 *     (gemv.c) within the bound, activations included;
 *   whole models: GPT-2, GPTModel and a Llama-shaped model (GQA, RoPE,
 *     SwiGLU, untied head) with BF16 and F16 weights against the float32
 *     copy of the same values: forward logits, hidden states and the logit
 *     lens the same bits, a prefill and decode steps within 1e-5 of the row's
 *     largest logit, on both sets of kernels; the layout (bytes, offsets,
 *     dtypes), the finite check, conversions refused between models.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gemv.h"
#include "core/half.h"
#include "core/linear.h"
#include "core/lm.h"
#include "tests/support/check_main.h"

#include <cblas.h> /* openblas_set_num_threads */

static uint32_t next_u32(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(*s >> 33);
}

static float uniform(uint64_t *s) { return (float)next_u32(s) / 4294967296.0f * 2.0f - 1.0f; }

static float from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* ==== Conversions ========================================================= */

/* An F16 value from its fields, in double. */
static double f16_value(uint16_t h) {
    int sign = h >> 15, e = h >> 10 & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
    return sign ? -v : v;
}

START_TEST(widen_every_value) {
    for (uint32_t h = 0; h < 65536; h++) {
        double want = f16_value((uint16_t)h);
        float got = attn__f16_to_f32((uint16_t)h);
        if (isnan(want)) ck_assert_msg(isnan(got), "F16 %04x: %g, want NaN", h, (double)got);
        else ck_assert_msg((double)got == want && !signbit(got) == !signbit(want), "F16 %04x: %g, want %g",
                           h, (double)got, want);
        float b = attn__bf16_to_f32((uint16_t)h);
        uint32_t bits;
        memcpy(&bits, &b, sizeof bits);
        ck_assert_uint_eq(bits, h << 16);
    }
}
END_TEST

/* A row of every F16 (or BF16) value widened by each set (portable C, the
 * AVX2 set where it runs, at odd offsets for the tails): attn__half_to_f32's
 * values, the same bits (a NaN stays a NaN). */
START_TEST(widen_rows_every_value) {
    attn_dtype t = _i ? ATTN_DTYPE_BF16 : ATTN_DTYPE_F16;
    uint16_t *src = malloc(65536 * sizeof *src);
    float *dst = malloc(65536 * sizeof *dst);
    ck_assert(src && dst);
    for (uint32_t h = 0; h < 65536; h++) src[h] = (uint16_t)h;
    for (int set = 0; set < 3; set++) {
        memset(dst, 0, 65536 * sizeof *dst);
        if (set == 0) attn__half_widen_portable(t, src, dst, 65536);
        attn__half_force_portable(set == 1);
        if (set > 0) {
            attn__half_widen(t, src, dst, 3);
            attn__half_widen(t, src + 3, dst + 3, 65536 - 3);
        }
        for (uint32_t h = 0; h < 65536; h++) {
            float want = attn__half_to_f32(t, (uint16_t)h);
            uint32_t a, b;
            memcpy(&a, &dst[h], sizeof a);
            memcpy(&b, &want, sizeof b);
            ck_assert_msg(isnan(want) ? isnan(dst[h]) : a == b, "%s %04x, set %d (%s): %08x, want %08x",
                          attn_dtype_name(t), h, set, attn__half_kernels(), a, b);
        }
    }
    attn__half_force_portable(0);
    free(src);
    free(dst);
}
END_TEST

/* The F16 neighbours of h's magnitude (h & 0x7fff), for the nearest test. */
static void check_nearest_f16(float f) {
    uint16_t h = attn__f32_to_f16(f);
    if (isnan(f)) {
        ck_assert_msg((h & 0x7c00) == 0x7c00 && (h & 0x3ff), "NaN -> %04x", h);
        return;
    }
    ck_assert_uint_eq(h >> 15, signbit(f) ? 1u : 0u);
    double a = fabs((double)f), got = fabs(f16_value(h));
    uint16_t mag = h & 0x7fff;
    if (a >= 65520.0) { /* 65504 + half an ulp (a tie, to the even 2^16: infinity) */
        ck_assert_msg(mag == 0x7c00, "%.9g -> %04x, want infinity", (double)f, h);
        return;
    }
    ck_assert_msg(mag < 0x7c00, "%.9g -> %04x", (double)f, h);
    double below = mag ? f16_value((uint16_t)(mag - 1)) : -1.0, above = f16_value((uint16_t)(mag + 1));
    double d = fabs(a - got);
    ck_assert_msg(d <= a - below || below < 0, "%.9g -> %g: %g is nearer", (double)f, got, below);
    ck_assert_msg(d <= above - a, "%.9g -> %g: %g is nearer", (double)f, got, above);
    if (d == a - below || d == above - a) /* a tie: the even one */
        ck_assert_msg((mag & 1) == 0, "%.9g -> %04x: ties go to even", (double)f, h);
}

static void check_nearest_bf16(float f) {
    uint16_t h = attn__f32_to_bf16(f);
    if (isnan(f)) {
        ck_assert_msg((h & 0x7f80) == 0x7f80 && (h & 0x7f), "NaN -> %04x", h);
        return;
    }
    double a = fabs((double)f), got = fabs((double)attn__bf16_to_f32(h));
    uint16_t mag = h & 0x7fff;
    ck_assert_uint_eq(h >> 15, signbit(f) ? 1u : 0u);
    if (mag == 0x7f80) { /* infinity: f is past the largest value and half its ulp */
        /* the largest BF16 is (2 - 2^-7) 2^127; half its ulp above it, (2 - 2^-8)
         * 2^127, is a tie that rounds to the even side: infinity */
        ck_assert_msg(a >= 0x1.fep127, "%.9g -> infinity", (double)f);
        return;
    }
    double below = mag ? fabs((double)attn__bf16_to_f32((uint16_t)(mag - 1))) : -1.0;
    double above = fabs((double)attn__bf16_to_f32((uint16_t)(mag + 1)));
    double d = fabs(a - got);
    ck_assert_msg(d <= a - below || below < 0, "%.9g -> %g: %g is nearer", (double)f, got, below);
    ck_assert_msg(d <= above - a, "%.9g -> %g: %g is nearer", (double)f, got, above);
    if (d == a - below || d == above - a) ck_assert_msg((mag & 1) == 0, "%.9g: ties to even", (double)f);
}

#if defined(__x86_64__)
#include <immintrin.h>
__attribute__((target("f16c"))) static uint16_t hw_f32_to_f16(float f) {
    return (uint16_t)_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(f), _MM_FROUND_TO_NEAREST_INT), 0);
}
#endif

START_TEST(round_to_nearest_even) {
    const float special[] = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.99f, 65520.0f, 65536.0f,
                             1e30f, INFINITY, -INFINITY, NAN, 0x1p-14f, 0x1p-24f, 0x1p-25f,
                             0x1.8p-25f, 0x1p-26f, 0x1.ffcp-15f, 0x1.ffep-15f, 1.0009765625f,
                             1.00048828125f, 1.00146484375f, 3.0e38f, 3.4028235e38f, 0x1p-133f,
                             1.00390625f, 1.01171875f, 1.0078125f};
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) {
        check_nearest_f16(special[i]);
        check_nearest_bf16(special[i]);
    }
    uint64_t s = 42;
    int hw = 0;
#if defined(__x86_64__)
    hw = __builtin_cpu_supports("f16c");
#endif
    for (int i = 0; i < 400000; i++) {
        uint32_t u = next_u32(&s);
        /* mostly the exponents F16 covers, then any bits at all */
        if (i % 2 == 0) u = (u & 0x807fffff) | (uint32_t)(100 + (int)(next_u32(&s) % 45)) << 23;
        float f = from_bits(u);
        check_nearest_f16(f);
        check_nearest_bf16(f);
#if defined(__x86_64__)
        if (hw && !isnan(f)) ck_assert_uint_eq(attn__f32_to_f16(f), hw_f32_to_f16(f));
#endif
    }
    printf("rounding: %s\n", hw ? "F16 equal to the CPU's F16C too" : "no F16C here");
}
END_TEST

START_TEST(dtype_convert_and_finite) {
    float x[5] = {1.0f, -2.5f, 3.140625f, 1e-3f, 70000.0f}, y[5];
    uint16_t h[5];
    attn_dtype_convert(ATTN_DTYPE_BF16, h, ATTN_DTYPE_F32, x, 5);
    for (int i = 0; i < 5; i++) ck_assert_uint_eq(h[i], attn__f32_to_bf16(x[i]));
    attn_dtype_convert(ATTN_DTYPE_F32, y, ATTN_DTYPE_BF16, h, 5);
    ck_assert(y[0] == 1.0f && y[1] == -2.5f && y[2] == 3.140625f && y[3] != 1e-3f);
    ck_assert(attn__half_finite(ATTN_DTYPE_BF16, h, 5));
    attn_dtype_convert(ATTN_DTYPE_F16, h, ATTN_DTYPE_F32, x, 5);
    ck_assert(!attn__half_finite(ATTN_DTYPE_F16, h, 5)); /* 70000 is past F16's range */
    ck_assert(attn__half_finite(ATTN_DTYPE_F16, h, 4));
    ck_assert_str_eq(attn_dtype_name(ATTN_DTYPE_BF16), "BF16");
    ck_assert_ptr_null(attn_dtype_name(ATTN_DTYPE_COUNT));
    ck_assert_uint_eq(attn_dtype_size(ATTN_DTYPE_F16), 2);
    ck_assert_uint_eq(attn_dtype_size(ATTN_DTYPE_F32), 4);
}
END_TEST

/* ==== Kernels ============================================================= */

static uint16_t *half_of(attn_dtype t, const float *x, size_t n) {
    uint16_t *h = malloc(n * sizeof *h);
    ck_assert_ptr_nonnull(h);
    attn_dtype_convert(t, h, ATTN_DTYPE_F32, x, n);
    return h;
}

static float *random_floats(uint64_t *s, size_t n) {
    float *x = malloc(n * sizeof *x);
    ck_assert_ptr_nonnull(x);
    for (size_t i = 0; i < n; i++) x[i] = uniform(s);
    return x;
}

/* attn__half_dot on one shape against double sums: the largest error over
 * the sum of |products| (must be under 2e-6), and y itself. */
static double dot_case(attn_dtype t, int rows, int in, int cols, int bias, uint64_t seed, float *y_out) {
    uint64_t s = seed;
    int ldx = in + 3, ldy = cols + 2;
    float *x = random_floats(&s, (size_t)rows * ldx), *wf = random_floats(&s, (size_t)cols * in);
    float *b = bias ? random_floats(&s, (size_t)cols) : NULL;
    uint16_t *w = half_of(t, wf, (size_t)cols * in);
    float *y = calloc((size_t)rows * ldy, sizeof *y);
    attn__half_dot_args a = {.x = x, .ldx = ldx, .rows = rows, .w = w, .in = in, .cols = cols,
                             .bias = b, .y = y, .ldy = ldy};
    attn__half_dot(t, &a);
    double worst = 0.0;
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < cols; j++) {
            double sum = b ? b[j] : 0.0, mag = b ? fabs(b[j]) : 0.0;
            for (int k = 0; k < in; k++) {
                double p = (double)x[(size_t)r * ldx + k] * attn__half_to_f32(t, w[(size_t)j * in + k]);
                sum += p, mag += fabs(p);
            }
            double got = y[(size_t)r * ldy + j];
            worst = fmax(worst, fabs(got - sum) / (mag > 0 ? mag : 1.0));
            if (y_out) y_out[(size_t)r * cols + j] = (float)got;
        }
    free(x), free(wf), free(b), free(w), free(y);
    return worst;
}

static const int DOT_IN[] = {1, 7, 8, 9, 16, 31, 100, 771};
static const int DOT_ROWS[] = {1, 2, 3, 4, 5, 9};
static const int DOT_COLS[] = {1, 3, 4, 5, 17};

/* Every shape on the kernels in use (_i: 0 the CPU's best, 1 portable
 * forced), both dtypes, with and without bias. */
START_TEST(half_dot_shapes) {
    attn__half_force_portable(_i);
    double worst = 0.0;
    int n = 0;
    for (int t = 1; t <= 2; t++)
        for (size_t a = 0; a < sizeof DOT_IN / sizeof DOT_IN[0]; a++)
            for (size_t b = 0; b < sizeof DOT_ROWS / sizeof DOT_ROWS[0]; b++)
                for (size_t c = 0; c < sizeof DOT_COLS / sizeof DOT_COLS[0]; c++, n++) {
                    double e = dot_case((attn_dtype)t, DOT_ROWS[b], DOT_IN[a], DOT_COLS[c], n & 1,
                                        (uint64_t)n, NULL);
                    ck_assert_msg(e <= 2e-6, "%s %s rows %d in %d cols %d: %g", attn__half_kernels(),
                                  attn_dtype_name((attn_dtype)t), DOT_ROWS[b], DOT_IN[a], DOT_COLS[c], e);
                    worst = fmax(worst, e);
                }
    printf("half dot (%s): %d shapes, worst %.2g of the |products|\n", attn__half_kernels(), n, worst);
    attn__half_force_portable(0);
}
END_TEST

/* The AVX2 set and the portable one give the same sums up to rounding. */
START_TEST(sets_agree) {
    /* the AVX2 set runs exactly where the CPU has what it needs */
    int cpu = 0;
#if defined(__x86_64__)
    cpu = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
          __builtin_cpu_supports("f16c");
#endif
    ck_assert_int_eq(attn__half_avx2(), cpu);
    if (!attn__half_avx2()) {
        printf("sets_agree: the CPU has no AVX2+FMA+F16C: the portable set alone runs here\n");
        return;
    }
    int rows = 5, in = 771, cols = 17;
    float *fast = malloc((size_t)rows * cols * sizeof *fast), *slow = malloc((size_t)rows * cols * sizeof *slow);
    for (int t = 1; t <= 2; t++) {
        dot_case((attn_dtype)t, rows, in, cols, 1, 9, fast);
        attn__half_force_portable(1);
        ck_assert_str_eq(attn__half_kernels(), "portable");
        dot_case((attn_dtype)t, rows, in, cols, 1, 9, slow);
        attn__half_force_portable(0);
        ck_assert_str_eq(attn__half_kernels(), "avx2");
        for (int i = 0; i < rows * cols; i++)
            ck_assert_msg(fabsf(fast[i] - slow[i]) <= 1e-5f * (1.0f + fabsf(slow[i])), "%d: %g vs %g", i,
                          (double)fast[i], (double)slow[i]);
    }
    free(fast), free(slow);
}
END_TEST

/* linear.c on half-size weights (widened blocks, then sgemm) equals the
 * float32 product of the widened weights bit for bit; gemv.c's within the
 * bound; both with bias and GELU, on a pool of 2. */
START_TEST(products_against_f32) {
    attn__half_force_portable(_i);
    attn_pool *pool = attn_pool_create(2);
    uint64_t s = 5;
    const int shapes[][3] = {{3, 77, 1029}, {130, 64, 40}, {1, 768, 2304}, {2, 33, 5}, {600, 24, 17}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
        for (int t = 1; t <= 2; t++) {
            int rows = shapes[k][0], in = shapes[k][1], out = shapes[k][2];
            float *x = random_floats(&s, (size_t)rows * in), *wf = random_floats(&s, (size_t)out * in);
            float *b = random_floats(&s, (size_t)out);
            uint16_t *w = half_of((attn_dtype)t, wf, (size_t)out * in);
            attn_dtype_convert(ATTN_DTYPE_F32, wf, (attn_dtype)t, w, (size_t)out * in); /* the same values */
            float *want = malloc((size_t)rows * out * sizeof *want), *got = malloc((size_t)rows * out * sizeof *got);
            float *tile = malloc(2 * attn__linear_scratch(in, out) * sizeof *tile);
            attn__linear_args f = {.y = want, .x = x, .rows = rows, .in = in, .out = out, .w = wf,
                                   .bias = b, .act = ATTN_ACT_GELU_TANH};
            attn__linear_run(pool, &f);
            attn__linear_args h = f;
            h.y = got, h.w = w, h.wtype = (attn_dtype)t, h.scratch = tile;
            attn__linear_run(pool, &h);
            ck_assert_msg(memcmp(got, want, (size_t)rows * out * sizeof *got) == 0,
                          "linear %s %dx%dx%d differs from float32", attn_dtype_name((attn_dtype)t), rows, in, out);
            h.scratch = NULL; /* the few-row kernels instead */
            attn__linear_run(pool, &h);
            for (size_t i = 0; i < (size_t)rows * out; i++)
                ck_assert_msg(fabsf(got[i] - want[i]) <= 2e-6f * (float)in, "linear without scratch [%zu]", i);
            if (rows <= 8) {
                attn__gemv_args g = {.y = got, .x = x, .rows = rows, .in = in, .out = out, .w = w,
                                     .wtype = (attn_dtype)t, .bias = b, .act = ATTN_ACT_GELU_TANH};
                attn__gemv_run(pool, &g);
                for (size_t i = 0; i < (size_t)rows * out; i++)
                    ck_assert_msg(fabsf(got[i] - want[i]) <= 2e-6f * (float)in, "gemv %s %dx%dx%d [%zu]: %g vs %g",
                                  attn_dtype_name((attn_dtype)t), rows, in, out, i, (double)got[i], (double)want[i]);
            }
            free(x), free(wf), free(b), free(w), free(want), free(got), free(tile);
        }
    attn_pool_destroy(pool);
    attn__half_force_portable(0);
}
END_TEST

/* ==== Whole models ======================================================== */

typedef struct {
    attn_lm_config cfg;     /* float32 */
    attn_lm_plan p32, ph;   /* B = 2, T = 9: float32 and half plans */
    float *w32;             /* the half values widened: the float32 copy */
    void *wh;               /* the half-size buffer */
} half_model;

/* Random parameters where no seed builds the model: normal-ish values of
 * about 0.1 (norm weights near 1). */
static void random_params(const attn_lm_plan *p, float *w, uint64_t seed) {
    uint64_t s = seed;
    for (int i = 0; i < p->param_count; i++) {
        attn_param e;
        attn_lm_param_get(p, i, &e);
        float *x = w + e.offset;
        for (size_t k = 0; k < e.count; k++)
            x[k] = e.rank == 1 && strstr(e.name, "norm") ? 1.0f + 0.1f * uniform(&s) : 0.2f * uniform(&s);
        if (e.buffer) attn_param_buffer_fill(&e, x);
    }
}

static void model_make(half_model *m, attn_lm_config cfg, attn_dtype t, uint64_t seed) {
    attn_error err = {0};
    m->cfg = cfg;
    ck_assert_int_eq(attn_lm_plan_make(&cfg, 2, 9, 0, &m->p32, &err), ATTN_OK);
    attn_lm_config hc = cfg;
    hc.weights_dtype = t;
    ck_assert_int_eq(attn_lm_plan_make(&hc, 2, 9, 0, &m->ph, &err), ATTN_OK);
    ck_assert_uint_eq(m->p32.param_bytes, m->p32.n_params * 4);
    ck_assert_uint_eq(m->ph.n_params, m->p32.n_params);
    ck_assert_uint_lt(m->ph.param_bytes, m->p32.param_bytes * 6 / 10);
    float *orig = malloc(m->p32.param_bytes);
    m->w32 = malloc(m->p32.param_bytes);
    m->wh = malloc(m->ph.param_bytes);
    ck_assert(orig && m->w32 && m->wh);
    attn_rng rng;
    attn_rng_seed(&rng, seed);
    if (attn_lm_params_init(&m->p32, orig, &rng, &err) != ATTN_OK) random_params(&m->p32, orig, seed);
    ck_assert_int_eq(attn_lm_params_convert(&m->ph, m->wh, &m->p32, orig, &err), ATTN_OK);
    ck_assert_int_eq(attn_lm_params_convert(&m->p32, m->w32, &m->ph, m->wh, &err), ATTN_OK);
    ck_assert_int_eq(attn_lm_params_check(&m->ph, m->wh, &err), ATTN_OK);
    /* matrices half, vectors float32, at 4-aligned bytes */
    for (int i = 0; i < m->ph.param_count; i++) {
        attn_param e;
        attn_lm_param_get(&m->ph, i, &e);
        ck_assert_int_eq(e.dtype, e.rank == 2 && !e.buffer ? t : ATTN_DTYPE_F32);
        ck_assert_uint_eq(e.byte_offset % 4, 0);
        ck_assert_uint_eq(e.byte_offset, e.offset * attn_dtype_size(e.dtype));
    }
    free(orig);
}

static void model_free(half_model *m) { free(m->w32), free(m->wh); }

static attn_lm_config gpt2_cfg(void) {
    return (attn_lm_config){.arch = ATTN_ARCH_GPT2, .vocab_size = 83, .context = 24, .n_layer = 2,
                            .n_head = 3, .width = 36};
}

static attn_lm_config llama_cfg(void) {
    attn_lm_config c;
    attn_lm_config_json_defaults(ATTN_ARCH_LLAMA, &c);
    c.vocab_size = 97, c.context = 32, c.n_layer = 2, c.n_head = 4, c.n_kv_head = 2, c.width = 40;
    c.ffn = 56, c.tied = 0;
    return c;
}

static attn_lm_config model_cfg(int k) {
    if (k == 0) return gpt2_cfg();
    if (k == 1) {
        attn_lm_config c = gpt2_cfg();
        c.arch = ATTN_ARCH_GPTMODEL, c.qkv_bias = 1;
        return c;
    }
    return llama_cfg();
}

/* The forward pass, hidden states and logit lens of the half model are the
 * float32 copy's bits. Cases: 3 models x 2 dtypes x 2 sets of kernels. */
START_TEST(forward_same_bits) {
    half_model m;
    attn_dtype t = (attn_dtype)(1 + (_i / 3) % 2);
    attn__half_force_portable(_i / 6);
    model_make(&m, model_cfg(_i % 3), t, 11 + (uint64_t)_i);
    attn_pool *pool = attn_pool_create(2);
    const attn_lm_plan *p = &m.p32;
    int32_t idx[18];
    for (int i = 0; i < 18; i++) idx[i] = (int32_t)((i * 37 + 5) % p->V);
    size_t nl = p->n_logits, nh = p->n_hidden;
    float *l32 = malloc(nl * 4), *lh = malloc(nl * 4), *h32 = malloc(nh * 4), *hh = malloc(nh * 4);
    attn_error err = {0};
    attn_lm_outputs o32 = {.logits = l32, .hidden_states = h32}, oh = {.logits = lh, .hidden_states = hh};
    ck_assert_int_eq(attn_lm_forward(&m.p32, m.w32, idx, pool, NULL, &o32, &err), ATTN_OK);
    ck_assert_int_eq(attn_lm_forward(&m.ph, m.wh, idx, pool, NULL, &oh, &err), ATTN_OK);
    ck_assert_msg(memcmp(l32, lh, nl * 4) == 0, "%s logits differ", attn_dtype_name(t));
    ck_assert_msg(memcmp(h32, hh, nh * 4) == 0, "%s hidden states differ", attn_dtype_name(t));
    /* the lens on the embeddings' rows */
    float *a = malloc(18 * (size_t)p->V * 4), *b = malloc(18 * (size_t)p->V * 4);
    ck_assert_int_eq(attn_lm_logit_lens(&m.p32, m.w32, h32, 18, pool, a, &err), ATTN_OK);
    ck_assert_int_eq(attn_lm_logit_lens(&m.ph, m.wh, h32, 18, pool, b, &err), ATTN_OK);
    ck_assert(memcmp(a, b, 18 * (size_t)p->V * 4) == 0);
    free(l32), free(lh), free(h32), free(hh), free(a), free(b);
    attn_pool_destroy(pool);
    model_free(&m);
}
END_TEST

static double rel_diff(const float *got, const float *want, int n) {
    double scale = 0.0, worst = 0.0;
    for (int i = 0; i < n; i++) scale = fmax(scale, fabs(want[i]));
    for (int i = 0; i < n; i++) worst = fmax(worst, fabs((double)got[i] - want[i]) / scale);
    return worst;
}

/* A prefill of 9 tokens and 6 decode steps of two sequences: the half
 * model's logits within 1e-5 of the float32 copy's. */
START_TEST(decode_close) {
    half_model m;
    attn_dtype t = (attn_dtype)(1 + (_i / 3) % 2);
    attn__half_force_portable(_i / 6);
    model_make(&m, model_cfg(_i % 3), t, 23 + (uint64_t)_i);
    attn_pool *pool = attn_pool_create(2);
    const attn_lm_plan *p = &m.p32;
    attn_error err = {0};
    attn_lm_cache *c32, *ch;
    attn_lm_config hc = m.cfg;
    hc.weights_dtype = t;
    ck_assert_int_eq(attn_lm_cache_create(&m.cfg, 2, 16, &c32, &err), ATTN_OK);
    ck_assert_int_eq(attn_lm_cache_create(&hc, 2, 16, &ch, &err), ATTN_OK);
    int32_t idx[18], tok[2];
    for (int i = 0; i < 18; i++) idx[i] = (int32_t)((i * 13 + 1) % p->V);
    float *l32 = malloc(p->n_logits * 4), *lh = malloc(p->n_logits * 4);
    attn_lm_outputs o32 = {.logits = l32}, oh = {.logits = lh};
    ck_assert_int_eq(attn_lm_prefill(&m.p32, m.w32, idx, c32, pool, &o32, &err), ATTN_OK);
    ck_assert_int_eq(attn_lm_prefill(&m.ph, m.wh, idx, ch, pool, &oh, &err), ATTN_OK);
    ck_assert(memcmp(l32, lh, p->n_logits * 4) == 0); /* a prefill is dense: the same bits */
    double worst = 0.0;
    for (int step = 0; step < 6; step++) {
        tok[0] = (int32_t)((step * 7 + 3) % p->V), tok[1] = (int32_t)((step * 11 + 2) % p->V);
        attn_lm_step_outputs s32 = {.logits = l32}, sh = {.logits = lh};
        ck_assert_int_eq(attn_lm_decode(c32, m.w32, tok, pool, &s32, &err), ATTN_OK);
        ck_assert_int_eq(attn_lm_decode(ch, m.wh, tok, pool, &sh, &err), ATTN_OK);
        for (int b = 0; b < 2; b++) {
            double d = rel_diff(lh + (size_t)b * p->V, l32 + (size_t)b * p->V, p->V);
            ck_assert_msg(d <= 1e-5, "%s %s step %d row %d: %g", attn__half_kernels(), attn_dtype_name(t),
                          step, b, d);
            worst = fmax(worst, d);
        }
    }
    printf("decode %s %s (%s kernels): worst %.2g of the largest logit\n", attn_arch_name(m.cfg.arch),
           attn_dtype_name(t), attn__half_kernels(), worst);
    attn_lm_cache_free(c32), attn_lm_cache_free(ch);
    free(l32), free(lh);
    attn_pool_destroy(pool);
    model_free(&m);
}
END_TEST

/* What the half layout refuses: a seed's construction, a NaN, a
 * conversion between two models, an unknown dtype. */
START_TEST(refusals) {
    half_model m;
    model_make(&m, gpt2_cfg(), ATTN_DTYPE_BF16, 3);
    attn_error err = {0};
    attn_rng rng;
    attn_rng_seed(&rng, 1);
    float *x = malloc(m.p32.param_bytes);
    ck_assert_int_eq(attn_lm_params_init(&m.ph, x, &rng, &err), ATTN_ERR_ARG);
    ck_assert_str_eq(err.field, "weights_dtype");
    attn_param e;
    attn_lm_param_get(&m.ph, 0, &e); /* wte.weight, BF16 */
    uint16_t *w = (uint16_t *)((char *)m.wh + e.byte_offset);
    w[5] = 0x7fc0; /* NaN */
    ck_assert_int_eq(attn_lm_params_check(&m.ph, m.wh, &err), ATTN_ERR_NONFINITE);
    ck_assert_str_eq(err.field, "state_dict.wte.weight");
    attn_lm_config other = gpt2_cfg();
    other.n_layer = 3;
    attn_lm_plan po;
    ck_assert_int_eq(attn_lm_plan_make(&other, 2, 9, 0, &po, &err), ATTN_OK);
    ck_assert_int_eq(attn_lm_params_convert(&po, x, &m.ph, m.wh, &err), ATTN_ERR_ARG);
    ck_assert_str_eq(err.field, "weights_dtype");
    other = gpt2_cfg();
    other.weights_dtype = (attn_dtype)7;
    ck_assert_int_eq(attn_lm_plan_make(&other, 1, 1, 0, &po, &err), ATTN_ERR_ARG);
    ck_assert_str_eq(err.field, "weights_dtype");
    free(x);
    model_free(&m);
}
END_TEST

static Suite *suite(void) {
    openblas_set_num_threads(1);
    Suite *s = suite_create("core_half");
    const TTest *tests[] = {widen_every_value, round_to_nearest_even, dtype_convert_and_finite,
                            sets_agree, refusals, NULL};
    TCase *tc = tcase_with(s, "half", 60, tests);
    tcase_add_loop_test(tc, widen_rows_every_value, 0, 2);
    tcase_add_loop_test(tc, half_dot_shapes, 0, 2);
    tcase_add_loop_test(tc, products_against_f32, 0, 2);
    tcase_add_loop_test(tc, forward_same_bits, 0, 12);
    tcase_add_loop_test(tc, decode_close, 0, 12);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {suite}};
