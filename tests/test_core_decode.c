/* test_core_decode.c - incremental decoding with the key/value cache
 * (attn_lm_cache_*, attn_lm_prefill, attn_lm_decode) against whole
 * forward passes over the same text (attn_lm_forward, itself checked
 * against PyTorch by test_core_gpt2), for both model families.
 *
 * Each step's logits must equal the whole forward's last-position logits
 * within 1e-5 relative to the row's largest logit (|got - want| <= 1e-5 *
 * max |want|: the products are split differently, so float rounding
 * differs, never more), and the step's attention rows the last row of the
 * forward's maps within 1e-5. Configs are drawn at random (seeded), with
 * both families, with and without qkv_bias, B up to 3, several steps each;
 * and many sequences of different lengths in one cache, their rows in one
 * step, each against a forward over its own text.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/lm.h"
#include "tests/support/check_main.h"

#include <cblas.h> /* openblas_set_num_threads */

#define REL 1e-5

/* A small deterministic generator for the test's choices. */
static uint32_t next_u32(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(*s >> 33);
}

static int pick(uint64_t *s, int lo, int hi) { return lo + (int)(next_u32(s) % (uint32_t)(hi - lo + 1)); }

typedef struct {
    attn_lm_config cfg;
    int B, T0, steps;
    float *params;
} model_case;

static void case_make(int i, model_case *m) {
    uint64_t s = 1000 + (uint64_t)i;
    int H = pick(&s, 1, 4);
    m->cfg = (attn_lm_config){.vocab_size = pick(&s, 5, 90), .n_layer = pick(&s, 1, 3),
                                .n_head = H, .width = H * pick(&s, 2, 12), .dropout = 0.1,
                                .arch = (attn_arch)(i & 1), .qkv_bias = (i >> 1) & 1,
                                .act = (attn_act)((i >> 2) & 1)};
    m->B = pick(&s, 1, 3);
    m->T0 = pick(&s, 1, 6);
    m->steps = pick(&s, 3, 7);
    m->cfg.context = m->T0 + m->steps + pick(&s, 0, 3);
    attn_lm_plan plan;
    attn_error err = {0};
    ck_assert_int_eq(attn_lm_plan_make(&m->cfg, 1, 1, 0, &plan, &err), ATTN_OK);
    m->params = malloc(plan.n_params * sizeof(float));
    ck_assert_ptr_nonnull(m->params);
    attn_rng rng;
    attn_rng_seed(&rng, 77 + (uint64_t)i);
    ck_assert_int_eq(attn_lm_params_init(&plan, m->params, &rng, &err), ATTN_OK);
}

/* |got - want| <= REL * max |want| over n values; 0 if not. */
static int close_rows(const float *got, const float *want, int n, double *worst) {
    double scale = 0.0;
    for (int i = 0; i < n; i++) scale = fmax(scale, fabs(want[i]));
    for (int i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]);
        *worst = fmax(*worst, scale > 0 ? d / scale : d);
        if (d > REL * scale) return 0;
    }
    return 1;
}

/* The whole forward over idx [B][T]: last-position logits [B][V] and every map. */
static void full_forward(const model_case *m, const int32_t *idx, int T, float *last, float *maps) {
    attn_lm_plan plan;
    attn_error err = {0};
    ck_assert_int_eq(attn_lm_plan_make(&m->cfg, m->B, T, 0, &plan, &err), ATTN_OK);
    attn_lm_outputs out = {.logits = last, .last_only = 1, .attn_weights = maps};
    ck_assert_int_eq(attn_lm_forward(&plan, m->params, idx, NULL, NULL, &out, &err), ATTN_OK);
}

/* idx [B][cap] row-major with row length `cap`; the text of length T is
 * copied to a dense [B][T] for the forward. */
static void dense(int32_t *dst, const int32_t *idx, int B, int cap, int T) {
    for (int b = 0; b < B; b++) memcpy(dst + (size_t)b * T, idx + (size_t)b * cap, (size_t)T * 4);
}

