/* test_core_seeds.c - the tensors printed in the seed chapters, hard-coded
 * from the text: seed 000 sections 3.3 to 3.6 (to the 4 printed decimals)
 * and seed 003 chapter 4, "Crane ate fish" (to 2 decimals).
 *
 * A printed value v stands for anything in [v - 0.00005, v + 0.00005]; the
 * checks allow that plus 1e-6 of float slack.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/attention.h"
#include "tests/support/check_main.h"
#include "tests/support/golden.h"

#define TOL4 (0.5e-4 + 1e-6)
#define TOL2 (0.5e-2 + 1e-6)
#define NINF (-INFINITY)

/* "Your journey starts with one step", seed 000 3.3.1 */
static const float INPUTS[6][3] = {
    {0.43f, 0.15f, 0.89f}, {0.55f, 0.87f, 0.66f}, {0.57f, 0.85f, 0.64f},
    {0.22f, 0.58f, 0.33f}, {0.77f, 0.25f, 0.10f}, {0.05f, 0.80f, 0.55f},
};

/* The batch of 3.5.3: the inputs twice. */
static float g_batch[2][6][3];

static void setup_batch(void) {
    memcpy(g_batch[0], INPUTS, sizeof INPUTS);
    memcpy(g_batch[1], INPUTS, sizeof INPUTS);
}

/* One call: plan, parameters from torch.manual_seed(seed), forward with every
 * output. The caller frees b with golden_buffers_free. */
typedef struct {
    attn_plan plan;
    golden_buffers b;
    float *params;
} run_result;

static void run(const attn_config *cfg, uint64_t seed, const attn_inputs *given, run_result *r) {
    attn_error err = {0};
    int rc = attn_plan_make(cfg, &r->plan, &err);
    ck_assert_msg(rc == ATTN_OK, "attn_plan_make: %s (%s)", err.message, err.field);
    r->params = malloc((r->plan.n_params ? r->plan.n_params : 1) * sizeof(float));
    ck_assert_ptr_nonnull(r->params);
    attn_rng rng;
    attn_rng_seed(&rng, seed);
    rc = attn_params_init(cfg, &r->plan, r->params, &rng, &err);
    ck_assert_msg(rc == ATTN_OK, "attn_params_init: %s", err.message);
    ck_assert_int_eq(golden_buffers_alloc(&r->plan, &r->b), 0);
    attn_inputs in = *given;
    in.params = r->plan.n_params ? r->params : NULL;
    rc = attn_forward(cfg, &r->plan, &in, &rng, &r->b.out, &err);
    ck_assert_msg(rc == ATTN_OK, "attn_forward: %s (%s)", err.message, err.field);
}

static void run_free(run_result *r) {
    golden_buffers_free(&r->b);
    free(r->params);
}

/* got[i * stride] against want[i] for i < n, to within tol; -inf exact. */
static void expect_near(const char *what, const float *got, size_t stride, const float *want,
                        size_t n, double tol) {
    for (size_t i = 0; i < n; i++) {
        float g = got[i * stride], w = want[i];
        if (isinf(w)) {
            ck_assert_msg(g == w, "%s[%zu]: got %.6f, printed -inf", what, i, (double)g);
            continue;
        }
        ck_assert_msg(fabs((double)g - (double)w) <= tol, "%s[%zu]: got %.6f, printed %.4f", what,
                      i, (double)g, (double)w);
    }
}

/* run() on inputs x alone (the modules that take x). */
static void run_x(const attn_config *cfg, uint64_t seed, const float *x, run_result *r) {
    attn_inputs in = {.x = x};
    run(cfg, seed, &in, r);
}

/* ==== 3.3 simple self-attention ============================================ */

static const attn_config SIMPLE = {.module = ATTN_SIMPLE, .batch = 1, .tokens = 6, .d_in = 3};

