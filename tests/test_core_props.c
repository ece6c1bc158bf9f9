/* test_core_props.c - properties of core on random inputs:
 *   - each row of weights sums to 1, or is all zero when every key is masked;
 *   - causal: weights above the diagonal are exactly 0, scores -inf;
 *   - the two mask methods (3.5.1) agree;
 *   - the wrapper equals its heads run as CausalAttention one by one, and
 *     MultiHeadAttention's heads (before out_proj) with the same weights;
 *   - a batch equals its sequences run one at a time;
 *   - results with 1 and 2 OpenBLAS threads agree within the golden tolerance;
 *   - 4 threads running attn_forward at once give the serial bits.
 */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/attention.h"
#include "tests/support/check_main.h"
#include "tests/support/golden.h"

#include <cblas.h> /* openblas_set_num_threads, openblas_get_num_threads, cblas_sgemm */

/* ==== helpers ================================================================== */

typedef struct {
    attn_config cfg;
    attn_plan plan;
    float *params;
    float *x, *xk, *xv, *q, *k, *v; /* inputs as the module needs them */
    uint8_t *kpm, *mask_bool;
    golden_buffers b;
    attn_inputs in;
} call;

static float *rand_floats(attn_rng *r, size_t n, float lo, float hi) {
    float *p = malloc((n ? n : 1) * sizeof *p);
    ck_assert_ptr_nonnull(p);
    for (size_t i = 0; i < n; i++) p[i] = attn_rng_uniform(r, lo, hi);
    return p;
}

/* Plans cfg, draws parameters from seed and random inputs from data_seed. */
static void call_setup(call *c, const attn_config *cfg, uint64_t seed, uint64_t data_seed) {
    memset(c, 0, sizeof *c);
    c->cfg = *cfg;
    attn_error err = {0};
    int rc = attn_plan_make(&c->cfg, &c->plan, &err);
    ck_assert_msg(rc == ATTN_OK, "attn_plan_make: %s (%s)", err.message, err.field);
    const attn_plan *p = &c->plan;
    c->params = malloc((p->n_params ? p->n_params : 1) * sizeof(float));
    ck_assert_ptr_nonnull(c->params);
    attn_rng rng;
    attn_rng_seed(&rng, seed);
    rc = attn_params_init(&c->cfg, p, c->params, &rng, &err);
    ck_assert_msg(rc == ATTN_OK, "attn_params_init: %s", err.message);
    attn_rng data;
    attn_rng_seed(&data, data_seed);
    size_t B = (size_t)p->B, L = (size_t)p->L, S = (size_t)p->S;
    if (cfg->module == ATTN_SDPA) {
        c->q = rand_floats(&data, p->n_queries, -1, 1);
        c->k = rand_floats(&data, p->n_keys, -1, 1);
        c->v = rand_floats(&data, p->n_values, -1, 1);
    } else {
        c->x = rand_floats(&data, B * L * (size_t)p->in_width, -1, 1);
        if (cfg->module == ATTN_TORCH_MHA) {
            c->xk = rand_floats(&data, B * S * (size_t)p->kv_in_width[0], -1, 1);
            c->xv = rand_floats(&data, B * S * (size_t)p->kv_in_width[1], -1, 1);
        }
    }
    c->in = (attn_inputs){.x = c->x, .x_key = c->xk, .x_value = c->xv, .query = c->q,
                          .key = c->k, .value = c->v};
    c->in.params = p->n_params ? c->params : NULL;
    ck_assert_int_eq(golden_buffers_alloc(p, &c->b), 0);
}

/* Random key padding (about a quarter padded) and a random bool mask
 * [L][S]; row 0 of batch 0 is made fully masked on purpose. */