/* Prefill, then steps; each step against a whole forward. */
START_TEST(cached_equals_full) {
    model_case m;
    case_make(_i, &m);
    int B = m.B, V = m.cfg.vocab_size, L = m.cfg.n_layer, H = m.cfg.n_head;
    int cap = m.T0 + m.steps, width = _i % 3 == 2 ? 2 : 1;
    attn_pool *pool = width > 1 ? attn_pool_create(width) : NULL;
    attn_lm_cache *c;
    attn_error err = {0};
    ck_assert_int_eq(attn_lm_cache_create(&m.cfg, B, cap, &c, &err), ATTN_OK);
    int32_t *idx = malloc((size_t)B * cap * 4), *text = malloc((size_t)B * cap * 4);
    float *logits = malloc((size_t)B * V * 4), *want = malloc((size_t)B * V * 4);
    float *rows = malloc((size_t)L * B * H * cap * 4);
    float *maps = malloc((size_t)L * B * H * cap * cap * 4);
    ck_assert(idx && text && logits && want && rows && maps);
    uint64_t s = 5 + (uint64_t)_i;
    for (int i = 0; i < B * cap; i++) idx[i] = pick(&s, 0, V - 1);
    attn_lm_plan plan;
    ck_assert_int_eq(attn_lm_plan_make(&m.cfg, B, m.T0, 0, &plan, &err), ATTN_OK);
    dense(text, idx, B, cap, m.T0);
    attn_lm_outputs pre = {.logits = logits, .last_only = 1};
    ck_assert_int_eq(attn_lm_prefill(&plan, m.params, text, c, pool, &pre, &err), ATTN_OK);
    ck_assert_int_eq(attn_lm_cache_length(c, 0), m.T0);
    double worst = 0.0, worst_rows = 0.0;
    for (int t = m.T0; t <= cap; t++) {
        dense(text, idx, B, cap, t);
        full_forward(&m, text, t, want, maps);
        for (int b = 0; b < B; b++)
            ck_assert_msg(close_rows(logits + (size_t)b * V, want + (size_t)b * V, V, &worst),
                          "case %d, %d tokens, row %d: %g relative", _i, t, b, worst);
        /* each head's last map row against the step's attention rows */
        for (int k = 0; k < L * B * H && t > m.T0; k++) {
            const float *mrow = maps + ((size_t)k * t + (size_t)(t - 1)) * t;
            for (int j = 0; j < t; j++)
                worst_rows = fmax(worst_rows, fabs(rows[(size_t)k * t + j] - mrow[j]));
        }
        ck_assert_msg(worst_rows <= 1e-5, "case %d: attention rows off by %g", _i, worst_rows);
        if (t == cap) break;
        int32_t next[3];
        for (int b = 0; b < B; b++) next[b] = idx[(size_t)b * cap + t];
        attn_lm_step_outputs so = {.logits = logits, .attn_rows = rows};
        ck_assert_int_eq(attn_lm_decode(c, m.params, next, pool, &so, &err), ATTN_OK);
        ck_assert_int_eq(attn_lm_cache_length(c, 0), t + 1);
    }
    printf("decode case %d (%s, qkv_bias %d, B %d, %d layers, %d heads, C %d, %d + %d tokens, "
           "pool %d): logits %.2g relative, rows %.2g\n", _i, m.cfg.arch ? "GPTModel" : "GPT2",
           m.cfg.qkv_bias, B, L, H, m.cfg.width, m.T0, m.steps, width, worst, worst_rows);
    attn_lm_cache_free(c);
    attn_pool_destroy(pool);
    free(idx), free(text), free(logits), free(want), free(rows), free(maps), free(m.params);
}
END_TEST