START_TEST(test_simple_query2) {
    /* 3.3.1, query x^(2): scores, the naive sum normalisation, softmax, z^(2) */
    static const float scores2[6] = {0.9544f, 1.4950f, 1.4754f, 0.8434f, 0.7070f, 1.0865f};
    static const float sum2[6] = {0.1455f, 0.2278f, 0.2249f, 0.1285f, 0.1077f, 0.1656f};
    static const float soft2[6] = {0.1385f, 0.2379f, 0.2333f, 0.1240f, 0.1082f, 0.1581f};
    static const float z2[3] = {0.4419f, 0.6515f, 0.5683f};
    run_result r;
    run_x(&SIMPLE, ATTN_TORCH_DEFAULT_SEED, &INPUTS[0][0], &r);
    expect_near("attn_scores_2", r.b.out.scores + 6, 1, scores2, 6, TOL4);
    expect_near("attn_weights_2 (softmax)", r.b.out.weights + 6, 1, soft2, 6, TOL4);
    expect_near("context_vec_2", r.b.out.context + 3, 1, z2, 3, TOL4);
    run_free(&r);

    attn_config sum = SIMPLE;
    sum.normalization = ATTN_NORM_SUM;
    run_x(&sum, ATTN_TORCH_DEFAULT_SEED, &INPUTS[0][0], &r);
    expect_near("attn_weights_2_tmp (sum)", r.b.out.weights + 6, 1, sum2, 6, TOL4);
    float total = 0.0f;
    for (int j = 0; j < 6; j++) total += r.b.out.weights[6 + j];
    ck_assert_msg(fabsf(total - 1.0f) < 1e-6f, "sum-normalised row sums to %.7f", (double)total);
    run_free(&r);
}
END_TEST

START_TEST(test_simple_all) {
    /* 3.3.2: every score, weight and context vector */
    static const float scores[36] = {
        0.9995f, 0.9544f, 0.9422f, 0.4753f, 0.4576f, 0.6310f,
        0.9544f, 1.4950f, 1.4754f, 0.8434f, 0.7070f, 1.0865f,
        0.9422f, 1.4754f, 1.4570f, 0.8296f, 0.7154f, 1.0605f,
        0.4753f, 0.8434f, 0.8296f, 0.4937f, 0.3474f, 0.6565f,
        0.4576f, 0.7070f, 0.7154f, 0.3474f, 0.6654f, 0.2935f,
        0.6310f, 1.0865f, 1.0605f, 0.6565f, 0.2935f, 0.9450f};
    static const float weights[36] = {
        0.2098f, 0.2006f, 0.1981f, 0.1242f, 0.1220f, 0.1452f,
        0.1385f, 0.2379f, 0.2333f, 0.1240f, 0.1082f, 0.1581f,
        0.1390f, 0.2369f, 0.2326f, 0.1242f, 0.1108f, 0.1565f,
        0.1435f, 0.2074f, 0.2046f, 0.1462f, 0.1263f, 0.1720f,
        0.1526f, 0.1958f, 0.1975f, 0.1367f, 0.1879f, 0.1295f,
        0.1385f, 0.2184f, 0.2128f, 0.1420f, 0.0988f, 0.1896f};
    static const float ctx[18] = {
        0.4421f, 0.5931f, 0.5790f, 0.4419f, 0.6515f, 0.5683f, 0.4431f, 0.6496f, 0.5671f,
        0.4304f, 0.6298f, 0.5510f, 0.4671f, 0.5910f, 0.5266f, 0.4177f, 0.6503f, 0.5645f};
    run_result r;
    run_x(&SIMPLE, ATTN_TORCH_DEFAULT_SEED, &INPUTS[0][0], &r);
    expect_near("attn_scores", r.b.out.scores, 1, scores, 36, TOL4);
    expect_near("attn_weights", r.b.out.weights, 1, weights, 36, TOL4);
    expect_near("all_context_vecs", r.b.out.context, 1, ctx, 18, TOL4);
    for (int i = 0; i < 6; i++) {
        float s = 0.0f;
        for (int j = 0; j < 6; j++) s += r.b.out.weights[i * 6 + j];
        ck_assert_msg(fabsf(s - 1.0f) < 1e-6f, "row %d sums to %.7f", i, (double)s);
    }
    run_free(&r);
}
END_TEST

/* ==== 3.4 trainable weights =================================================== */

