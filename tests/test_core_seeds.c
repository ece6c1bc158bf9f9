/* test_core_seeds.c - the tensors printed in the seed chapters, copied from
 * the text: seed 000 sections 3.3 to 3.6 (to the 4 printed decimals; the
 * tensors as printed are in tests/seeds/printed.txt) and seed 003 chapter 4,
 * "Crane ate fish" (to 2 decimals, here).
 *
 * A printed value v stands for anything in [v - 0.00005, v + 0.00005]; the
 * checks allow that plus 1e-6 of float slack.
 */
#include <check.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/attention.h"
#include "tests/support/check_main.h"
#include "tests/support/files.h"
#include "tests/support/golden.h"

#define TOL4 (0.5e-4 + 1e-6)
#define TOL2 (0.5e-2 + 1e-6)
#define PRINTED "tests/seeds/printed.txt"

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

/* ==== The printed tensors (PRINTED) ===================================== */

/* One entry of PRINTED: its name, what it checks (n 0: nothing, it is read
 * by name) and its text after the header lines. */
typedef struct {
    char name[64], run[32], output[16];
    size_t at, n;
    const char *text;
} entry;

/* The entry at or after p (a "\n@ " line) into *e; returns where the next
 * one may start, or NULL when there is none. */
static const char *next_entry(const char *p, entry *e) {
    if ((p = strstr(p, "\n@ ")) == NULL) return NULL;
    *e = (entry){0};
    const char *bar = strstr(p + 3, " |"), *eol = strchr(p + 1, '\n');
    ck_assert_msg(bar && eol && bar < eol, PRINTED ": an entry's line has no \" | \"");
    snprintf(e->name, sizeof e->name, "%.*s", (int)(bar - p - 3), p + 3);
    if (strncmp(eol, "\n= ", 3) == 0) {
        ck_assert_msg(sscanf(eol + 3, "%31s %15s %zu %zu", e->run, e->output, &e->at, &e->n) == 4,
                      PRINTED ": %s: a \"= RUN OUTPUT AT N\" line", e->name);
        eol = strchr(eol + 1, '\n');
    }
    e->text = eol;
    return eol;
}

/* The numbers of e's tensor, in order, into out: exactly n of them, or the
 * test fails. A number starts a word ("-inf" is minus infinity); what
 * stands between < and > (grad_fn=<...>) is passed over. */
static void entry_numbers(const entry *e, float *out, size_t n) {
    size_t got = 0;
    for (const char *p = e->text; p && *p && strncmp(p, "\n@ ", 3) != 0; p++) {
        if (*p == '<' && (p = strchr(p, '>')) == NULL) break;
        int word = !isalnum((unsigned char)p[-1]) && p[-1] != '_' && p[-1] != '.';
        if (!word || !(isdigit((unsigned char)*p) || (*p == '-' && p[1] != ' '))) continue;
        char *end;
        float v = strtof(p, &end);
        if (end == p) continue;
        ck_assert_msg(got < n, "\"%s\" has more than %zu numbers", e->name, n);
        out[got++] = v;
        p = end - 1;
    }
    ck_assert_msg(got == n, "\"%s\" has %zu numbers, expected %zu", e->name, got, n);
}

/* The n numbers printed as name (PRINTED's entry) into out. */
static void printed(const char *name, float *out, size_t n) {
    char *txt = tfile_read_rel(PRINTED, NULL);
    ck_assert_msg(txt != NULL, "cannot read " PRINTED);
    entry e;
    const char *p = txt;
    while ((p = next_entry(p, &e)) != NULL && strcmp(e.name, name) != 0) {
    }
    ck_assert_msg(p != NULL, PRINTED " has no entry \"%s\"", name);
    entry_numbers(&e, out, n);
    free(txt);
}

/* r's outputs against every entry of PRINTED that checks run (there must be
 * n), to within TOL4. */
static void expect_printed(const char *run, int n, const run_result *r) {
    static const char *const names[] = {"scores", "weights", "context", "queries"};
    const float *outputs[] = {r->b.out.scores, r->b.out.weights, r->b.out.context,
                              r->b.out.queries};
    char *txt = tfile_read_rel(PRINTED, NULL);
    ck_assert_msg(txt != NULL, "cannot read " PRINTED);
    int checked = 0;
    entry e;
    for (const char *p = txt; (p = next_entry(p, &e)) != NULL;) {
        if (e.n == 0 || strcmp(e.run, run) != 0) continue;
        int o = 0;
        while (o < 4 && strcmp(names[o], e.output) != 0) o++;
        ck_assert_msg(o < 4, "%s: no output \"%s\"", e.name, e.output);
        float want[36];
        ck_assert_uint_le(e.n, 36);
        entry_numbers(&e, want, e.n);
        expect_near(e.name, outputs[o] + e.at, 1, want, e.n, TOL4);
        checked++;
    }
    ck_assert_msg(checked == n, PRINTED " checks %d outputs of run %s, expected %d", checked, run, n);
    free(txt);
}

