/* test_core_flash.c - the fused attention path (core/flash.c) and the
 * compute pool (core/parallel.c):
 *   - fused (only the context asked for) and materialised (the weights asked
 *     for too) agree within float rounding on random modules, shapes, masks,
 *     key padding and scales, T often not a multiple of a tile, grouped-query
 *     heads; rows whose keys are all masked are exactly zero on both;
 *   - the plan says which path runs, and a context-only plan's
 *     total_elements grows with T, not T²;
 *   - results are bit-identical for pools of 1 to 4 threads, and when 4
 *     calls share one pool at once;
 *   - pool threads that join a call may run on every CPU but the caller's
 *     (so that Linux cannot queue them behind it), and follow the caller
 *     when it moves;
 *   - the long PyTorch goldens of tests/golden/long (generate_long.py), on
 *     the fused path, within 3e-5 + 3e-4 |want|.
 */
#include <check.h>
#include <sched.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/attention.h"
#include "tests/support/check_main.h"

#include <cblas.h> /* openblas_set_num_threads */

/* ==== a call with its inputs ================================================ */

typedef struct {
    attn_config cfg;
    attn_plan plan;
    float *params, *x, *xk, *xv, *q, *k, *v, *add;
    uint8_t *bm, *kpm;
    attn_inputs in;
} fcall;

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    ck_assert_ptr_nonnull(p);
    return p;
}

static float *rand_floats(attn_rng *r, size_t n) {
    float *p = xmalloc(n * sizeof *p);
    for (size_t i = 0; i < n; i++) p[i] = attn_rng_uniform(r, -1.0f, 1.0f);
    return p;
}

static int rand_int(attn_rng *r, int lo, int hi) { return lo + (int)(attn_rng_u32(r) % (uint32_t)(hi - lo + 1)); }

static void fcall_plan(fcall *c) {
    attn_error err = {0};
    int rc = attn_plan_make(&c->cfg, &c->plan, &err);
    ck_assert_msg(rc == ATTN_OK, "attn_plan_make: %s (%s)", err.message, err.field);
    c->params = xmalloc((c->plan.n_params ? c->plan.n_params : 1) * sizeof(float));
    attn_rng rng;
    attn_rng_seed(&rng, 7);
    rc = attn_params_init(&c->cfg, &c->plan, c->params, &rng, &err);
    ck_assert_msg(rc == ATTN_OK, "attn_params_init: %s", err.message);
}

static void fcall_bind(fcall *c) {
    c->in = (attn_inputs){.x = c->x, .x_key = c->xk, .x_value = c->xv, .query = c->q,
                          .key = c->k, .value = c->v, .attn_mask_bool = c->bm,
                          .attn_mask_add = c->add, .key_padding_mask = c->kpm,
                          .params = c->plan.n_params ? c->params : NULL};
}

static void fcall_free(fcall *c) {
    void *p[] = {c->params, c->x, c->xk, c->xv, c->q, c->k, c->v, c->add, c->bm, c->kpm};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) free(p[i]);
    memset(c, 0, sizeof *c);
}

/* A random call: module, sizes (often over a tile, rarely a multiple of
 * one), causal or not, masks, padding, scale. `big`: always enough work to
 * be split over a pool. */