/* The pool changes no bit of a step. */
START_TEST(same_bits_any_pool) {
    attn_lm_config cfg = {.vocab_size = 3000, .context = 64, .n_layer = 2, .n_head = 4,
                            .width = 128, .arch = (attn_arch)_i, .qkv_bias = 1};
    attn_lm_plan plan;
    attn_error err = {0};
    int B = 2, T = 20;
    ck_assert_int_eq(attn_lm_plan_make(&cfg, B, T, 0, &plan, &err), ATTN_OK);
    float *params = malloc(plan.n_params * 4), *got[2];
    ck_assert_ptr_nonnull(params);
    attn_rng rng;
    attn_rng_seed(&rng, 3);
    ck_assert_int_eq(attn_lm_params_init(&plan, params, &rng, &err), ATTN_OK);
    int32_t idx[40], next[2] = {7, 2999};
    for (int i = 0; i < B * T; i++) idx[i] = (int32_t)(i * 131 % 3000);
    size_t n = (size_t)B * 3000 + (size_t)2 * B * 4 * (T + 1);
    for (int w = 0; w < 2; w++) {
        attn_pool *pool = w ? attn_pool_create(2) : NULL;
        attn_lm_cache *c;
        ck_assert_int_eq(attn_lm_cache_create(&cfg, B, 32, &c, &err), ATTN_OK);
        got[w] = malloc(n * 4);
        ck_assert_ptr_nonnull(got[w]);
        ck_assert_int_eq(attn_lm_prefill(&plan, params, idx, c, pool, NULL, &err), ATTN_OK);
        attn_lm_step_outputs so = {.logits = got[w], .attn_rows = got[w] + (size_t)B * 3000};
        ck_assert_int_eq(attn_lm_decode(c, params, next, pool, &so, &err), ATTN_OK);
        attn_lm_cache_free(c);
        attn_pool_destroy(pool);
    }
    ck_assert(memcmp(got[0], got[1], n * 4) == 0);
    free(got[0]), free(got[1]), free(params);
}
END_TEST

/* The book's generation past its context: once the text is longer than
 * context_length, the window idx[:, -context_size:] shifts each step. With
 * the cache: decode until it is full, then reset and prefill the last
 * context_length tokens each step. Greedy tokens and logits as the book's
 * loop (a whole forward over the window each step). */
START_TEST(context_cropping) {
    attn_lm_config cfg = {.vocab_size = 40, .context = 8, .n_layer = 2, .n_head = 2,
                            .width = 16, .arch = ATTN_ARCH_GPTMODEL};
    attn_lm_plan plan;
    attn_error err = {0};
    ck_assert_int_eq(attn_lm_plan_make(&cfg, 1, 1, 0, &plan, &err), ATTN_OK);
    float *params = malloc(plan.n_params * 4), logits[40], want[40];
    ck_assert_ptr_nonnull(params);
    attn_rng rng;
    attn_rng_seed(&rng, 123);
    ck_assert_int_eq(attn_lm_params_init(&plan, params, &rng, &err), ATTN_OK);
    model_case m = {.cfg = cfg, .B = 1, .params = params};
    int32_t text[32] = {1, 5, 9, 3, 2}, book[32] = {1, 5, 9, 3, 2};
    int n = 5, ctx = 8;
    attn_lm_cache *c;
    ck_assert_int_eq(attn_lm_cache_create(&cfg, 1, ctx, &c, &err), ATTN_OK);
    ck_assert_int_eq(attn_lm_plan_make(&cfg, 1, n, 0, &plan, &err), ATTN_OK);
    attn_lm_outputs out = {.logits = logits, .last_only = 1};
    ck_assert_int_eq(attn_lm_prefill(&plan, params, text, c, NULL, &out, &err), ATTN_OK);
    for (; n < 20; n++) {
        int w = n < ctx ? n : ctx; /* the book: idx[:, -ctx:], a whole forward */
        full_forward(&m, book + (n - w), w, want, NULL);
        double worst = 0;
        ck_assert_msg(close_rows(logits, want, 40, &worst), "%d tokens: %g", n, worst);
        int32_t next = 0;
        for (int v = 1; v < 40; v++)
            if (want[v] > want[next]) next = v;
        book[n] = text[n] = next;
        if (attn_lm_cache_length(c, 0) < ctx) {
            attn_lm_step_outputs so = {.logits = logits};
            ck_assert_int_eq(attn_lm_decode(c, params, &next, NULL, &so, &err), ATTN_OK);
            continue;
        }
        attn_lm_step_outputs so = {.logits = logits};
        ck_assert_int_eq(attn_lm_decode(c, params, &next, NULL, &so, &err), ATTN_ERR_SHAPE);
        ck_assert_str_eq(err.field, "cache");
        ck_assert_int_eq(attn_lm_plan_make(&cfg, 1, ctx, 0, &plan, &err), ATTN_OK);
        ck_assert_int_eq(attn_lm_prefill(&plan, params, text + n + 1 - ctx, c, NULL, &out, &err),
                         ATTN_OK);
    }
    attn_lm_cache_free(c);
    free(params);
}
END_TEST