static void call_add_masks(call *c, uint64_t seed) {
    const attn_plan *p = &c->plan;
    attn_rng r;
    attn_rng_seed(&r, seed);
    size_t B = (size_t)p->B, L = (size_t)p->L, S = (size_t)p->S;
    c->kpm = calloc(B * S, 1);
    c->mask_bool = calloc(L * S, 1);
    ck_assert(c->kpm && c->mask_bool);
    for (size_t i = 0; i < B * S; i++) c->kpm[i] = attn_rng_uniform(&r, 0, 1) < 0.25f;
    for (size_t i = 0; i < L * S; i++) c->mask_bool[i] = attn_rng_uniform(&r, 0, 1) < 0.25f;
    for (size_t j = 0; j < S; j++) c->mask_bool[j] = 1; /* query 0: every key masked */
    c->in.key_padding_mask = c->kpm;
    c->in.attn_mask_bool = c->mask_bool;
}

static int call_run(call *c, attn_rng *rng) {
    attn_error err = {0};
    attn_rng local;
    if (rng == NULL) {
        attn_rng_seed(&local, 1);
        rng = &local;
    }
    int rc = attn_forward(&c->cfg, &c->plan, &c->in, rng, &c->b.out, &err);
    ck_assert_msg(rc == ATTN_OK, "attn_forward (%s): %s (%s)", attn_module_name(c->cfg.module),
                  err.message, err.field);
    return rc;
}

static void call_free(call *c) {
    free(c->params);
    free(c->x);
    free(c->xk);
    free(c->xv);
    free(c->q);
    free(c->k);
    free(c->v);
    free(c->kpm);
    free(c->mask_bool);
    golden_buffers_free(&c->b);
}

/* A small configuration of each module, 2 heads where it has heads. */
static attn_config module_config(attn_module m) {
    attn_config c = {.module = m, .batch = 2, .tokens = 5, .d_in = 4, .d_out = 4, .num_heads = 1};
    switch (m) {
    case ATTN_CAUSAL: c.context_length = 7; c.causal = 1; break;
    case ATTN_MHA_WRAPPER: c.num_heads = 2; c.d_out = 3; c.context_length = 5; c.causal = 1; break;
    case ATTN_MHA: c.num_heads = 2; c.context_length = 5; c.causal = 1; c.bias = 1; break;
    case ATTN_GPT2: c.num_heads = 2; c.d_out = 0; c.context_length = 6; c.causal = 1; break;
    case ATTN_TORCH_MHA: c.num_heads = 2; c.d_out = 0; c.bias = 1; c.kv_tokens = 6; c.kdim = 3;
        c.vdim = 5; break;
    case ATTN_SDPA: c.num_heads = 4; c.kv_heads = 2; c.kv_tokens = 6; c.d_out = 0; c.vdim = 3; break;
    case ATTN_SIMPLE: c.d_out = 0; break;
    default: break;
    }
    return c;
}

static int bits_equal(const float *a, const float *b, size_t n) {
    return memcmp(a, b, n * sizeof *a) == 0;
}

/* ==== rows sum to 1 ================================================================ */