START_TEST(test_v1_seed123) {
    /* 3.4.1 step by step (torch.manual_seed(123); three torch.rand(3, 2), the
     * same draws as SelfAttention_v1) and the 3.4.2 class output. */
    static const float query2[2] = {0.4306f, 1.4551f};
    static const float scores2[6] = {1.2705f, 1.8524f, 1.8111f, 1.0795f, 0.5577f, 1.5440f};
    static const float weights2[6] = {0.1500f, 0.2264f, 0.2199f, 0.1311f, 0.0906f, 0.1820f};
    static const float ctx[12] = {0.2996f, 0.8053f, 0.3061f, 0.8210f, 0.3058f, 0.8203f,
                                  0.2948f, 0.7939f, 0.2927f, 0.7891f, 0.2990f, 0.8040f};
    static const float score22 = 1.8524f;
    attn_config cfg = {.module = ATTN_SELF_V1, .batch = 1, .tokens = 6, .d_in = 3, .d_out = 2};
    run_result r;
    run_x(&cfg, 123, &INPUTS[0][0], &r);
    ck_assert_int_eq(r.plan.param_count, 3);
    ck_assert_uint_eq(r.plan.n_keys, 12);
    expect_near("query_2", r.b.out.queries + 2, 1, query2, 2, TOL4);
    expect_near("attn_score_22", r.b.out.scores + 6 + 1, 1, &score22, 1, TOL4);
    expect_near("attn_scores_2", r.b.out.scores + 6, 1, scores2, 6, TOL4);
    expect_near("attn_weights_2", r.b.out.weights + 6, 1, weights2, 6, TOL4);
    expect_near("sa_v1(inputs)", r.b.out.context, 1, ctx, 12, TOL4);
    run_free(&r);
}
END_TEST

START_TEST(test_v2_seed789) {
    static const float ctx[12] = {-0.0739f, 0.0713f, -0.0748f, 0.0703f, -0.0749f, 0.0702f,
                                  -0.0760f, 0.0685f, -0.0763f, 0.0679f, -0.0754f, 0.0693f};
    /* 3.5.1, In [25]: softmax(queries @ keys.T / sqrt(2)) of sa_v2 */
    static const float weights[36] = {
        0.1921f, 0.1646f, 0.1652f, 0.1550f, 0.1721f, 0.1510f,
        0.2041f, 0.1659f, 0.1662f, 0.1496f, 0.1665f, 0.1477f,
        0.2036f, 0.1659f, 0.1662f, 0.1498f, 0.1664f, 0.1480f,
        0.1869f, 0.1667f, 0.1668f, 0.1571f, 0.1661f, 0.1564f,
        0.1830f, 0.1669f, 0.1670f, 0.1588f, 0.1658f, 0.1585f,
        0.1935f, 0.1663f, 0.1666f, 0.1542f, 0.1666f, 0.1529f};
    attn_config cfg = {.module = ATTN_SELF_V2, .batch = 1, .tokens = 6, .d_in = 3, .d_out = 2};
    run_result r;
    run_x(&cfg, 789, &INPUTS[0][0], &r);
    expect_near("sa_v2(inputs)", r.b.out.context, 1, ctx, 12, TOL4);
    expect_near("attn_weights (3.5.1)", r.b.out.weights, 1, weights, 36, TOL4);
    run_free(&r);
}
END_TEST

/* ==== 3.5 causal attention ========================================================= */

/* CausalAttention(3, 2, 6) after torch.manual_seed(789) holds sa_v2's weights:
 * both build W_query, W_key, W_value as nn.Linear(3, 2, bias=False) in that order. */
static const attn_config CAUSAL_789 = {.module = ATTN_CAUSAL, .batch = 1, .tokens = 6, .d_in = 3,
                                       .d_out = 2, .context_length = 6, .causal = 1};

