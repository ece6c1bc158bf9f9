/* test_core_encoders.c - core's encoders and padding (core/lm.h), on random
 * weights (the PyTorch comparisons are tests/test_api_encoders.c's):
 *
 *   a padded batch runs packed (its tokens alone: the packed run's padded
 *     rows are exactly 0) and gives what the dense run (the same batch with
 *     a capture asked, padding as the kernels' key mask) gives, within float
 *     rounding, for logits, hidden states, the pooler and the last hidden
 *     states; each row's tokens give what the row alone, unpadded, gives;
 *   a padded key changes nothing: other ids at the padded positions give
 *     the same logits at the tokens;
 *   pooling: every mode against a loop written here, normalised or not;
 *   refusals: token types a model lacks or out of range, logits without an
 *     MLM head, a pooler it lacks, a cache for an encoder, RoBERTa's
 *     positions past its table.
 * The same for a causal model (Llama) with a batch padded on the right, and
 * for rows of 150 and 9 tokens (the packed run's two paths). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/lm.h"
#include "tests/support/check_main.h"

enum { B = 3, T = 7, C = 16, H = 4, F = 32, V = 40, L = 2 };

static const uint8_t MASK[B * T] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0};
static const int LEN[B] = {7, 4, 2};

static void bert_config(attn_arch arch, attn_lm_config *c) {
    attn_lm_config_defaults(arch, c);
    c->vocab_size = V, c->context = 16, c->n_layer = L, c->n_head = H, c->width = C, c->ffn = F;
    c->mlm_head = 1, c->pooler = 1;
}

/* Parameters of plan, uniform in [-0.4, 0.4) (norm weights about 1). */
static float *random_params(const attn_lm_plan *p, unsigned seed) {
    float *w = malloc(p->n_params * sizeof *w);
    ck_assert_ptr_nonnull(w);
    srand(seed);
    for (size_t i = 0; i < p->n_params; i++) w[i] = ((float)rand() / (float)RAND_MAX - 0.5f) * 0.8f;
    for (int i = 0; i < p->param_count; i++) {
        attn_param e;
        attn_lm_param_get(p, i, &e);
        if (strstr(e.name, "LayerNorm.weight") || strstr(e.name, "layer_norm.weight") ||
            strstr(e.name, "norm.weight"))
            for (size_t k = 0; k < e.count; k++) w[e.offset + k] += 1.0f;
    }
    return w;
}

static void ids(int32_t *idx, unsigned seed) {
    srand(seed);
    for (int i = 0; i < B * T; i++) idx[i] = MASK[i] ? 2 + rand() % (V - 2) : 0;
}

typedef struct {
    float logits[B * T * V], hidden[(L + 1) * B * T * C], pooled[B * C], last[B * T * C];
} outs;

/* One run; capture: ask for a capture (the dense run). */
static void run(const attn_lm_plan *p, const float *w, const int32_t *idx, const uint8_t *mask,
                const int32_t *types, int capture, outs *o) {
    static float cap[B * T * C];
    attn_lm_capture c = {.layer = 0, .hook = ATTN_HOOK_RESID_PRE, .dst = cap};
    attn_lm_inputs in = {.idx = idx, .attention_mask = mask, .token_type_ids = types,
                         .captures = capture ? &c : NULL, .n_captures = capture};
    attn_lm_outputs out = {.logits = p->head ? o->logits : NULL, .hidden_states = o->hidden,
                           .pooler_output = p->spec.pooler ? o->pooled : NULL, .last_hidden = o->last};
    attn_error err = {0};
    ck_assert_msg(attn_lm_run(p, w, &in, NULL, &out, &err) == ATTN_OK, "%s: %s", err.field, err.message);
}

static double max_diff_tokens(const float *a, const float *b, int lead, int width) {
    double worst = 0.0;
    for (int l = 0; l < lead; l++)
        for (int i = 0; i < B * T; i++)
            for (int k = 0; MASK[i] && k < width; k++) {
                size_t at = ((size_t)l * B * T + (size_t)i) * (size_t)width + (size_t)k;
                double d = fabs((double)a[at] - b[at]);
                worst = d > worst ? d : worst;
            }
    return worst;
}