static void fcall_random(fcall *c, uint64_t seed, int big) {
    static const attn_module modules[] = {ATTN_SDPA, ATTN_SDPA, ATTN_MHA, ATTN_GPT2,
                                          ATTN_TORCH_MHA, ATTN_CAUSAL, ATTN_SIMPLE};
    attn_rng r;
    attn_rng_seed(&r, seed);
    memset(c, 0, sizeof *c);
    attn_config *g = &c->cfg;
    g->module = modules[rand_int(&r, 0, (int)(sizeof modules / sizeof modules[0]) - 1)];
    g->batch = rand_int(&r, 1, 2);
    g->tokens = rand_int(&r, 0, 3) == 0 ? rand_int(&r, 1, 20) : rand_int(&r, 100, 600);
    g->causal = rand_int(&r, 0, 2) != 0;
    int heads = rand_int(&r, 1, 4), hd = rand_int(&r, 1, 12);
    if (big) g->tokens = rand_int(&r, 400, 900), heads = rand_int(&r, 2, 4), hd = rand_int(&r, 8, 24);
    switch (g->module) {
    case ATTN_SDPA:
        g->num_heads = heads;
        g->kv_heads = heads % 2 == 0 && rand_int(&r, 0, 1) ? heads / 2 : 0;
        g->d_in = hd;
        g->vdim = rand_int(&r, 0, 1) ? rand_int(&r, 1, 12) : 0;
        g->kv_tokens = rand_int(&r, 0, 2) == 0 ? rand_int(&r, 1, 600) : 0;
        break;
    case ATTN_MHA:
        g->num_heads = heads, g->d_in = rand_int(&r, 1, 16), g->d_out = heads * hd;
        break;
    case ATTN_GPT2: case ATTN_TORCH_MHA:
        g->num_heads = heads, g->d_in = heads * hd;
        break;
    case ATTN_CAUSAL:
        g->d_in = rand_int(&r, 1, 16), g->d_out = hd;
        break;
    default: /* simple: scale 1 unless given */
        g->d_in = hd;
        break;
    }
    if (rand_int(&r, 0, 2) == 0) g->has_scale = 1, g->scale = attn_rng_uniform(&r, 0.05f, 1.0f);
    fcall_plan(c);

    const attn_plan *p = &c->plan;
    size_t B = (size_t)p->B, L = (size_t)p->L, S = (size_t)p->S;
    if (g->module == ATTN_SDPA) {
        c->q = rand_floats(&r, p->n_queries);
        c->k = rand_floats(&r, p->n_keys);
        c->v = rand_floats(&r, p->n_values);
    } else {
        c->x = rand_floats(&r, B * L * (size_t)p->in_width);
    }
    int batched = rand_int(&r, 0, 1);
    size_t mask_n = (batched ? B : 1) * L * S;
    int kind = rand_int(&r, 0, 3); /* none, bool, additive with some -inf, both kinds of rows */
    if (kind == 1 || kind == 3) {
        c->bm = xmalloc(mask_n);
        for (size_t i = 0; i < mask_n; i++) c->bm[i] = attn_rng_u32(&r) % 4 == 0;
        memset(c->bm + (L / 2) * S, 1, S); /* a fully masked row */
    }
    if (kind == 2) {
        c->add = rand_floats(&r, mask_n);
        for (size_t i = 0; i < mask_n; i++)
            if (attn_rng_u32(&r) % 5 == 0) c->add[i] = -INFINITY;
        for (size_t j = 0; j < S; j++) c->add[j] = -INFINITY; /* row 0 fully masked */
    }
    if (rand_int(&r, 0, 1)) {
        c->kpm = xmalloc(B * S);
        for (size_t i = 0; i < B * S; i++) c->kpm[i] = attn_rng_u32(&r) % 6 == 0;
        if (B > 1) memset(c->kpm + S, 1, S); /* the second sequence is all padding */
    }
    fcall_bind(c);
    c->in.attn_mask_batched = batched;
}

typedef struct {
    float *context, *heads, *weights;
} results;

/* Runs the call: context and context_heads, plus the weights when
 * `materialised` (which forces the materialised path). */
static void run(const fcall *c, attn_pool *pool, int materialised, results *res) {
    const attn_plan *p = &c->plan;
    res->context = xmalloc(p->n_context * sizeof(float));
    res->heads = xmalloc(p->n_context_heads * sizeof(float));
    res->weights = materialised ? xmalloc(p->n_scores * sizeof(float)) : NULL;
    attn_outputs out = {.context = res->context, .context_heads = res->heads, .weights = res->weights};
    attn_inputs in = c->in;
    in.pool = pool;
    attn_error err = {0};
    int rc = attn_forward(&c->cfg, p, &in, NULL, &out, &err);
    ck_assert_msg(rc == ATTN_OK, "attn_forward: %s (%s)", err.message, err.field);
}