/* A step from an empty cache is a one-token forward. */
START_TEST(from_empty_cache) {
    model_case m;
    case_make(5, &m);
    attn_lm_cache *c;
    attn_error err = {0};
    ck_assert_int_eq(attn_lm_cache_create(&m.cfg, m.B, 2, &c, &err), ATTN_OK);
    int32_t tok[3] = {1, 2, 3};
    float *got = malloc((size_t)m.B * m.cfg.vocab_size * 4);
    float *want = malloc((size_t)m.B * m.cfg.vocab_size * 4);
    ck_assert(got && want);
    attn_lm_step_outputs so = {.logits = got};
    ck_assert_int_eq(attn_lm_decode(c, m.params, tok, NULL, &so, &err), ATTN_OK);
    full_forward(&m, tok, 1, want, NULL);
    double worst = 0;
    for (int b = 0; b < m.B; b++)
        ck_assert(close_rows(got + (size_t)b * m.cfg.vocab_size,
                             want + (size_t)b * m.cfg.vocab_size, m.cfg.vocab_size, &worst));
    attn_lm_cache_free(c);
    free(got), free(want), free(m.params);
}
END_TEST

START_TEST(errors_and_sizes) {
    attn_lm_config cfg = {.vocab_size = 10, .context = 6, .n_layer = 2, .n_head = 2,
                            .width = 8, .dropout = 0.1};
    attn_error err = {0};
    size_t bytes, bytes2;
    ck_assert_int_eq(attn_lm_cache_bytes(&cfg, 2, 6, &bytes, &err), ATTN_OK);
    /* keys and values: 2 * n_layer * B * capacity * C floats at least */
    ck_assert_uint_ge(bytes, (size_t)2 * 2 * 2 * 6 * 8 * 4);
    ck_assert_int_eq(attn_lm_cache_bytes(&cfg, 2, 3, &bytes2, &err), ATTN_OK);
    ck_assert_uint_lt(bytes2, bytes);
    ck_assert_int_eq(attn_lm_cache_bytes(&cfg, 2, 7, &bytes, &err), ATTN_ERR_SHAPE);
    ck_assert_str_eq(err.field, "capacity");
    ck_assert_int_eq(attn_lm_cache_bytes(&cfg, 2, 0, &bytes, &err), ATTN_ERR_SHAPE);
    ck_assert_int_eq(attn_lm_cache_bytes(&cfg, 0, 3, &bytes, &err), ATTN_ERR_ARG);
    ck_assert_str_eq(err.field, "batch");
    attn_lm_config huge = {.vocab_size = 10, .context = 1 << 30, .n_layer = 1 << 10,
                             .n_head = 1, .width = 1 << 10};
    ck_assert_int_eq(attn_lm_cache_bytes(&huge, 1 << 10, 1 << 30, &bytes, &err), ATTN_ERR_RANGE);
    attn_lm_cache *c = (attn_lm_cache *)&err;
    ck_assert_int_eq(attn_lm_cache_create(&cfg, 2, 7, &c, &err), ATTN_ERR_SHAPE);
    ck_assert_ptr_null(c);
    ck_assert_int_eq(attn_lm_cache_create(&cfg, 2, 3, &c, &err), ATTN_OK);
    ck_assert_int_eq(attn_lm_cache_capacity(c), 3);
    attn_lm_plan plan;
    ck_assert_int_eq(attn_lm_plan_make(&cfg, 2, 2, 0, &plan, &err), ATTN_OK);
    float *params = malloc(plan.n_params * 4), logits[20];
    ck_assert_ptr_nonnull(params);
    attn_rng rng;
    attn_rng_seed(&rng, 1);
    ck_assert_int_eq(attn_lm_params_init(&plan, params, &rng, &err), ATTN_OK);
    int32_t idx[8] = {1, 2, 3, 4, 5, 6, 7, 8}, bad[2] = {1, 10};
    attn_lm_plan other;
    ck_assert_int_eq(attn_lm_plan_make(&cfg, 2, 2, 1, &other, &err), ATTN_OK); /* training */
    ck_assert_int_eq(attn_lm_prefill(&other, params, idx, c, NULL, NULL, &err), ATTN_ERR_ARG);
    ck_assert_str_eq(err.field, "training");
    ck_assert_int_eq(attn_lm_plan_make(&cfg, 3, 2, 0, &other, &err), ATTN_OK); /* 3 sequences */
    ck_assert_int_eq(attn_lm_prefill(&other, params, idx, c, NULL, NULL, &err), ATTN_ERR_SHAPE);
    ck_assert_str_eq(err.field, "cache");
    ck_assert_int_eq(attn_lm_plan_make(&cfg, 2, 4, 0, &other, &err), ATTN_OK); /* T > capacity */
    ck_assert_int_eq(attn_lm_prefill(&other, params, idx, c, NULL, NULL, &err), ATTN_ERR_SHAPE);
    ck_assert_str_eq(err.field, "cache");
    attn_lm_config book = cfg;
    book.arch = ATTN_ARCH_GPTMODEL;
    ck_assert_int_eq(attn_lm_plan_make(&book, 2, 2, 0, &other, &err), ATTN_OK);
    ck_assert_int_eq(attn_lm_prefill(&other, params, idx, c, NULL, NULL, &err), ATTN_ERR_ARG);
    ck_assert_int_eq(attn_lm_prefill(&plan, params, idx, c, NULL, NULL, &err), ATTN_OK);
    attn_lm_step_outputs so = {.logits = logits};
    ck_assert_int_eq(attn_lm_decode(c, params, bad, NULL, &so, &err), ATTN_ERR_ARG);
    ck_assert_str_eq(err.field, "tokens");
    ck_assert_int_eq(attn_lm_decode(c, params, idx, NULL, &so, &err), ATTN_OK);
    ck_assert_int_eq(attn_lm_decode(c, params, idx, NULL, &so, &err), ATTN_ERR_SHAPE);
    ck_assert_str_eq(err.field, "cache");
    ck_assert_int_eq(attn_lm_cache_length(c, 0), 3);
    /* truncate: back to 1 position, then the step again gives the same logits */
    float again[20];
    ck_assert_int_eq(attn_lm_cache_truncate(c, 0, 4, &err), ATTN_ERR_ARG);
    ck_assert_str_eq(err.field, "length");
    ck_assert_int_eq(attn_lm_cache_truncate(c, 2, 1, &err), ATTN_ERR_ARG);
    ck_assert_str_eq(err.field, "seq");
    ck_assert_int_eq(attn_lm_cache_truncate(c, 0, 2, &err), ATTN_OK);
    ck_assert_int_eq(attn_lm_cache_length(c, 0), 2);
    ck_assert_int_eq(attn_lm_cache_length(c, 1), 3); /* each sequence its own length */
    ck_assert_int_eq(attn_lm_cache_truncate(c, 1, 2, &err), ATTN_OK);
    attn_lm_step_outputs so2 = {.logits = again};
    ck_assert_int_eq(attn_lm_decode(c, params, idx, NULL, &so2, &err), ATTN_OK);
    ck_assert(memcmp(again, logits, sizeof again) == 0);
    /* a result beyond float32 is an error and the cache keeps its length */
    attn_lm_cache_reset(c, -1);
    ck_assert_int_eq(attn_lm_cache_length(c, 0), 0);
    for (int i = 0; i < 8; i++) params[plan.n_params - 2 * 8 + i] = 1e38f; /* ln_f.weight */
    for (size_t i = 0; i < 80; i++) params[i] *= 1e30f;                       /* wte */
    ck_assert_int_eq(attn_lm_decode(c, params, idx, NULL, &so, &err), ATTN_ERR_NONFINITE);
    ck_assert_int_eq(attn_lm_cache_length(c, 0), 0);
    ck_assert_int_eq(attn_lm_decode(NULL, params, idx, NULL, &so, &err), ATTN_ERR_ARG);
    attn_lm_cache_free(c);
    attn_lm_cache_free(NULL);
    free(params);
}
END_TEST