/* Packed (no capture) against dense (a capture), the padded rows of the
 * packed run 0, every row against itself alone. */
static void packed_equals_dense(attn_arch arch) {
    attn_lm_config cfg;
    attn_lm_plan p, p1;
    attn_error err = {0};
    bert_config(arch, &cfg);
    ck_assert(attn_lm_plan_make(&cfg, B, T, 0, &p, &err) == ATTN_OK);
    float *w = random_params(&p, 7);
    int32_t idx[B * T], types[B * T] = {0};
    ids(idx, 3);
    for (int i = 0; p.spec.type_vocab > 1 && i < B * T; i++) types[i] = (i % T) > 3;
    int32_t *ty = p.spec.type_vocab > 1 ? types : NULL;
    static outs packed, dense, alone;
    run(&p, w, idx, MASK, ty, 0, &packed);
    run(&p, w, idx, MASK, ty, 1, &dense);
    ck_assert(max_diff_tokens(packed.logits, dense.logits, 1, V) < 1e-5);
    ck_assert(max_diff_tokens(packed.hidden, dense.hidden, L + 1, C) < 1e-5);
    ck_assert(max_diff_tokens(packed.last, dense.last, 1, C) < 1e-5);
    for (int i = 0; i < B * C; i++) ck_assert(fabsf(packed.pooled[i] - dense.pooled[i]) < 1e-5f);
    int zeros = 1, dense_zero = 1;
    for (int i = 0; i < B * T * C; i++) {
        if (MASK[i / C]) continue;
        zeros &= packed.last[i] == 0.0f;
        dense_zero &= dense.last[i] == 0.0f;
    }
    ck_assert_msg(zeros && !dense_zero, "the packed run computed its padding (or the dense one did not)");
    for (int b = 0; b < B; b++) { /* row b alone */
        ck_assert(attn_lm_plan_make(&cfg, 1, LEN[b], 0, &p1, &err) == ATTN_OK);
        run(&p1, w, idx + b * T, NULL, ty ? ty + b * T : NULL, 0, &alone);
        for (int i = 0; i < LEN[b] * V; i++)
            ck_assert(fabsf(alone.logits[i] - packed.logits[(size_t)b * T * V + (size_t)i]) < 1e-5f);
    }
    printf("%s: packed = dense = each row alone; the packed run's padding untouched\n", attn_arch_name(arch));
    free(w);
}

START_TEST(encoders_packed) {
    packed_equals_dense(ATTN_ARCH_BERT);
    packed_equals_dense(ATTN_ARCH_ROBERTA);
    packed_equals_dense(ATTN_ARCH_DISTILBERT);
}
END_TEST

/* Other ids at padded positions change nothing at the tokens (dense run). */
START_TEST(padded_keys_ignored) {
    attn_lm_config cfg;
    attn_lm_plan p;
    bert_config(ATTN_ARCH_BERT, &cfg);
    ck_assert(attn_lm_plan_make(&cfg, B, T, 0, &p, NULL) == ATTN_OK);
    float *w = random_params(&p, 9);
    int32_t a[B * T], b[B * T];
    ids(a, 5);
    memcpy(b, a, sizeof a);
    for (int i = 0; i < B * T; i++) b[i] = MASK[i] ? a[i] : 3 + i % 7;
    static outs x, y;
    run(&p, w, a, MASK, NULL, 1, &x);
    run(&p, w, b, MASK, NULL, 1, &y);
    ck_assert(max_diff_tokens(x.logits, y.logits, 1, V) == 0.0);
    free(w);
}
END_TEST