static void results_free(results *r) {
    free(r->context), free(r->heads), free(r->weights);
    memset(r, 0, sizeof *r);
}

/* Float rounding: the online softmax rescales partial sums, so the last
 * bits differ from softmax-then-multiply. */
static void expect_close(const char *what, uint64_t seed, const float *got, const float *want,
                         size_t n) {
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - (double)want[i]);
        ck_assert_msg(d <= 2e-5 + 1e-4 * fabs((double)want[i]),
                      "seed %llu %s[%zu]: fused %.9g, materialised %.9g", (unsigned long long)seed,
                      what, i, (double)got[i], (double)want[i]);
        if (want[i] == 0.0f && got[i] != 0.0f) /* all-masked rows are exactly 0 */
            ck_assert_msg(fabs((double)got[i]) < 1e-30, "seed %llu %s[%zu]: %g, not 0",
                          (unsigned long long)seed, what, i, (double)got[i]);
    }
}

/* ==== fused against materialised ============================================ */

START_TEST(fused_matches_materialised) {
    for (uint64_t seed = 1; seed <= 60; seed++) {
        fcall c;
        fcall_random(&c, seed, 0);
        results fused, mat;
        run(&c, NULL, 0, &fused);
        run(&c, NULL, 1, &mat);
        expect_close("context_heads", seed, fused.heads, mat.heads, c.plan.n_context_heads);
        expect_close("context", seed, fused.context, mat.context, c.plan.n_context);
        results_free(&fused), results_free(&mat);
        fcall_free(&c);
    }
}
END_TEST

/* Rows with every key masked (padding of a whole sequence, a masked row)
 * are exactly zero on the fused path too. */
START_TEST(fully_masked_rows_are_zero) {
    fcall c = {0};
    c.cfg = (attn_config){.module = ATTN_SDPA, .batch = 2, .tokens = 300, .d_in = 8,
                          .num_heads = 2, .causal = 1};
    fcall_plan(&c);
    attn_rng r;
    attn_rng_seed(&r, 3);
    c.q = rand_floats(&r, c.plan.n_queries);
    c.k = rand_floats(&r, c.plan.n_keys);
    c.v = rand_floats(&r, c.plan.n_values);
    c.kpm = xmalloc(2 * 300);
    memset(c.kpm, 0, 300);
    memset(c.kpm + 300, 1, 300);
    c.bm = xmalloc(300 * 300);
    memset(c.bm, 0, 300 * 300);
    memset(c.bm + 200 * 300, 1, 300);
    fcall_bind(&c);
    results res;
    run(&c, NULL, 0, &res);
    size_t row = (size_t)c.plan.ctx_width;
    for (int i = 0; i < 300; i++)
        for (size_t j = 0; j < row; j++) {
            float a = res.heads[(size_t)i * row + j], b = res.heads[(300 + (size_t)i) * row + j];
            ck_assert_msg(b == 0.0f, "padded sequence, row %d: %g", i, (double)b);
            if (i == 200) ck_assert_msg(a == 0.0f, "masked row 200: %g", (double)a);
            else ck_assert_msg(isfinite(a), "row %d: %g", i, (double)a);
        }
    results_free(&res);
    fcall_free(&c);
}
END_TEST

/* ==== the plan ============================================================ */