START_TEST(test_rows_sum_to_one) {
    attn_module m = (attn_module)_i;
    for (int masked = 0; masked < 2; masked++) {
        call c;
        attn_config cfg = module_config(m);
        call_setup(&c, &cfg, 10 + _i, 100 + _i);
        if (masked) call_add_masks(&c, 200 + _i);
        call_run(&c, NULL);
        const attn_plan *p = &c.plan;
        size_t L = (size_t)p->L, S = (size_t)p->S;
        int full_rows = 0;
        for (int b = 0; b < p->B; b++)
            for (int h = 0; h < p->H; h++)
                for (size_t i = 0; i < L; i++) {
                    const float *w = c.b.out.weights + (((size_t)b * p->H + h) * L + i) * S;
                    const uint8_t *mk = c.b.out.mask + ((size_t)b * L + i) * S;
                    int all = 1;
                    double sum = 0;
                    for (size_t j = 0; j < S; j++) {
                        all &= mk[j] != 0;
                        sum += w[j];
                        if (mk[j])
                            ck_assert_msg(w[j] == 0.0f, "%s: masked weight [%d][%d][%zu][%zu] = %g",
                                          attn_module_name(m), b, h, i, j, (double)w[j]);
                        ck_assert_msg(w[j] >= 0.0f && w[j] <= 1.0f, "weight out of [0, 1]");
                    }
                    if (all) {
                        full_rows++;
                        ck_assert_msg(sum == 0.0, "%s: fully masked row sums to %g",
                                      attn_module_name(m), sum);
                        for (int d = 0; d < p->ctx_width && h == 0; d++)
                            ck_assert_msg(c.b.out.context_heads[((size_t)b * L + i) * p->ctx_width + d] == 0.0f,
                                          "%s: context of a fully masked row is not 0",
                                          attn_module_name(m));
                    } else {
                        ck_assert_msg(fabs(sum - 1.0) <= 1e-5, "%s%s: row [%d][%d][%zu] sums to %.8f",
                                      attn_module_name(m), masked ? " (masked)" : "", b, h, i, sum);
                    }
                }
        if (masked) ck_assert_msg(full_rows > 0, "the fully masked row was not produced");
        call_free(&c);
    }
}
END_TEST

/* ==== causal upper triangle ============================================================= */

START_TEST(test_causal_upper_zero) {
    attn_module mods[] = {ATTN_SIMPLE, ATTN_SELF_V2, ATTN_CAUSAL, ATTN_MHA_WRAPPER, ATTN_MHA,
                          ATTN_GPT2, ATTN_TORCH_MHA, ATTN_SDPA};
    for (size_t k = 0; k < sizeof mods / sizeof mods[0]; k++) {
        for (int drop = 0; drop < 2; drop++) {
            attn_config cfg = module_config(mods[k]);
            cfg.causal = 1;
            if (drop) {
                cfg.dropout = 0.3;
                cfg.training = 1;
            }
            call c;
            call_setup(&c, &cfg, 3 + k, 30 + k);
            attn_rng rng;
            attn_rng_seed(&rng, 99);
            call_run(&c, &rng);
            const attn_plan *p = &c.plan;
            size_t L = (size_t)p->L, S = (size_t)p->S;
            for (size_t bh = 0; bh < (size_t)p->B * p->H; bh++)
                for (size_t i = 0; i < L; i++)
                    for (size_t j = i + 1; j < S; j++) {
                        size_t e = (bh * L + i) * S + j;
                        ck_assert_msg(c.b.out.weights[e] == 0.0f, "%s: weight [%zu][%zu][%zu] = %g",
                                      attn_module_name(mods[k]), bh, i, j, (double)c.b.out.weights[e]);
                        ck_assert_msg(c.b.out.masked_scores[e] == -INFINITY,
                                      "%s: masked score above the diagonal is %g",
                                      attn_module_name(mods[k]), (double)c.b.out.masked_scores[e]);
                    }
            /* token 0 sees only itself (when not dropped): context = its value */
            call_free(&c);
        }
    }
}
END_TEST

/* ==== mask methods agree ===================================================================== */

START_TEST(test_mask_methods_agree) {
    attn_module mods[] = {ATTN_CAUSAL, ATTN_MHA, ATTN_GPT2, ATTN_TORCH_MHA, ATTN_SDPA};
    for (size_t k = 0; k < sizeof mods / sizeof mods[0]; k++) {
        attn_config cfg = module_config(mods[k]);
        cfg.causal = 1;
        call a, r;
        call_setup(&a, &cfg, 5, 50 + k);
        call_add_masks(&a, 60 + k);
        call_run(&a, NULL);
        cfg.mask_method = ATTN_MASK_RENORM;
        call_setup(&r, &cfg, 5, 50 + k);
        call_add_masks(&r, 60 + k);
        call_run(&r, NULL);
        char msg[300];
        long bad = golden_compare("weights (renorm vs -inf)", r.b.out.weights, a.b.out.weights,
                                  a.plan.n_scores, msg, sizeof msg);
        ck_assert_msg(bad < 0, "%s: %s", attn_module_name(mods[k]), msg);
        bad = golden_compare("context (renorm vs -inf)", r.b.out.context, a.b.out.context,
                             a.plan.n_context, msg, sizeof msg);
        ck_assert_msg(bad < 0, "%s: %s", attn_module_name(mods[k]), msg);
        call_free(&a);
        call_free(&r);
    }
}
END_TEST