/* Each pooling mode against a loop. */
START_TEST(pooling_modes) {
    float h[B * T * C], out[B * 6 * C];
    for (int i = 0; i < B * T * C; i++) h[i] = sinf(0.37f * (float)i);
    attn_lm_pooling pl = {.modes = ATTN_POOL_CLS | ATTN_POOL_MAX | ATTN_POOL_MEAN | ATTN_POOL_MEAN_SQRT |
                                   ATTN_POOL_WEIGHTED | ATTN_POOL_LAST};
    ck_assert_int_eq(attn_lm_pool_width(&pl, C), 6 * C);
    ck_assert(attn_lm_pool(&pl, h, MASK, B, T, C, out, NULL) == ATTN_OK);
    for (int b = 0; b < B; b++)
        for (int c = 0; c < C; c++) {
            double sum = 0, wsum = 0, wn = 0, most = -1e30;
            for (int t = 0; t < LEN[b]; t++) {
                double x = h[(b * T + t) * C + c];
                sum += x, wsum += x * (t + 1), wn += t + 1, most = x > most ? x : most;
            }
            const float *o = out + b * 6 * C;
            double want[6] = {h[b * T * C + c], most, sum / LEN[b], sum / sqrt(LEN[b]), wsum / wn,
                              h[(b * T + LEN[b] - 1) * C + c]};
            for (int m = 0; m < 6; m++) ck_assert_msg(fabs(o[m * C + c] - want[m]) < 1e-5, "mode %d", m);
        }
    pl = (attn_lm_pooling){.modes = ATTN_POOL_MEAN, .normalize = 1};
    ck_assert(attn_lm_pool(&pl, h, MASK, B, T, C, out, NULL) == ATTN_OK);
    for (int b = 0; b < B; b++) {
        double n = 0;
        for (int c = 0; c < C; c++) n += (double)out[b * C + c] * out[b * C + c];
        ck_assert(fabs(n - 1.0) < 1e-5);
    }
    pl.modes = 0;
    ck_assert_int_eq(attn_lm_pool(&pl, h, MASK, B, T, C, out, NULL), ATTN_ERR_ARG);
}
END_TEST

static void expect_run_error(const attn_lm_plan *p, const float *w, const attn_lm_inputs *in,
                             attn_lm_outputs *out, const char *field) {
    attn_error err = {0};
    ck_assert_int_eq(attn_lm_run(p, w, in, NULL, out, &err), ATTN_ERR_ARG);
    ck_assert_str_eq(err.field, field);
}

START_TEST(refusals) {
    attn_lm_config cfg;
    attn_lm_plan p;
    attn_error err = {0};
    bert_config(ATTN_ARCH_BERTMODEL, &cfg);
    cfg.mlm_head = 0, cfg.pooler = 0;
    ck_assert(attn_lm_plan_make(&cfg, 1, T, 0, &p, &err) == ATTN_OK);
    float *w = random_params(&p, 1), logits[T * V], pooled[C];
    int32_t idx[T] = {2, 3, 4, 5, 6, 7, 8}, bad[T] = {0, 0, 2, 0, 0, 0, 0};
    attn_lm_inputs in = {.idx = idx};
    expect_run_error(&p, w, &in, &(attn_lm_outputs){.logits = logits}, "logits");
    expect_run_error(&p, w, &in, &(attn_lm_outputs){.pooler_output = pooled}, "pooler_output");
    ck_assert_int_eq(attn_lm_logit_lens(&p, w, pooled, 1, NULL, logits, &err), ATTN_ERR_ARG);
    in.token_type_ids = bad; /* type_vocab_size 2 */
    expect_run_error(&p, w, &in, &(attn_lm_outputs){0}, "token_type_ids");
    attn_lm_cache *cache = NULL;
    ck_assert_int_eq(attn_lm_cache_create(&cfg, 1, 4, &cache, &err), ATTN_ERR_ARG);
    ck_assert_str_eq(err.field, "cache");
    ck_assert(!attn_lm_has_hook(&p, ATTN_HOOK_LN_FINAL_NORMALIZED) && attn_lm_has_hook(&p, ATTN_HOOK_NORMALIZED_RESID_POST));
    ck_assert_int_eq(attn_lm_block_output_hook(&p), ATTN_HOOK_NORMALIZED_RESID_POST);
    free(w);
    bert_config(ATTN_ARCH_DISTILBERT, &cfg);
    ck_assert(attn_lm_plan_make(&cfg, 1, T, 0, &p, &err) == ATTN_OK);
    w = random_params(&p, 2);
    in.token_type_ids = idx;
    expect_run_error(&p, w, &in, &(attn_lm_outputs){0}, "token_type_ids");
    free(w);
    bert_config(ATTN_ARCH_ROBERTA, &cfg); /* pad_token_id 1: 16 rows hold 14 tokens */
    ck_assert_int_eq(attn_lm_plan_make(&cfg, 1, 15, 0, &p, &err), ATTN_ERR_SHAPE);
    ck_assert_int_eq(attn_lm_plan_make(&cfg, 1, 14, 0, &p, &err), ATTN_OK);
}
END_TEST