/* Many sequences in one cache, each its own length: prompts taken in chunks
 * by steps of several rows of one sequence, then steps whose rows are one
 * token of each sequence in any order (with a sequence's two tokens in one
 * step too); every row's logits and attention rows against a whole forward
 * over that sequence's text alone (the case's model, B 1). */
START_TEST(many_sequences) {
    model_case m;
    case_make(_i, &m);
    free(m.params); /* the same model with room for every sequence's text */
    m.cfg.context = 12;
    attn_lm_plan mp;
    attn_rng rng;
    ck_assert_int_eq(attn_lm_plan_make(&m.cfg, 1, 1, 0, &mp, NULL), ATTN_OK);
    ck_assert_ptr_nonnull(m.params = malloc(mp.n_params * sizeof(float)));
    attn_rng_seed(&rng, 7);
    ck_assert_int_eq(attn_lm_params_init(&mp, m.params, &rng, NULL), ATTN_OK);
    enum { S = 3 };
    int V = m.cfg.vocab_size, L = m.cfg.n_layer, H = m.cfg.n_head, cap = m.cfg.context;
    int len[S] = {1 + _i % 3, 3, 2}; /* prompts of different lengths */
    attn_pool *pool = _i & 1 ? attn_pool_create(2) : NULL;
    attn_lm_cache *c;
    attn_error err = {0};
    ck_assert_int_eq(attn_lm_cache_create(&m.cfg, S, cap, &c, &err), ATTN_OK);
    int32_t text[S][32];
    uint64_t seed = 91 + (uint64_t)_i;
    for (int q = 0; q < S; q++)
        for (int t = 0; t < cap && t < 32; t++) text[q][t] = pick(&seed, 0, V - 1);
    /* the prompts: sequence q in chunks of two rows (chunked prefill) */
    for (int q = 0; q < S; q++)
        for (int t = 0; t < len[q]; t += 2) {
            attn_lm_row rows[2] = {{q, text[q][t], -1}, {q, t + 1 < len[q] ? text[q][t + 1] : 0, -1}};
            int n = t + 1 < len[q] ? 2 : 1;
            ck_assert_int_eq(attn_lm_step(c, m.params, rows, n, pool, NULL, &err), ATTN_OK);
        }
    for (int q = 0; q < S; q++) ck_assert_int_eq(attn_lm_cache_length(c, q), len[q]);
    float *logits = malloc((size_t)4 * V * 4), *want = malloc((size_t)V * 4);
    float *rows_out = malloc((size_t)L * 4 * H * cap * 4), *maps = malloc((size_t)L * H * cap * cap * 4);
    ck_assert(logits && want && rows_out && maps);
    double worst = 0.0, worst_rows = 0.0;
    for (int round = 0; round < 2; round++) {
        /* round 0: one token each, sequences in the order 2, 0, 1; round 1:
         * sequence 1's next two tokens and sequence 0's next one */
        int seqs[4] = {2, 0, 1, -1}, n = 3;
        if (round == 1) seqs[0] = 1, seqs[1] = 1, seqs[2] = 0, n = 3;
        attn_lm_row rows[4];
        int at[S] = {len[0], len[1], len[2]};
        for (int i = 0; i < n; i++) rows[i] = (attn_lm_row){seqs[i], text[seqs[i]][at[seqs[i]]++], -1};
        attn_lm_step_outputs so = {.logits = logits, .attn_rows = rows_out};
        ck_assert_int_eq(attn_lm_step(c, m.params, rows, n, pool, &so, &err), ATTN_OK);
        int placed[S] = {len[0], len[1], len[2]};
        for (int i = 0; i < n; i++) {
            int q = seqs[i], t = ++placed[q]; /* the sequence's text up to this row */
            attn_lm_config one = m.cfg;
            attn_lm_plan plan;
            ck_assert_int_eq(attn_lm_plan_make(&one, 1, t, 0, &plan, &err), ATTN_OK);
            attn_lm_outputs out = {.logits = want, .last_only = 1, .attn_weights = maps};
            ck_assert_int_eq(attn_lm_forward(&plan, m.params, text[q], NULL, NULL, &out, &err), ATTN_OK);
            ck_assert_msg(close_rows(logits + (size_t)i * V, want, V, &worst),
                          "case %d round %d row %d (sequence %d, %d tokens): %g", _i, round, i, q, t, worst);
            for (int l = 0; l < L; l++)
                for (int h = 0; h < H; h++) {
                    const float *got = rows_out + (((size_t)l * n + i) * H + h) * so.ld;
                    const float *mrow = maps + (((size_t)l * H + h) * t + (t - 1)) * t;
                    for (int j = 0; j < so.ld; j++)
                        worst_rows = fmax(worst_rows, fabs(got[j] - (j < t ? mrow[j] : 0.0f)));
                }
        }
        for (int q = 0; q < S; q++) len[q] = placed[q];
        ck_assert_msg(worst_rows <= 1e-5, "case %d: attention rows off by %g", _i, worst_rows);
    }
    for (int q = 0; q < S; q++) ck_assert_int_eq(attn_lm_cache_length(c, q), len[q]);
    /* a row past its sequence's capacity, an unknown sequence, a late position */
    attn_lm_row bad = {S, text[0][0], -1};
    ck_assert_int_eq(attn_lm_step(c, m.params, &bad, 1, pool, NULL, &err), ATTN_ERR_ARG);
    ck_assert_str_eq(err.field, "rows");
    bad = (attn_lm_row){0, text[0][0], cap};
    ck_assert_int_eq(attn_lm_step(c, m.params, &bad, 1, pool, NULL, &err), ATTN_ERR_ARG);
    ck_assert_str_eq(err.field, "rows");
    printf("many sequences case %d: logits %.2g relative, rows %.2g\n", _i, worst, worst_rows);
    attn_lm_cache_free(c);
    attn_pool_destroy(pool);
    free(logits), free(want), free(rows_out), free(maps), free(m.params);
}
END_TEST