/* 3.5.1: masked_simple_norm (In [28]) and softmax of the -inf-masked scores (In [30]) */
static const float MASKED_WEIGHTS[36] = {
    1.0000f, 0.0000f, 0.0000f, 0.0000f, 0.0000f, 0.0000f,
    0.5517f, 0.4483f, 0.0000f, 0.0000f, 0.0000f, 0.0000f,
    0.3800f, 0.3097f, 0.3103f, 0.0000f, 0.0000f, 0.0000f,
    0.2758f, 0.2460f, 0.2462f, 0.2319f, 0.0000f, 0.0000f,
    0.2175f, 0.1983f, 0.1984f, 0.1888f, 0.1971f, 0.0000f,
    0.1935f, 0.1663f, 0.1666f, 0.1542f, 0.1666f, 0.1529f};

START_TEST(test_causal_mask_neg_inf) {
    /* In [29]: attn_scores.masked_fill(mask.bool(), -inf) (unscaled) */
    static const float masked[36] = {
        0.2899f, NINF, NINF, NINF, NINF, NINF,
        0.4656f, 0.1723f, NINF, NINF, NINF, NINF,
        0.4594f, 0.1703f, 0.1731f, NINF, NINF, NINF,
        0.2642f, 0.1024f, 0.1036f, 0.0186f, NINF, NINF,
        0.2183f, 0.0874f, 0.0882f, 0.0177f, 0.0786f, NINF,
        0.3408f, 0.1270f, 0.1290f, 0.0198f, 0.1290f, 0.0078f};
    run_result r;
    run_x(&CAUSAL_789, 789, &INPUTS[0][0], &r);
    /* core's masked_scores are scaled by 1/sqrt(2): undo it for the text's values */
    float unscaled[36];
    for (int i = 0; i < 36; i++) unscaled[i] = r.b.out.masked_scores[i] / r.plan.scale;
    expect_near("masked (In [29])", unscaled, 1, masked, 36, TOL4);
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++)
            if (j <= i)
                ck_assert_msg(fabsf(r.b.out.scores[i * 6 + j] - masked[i * 6 + j]) <= TOL4,
                              "raw score [%d][%d]", i, j);
    expect_near("attn_weights (In [30])", r.b.out.weights, 1, MASKED_WEIGHTS, 36, TOL4);
    run_free(&r);
}
END_TEST

START_TEST(test_causal_mask_renorm) {
    attn_config cfg = CAUSAL_789;
    cfg.mask_method = ATTN_MASK_RENORM;
    run_result r;
    run_x(&cfg, 789, &INPUTS[0][0], &r);
    expect_near("masked_simple_norm (In [28])", r.b.out.weights, 1, MASKED_WEIGHTS, 36, TOL4);
    run_free(&r);
}
END_TEST

START_TEST(test_dropout_ones) {
    /* 3.5.2, In [31]: torch.manual_seed(123); Dropout(0.5)(torch.ones(6, 6)) */
    static const float want[36] = {
        2, 2, 0, 2, 2, 0, 0, 0, 0, 2, 0, 2, 2, 2, 2, 2, 0, 2,
        0, 2, 2, 0, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 2, 2, 2, 0};
    attn_rng rng;
    attn_rng_seed(&rng, 123);
    for (int i = 0; i < 36; i++) {
        float got = attn_rng_bernoulli(&rng, 0.5) ? 1.0f / 0.5f : 0.0f;
        ck_assert_msg(got == want[i], "dropout(ones)[%d][%d]: got %g, printed %g", i / 6, i % 6,
                      (double)got, (double)want[i]);
    }
}
END_TEST

START_TEST(test_dropout_causal_weights) {
    /* 3.5.2, In [32]: torch.manual_seed(123); dropout(attn_weights) */
    static const float want[36] = {
        2.0000f, 0.0000f, 0.0000f, 0.0000f, 0.0000f, 0.0000f,
        0.0000f, 0.0000f, 0.0000f, 0.0000f, 0.0000f, 0.0000f,
        0.7599f, 0.6194f, 0.6206f, 0.0000f, 0.0000f, 0.0000f,
        0.0000f, 0.4921f, 0.4925f, 0.0000f, 0.0000f, 0.0000f,
        0.0000f, 0.3966f, 0.0000f, 0.3775f, 0.0000f, 0.0000f,
        0.0000f, 0.3327f, 0.3331f, 0.3084f, 0.3331f, 0.0000f};
    attn_config cfg = CAUSAL_789;
    cfg.dropout = 0.5;
    cfg.training = 1;
    cfg.has_dropout_seed = 1;
    cfg.dropout_seed = 123;
    run_result r;
    run_x(&cfg, 789, &INPUTS[0][0], &r);
    expect_near("dropout(attn_weights)", r.b.out.weights, 1, want, 36, TOL4);
    run_free(&r);
}
END_TEST