/* A causal model's batch padded on the right: packed = dense = alone. */
START_TEST(decoder_padded) {
    attn_lm_config cfg;
    attn_lm_plan p, p1;
    attn_lm_config_defaults(ATTN_ARCH_LLAMA, &cfg);
    cfg.vocab_size = V, cfg.context = 16, cfg.n_layer = L, cfg.n_head = H, cfg.n_kv_head = 2;
    cfg.width = C, cfg.ffn = F;
    ck_assert(attn_lm_plan_make(&cfg, B, T, 0, &p, NULL) == ATTN_OK);
    float *w = random_params(&p, 11);
    int32_t idx[B * T];
    ids(idx, 4);
    static outs packed, dense, alone;
    run(&p, w, idx, MASK, NULL, 0, &packed);
    run(&p, w, idx, MASK, NULL, 1, &dense);
    ck_assert(max_diff_tokens(packed.logits, dense.logits, 1, V) < 1e-5);
    for (int b = 0; b < B; b++) {
        ck_assert(attn_lm_plan_make(&cfg, 1, LEN[b], 0, &p1, NULL) == ATTN_OK);
        run(&p1, w, idx + b * T, NULL, NULL, 0, &alone);
        for (int i = 0; i < LEN[b] * V; i++)
            ck_assert(fabsf(alone.logits[i] - packed.logits[(size_t)b * T * V + (size_t)i]) < 1e-5f);
    }
    free(w);
}
END_TEST

/* The loss and an analysis of the maps read [B][T] rows: a padded batch
 * asking for them runs dense, the same numbers as with a capture (which
 * always runs dense); packed, the loss would read other rows. */
START_TEST(loss_and_analyses_dense) {
    attn_lm_config cfg;
    attn_lm_plan p;
    attn_lm_config_defaults(ATTN_ARCH_LLAMA, &cfg);
    cfg.vocab_size = V, cfg.context = 16, cfg.n_layer = L, cfg.n_head = H, cfg.n_kv_head = 2;
    cfg.width = C, cfg.ffn = F;
    ck_assert(attn_lm_plan_make(&cfg, B, T, 0, &p, NULL) == ATTN_OK);
    float *w = random_params(&p, 13);
    int32_t idx[B * T];
    ids(idx, 5);
    static float cap[B * T * C], loss[2][B], entropy[2][B * L * H];
    attn_lm_capture c = {.layer = 0, .hook = ATTN_HOOK_RESID_PRE, .dst = cap};
    for (int k = 0; k < 2; k++) {
        attn_lm_inputs in = {.idx = idx, .attention_mask = MASK, .captures = k ? &c : NULL, .n_captures = k};
        attn_lm_outputs out = {.loss = loss[k]};
        out.analysis[ATTN_ANALYSIS_ENTROPY] = entropy[k];
        attn_error err = {0};
        ck_assert_msg(attn_lm_run(&p, w, &in, NULL, &out, &err) == ATTN_OK, "%s", err.message);
    }
    for (int b = 0; b < B; b++) ck_assert_msg(loss[0][b] == loss[1][b], "row %d: %g, %g", b, loss[0][b], loss[1][b]);
    for (int i = 0; i < B * L * H; i++) ck_assert(entropy[0][i] == entropy[1][i]);
    free(w);
}
END_TEST