/* run() on inputs x alone (the modules that take x). */
static void run_x(const attn_config *cfg, uint64_t seed, const float *x, run_result *r) {
    attn_inputs in = {.x = x};
    run(cfg, seed, &in, r);
}

/* cfg on the chapter's six inputs after torch.manual_seed(seed), against
 * the n tensors PRINTED gives for run. The run stays in *r for more checks
 * (the caller frees it with run_free). */
static void run_printed(const char *run, int n, const attn_config *cfg, uint64_t seed,
                        run_result *r) {
    run_x(cfg, seed, &INPUTS[0][0], r);
    expect_printed(run, n, r);
}

/* ==== 3.3 simple self-attention ============================================ */

static const attn_config SIMPLE = {.module = ATTN_SIMPLE, .batch = 1, .tokens = 6, .d_in = 3};

START_TEST(test_simple_query2) {
    /* 3.3.1, query x^(2): scores, the naive sum normalisation, softmax, z^(2) */
    run_result r;
    run_printed("3.3.1", 3, &SIMPLE, ATTN_TORCH_DEFAULT_SEED, &r);
    run_free(&r);

    attn_config sum = SIMPLE;
    sum.normalization = ATTN_NORM_SUM;
    run_printed("3.3.1-sum", 1, &sum, ATTN_TORCH_DEFAULT_SEED, &r);
    float total = 0.0f;
    for (int j = 0; j < 6; j++) total += r.b.out.weights[6 + j];
    ck_assert_msg(fabsf(total - 1.0f) < 1e-6f, "sum-normalised row sums to %.7f", (double)total);
    run_free(&r);
}
END_TEST

START_TEST(test_simple_all) {
    /* 3.3.2: every score, weight and context vector */
    run_result r;
    run_printed("3.3.2", 3, &SIMPLE, ATTN_TORCH_DEFAULT_SEED, &r);
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
    attn_config cfg = {.module = ATTN_SELF_V1, .batch = 1, .tokens = 6, .d_in = 3, .d_out = 2};
    run_result r;
    run_printed("3.4.1-v1", 5, &cfg, 123, &r);
    ck_assert_int_eq(r.plan.param_count, 3);
    ck_assert_uint_eq(r.plan.n_keys, 12);
    run_free(&r);
}
END_TEST

/* ==== 3.5 causal attention ========================================================= */

/* CausalAttention(3, 2, 6) after torch.manual_seed(789) holds sa_v2's weights:
 * both build W_query, W_key, W_value as nn.Linear(3, 2, bias=False) in that order. */
#define CAUSAL_789_FIELDS                                                                   \
    .module = ATTN_CAUSAL, .batch = 1, .tokens = 6, .d_in = 3, .d_out = 2, .context_length = 6, \
    .causal = 1
static const attn_config CAUSAL_789 = {CAUSAL_789_FIELDS};

START_TEST(test_causal_mask_neg_inf) {
    /* In [29]: attn_scores.masked_fill(mask.bool(), -inf) (unscaled) */
    float masked[36];
    printed("masked", masked, 36);
    run_result r;
    run_printed("3.5.1-inf", 1, &CAUSAL_789, 789, &r); /* the weights (In [30]) */
    /* core's masked_scores are scaled by 1/sqrt(2): undo it for the text's values */
    float unscaled[36];
    for (int i = 0; i < 36; i++) unscaled[i] = r.b.out.masked_scores[i] / r.plan.scale;
    expect_near("masked (In [29])", unscaled, 1, masked, 36, TOL4);
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++)
            if (j <= i)
                ck_assert_msg(fabsf(r.b.out.scores[i * 6 + j] - masked[i * 6 + j]) <= TOL4,
                              "raw score [%d][%d]", i, j);
    run_free(&r);
}
END_TEST

START_TEST(test_dropout_ones) {
    /* 3.5.2, In [31]: torch.manual_seed(123); Dropout(0.5)(torch.ones(6, 6)) */
    float want[36];
    printed("dropout(example)", want, 36);
    attn_rng rng;
    attn_rng_seed(&rng, 123);
    for (int i = 0; i < 36; i++) {
        float got = attn_rng_bernoulli(&rng, 0.5) ? 1.0f / 0.5f : 0.0f;
        ck_assert_msg(got == want[i], "dropout(ones)[%d][%d]: got %g, printed %g", i / 6, i % 6,
                      (double)got, (double)want[i]);
    }
}
END_TEST

/* Runs whose outputs PRINTED gives, nothing more: the run, how many
 * printed tensors it gives, torch.manual_seed(seed), the module. */