/* cfg on the batch of 3.5.3 (the inputs twice) with torch.manual_seed(seed):
 * the context of each sequence is the n printed values of want. */
static void expect_batch_context(const attn_config *cfg, uint64_t seed, const float *want,
                                 size_t n) {
    run_result r;
    run_x(cfg, seed, &g_batch[0][0][0], &r);
    ck_assert_uint_eq(r.plan.n_context, 2 * n);
    expect_near("context_vecs[0]", r.b.out.context, 1, want, n, TOL4);
    expect_near("context_vecs[1]", r.b.out.context + n, 1, want, n, TOL4);
    run_free(&r);
}

/* 3.5.3: one sequence's context, printed twice for the batch */
static const float CAUSAL_123[12] = {-0.4519f, 0.2216f, -0.5874f, 0.0058f, -0.6300f, -0.0632f,
                                     -0.5675f, -0.0843f, -0.5526f, -0.0981f, -0.5299f, -0.1081f};

START_TEST(test_causal_seed123) {
    attn_config cfg = {.module = ATTN_CAUSAL, .batch = 2, .tokens = 6, .d_in = 3, .d_out = 2,
                       .context_length = 6, .causal = 1, .dropout = 0.0, .training = 1};
    expect_batch_context(&cfg, 123, CAUSAL_123, 12);
}
END_TEST

/* ==== 3.6 multi-head ================================================================ */

START_TEST(test_wrapper_seed123) {
    static const float ctx[24] = {
        -0.4519f, 0.2216f, 0.4772f, 0.1063f, -0.5874f, 0.0058f, 0.5891f, 0.3257f,
        -0.6300f, -0.0632f, 0.6202f, 0.3860f, -0.5675f, -0.0843f, 0.5478f, 0.3589f,
        -0.5526f, -0.0981f, 0.5321f, 0.3428f, -0.5299f, -0.1081f, 0.5077f, 0.3493f};
    attn_config cfg = {.module = ATTN_MHA_WRAPPER, .batch = 2, .tokens = 6, .d_in = 3, .d_out = 2,
                       .num_heads = 2, .context_length = 6, .causal = 1, .training = 1};
    expect_batch_context(&cfg, 123, ctx, 24);
}
END_TEST

START_TEST(test_mha_seed123) {
    static const float ctx[12] = {0.3190f, 0.4858f, 0.2943f, 0.3897f, 0.2856f, 0.3593f,
                                  0.2693f, 0.3873f, 0.2639f, 0.3928f, 0.2575f, 0.4028f};
    attn_config cfg = {.module = ATTN_MHA, .batch = 2, .tokens = 6, .d_in = 3, .d_out = 2,
                       .num_heads = 2, .context_length = 6, .causal = 1, .training = 1};
    expect_batch_context(&cfg, 123, ctx, 12);
}
END_TEST

START_TEST(test_heads_matmul) {
    /* 3.6.2, In [37]: a @ a.transpose(2, 3) for a of shape (1, 2, 3, 4): SDPA's raw scores */
    static const float a[24] = {0.2745f, 0.6584f, 0.2775f, 0.8573f, 0.8993f, 0.0390f,
                                0.9268f, 0.7388f, 0.7179f, 0.7058f, 0.9156f, 0.4340f,
                                0.0772f, 0.3565f, 0.1479f, 0.5331f, 0.4066f, 0.2318f,
                                0.4545f, 0.9737f, 0.4606f, 0.5159f, 0.4220f, 0.5786f};
    static const float want[18] = {1.3208f, 1.1631f, 1.2879f, 1.1631f, 2.2150f, 1.8424f,
                                   1.2879f, 1.8424f, 2.0402f, 0.4391f, 0.7003f, 0.5903f,
                                   0.7003f, 1.3737f, 1.0620f, 0.5903f, 1.0620f, 0.9912f};
    attn_config cfg = {.module = ATTN_SDPA, .batch = 1, .tokens = 3, .d_in = 4, .num_heads = 2};
    attn_inputs in = {.query = a, .key = a, .value = a};
    run_result r;
    run(&cfg, ATTN_TORCH_DEFAULT_SEED, &in, &r);
    expect_near("a @ a.transpose(2, 3)", r.b.out.scores, 1, want, 18, TOL4);
    run_free(&r);
}
END_TEST