START_TEST(plan_linear_in_t) {
    attn_config cfg = {.module = ATTN_SDPA, .batch = 1, .tokens = 32768, .d_in = 64,
                       .num_heads = 1, .causal = 1, .outputs = ATTN_OUT_CONTEXT};
    attn_plan p;
    attn_error err;
    ck_assert_int_eq(attn_plan_make(&cfg, &p, &err), ATTN_OK);
    ck_assert_int_eq(p.fused, 1);
    /* q, k, v as inputs and as (copied) projections, context and
     * context_heads: 11 * T * 64, plus one tile of scores */
    ck_assert_msg(p.total_elements < (size_t)12 * 32768 * 64, "%zu", p.total_elements);
    ck_assert_msg(p.total_elements < ((size_t)1 << 27), "over the server's default budget");

    cfg.outputs |= ATTN_OUT_WEIGHTS; /* a map: materialised, T² */
    ck_assert_int_eq(attn_plan_make(&cfg, &p, &err), ATTN_OK);
    ck_assert_int_eq(p.fused, 0);
    ck_assert_msg(p.total_elements > (size_t)3 * 32768 * 32768, "%zu", p.total_elements);

    cfg.outputs = 0; /* unknown: every output counted */
    ck_assert_int_eq(attn_plan_make(&cfg, &p, &err), ATTN_OK);
    ck_assert_int_eq(p.fused, 0);

    cfg.outputs = ATTN_OUT_CONTEXT; /* dropout on the weights in training: materialised */
    cfg.dropout = 0.1, cfg.training = 1;
    ck_assert_int_eq(attn_plan_make(&cfg, &p, &err), ATTN_OK);
    ck_assert_int_eq(p.fused, 0);
    cfg.training = 0; /* eval: dropout does nothing */
    ck_assert_int_eq(attn_plan_make(&cfg, &p, &err), ATTN_OK);
    ck_assert_int_eq(p.fused, 1);

    attn_config g = {.module = ATTN_GPT2, .batch = 1, .tokens = 4096, .d_in = 64, .num_heads = 2,
                     .dropout = 0.1, .training = 1,
                     .outputs = ATTN_OUT_CONTEXT | ATTN_OUT_DROPOUT_MASK};
    ck_assert_int_eq(attn_plan_make(&g, &p, &err), ATTN_OK);
    ck_assert_int_eq(p.fused, 1); /* GPT2 drops the output, not the weights */

    attn_config renorm = cfg;
    renorm.training = 0, renorm.mask_method = ATTN_MASK_RENORM;
    ck_assert_int_eq(attn_plan_make(&renorm, &p, &err), ATTN_OK);
    ck_assert_int_eq(p.fused, 0);
}
END_TEST

/* ==== bit-identical whatever the threads ==================================== */

static void expect_bits(const char *what, uint64_t seed, int threads, const float *a,
                        const float *b, size_t n) {
    ck_assert_msg(memcmp(a, b, n * sizeof *a) == 0, "seed %llu: %s differs with %d threads",
                  (unsigned long long)seed, what, threads);
}

START_TEST(same_bits_any_pool) {
    attn_pool *pools[4] = {NULL};
    ck_assert_ptr_null(attn_pool_create(0));
    for (int t = 2; t <= 4; t++) ck_assert_ptr_nonnull(pools[t - 1] = attn_pool_create(t));
    for (uint64_t seed = 100; seed < 112; seed++) {
        fcall c;
        fcall_random(&c, seed, 1);
        for (int materialised = 0; materialised <= 1; materialised++) {
            results ref;
            run(&c, NULL, materialised, &ref);
            for (int t = 2; t <= 4; t++) {
                results got;
                run(&c, pools[t - 1], materialised, &got);
                expect_bits("context", seed, t, got.context, ref.context, c.plan.n_context);
                expect_bits("context_heads", seed, t, got.heads, ref.heads, c.plan.n_context_heads);
                if (materialised)
                    expect_bits("weights", seed, t, got.weights, ref.weights, c.plan.n_scores);
                results_free(&got);
            }
            results_free(&ref);
        }
        fcall_free(&c);
    }
    for (int t = 2; t <= 4; t++) attn_pool_destroy(pools[t - 1]);
    attn_pool_destroy(NULL);
}
END_TEST

typedef struct {
    fcall *calls;
    results *want;
    int n;
    attn_pool *pool;
    int mismatches;
} worker_arg;