static const struct {
    const char *run;
    int n;
    uint64_t seed;
    attn_config cfg;
} PRINTED_RUNS[] = {
    /* 3.4.2: sa_v2(inputs), and 3.5.1's In [25]: softmax(queries @ keys.T / sqrt(2)) of it */
    {"3.4.2-v2", 2, 789,
     {.module = ATTN_SELF_V2, .batch = 1, .tokens = 6, .d_in = 3, .d_out = 2}},
    /* 3.5.1, In [28]: masked_simple_norm */
    {"3.5.1-renorm", 1, 789, {CAUSAL_789_FIELDS, .mask_method = ATTN_MASK_RENORM}},
    /* 3.5.2, In [32]: torch.manual_seed(123); dropout(attn_weights) */
    {"3.5.2", 1, 789,
     {CAUSAL_789_FIELDS, .dropout = 0.5, .training = 1, .has_dropout_seed = 1,
      .dropout_seed = 123}},
};

START_TEST(test_printed_runs) {
    run_result r;
    run_printed(PRINTED_RUNS[_i].run, PRINTED_RUNS[_i].n, &PRINTED_RUNS[_i].cfg,
                PRINTED_RUNS[_i].seed, &r);
    run_free(&r);
}
END_TEST

/* ==== 3.5.3 and 3.6: the batch ================================================ */

/* A module on the batch of 3.5.3 (the inputs twice) after
 * torch.manual_seed(123): the context printed (both sequences the same). */
static const struct {
    const char *printed;
    size_t n; /* the context's floats, both sequences */
    attn_config cfg;
} BATCH_CASES[] = {
    {"context_vecs (3.5.3)", 24,
     {.module = ATTN_CAUSAL, .batch = 2, .tokens = 6, .d_in = 3, .d_out = 2, .context_length = 6,
      .causal = 1, .dropout = 0.0, .training = 1}},
    {"context_vecs (3.6.1)", 48,
     {.module = ATTN_MHA_WRAPPER, .batch = 2, .tokens = 6, .d_in = 3, .d_out = 2, .num_heads = 2,
      .context_length = 6, .causal = 1, .training = 1}},
    {"context_vecs (3.6.2)", 24,
     {.module = ATTN_MHA, .batch = 2, .tokens = 6, .d_in = 3, .d_out = 2, .num_heads = 2,
      .context_length = 6, .causal = 1, .training = 1}},
};

START_TEST(test_batch_context) {
    size_t n = BATCH_CASES[_i].n;
    float want[48];
    ck_assert_uint_le(n, 48);
    printed(BATCH_CASES[_i].printed, want, n);
    run_result r;
    run_x(&BATCH_CASES[_i].cfg, 123, &g_batch[0][0][0], &r);
    ck_assert_uint_eq(r.plan.n_context, n);
    expect_near("context_vecs[0]", r.b.out.context, 1, want, n / 2, TOL4);
    expect_near("context_vecs[1]", r.b.out.context + n / 2, 1, want + n / 2, n / 2, TOL4);
    run_free(&r);
}
END_TEST

START_TEST(test_heads_matmul) {
    /* 3.6.2, In [37]: a of shape (1, 2, 3, 4) as query, key and value */
    float a[24];
    printed("a", a, 24);
    attn_config cfg = {.module = ATTN_SDPA, .batch = 1, .tokens = 3, .d_in = 4, .num_heads = 2};
    attn_inputs in = {.query = a, .key = a, .value = a};
    run_result r;
    run(&cfg, ATTN_TORCH_DEFAULT_SEED, &in, &r);
    expect_printed("3.6.2-heads", 1, &r);
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
    const TTest *trainable[] = {test_v1_seed123, NULL};
    tcase_with(s, "3.4_trainable", 0, trainable);
    const TTest *causal[] = {test_causal_mask_neg_inf, test_dropout_ones, NULL};
    tcase_with(s, "3.5_causal", 0, causal);
    /* 3.4.2's sa_v2, 3.5.1's masked_simple_norm, 3.5.2's dropout(attn_weights) */
    tcase_add_loop_test(tcase_with(s, "3.4_3.5_printed", 0, NULL), test_printed_runs, 0,
                        (int)(sizeof PRINTED_RUNS / sizeof PRINTED_RUNS[0]));
    /* 3.5.3's CausalAttention, 3.6.1's wrapper, 3.6.2's MultiHeadAttention */
    const TTest *multi_head[] = {test_heads_matmul, NULL};
    TCase *batch = tcase_with(s, "3.5.3_3.6_batch", 0, multi_head);
    tcase_add_checked_fixture(batch, setup_batch, NULL);
    tcase_add_loop_test(batch, test_batch_context, 0,
                        (int)(sizeof BATCH_CASES / sizeof BATCH_CASES[0]));
    const TTest *crane[] = {test_crane, NULL};
    tcase_with(s, "seed003_crane", 0, crane);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {seeds_suite}};