/* ==== wrapper = heads ========================================================================== */

/* Copies the parameter named `name` of (cfg, plan) from src to dst of (cfg2, plan2). */
static const float *param_named(const attn_config *cfg, const attn_plan *plan, const float *buf,
                                const char *name, size_t *count) {
    for (int i = 0; i < plan->param_count; i++) {
        attn_param p;
        attn_param_get(cfg, plan, i, &p);
        if (strcmp(p.name, name) == 0) {
            *count = p.count;
            return buf + p.offset;
        }
    }
    ck_abort_msg("no parameter named %s in %s", name, attn_module_name(cfg->module));
    return NULL;
}

START_TEST(test_wrapper_equals_heads) {
    for (int bias = 0; bias < 2; bias++) {
        attn_config wc = {.module = ATTN_MHA_WRAPPER, .batch = 2, .tokens = 5, .d_in = 4,
                          .d_out = 3, .num_heads = 3, .context_length = 6, .causal = 1, .bias = bias};
        call w;
        call_setup(&w, &wc, 21, 22);
        call_add_masks(&w, 23);
        call_run(&w, NULL);
        int H = wc.num_heads, D = wc.d_out, T = wc.tokens;

        /* each head as a CausalAttention with that head's parameters */
        attn_config cc = wc;
        cc.module = ATTN_CAUSAL;
        cc.num_heads = 1;
        for (int h = 0; h < H; h++) {
            call c;
            call_setup(&c, &cc, 1, 22);
            call_add_masks(&c, 23);
            for (int i = 0; i < c.plan.param_count; i++) {
                attn_param p;
                attn_param_get(&cc, &c.plan, i, &p);
                char name[ATTN_PARAM_NAME_MAX + 32];
                snprintf(name, sizeof name, "heads.%d.%s", h, p.name);
                size_t n;
                const float *src = param_named(&wc, &w.plan, w.params, name, &n);
                ck_assert_uint_eq(n, p.count);
                memcpy(c.params + p.offset, src, n * sizeof(float));
            }
            call_run(&c, NULL);
            for (int b = 0; b < wc.batch; b++)
                for (int t = 0; t < T; t++)
                    for (int d = 0; d < D; d++) {
                        float got = w.b.out.context[((size_t)b * T + t) * H * D + h * D + d];
                        float want = c.b.out.context[((size_t)b * T + t) * D + d];
                        ck_assert_msg(fabsf(got - want) <= 1e-6f + 1e-6f * fabsf(want),
                                      "wrapper head %d [%d][%d][%d]: %.9g, CausalAttention %.9g", h,
                                      b, t, d, (double)got, (double)want);
                    }
            call_free(&c);
        }

        /* MultiHeadAttention with d_out = H * D and the heads' weights stacked:
         * its heads before out_proj (context_heads) are the wrapper's output. */
        attn_config mc = wc;
        mc.module = ATTN_MHA;
        mc.d_out = H * D;
        call m;
        call_setup(&m, &mc, 1, 22);
        call_add_masks(&m, 23);
        const char *names[] = {"W_query.weight", "W_key.weight", "W_value.weight",
                               "W_query.bias", "W_key.bias", "W_value.bias"};
        for (int k = 0; k < (bias ? 6 : 3); k++) {
            size_t n_m;
            float *dst = (float *)param_named(&mc, &m.plan, m.params, names[k], &n_m);
            for (int h = 0; h < H; h++) {
                char name[96];
                snprintf(name, sizeof name, "heads.%d.%s", h, names[k]);
                size_t n;
                const float *src = param_named(&wc, &w.plan, w.params, name, &n);
                ck_assert_uint_eq(n * H, n_m);
                memcpy(dst + (size_t)h * n, src, n * sizeof(float)); /* rows h*D.. of [H*D][d_in] */
            }
        }
        call_run(&m, NULL);
        char msg[300];
        long bad = golden_compare("MHA context_heads vs wrapper", m.b.out.context_heads,
                                  w.b.out.context, w.plan.n_context, msg, sizeof msg);
        ck_assert_msg(bad < 0, "%s", msg);
        bad = golden_compare("MHA weights vs wrapper", m.b.out.weights, w.b.out.weights,
                             w.plan.n_scores, msg, sizeof msg);
        ck_assert_msg(bad < 0, "%s", msg);
        call_free(&m);
        call_free(&w);
    }
}
END_TEST