/* Row b's mean cross-entropy over its tokens, from logits [T][V] (a loop
 * written here as transformers' loss with labels = input_ids and -100 at
 * the padding: the next token for a causal model, the token itself for an
 * MLM). */
static double ce_loop(const float *logits, const int32_t *idx, int n, int causal) {
    double sum = 0.0;
    for (int t = 0; t + causal < n; t++) {
        const float *x = logits + (size_t)t * V;
        double max = x[0], z = 0.0;
        for (int v = 1; v < V; v++) max = fmax(max, x[v]);
        for (int v = 0; v < V; v++) z += exp((double)x[v] - max);
        sum += log(z) + max - x[idx[t + causal]];
    }
    return n - causal > 0 ? sum / (n - causal) : 0.0;
}

/* A padded batch's loss scores its tokens alone: with and without the
 * logits asked, equal to the loop above on the row's logits; importance
 * (whose ablated runs keep the padding) equal to each row's alone,
 * unpadded. For BERT's MLM and a causal Llama. */
static void loss_padded(attn_arch arch) {
    int causal = arch == ATTN_ARCH_LLAMA;
    attn_lm_config cfg;
    attn_lm_plan p, p1;
    attn_error err = {0};
    bert_config(arch, &cfg);
    if (causal) attn_lm_config_defaults(arch, &cfg), cfg.n_kv_head = 2;
    cfg.vocab_size = V, cfg.context = 16, cfg.n_layer = L, cfg.n_head = H, cfg.width = C, cfg.ffn = F;
    ck_assert(attn_lm_plan_make(&cfg, B, T, 0, &p, &err) == ATTN_OK);
    float *w = random_params(&p, 21);
    int32_t idx[B * T];
    ids(idx, 8);
    static float logits[B * T * V], loss[2][B], imp[B * L * H], loss1[1], imp1[L * H], log1[T * V];
    for (int k = 0; k < 2; k++) { /* k = 0: logits asked; 1: the loss alone, in chunks */
        attn_lm_inputs in = {.idx = idx, .attention_mask = MASK};
        attn_lm_outputs out = {.loss = loss[k], .logits = k ? NULL : logits};
        if (k) out.analysis[ATTN_ANALYSIS_IMPORTANCE] = imp;
        ck_assert_msg(attn_lm_run(&p, w, &in, NULL, &out, &err) == ATTN_OK, "%s", err.message);
    }
    double worst = 0.0;
    for (int b = 0; b < B; b++) {
        double want = ce_loop(logits + (size_t)b * T * V, idx + b * T, LEN[b], causal);
        for (int k = 0; k < 2; k++)
            ck_assert_msg(fabs(loss[k][b] - want) < 1e-5 * (1 + fabs(want)), "%s row %d: loss %g, the loop's %g",
                          attn_arch_name(arch), b, loss[k][b], want);
        ck_assert(attn_lm_plan_make(&cfg, 1, LEN[b], 0, &p1, &err) == ATTN_OK);
        attn_lm_inputs in = {.idx = idx + b * T};
        attn_lm_outputs out = {.loss = loss1, .logits = log1};
        out.analysis[ATTN_ANALYSIS_IMPORTANCE] = imp1;
        ck_assert_msg(attn_lm_run(&p1, w, &in, NULL, &out, &err) == ATTN_OK, "%s", err.message);
        ck_assert_msg(fabs(loss1[0] - loss[1][b]) < 1e-5 * (1 + fabs(loss1[0])), "%s row %d: loss %g, alone %g",
                      attn_arch_name(arch), b, loss[1][b], loss1[0]);
        for (int i = 0; i < L * H; i++) {
            double d = fabs((double)imp1[i] - imp[b * L * H + i]);
            worst = fmax(worst, d);
            ck_assert_msg(d < 1e-4, "%s row %d head %d: importance %g, alone %g", attn_arch_name(arch), b, i,
                          imp[b * L * H + i], imp1[i]);
        }
    }
    printf("%s: a padded batch's loss scores its tokens alone; importance = each row's alone (largest "
           "difference %.2g)\n", attn_arch_name(arch), worst);
    free(w);
}