/* ==== seed 003, chapter 4: "Crane ate fish" / "Crane lifted steel" ======================== */

START_TEST(test_crane) {
    /* Q(crane) = K(crane) = [0.7, 0.7], V(crane) = [0.5, 0.5]; ate/fish keys
     * [0.9, 0.1], values [0.9, 0.1] / [0.8, 0.2]; lifted/steel keys [0.1, 0.9],
     * values [0.1, 0.9] / [0.2, 0.8]. Raw scores [0.98, 0.70, 0.70], no scaling.
     * The other tokens' queries are not in the text; only crane's row is checked. */
    static const float k[2][3][2] = {{{0.7f, 0.7f}, {0.9f, 0.1f}, {0.9f, 0.1f}},
                                     {{0.7f, 0.7f}, {0.1f, 0.9f}, {0.1f, 0.9f}}};
    static const float v[2][3][2] = {{{0.5f, 0.5f}, {0.9f, 0.1f}, {0.8f, 0.2f}},
                                     {{0.5f, 0.5f}, {0.1f, 0.9f}, {0.2f, 0.8f}}};
    static const float scores[3] = {0.98f, 0.70f, 0.70f};
    static const float weights[3] = {0.4f, 0.3f, 0.3f};
    static const float ctx_ate[2] = {0.71f, 0.29f}, ctx_lifted[2] = {0.29f, 0.71f};
    attn_config cfg = {.module = ATTN_SDPA, .batch = 2, .tokens = 3, .d_in = 2, .num_heads = 1,
                       .has_scale = 1, .scale = 1.0f};
    attn_inputs in = {.query = &k[0][0][0], .key = &k[0][0][0], .value = &v[0][0][0]};
    run_result r;
    run(&cfg, ATTN_TORCH_DEFAULT_SEED, &in, &r);
    expect_near("Score(crane -> .)", r.b.out.scores, 1, scores, 3, 1e-6);
    expect_near("weights, Crane ate fish", r.b.out.weights, 1, weights, 3, TOL2);
    expect_near("weights, Crane lifted steel", r.b.out.weights + 9, 1, weights, 3, TOL2);
    expect_near("New_Vector(crane), ate fish", r.b.out.context, 1, ctx_ate, 2, TOL2);
    expect_near("New_Vector(crane), lifted steel", r.b.out.context + 6, 1, ctx_lifted, 2, TOL2);
    run_free(&r);
}
END_TEST

static Suite *seeds_suite(void) {
    Suite *s = suite_create("seeds");
    const TTest *simple[] = {test_simple_query2, test_simple_all, NULL};
    tcase_with(s, "3.3_simple", 0, simple);
    const TTest *trainable[] = {test_v1_seed123, test_v2_seed789, NULL};
    tcase_with(s, "3.4_trainable", 0, trainable);
    const TTest *causal[] = {test_causal_mask_neg_inf, test_causal_mask_renorm, test_dropout_ones,
                             test_dropout_causal_weights, test_causal_seed123, NULL};
    tcase_add_checked_fixture(tcase_with(s, "3.5_causal", 0, causal), setup_batch, NULL);
    const TTest *multi_head[] = {test_wrapper_seed123, test_mha_seed123, test_heads_matmul, NULL};
    tcase_add_checked_fixture(tcase_with(s, "3.6_multi_head", 0, multi_head), setup_batch, NULL);
    const TTest *crane[] = {test_crane, NULL};
    tcase_with(s, "seed003_crane", 0, crane);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {seeds_suite}};