/* ==== batch = sequences one at a time ============================================================ */

START_TEST(test_batch_equals_sequences) {
    attn_module m = (attn_module)_i;
    attn_config cfg = module_config(m);
    cfg.batch = 3;
    call all;
    call_setup(&all, &cfg, 7, 70 + _i);
    call_run(&all, NULL);
    const attn_plan *p = &all.plan;
    attn_config one = cfg;
    one.batch = 1;
    int identical = 1;
    for (int b = 0; b < cfg.batch; b++) {
        call s;
        call_setup(&s, &one, 7, 1);
        size_t xin = (size_t)p->L * p->in_width;
        if (m == ATTN_SDPA) {
            memcpy(s.q, all.q + b * s.plan.n_queries, s.plan.n_queries * sizeof(float));
            memcpy(s.k, all.k + b * s.plan.n_keys, s.plan.n_keys * sizeof(float));
            memcpy(s.v, all.v + b * s.plan.n_values, s.plan.n_values * sizeof(float));
        } else {
            memcpy(s.x, all.x + b * xin, xin * sizeof(float));
            if (m == ATTN_TORCH_MHA) {
                size_t nk = (size_t)p->S * p->kv_in_width[0], nv = (size_t)p->S * p->kv_in_width[1];
                memcpy(s.xk, all.xk + b * nk, nk * sizeof(float));
                memcpy(s.xv, all.xv + b * nv, nv * sizeof(float));
            }
        }
        call_run(&s, NULL);
        char msg[300];
        long bad = golden_compare("context", s.b.out.context, all.b.out.context + b * s.plan.n_context,
                                  s.plan.n_context, msg, sizeof msg);
        ck_assert_msg(bad < 0, "%s, sequence %d alone vs in the batch: %s", attn_module_name(m), b, msg);
        bad = golden_compare("weights", s.b.out.weights, all.b.out.weights + b * s.plan.n_scores,
                             s.plan.n_scores, msg, sizeof msg);
        ck_assert_msg(bad < 0, "%s, sequence %d alone vs in the batch: %s", attn_module_name(m), b, msg);
        identical &= bits_equal(s.b.out.context, all.b.out.context + b * s.plan.n_context,
                                s.plan.n_context);
        call_free(&s);
    }
    printf("batch vs one at a time, %-32s %s\n", attn_module_name(m),
           identical ? "bit-identical" : "within tolerance, not bit-identical");
    call_free(&all);
}
END_TEST

/* ==== OpenBLAS threads ============================================================================== */

/* Large enough for OpenBLAS to split the products between threads. */
static attn_config big_config(attn_module m) {
    attn_config c = {.module = m, .batch = 2, .tokens = 96, .d_in = 128, .d_out = 128,
                     .num_heads = 4, .context_length = 128, .causal = 1, .bias = 1};
    if (m == ATTN_GPT2 || m == ATTN_TORCH_MHA || m == ATTN_SDPA) c.d_out = 0;
    if (m == ATTN_SDPA) c.d_in = 32;
    return c;
}