START_TEST(loss_and_importance_padded) {
    loss_padded(ATTN_ARCH_BERT);
    loss_padded(ATTN_ARCH_LLAMA);
}
END_TEST

/* Rows on both sides of the packed run's two paths (attend.c: a row of at
 * most 128 tokens as one item, a longer one through the fused kernel): a
 * batch of 150 and 9 tokens, packed = dense, for a two-way and a causal
 * model with grouped queries. */
static void long_and_short(attn_arch arch) {
    enum { LT = 150, SHORT = 9 };
    attn_lm_config cfg;
    attn_lm_plan p;
    attn_error err = {0};
    bert_config(arch, &cfg);
    if (arch == ATTN_ARCH_LLAMA) attn_lm_config_defaults(arch, &cfg), cfg.n_kv_head = 2;
    cfg.vocab_size = V, cfg.context = 160, cfg.n_layer = L, cfg.n_head = H, cfg.width = C, cfg.ffn = F;
    ck_assert(attn_lm_plan_make(&cfg, 2, LT, 0, &p, &err) == ATTN_OK);
    float *w = random_params(&p, 5);
    static int32_t idx[2 * LT];
    static uint8_t mask[2 * LT];
    static float cap[2 * LT * C], hid[2][(L + 1) * 2 * LT * C];
    srand(9);
    for (int i = 0; i < 2 * LT; i++) mask[i] = i < LT + SHORT, idx[i] = mask[i] ? 2 + rand() % (V - 2) : 0;
    for (int k = 0; k < 2; k++) { /* k = 0 packed, 1 dense (a capture asked) */
        attn_lm_capture c = {.layer = 0, .hook = ATTN_HOOK_RESID_PRE, .dst = cap};
        attn_lm_inputs in = {.idx = idx, .attention_mask = mask, .captures = k ? &c : NULL, .n_captures = k};
        attn_lm_outputs out = {.hidden_states = hid[k]};
        ck_assert_msg(attn_lm_run(&p, w, &in, NULL, &out, &err) == ATTN_OK, "%s", err.message);
    }
    double worst = 0.0;
    for (int l = 0; l <= L; l++)
        for (int i = 0; i < 2 * LT; i++)
            for (int j = 0; mask[i] && j < C; j++) {
                size_t at = ((size_t)l * 2 * LT + (size_t)i) * C + (size_t)j;
                worst = fmax(worst, fabs((double)hid[0][at] - hid[1][at]));
            }
    ck_assert_msg(worst < 1e-5, "%s: packed and dense differ by %g", attn_arch_name(arch), worst);
    printf("%s: rows of %d and %d tokens, packed = dense (largest difference %.2g)\n", attn_arch_name(arch), LT,
           SHORT, worst);
    free(w);
}

START_TEST(packed_long_and_short) {
    long_and_short(ATTN_ARCH_BERT);
    long_and_short(ATTN_ARCH_LLAMA);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("core_encoders");
    TCase *tc = tcase_create("encoders");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, encoders_packed);
    tcase_add_test(tc, padded_keys_ignored);
    tcase_add_test(tc, pooling_modes);
    tcase_add_test(tc, refusals);
    tcase_add_test(tc, decoder_padded);
    tcase_add_test(tc, loss_and_analyses_dense);
    tcase_add_test(tc, loss_and_importance_padded);
    tcase_add_test(tc, packed_long_and_short);
    suite_add_tcase(s, tc);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {suite}};