static void *worker(void *arg) {
    worker_arg *w = arg;
    for (int rep = 0; rep < 3; rep++)
        for (int i = 0; i < w->n; i++) {
            int materialised = (i + rep) % 2;
            results got;
            run(&w->calls[i], w->pool, materialised, &got);
            const attn_plan *p = &w->calls[i].plan;
            if (memcmp(got.context, w->want[2 * i + materialised].context,
                       p->n_context * sizeof(float)) != 0)
                w->mismatches++;
            results_free(&got);
        }
    return NULL;
}

START_TEST(same_bits_concurrent_calls) {
    enum { CALLS = 4, THREADS = 4 };
    fcall calls[CALLS];
    results want[2 * CALLS];
    for (int i = 0; i < CALLS; i++) {
        attn_config big = {.module = ATTN_GPT2, .batch = 1, .tokens = 300 + 37 * i, .d_in = 48,
                           .num_heads = 3, .causal = 1};
        memset(&calls[i], 0, sizeof calls[i]);
        calls[i].cfg = big;
        fcall_plan(&calls[i]);
        attn_rng r;
        attn_rng_seed(&r, 50 + (uint64_t)i);
        calls[i].x = rand_floats(&r, (size_t)big.tokens * 48);
        fcall_bind(&calls[i]);
        run(&calls[i], NULL, 0, &want[2 * i]);
        run(&calls[i], NULL, 1, &want[2 * i + 1]);
    }
    attn_pool *pool = attn_pool_create(2);
    ck_assert_ptr_nonnull(pool);
    pthread_t th[THREADS];
    worker_arg args[THREADS];
    for (int t = 0; t < THREADS; t++) {
        args[t] = (worker_arg){calls, want, CALLS, pool, 0};
        ck_assert_int_eq(pthread_create(&th[t], NULL, worker, &args[t]), 0);
    }
    for (int t = 0; t < THREADS; t++) {
        pthread_join(th[t], NULL);
        ck_assert_msg(args[t].mismatches == 0, "thread %d: %d results differ", t, args[t].mismatches);
    }
    attn_pool_destroy(pool);
    for (int i = 0; i < CALLS; i++) {
        results_free(&want[2 * i]), results_free(&want[2 * i + 1]);
        fcall_free(&calls[i]);
    }
}
END_TEST

/* ==== PyTorch, long sequences =================================================== */

/* The integer hash of tests/golden/generate_long.py. */
static uint32_t hash_u32(size_t i, uint32_t salt) {
    uint32_t u = (uint32_t)i * 2654435761u + salt * 40503u + 12345u;
    u ^= u >> 16;
    u *= 0x45D9F3Bu;
    u ^= u >> 16;
    return u;
}

static float *hash_floats(size_t n, uint32_t salt) {
    float *p = xmalloc(n * sizeof *p);
    for (size_t i = 0; i < n; i++)
        p[i] = (float)((double)((int)(hash_u32(i, salt) % 20001u) - 10000) / 10000.0);
    return p;
}

static uint8_t *hash_bytes(size_t n, size_t row, uint32_t salt, uint32_t modulus, int full_rows) {
    uint8_t *m = xmalloc(n);
    for (size_t i = 0; i < n; i++)
        m[i] = hash_u32(i, salt) % modulus == 0 || (full_rows && (i / row) % (size_t)full_rows == 3);
    return m;
}

static int jint(const json_t *o, const char *key, int dflt) {
    const json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? (int)json_integer_value(v) : dflt;
}

static int b64_value(char ch) {
    if (ch >= 'A' && ch <= 'Z') return ch - 'A';
    if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9') return ch - '0' + 52;
    return ch == '+' ? 62 : ch == '/' ? 63 : -1;
}