/* OpenBLAS's own kernels are not thread-count invariant: under the Haswell
 * and Zen kernels a bare cblas_sgemm of 192x128x128 gives other last bits
 * with 2 threads than with 1 (the Prescott kernel happens to agree). So the
 * library promises results within the golden tolerance whatever OpenBLAS's
 * thread count, and bit-identical results whatever the number of application
 * threads for a fixed OpenBLAS thread count (the server pins it to 1). */
START_TEST(test_openblas_threads_agree) {
    attn_module mods[] = {ATTN_MHA, ATTN_GPT2, ATTN_TORCH_MHA, ATTN_SDPA, ATTN_MHA_WRAPPER};
    int before = openblas_get_num_threads();
    for (size_t k = 0; k < sizeof mods / sizeof mods[0]; k++) {
        attn_config cfg = big_config(mods[k]);
        if (mods[k] == ATTN_MHA_WRAPPER) cfg.d_out = 32;
        call a, b;
        call_setup(&a, &cfg, 11, 12);
        call_setup(&b, &cfg, 11, 12);
        openblas_set_num_threads(1);
        call_run(&a, NULL);
        openblas_set_num_threads(2);
        call_run(&b, NULL);
        static const int order[] = {GOLDEN_QUERIES, GOLDEN_KEYS, GOLDEN_VALUES, GOLDEN_SCORES,
                                    GOLDEN_MASKED_SCORES, GOLDEN_WEIGHTS, GOLDEN_WEIGHTS_AVG,
                                    GOLDEN_DROPOUT_MASK, GOLDEN_CONTEXT_HEADS, GOLDEN_CONTEXT};
        for (size_t o = 0; o < sizeof order / sizeof order[0]; o++) {
            int i = order[o];
            char msg[512];
            long bad = golden_compare(golden_output_names[i], b.b.f[i], a.b.f[i],
                                      golden_output_count(&a.plan, i), msg, sizeof msg);
            ck_assert_msg(bad < 0, "%s, 2 vs 1 OpenBLAS threads: %s", attn_module_name(mods[k]),
                          msg);
        }
        call_free(&a);
        call_free(&b);
    }
    openblas_set_num_threads(before);
}
END_TEST

/* ==== reentrancy ======================================================================================= */

typedef struct {
    const call *proto;
    float *context, *weights;
    int rounds;
    int rc;
} worker;

static void *work(void *arg) {
    worker *w = arg;
    const call *c = w->proto;
    attn_outputs out = {.context = w->context, .weights = w->weights};
    for (int r = 0; r < w->rounds && w->rc == ATTN_OK; r++) {
        attn_rng rng;
        attn_rng_seed(&rng, 5);
        attn_error err;
        w->rc = attn_forward(&c->cfg, &c->plan, &c->in, &rng, &out, &err);
    }
    return NULL;
}