/* Prompts of texts[q] into two caches alike: a (2 sequences) and b (1),
 * each made twice: alone[] for steps of one cache, together[] for
 * attn_lm_step_caches. */
static void two_caches(const model_case *m, attn_lm_cache **alone, attn_lm_cache **together,
                       int32_t text[3][32], int len) {
    const int seqs[2] = {2, 1}, cap[2] = {12, 9};
    attn_error err = {0};
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(attn_lm_cache_create(&m->cfg, seqs[k], cap[k], &alone[k], &err), ATTN_OK);
        ck_assert_int_eq(attn_lm_cache_create(&m->cfg, seqs[k], cap[k], &together[k], &err), ATTN_OK);
        for (int s = 0; s < seqs[k]; s++)
            for (int t = 0; t < len; t++) {
                attn_lm_row row = {s, text[k * 2 + s][t], -1};
                ck_assert_int_eq(attn_lm_step(alone[k], m->params, &row, 1, NULL, NULL, &err), ATTN_OK);
                ck_assert_int_eq(attn_lm_step(together[k], m->params, &row, 1, NULL, NULL, &err), ATTN_OK);
            }
    }
}

/* Rows of two generations' caches in one step: each row's logits are
 * those of its cache's own step, the same bits with 3 rows (one product
 * per row either way), within float32 rounding with 5 (a matrix product
 * groups the sums otherwise). */