/* Decodes base64 text into little-endian float32 values; returns the count. */
static size_t b64_floats(const char *text, float **out) {
    size_t len = strlen(text), n = 0;
    uint8_t *bytes = xmalloc(len);
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        int v = b64_value(text[i]);
        if (v < 0) continue; /* '=' padding */
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) bits -= 8, bytes[n++] = (uint8_t)(acc >> bits);
    }
    *out = xmalloc(n);
    memcpy(*out, bytes, n); /* the machine is little-endian, as the file */
    free(bytes);
    return n / sizeof(float);
}

static void long_golden(const char *name) {
    char path[256];
    snprintf(path, sizeof path, "tests/golden/long/%s.json", name);
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    ck_assert_msg(root != NULL, "%s: %s", path, je.text);
    const json_t *cs = json_object_get(root, "case");
    const char *module = json_string_value(json_object_get(cs, "module"));
    fcall c = {0};
    attn_config *g = &c.cfg;
    g->module = strcmp(module, "gpt2") == 0 ? ATTN_GPT2 : ATTN_SDPA;
    g->batch = jint(cs, "B", 1), g->tokens = jint(cs, "T", 1), g->d_in = jint(cs, "d_in", 1);
    g->num_heads = jint(cs, "H", 1), g->kv_heads = jint(cs, "Hkv", 0);
    g->kv_tokens = jint(cs, "S", 0), g->vdim = jint(cs, "vdim", 0);
    g->causal = json_is_true(json_object_get(cs, "causal"));
    const json_t *scale = json_object_get(cs, "scale");
    if (json_is_number(scale)) g->has_scale = 1, g->scale = (float)json_number_value(scale);
    g->outputs = ATTN_OUT_CONTEXT;
    fcall_plan(&c);
    if (g->module == ATTN_GPT2) { /* torch.manual_seed(seed), then the constructor */
        attn_rng rng;
        attn_error err;
        attn_rng_seed(&rng, (uint64_t)jint(cs, "seed", 0));
        ck_assert_int_eq(attn_params_init(g, &c.plan, c.params, &rng, &err), ATTN_OK);
    }
    const attn_plan *p = &c.plan;
    ck_assert_msg(p->fused, "%s: not on the fused path", name);
    size_t B = (size_t)p->B, L = (size_t)p->L, S = (size_t)p->S;
    if (g->module == ATTN_SDPA) {
        c.q = hash_floats(p->n_queries, 2);
        c.k = hash_floats(p->n_keys, 3);
        c.v = hash_floats(p->n_values, 4);
    } else {
        c.x = hash_floats(B * L * (size_t)p->in_width, 1);
    }
    int batched = 0;
    const json_t *bm = json_object_get(cs, "bool_mask"), *am = json_object_get(cs, "add_mask");
    const json_t *kp = json_object_get(cs, "kpm");
    if (bm) {
        batched = json_is_true(json_object_get(bm, "batched"));
        c.bm = hash_bytes((batched ? B : 1) * L * S, S, 5, (uint32_t)jint(bm, "modulus", 1),
                          jint(bm, "full_rows", 0));
    }
    if (am) {
        batched = json_is_true(json_object_get(am, "batched"));
        size_t n = (batched ? B : 1) * L * S;
        c.add = hash_floats(n, 5);
        uint32_t mod = (uint32_t)jint(am, "inf_modulus", 1);
        for (size_t i = 0; i < n; i++)
            if (hash_u32(i, 5) % mod == 1) c.add[i] = -INFINITY;
    }
    if (kp) {
        c.kpm = hash_bytes(B * S, S, 6, (uint32_t)jint(kp, "modulus", 1), 0);
        int full = jint(kp, "full_batch", -1);
        if (full >= 0) memset(c.kpm + (size_t)full * S, 1, S);
    }
    fcall_bind(&c);
    c.in.attn_mask_batched = batched;

    float *want;
    const json_t *ctx = json_object_get(root, "context");
    size_t n = b64_floats(json_string_value(json_object_get(ctx, "f32_base64")), &want);
    ck_assert_uint_eq(n, p->n_context);
    results res;
    run(&c, NULL, 0, &res);
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)res.context[i] - (double)want[i]);
        ck_assert_msg(d <= 3e-5 + 3e-4 * fabs((double)want[i]), "%s context[%zu]: %.9g, PyTorch %.9g",
                      name, i, (double)res.context[i], (double)want[i]);
    }
    attn_pool *pool = attn_pool_create(2);
    results two;
    run(&c, pool, 0, &two);
    expect_bits(name, 0, 2, two.context, res.context, n);
    attn_pool_destroy(pool);
    results_free(&two);
    results_free(&res);
    free(want);
    fcall_free(&c);
    json_decref(root);
}