START_TEST(test_reentrant_threads) {
    attn_module mods[] = {ATTN_MHA, ATTN_TORCH_MHA, ATTN_SDPA, ATTN_GPT2};
    /* PROPS_ROUNDS=n for a longer stress run (OpenBLAS 0.3.21's threaded
     * level-3 calls from several threads at once are the known hazard). */
    const char *env = getenv("PROPS_ROUNDS");
    int rounds = env && atoi(env) > 0 ? atoi(env) : 10;
    /* As the server runs it: one OpenBLAS thread, parallelism of our own. */
    int before = openblas_get_num_threads();
    openblas_set_num_threads(1);
    for (size_t k = 0; k < sizeof mods / sizeof mods[0]; k++) {
        attn_config cfg = big_config(mods[k]);
        cfg.dropout = 0.1;
        cfg.training = 1; /* the generator is per call: same seed, same bits */
        call c;
        call_setup(&c, &cfg, 13, 14);
        attn_rng rng;
        attn_rng_seed(&rng, 5);
        call_run(&c, &rng);
        enum { N = 4 };
        worker ws[N];
        pthread_t th[N];
        for (int t = 0; t < N; t++) {
            ws[t] = (worker){.proto = &c, .rounds = rounds, .rc = ATTN_OK};
            ws[t].context = calloc(c.plan.n_context, sizeof(float));
            ws[t].weights = calloc(c.plan.n_scores, sizeof(float));
            ck_assert(ws[t].context && ws[t].weights);
            ck_assert_int_eq(pthread_create(&th[t], NULL, work, &ws[t]), 0);
        }
        for (int t = 0; t < N; t++) pthread_join(th[t], NULL);
        for (int t = 0; t < N; t++) {
            ck_assert_int_eq(ws[t].rc, ATTN_OK);
            ck_assert_msg(bits_equal(ws[t].context, c.b.out.context, c.plan.n_context),
                          "%s: thread %d's context differs from the serial run (max %u ulp)",
                          attn_module_name(mods[k]), t,
                          golden_max_ulp(ws[t].context, c.b.out.context, c.plan.n_context));
            ck_assert_msg(bits_equal(ws[t].weights, c.b.out.weights, c.plan.n_scores),
                          "%s: thread %d's weights differ from the serial run",
                          attn_module_name(mods[k]), t);
            free(ws[t].context);
            free(ws[t].weights);
        }
        call_free(&c);
    }
    openblas_set_num_threads(before);
}
END_TEST

/* The block fill draws what one call per value draws, whatever the lengths
 * and however they straddle the generator's 624-word blocks. */
START_TEST(test_uniform_fill_equals_draws) {
    static const size_t lengths[] = {1, 7, 8, 9, 623, 624, 625, 1000, 1248, 5000};
    float *a = malloc(5000 * sizeof *a), *b = malloc(5000 * sizeof *b);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    attn_rng one, fill;
    attn_rng_seed(&one, 123);
    fill = one;
    int checked = 0;
    for (int round = 0; round < 3; round++) {
        for (size_t k = 0; k < sizeof lengths / sizeof *lengths; k++) {
            size_t n = lengths[k];
            float from = round == 1 ? 0.0f : -0.0360844f, to = round == 1 ? 1.0f : 0.0360844f;
            for (size_t i = 0; i < n; i++) a[i] = attn_rng_uniform(&one, from, to);
            attn_rng_uniform_fill(&fill, b, n, from, to);
            ck_assert_msg(memcmp(a, b, n * sizeof *a) == 0, "fill of %zu differs (round %d)", n, round);
            checked++;
        }
    }
    ck_assert_uint_eq(attn_rng_u32(&one), attn_rng_u32(&fill)); /* the same state after */
    ck_assert_int_eq(checked, 30);
    free(a);
    free(b);
}
END_TEST

static Suite *props_suite(void) {
    Suite *s = suite_create("props");
    const TTest *weights[] = {test_causal_upper_zero, test_mask_methods_agree, NULL};
    TCase *t = tcase_with(s, "weights", 0, weights);
    tcase_add_loop_test(t, test_rows_sum_to_one, 0, ATTN_MODULE_COUNT);
    const TTest *equivalences[] = {test_wrapper_equals_heads, NULL};
    TCase *e = tcase_with(s, "equivalences", 0, equivalences);
    tcase_add_loop_test(e, test_batch_equals_sequences, 0, ATTN_MODULE_COUNT);
    const TTest *threads[] = {test_openblas_threads_agree, test_reentrant_threads, NULL};
    const TTest *rng[] = {test_uniform_fill_equals_draws, NULL};
    tcase_with(s, "rng", 0, rng);
    tcase_with(s, "threads", 60, threads);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {props_suite}};