START_TEST(step_over_caches) {
    model_case m;
    case_make(_i, &m);
    free(m.params);
    m.cfg.context = 12;
    attn_lm_plan mp;
    attn_rng rng;
    ck_assert_int_eq(attn_lm_plan_make(&m.cfg, 1, 1, 0, &mp, NULL), ATTN_OK);
    ck_assert_ptr_nonnull(m.params = malloc(mp.n_params * sizeof(float)));
    attn_rng_seed(&rng, 11);
    ck_assert_int_eq(attn_lm_params_init(&mp, m.params, &rng, NULL), ATTN_OK);
    int V = m.cfg.vocab_size;
    int32_t text[3][32];
    uint64_t seed = 5 + (uint64_t)_i;
    for (int q = 0; q < 3; q++)
        for (int t = 0; t < 32; t++) text[q][t] = pick(&seed, 0, V - 1);
    attn_lm_cache *alone[2], *together[2];
    two_caches(&m, alone, together, text, 3);
    float *got = malloc((size_t)5 * V * 4), *want = malloc((size_t)2 * V * 4);
    ck_assert(got && want);
    attn_error err = {0};
    double worst = 0.0;
    for (int round = 0; round < 2; round++) {
        /* round 0: one row each (3 rows); round 1: two rows each for
         * cache a's sequences, one for b's (5 rows) */
        int per = round + 1, n = 0, at = 3 + round;
        attn_lm_row rows[5], ra[4];
        for (int s = 0; s < 2; s++)
            for (int k = 0; k < per; k++) ra[n] = rows[n] = (attn_lm_row){s, text[s][at + k], -1}, n++;
        rows[n++] = (attn_lm_row){2, text[2][at], -1}; /* cache b's sequence 0 */
        attn_lm_step_outputs so = {.logits = got};
        ck_assert_int_eq(attn_lm_step_caches(together, 2, m.params, rows, n, NULL, &so, &err), ATTN_OK);
        float *wa = malloc((size_t)(n - 1) * V * 4);
        ck_assert_ptr_nonnull(wa);
        attn_lm_step_outputs sa = {.logits = wa}, sb = {.logits = want};
        attn_lm_row rb = {0, text[2][at], -1};
        ck_assert_int_eq(attn_lm_step(alone[0], m.params, ra, n - 1, NULL, &sa, &err), ATTN_OK);
        ck_assert_int_eq(attn_lm_step(alone[1], m.params, &rb, 1, NULL, &sb, &err), ATTN_OK);
        if (round == 0) {
            ck_assert_mem_eq(got, wa, (size_t)(n - 1) * V * 4);
            ck_assert_mem_eq(got + (size_t)(n - 1) * V, want, (size_t)V * 4);
        } else {
            for (int i = 0; i < n - 1; i++)
                ck_assert_msg(close_rows(got + (size_t)i * V, wa + (size_t)i * V, V, &worst), "row %d: %g", i, worst);
            ck_assert_msg(close_rows(got + (size_t)(n - 1) * V, want, V, &worst), "b's row: %g", worst);
        }
        free(wa);
        for (int k = 0; k < 2; k++)
            for (int s = 0; s < attn_lm_cache_seqs(alone[k]); s++)
                ck_assert_int_eq(attn_lm_cache_length(together[k], s), attn_lm_cache_length(alone[k], s));
    }
    /* an unknown sequence; a cache of another model */
    attn_lm_row bad = {3, text[0][0], -1};
    ck_assert_int_eq(attn_lm_step_caches(together, 2, m.params, &bad, 1, NULL, NULL, &err), ATTN_ERR_ARG);
    ck_assert_str_eq(err.field, "rows");
    attn_lm_config other = m.cfg;
    other.context = 16;
    attn_lm_cache *mixed[2] = {together[0], NULL};
    ck_assert_int_eq(attn_lm_cache_create(&other, 1, 4, &mixed[1], &err), ATTN_OK);
    bad.seq = 0;
    ck_assert_int_eq(attn_lm_step_caches(mixed, 2, m.params, &bad, 1, NULL, NULL, &err), ATTN_ERR_ARG);
    ck_assert_str_eq(err.field, "cache");
    attn_lm_cache_free(mixed[1]);
    for (int k = 0; k < 2; k++) attn_lm_cache_free(alone[k]), attn_lm_cache_free(together[k]);
    free(got), free(want), free(m.params);
}
END_TEST

static Suite *suite(void) {
    openblas_set_num_threads(1);
    Suite *s = suite_create("core_decode");
    const TTest *tests[] = {context_cropping, from_empty_cache, errors_and_sizes, NULL};
    TCase *tc = tcase_with(s, "decode", 30, tests);
    tcase_add_loop_test(tc, cached_equals_full, 0, 16);
    tcase_add_loop_test(tc, same_bits_any_pool, 0, 2);
    tcase_add_loop_test(tc, many_sequences, 0, 8);
    tcase_add_loop_test(tc, step_over_caches, 0, 4);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {suite}};