/* ==== helpers stay off the caller's CPU ===================================== */

typedef struct {
    int caller_cpu;
    int helper_items;            /* items run by a pool thread */
    int helper_could_use_caller; /* ... whose affinity allowed the caller's CPU */
    int helper_could_use_other;  /* ... whose affinity allowed some other CPU */
    pthread_mutex_t mu;
} where_ctx;

static void where_item(void *arg, long item, int slot) {
    (void)item;
    where_ctx *w = arg;
    for (volatile long i = 0; i < 2000000; i++) {} /* about a millisecond: time for the helper to join */
    if (slot == 0) return;
    cpu_set_t mine;
    ck_assert_int_eq(sched_getaffinity(0, sizeof mine, &mine), 0);
    pthread_mutex_lock(&w->mu);
    w->helper_items++;
    w->helper_could_use_caller += CPU_ISSET(w->caller_cpu, &mine) != 0;
    w->helper_could_use_other += CPU_COUNT(&mine) - (CPU_ISSET(w->caller_cpu, &mine) != 0) > 0;
    pthread_mutex_unlock(&w->mu);
}

START_TEST(helpers_avoid_callers_cpu) {
    cpu_set_t all;
    ck_assert_int_eq(sched_getaffinity(0, sizeof all, &all), 0);
    if (CPU_COUNT(&all) < 2) {
        printf("helpers_avoid_callers_cpu: one CPU, nothing to steer\n");
        return;
    }
    attn_pool *pool = attn_pool_create(2);
    ck_assert_ptr_nonnull(pool);
    int tried = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE && tried < 2; cpu++) {
        if (!CPU_ISSET(cpu, &all)) continue;
        tried++; /* the caller on one CPU, then on another: the helper follows */
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        ck_assert_int_eq(sched_setaffinity(0, sizeof one, &one), 0);
        where_ctx w = {.caller_cpu = cpu, .mu = PTHREAD_MUTEX_INITIALIZER};
        attn_pool_run(pool, 40, where_item, &w);
        ck_assert_msg(w.helper_items > 0, "the helper never joined 40 ms of work");
        ck_assert_int_eq(w.helper_could_use_caller, 0);
        ck_assert_int_eq(w.helper_could_use_other, w.helper_items);
    }
    ck_assert_int_eq(sched_setaffinity(0, sizeof all, &all), 0);
    attn_pool_destroy(pool);
}
END_TEST

START_TEST(pytorch_long) {
    static const char *const names[] = {"sdpa_long_causal", "sdpa_long_cross_gqa_bool_kpm",
                                        "sdpa_long_causal_add_scale", "gpt2_long_kpm"};
    long_golden(names[_i]);
}
END_TEST

static Suite *flash_suite(void) {
    /* Bits are the same for a given OpenBLAS thread count (attention.h), and
     * attn_pool_create sets it to 1: so do the calls without a pool. */
    openblas_set_num_threads(1);
    Suite *s = suite_create("flash");
    const TTest *tests[] = {fused_matches_materialised, fully_masked_rows_are_zero, plan_linear_in_t,
                            same_bits_any_pool, same_bits_concurrent_calls, helpers_avoid_callers_cpu,
                            NULL};
    TCase *tc = tcase_with(s, "fused", 120, tests);
    tcase_add_loop_test(tc, pytorch_long, 0, 4);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {flash_suite}};
