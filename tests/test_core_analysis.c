/* test_core_analysis.c - the analyses of a run (attn_lm_outputs.analysis)
 * and its loss against PyTorch on the same weights, both families: every
 * file of tests/golden/analysis/ (written by tests/golden/generate_analysis.py
 * from TransformerLens's head detector, Abnar & Zuidema's rollout code and
 * a loop of ablated forwards with hooks).
 *
 * Per file, within |got - want| <= 1e-4 + 1e-3 |want|:
 *   entropy, sink, previous_token, duplicate_token, induction, rollout and
 *     importance of one run, and its loss, computed as the blocks make their
 *     weights (one block's held), and again beside attn_weights (read from
 *     them), without a pool and over a pool of 2;
 *   importance with the file's own ablations in every run;
 * the scores and the rollout against their definitions written out over
 * the maps of a longer run (T = 300, two rows) and of a Mistral with grouped
 * queries and a sliding window (importance against each ablated run's own
 * loss there); plus the table, the shapes,
 * the costs, an ablation of some batch rows only, and every refusal. Run from the repository root.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/lm.h"
#include "tests/support/check_main.h"
#include "tests/support/gpt2_files.h"

#include <cblas.h> /* openblas_set_num_threads */

#define ATOL 1e-4
#define RTOL 1e-3
#define MAX_TENSORS 32
#define MAX_ABLATE 8

/* ==== The golden file ===================================================== */

typedef struct {
    char name[64];
    size_t n;
    void *data;
} tensor;

typedef struct {
    char path[256];
    attn_lm_config cfg;
    int B, T;
    attn_lm_ablate ablate[MAX_ABLATE];
    int n_ablate;
    tensor t[MAX_TENSORS];
    int n;
} acase;

static const tensor *find(const acase *g, const char *name) {
    for (int i = 0; i < g->n; i++)
        if (strcmp(g->t[i].name, name) == 0) return &g->t[i];
    return NULL;
}

/* "1 0 mean; 2 1 zero" */
static void read_ablate(acase *g, const char *val) {
    char method[8];
    int l, h, used;
    while (sscanf(val, " %d %d %7[a-z]%n", &l, &h, method, &used) == 3 && g->n_ablate < MAX_ABLATE) {
        g->ablate[g->n_ablate++] = (attn_lm_ablate){
            .layer = l, .head = h, .method = strcmp(method, "mean") ? ATTN_ABLATE_ZERO : ATTN_ABLATE_MEAN};
        val += used;
        while (*val == ';' || *val == ' ') val++;
    }
}

static void header_line(acase *g, const char *key, const char *val) {
    if (gpt2_config_key(&g->cfg, key, val)) return;
    if (!strcmp(key, "B")) g->B = atoi(val);
    else if (!strcmp(key, "T")) g->T = atoi(val);
    else if (!strcmp(key, "ablate")) read_ablate(g, val);
}

static void acase_load(const char *path, acase *g) {
    *g = (acase){0};
    snprintf(g->path, sizeof g->path, "%s", path);
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        line[strcspn(line, "\n")] = 0;
        char key[64], dtype[8];
        size_t count;
        if (sscanf(line, "tensor %63s %7s %zu", key, dtype, &count) == 3) {
            ck_assert_int_lt(g->n, MAX_TENSORS);
            tensor *t = &g->t[g->n++];
            snprintf(t->name, sizeof t->name, "%s", key);
            t->n = count;
            t->data = malloc(count ? count * 4 : 4);
            ck_assert(t->data && fread(t->data, 4, count, f) == count && fgetc(f) == '\n');
            continue;
        }
        if (sscanf(line, "%63s", key) == 1)
            header_line(g, key, line + strlen(key) + (line[strlen(key)] ? 1 : 0));
    }
    free(line);
    fclose(f);
}

static void acase_free(acase *g) {
    for (int i = 0; i < g->n; i++) free(g->t[i].data);
}

static void expect_close(const char *file, const char *what, const float *got, const float *want,
                         size_t n) {
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - (double)want[i]);
        ck_assert_msg(d <= ATOL + RTOL * fabs((double)want[i]), "%s %s[%zu]: core %.9g, reference %.9g",
                      file, what, i, (double)got[i], (double)want[i]);
    }
}

/* ==== The golden runs ===================================================== */

static gpt2_files g_files;

typedef struct {
    acase g;
    attn_lm_plan plan;
    const float *params;
    const int32_t *idx;
    float *an[ATTN_ANALYSIS_COUNT];
    float *loss, *maps;
} fixture;

static void fixture_make(int i, fixture *fx) {
    memset(fx, 0, sizeof *fx);
    acase_load(g_files.paths[i], &fx->g);
    attn_error err = {0};
    ck_assert_int_eq(attn_lm_plan_make(&fx->g.cfg, fx->g.B, fx->g.T, 0, &fx->plan, &err), ATTN_OK);
    const tensor *p = find(&fx->g, "params"), *idx = find(&fx->g, "idx");
    ck_assert(p && idx && p->n == fx->plan.n_params);
    fx->params = p->data, fx->idx = idx->data;
    for (int a = 0; a < ATTN_ANALYSIS_COUNT; a++) {
        size_t count;
        ck_assert(attn_analysis_dims(&fx->plan, (attn_analysis)a, NULL, &count) >= 3);
        fx->an[a] = malloc(count * sizeof(float));
        ck_assert_ptr_nonnull(fx->an[a]);
    }
    fx->loss = malloc((size_t)fx->g.B * sizeof(float));
    fx->maps = malloc(fx->plan.n_attn * sizeof(float));
    ck_assert(fx->loss && fx->maps);
}

static void fixture_free(fixture *fx) {
    for (int a = 0; a < ATTN_ANALYSIS_COUNT; a++) free(fx->an[a]);
    free(fx->loss);
    free(fx->maps);
    acase_free(&fx->g);
}

/* One run with every analysis and the loss (and the maps when with_maps),
 * each compared with the file's. */
static void check_run(fixture *fx, attn_pool *pool, int with_maps) {
    attn_lm_outputs out = {.loss = fx->loss, .attn_weights = with_maps ? fx->maps : NULL};
    for (int a = 0; a < ATTN_ANALYSIS_COUNT; a++) {
        size_t count;
        attn_analysis_dims(&fx->plan, (attn_analysis)a, NULL, &count);
        for (size_t i = 0; i < count; i++) fx->an[a][i] = NAN;
        out.analysis[a] = fx->an[a];
    }
    attn_lm_inputs in = {.idx = fx->idx, .pool = pool};
    attn_error err = {0};
    ck_assert_msg(attn_lm_run(&fx->plan, fx->params, &in, NULL, &out, &err) == ATTN_OK, "%s: %s",
                  fx->g.path, err.message);
    expect_close(fx->g.path, "loss", fx->loss, find(&fx->g, "loss")->data, (size_t)fx->g.B);
    for (int a = 0; a < ATTN_ANALYSIS_COUNT; a++) {
        char name[64];
        snprintf(name, sizeof name, "analysis.%s", attn_analysis_get((attn_analysis)a)->name);
        const tensor *want = find(&fx->g, name);
        size_t count;
        attn_analysis_dims(&fx->plan, (attn_analysis)a, NULL, &count);
        ck_assert_msg(want && want->n == count, "%s: %s missing or %zu values", fx->g.path, name,
                      want ? want->n : 0);
        expect_close(fx->g.path, name, fx->an[a], want->data, count);
    }
}

START_TEST(golden_analyses) {
    fixture fx;
    fixture_make(_i, &fx);
    attn_pool *pool = attn_pool_create(2);
    ck_assert_ptr_nonnull(pool);
    check_run(&fx, NULL, 0);
    check_run(&fx, pool, 0);
    check_run(&fx, pool, 1);
    printf("%s: %d analyses and the loss within tolerance\n", fx.g.path, ATTN_ANALYSIS_COUNT);
    attn_pool_destroy(pool);
    fixture_free(&fx);
}
END_TEST

/* importance with the file's own ablations: each ablated run has them too. */
START_TEST(golden_importance_ablated) {
    fixture fx;
    fixture_make(_i, &fx);
    ck_assert_int_gt(fx.g.n_ablate, 0);
    attn_pool *pool = attn_pool_create(2);
    attn_lm_outputs out = {0};
    out.analysis[ATTN_ANALYSIS_IMPORTANCE] = fx.an[ATTN_ANALYSIS_IMPORTANCE];
    attn_lm_inputs in = {.idx = fx.idx, .ablations = fx.g.ablate, .n_ablations = fx.g.n_ablate,
                         .pool = pool};
    attn_error err = {0};
    ck_assert_msg(attn_lm_run(&fx.plan, fx.params, &in, NULL, &out, &err) == ATTN_OK, "%s",
                  err.message);
    const tensor *want = find(&fx.g, "importance_ablated");
    ck_assert(want && want->n == (size_t)fx.g.B * fx.plan.n_layer * fx.plan.H);
    expect_close(fx.g.path, "importance_ablated", fx.an[ATTN_ANALYSIS_IMPORTANCE], want->data, want->n);
    attn_pool_destroy(pool);
    fixture_free(&fx);
}
END_TEST

/* ==== Against the maps ===================================================== */

/* The definitions written out over the maps a run returns, in double: D as
 * TransformerLens builds it (a token comparison per entry), the rollout as
 * full products. At T = 300 the vector loops run over whole rows and the
 * rollout's triangular products over three column blocks. */
static void expect_from_maps(const attn_lm_plan *p, const int32_t *idx, const float *maps,
                             float *const an[ATTN_ANALYSIS_COUNT]) {
    int B = p->B, L = p->n_layer, H = p->H, T = p->T;
    size_t TT = (size_t)T * (size_t)T;
    double *joint = calloc(2 * TT, sizeof *joint), *abar = calloc(TT, sizeof *abar);
    ck_assert(joint && abar);
    for (int b = 0; b < B; b++)
        for (int l = 0; l < L; l++) {
            memset(abar, 0, TT * sizeof *abar);
            for (int h = 0; h < H; h++) {
                const float *P = maps + (((size_t)l * B + b) * H + h) * TT;
                const int32_t *ids = idx + (size_t)b * T;
                double w[5] = {0}, total = 0; /* entropy, sink, previous, duplicate, induction */
                for (int q = 0; q < T; q++)
                    for (int k = 0; k < T; k++) {
                        double x = P[(size_t)q * T + k];
                        total += x, abar[(size_t)q * T + k] += x / H;
                        if (x > 0) w[0] -= x * log(x);
                        if (k == 0 && q > 0) w[1] += x;
                        if (k == q - 1) w[2] += x;
                        if (k < q && ids[k] == ids[q]) w[3] += x;
                        if (k >= 1 && k <= q && ids[k - 1] == ids[q] && k - 1 < q) w[4] += x;
                    }
                float want[5] = {(float)(w[0] / T), (float)(w[1] / (T - 1)), (float)(w[2] / total),
                                 (float)(w[3] / total), (float)(w[4] / total)};
                size_t at = ((size_t)b * L + l) * H + h;
                for (int a = 0; a < 5; a++) expect_close("maps", attn_analysis_get((attn_analysis)a)->name,
                                                         &an[a][at], &want[a], 1);
            }
            double *prev = joint + (size_t)(l % 2) * TT, *cur = joint + (size_t)((l + 1) % 2) * TT;
            for (int q = 0; q < T; q++) {
                double sum = 1.0;
                abar[(size_t)q * T + q] += 1.0;
                for (int k = 0; k < T; k++) sum += abar[(size_t)q * T + k] - (k == q);
                for (int k = 0; k < T; k++) abar[(size_t)q * T + k] /= sum;
            }
            for (int q = 0; q < T; q++)
                for (int k = 0; k < T; k++) {
                    double x = 0;
                    if (l == 0) x = abar[(size_t)q * T + k];
                    for (int m = 0; l > 0 && m < T; m++) x += abar[(size_t)q * T + m] * prev[(size_t)m * T + k];
                    cur[(size_t)q * T + k] = x;
                    float want = (float)x;
                    expect_close("maps", "rollout", &an[ATTN_ANALYSIS_ROLLOUT][(((size_t)b * L + l) * T + q) * T + k],
                                 &want, 1);
                }
        }
    free(joint);
    free(abar);
}

START_TEST(analyses_of_the_maps) {
    attn_lm_config c;
    attn_lm_config_defaults(ATTN_ARCH_GPTMODEL, &c);
    c.vocab_size = 40, c.context = 320, c.n_layer = 3, c.n_head = 2, c.width = 8;
    attn_lm_plan p;
    attn_error err = {0};
    ck_assert_int_eq(attn_lm_plan_make(&c, 2, 300, 0, &p, &err), ATTN_OK);
    float *params = malloc(p.n_params * sizeof *params), *maps = malloc(p.n_attn * sizeof *maps);
    float *an[ATTN_ANALYSIS_COUNT] = {0};
    int32_t idx[600];
    attn_rng rng;
    attn_rng_seed(&rng, 7);
    ck_assert_int_eq(attn_lm_params_init(&p, params, &rng, &err), ATTN_OK);
    for (int i = 0; i < 600; i++) idx[i] = (int32_t)((i % 37) * 7 % 40 + (i >= 300 ? (i * i) % 3 : 0)) % 40;
    attn_lm_outputs out = {.attn_weights = maps};
    for (int a = 0; a < ATTN_ANALYSIS_ROLLOUT + 1; a++) {
        size_t n;
        attn_analysis_dims(&p, (attn_analysis)a, NULL, &n);
        out.analysis[a] = an[a] = malloc(n * sizeof(float));
    }
    attn_pool *pool = attn_pool_create(2);
    attn_lm_inputs in = {.idx = idx, .pool = pool};
    ck_assert_int_eq(attn_lm_run(&p, params, &in, NULL, &out, &err), ATTN_OK);
    expect_from_maps(&p, idx, maps, an);
    attn_pool_destroy(pool);
    for (int a = 0; a < ATTN_ANALYSIS_COUNT; a++) free(an[a]);
    free(params), free(maps);
}
END_TEST

/* A decoder family with grouped queries and a sliding window (Mistral, 4
 * query heads over 2 key/value heads, a window of 5 keys; weights from an
 * LCG): the scores and the rollout per query head against the maps, and
 * importance against the losses of the run with each head knocked out,
 * each run on its own. */
START_TEST(grouped_queries_and_a_window) {
    attn_lm_config c;
    attn_lm_config_defaults(ATTN_ARCH_MISTRAL, &c);
    c.vocab_size = 30, c.context = 16, c.n_layer = 2, c.n_head = 4, c.n_kv_head = 2, c.width = 16;
    c.ffn = 24, c.window = 5;
    attn_lm_plan p;
    attn_error err = {0};
    ck_assert_int_eq(attn_lm_plan_make(&c, 2, 12, 0, &p, &err), ATTN_OK);
    float *params = malloc(p.n_params * sizeof *params), *maps = malloc(p.n_attn * sizeof *maps);
    unsigned long long s = 11;
    for (size_t i = 0; i < p.n_params; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        params[i] = (float)((double)(s >> 40) / (double)(1 << 24) - 0.5) * 0.6f;
    }
    int32_t idx[24];
    for (int i = 0; i < 24; i++) idx[i] = (int32_t)((i % 6) * 5 + i / 12) % 30;
    float *an[ATTN_ANALYSIS_COUNT], loss[2], abl[2];
    attn_lm_outputs out = {.attn_weights = maps, .loss = loss};
    for (int a = 0; a < ATTN_ANALYSIS_COUNT; a++) {
        size_t n;
        attn_analysis_dims(&p, (attn_analysis)a, NULL, &n);
        out.analysis[a] = an[a] = malloc(n * sizeof(float));
    }
    attn_lm_inputs in = {.idx = idx};
    ck_assert_msg(attn_lm_run(&p, params, &in, NULL, &out, &err) == ATTN_OK, "%s", err.message);
    expect_from_maps(&p, idx, maps, an);
    for (int l = 0; l < p.n_layer; l++)
        for (int h = 0; h < p.H; h++) {
            attn_lm_ablate a = {.layer = l, .head = h};
            attn_lm_inputs one = {.idx = idx, .ablations = &a, .n_ablations = 1};
            attn_lm_outputs lo = {.loss = abl};
            ck_assert_int_eq(attn_lm_run(&p, params, &one, NULL, &lo, &err), ATTN_OK);
            for (int b = 0; b < 2; b++) {
                float want = abl[b] - loss[b];
                expect_close("mistral", "importance", &an[ATTN_ANALYSIS_IMPORTANCE][((size_t)b * 2 + l) * 4 + h],
                             &want, 1);
            }
        }
    for (int a = 0; a < ATTN_ANALYSIS_COUNT; a++) free(an[a]);
    free(params), free(maps);
}
END_TEST

/* ==== The table, shapes, costs, refusals ================================= */

static attn_lm_config tiny(void) {
    attn_lm_config c;
    attn_lm_config_defaults(ATTN_ARCH_GPT2, &c);
    c.vocab_size = 11, c.context = 8, c.n_layer = 2, c.n_head = 2, c.width = 8;
    return c;
}

START_TEST(table_and_shapes) {
    attn_lm_config c = tiny();
    attn_lm_plan p;
    attn_error err = {0};
    ck_assert_int_eq(attn_lm_plan_make(&c, 3, 5, 0, &p, &err), ATTN_OK);
    const char *names[] = {"entropy", "sink", "previous_token", "duplicate_token", "induction",
                           "rollout", "importance"};
    ck_assert_int_eq(ATTN_ANALYSIS_COUNT, 7);
    for (int a = 0; a < ATTN_ANALYSIS_COUNT; a++) {
        attn_analysis got;
        ck_assert_str_eq(attn_analysis_get((attn_analysis)a)->name, names[a]);
        ck_assert_int_eq(attn_analysis_parse(names[a], &got), ATTN_OK);
        ck_assert_int_eq(got, a);
        int shape[4];
        size_t count;
        int rank = attn_analysis_dims(&p, (attn_analysis)a, shape, &count);
        int maps = a == ATTN_ANALYSIS_ROLLOUT;
        ck_assert_int_eq(rank, maps ? 4 : 3);
        ck_assert(shape[0] == 3 && shape[1] == 2 && shape[2] == (maps ? 5 : 2));
        ck_assert_uint_eq(count, maps ? 3u * 2 * 5 * 5 : 3u * 2 * 2);
        ck_assert_int_eq(attn_analysis_get((attn_analysis)a)->from_maps, a != ATTN_ANALYSIS_IMPORTANCE);
    }
    ck_assert_int_eq(attn_analysis_parse("entropies", NULL), ATTN_ERR_ARG);
    ck_assert_ptr_null(attn_analysis_get(ATTN_ANALYSIS_COUNT));
    ck_assert_int_eq(attn_analysis_dims(&p, ATTN_ANALYSIS_COUNT, NULL, NULL), 0);
    size_t f0, f1, f2;
    double w0, w1, w2;
    ck_assert_int_eq(attn_lm_analysis_cost(&p, 0, 2, &f0, &w0, &err), ATTN_OK);
    ck_assert(f0 == 0 && w0 == 0.0);
    ck_assert_int_eq(attn_lm_analysis_cost(&p, 1u << ATTN_ANALYSIS_SINK, 2, &f1, &w1, &err), ATTN_OK);
    ck_assert(f1 >= 3u * 2 * 25 && w1 > 0.0);
    ck_assert_int_eq(attn_lm_analysis_cost(&p, 1u << ATTN_ANALYSIS_IMPORTANCE, 2, &f2, &w2, &err),
                     ATTN_OK);
    /* the ablated runs: at least one block and the head per head and row */
    ck_assert(w2 > 4.0 * (attn_lm_head_ops(&p, 3 * 4) + attn_lm_block_ops(&p, 15, 5)));
    ck_assert(f2 > 2u * 15 * 8);
    attn_lm_plan train;
    ck_assert_int_eq(attn_lm_plan_make(&c, 1, 5, 1, &train, &err), ATTN_OK);
    ck_assert_int_eq(attn_lm_analysis_cost(&train, 1u << ATTN_ANALYSIS_IMPORTANCE, 2, &f2, &w2, &err),
                     ATTN_ERR_ARG);
    ck_assert_str_eq(err.field, "analysis");
}
END_TEST

/* A head ablated in batch row 1 only: row 0 is the clean run's, row 1 the
 * run with the head ablated everywhere. */
START_TEST(ablation_batch_rows) {
    attn_lm_config c = tiny();
    attn_lm_plan p;
    attn_error err = {0};
    ck_assert_int_eq(attn_lm_plan_make(&c, 2, 5, 0, &p, &err), ATTN_OK);
    float *params = malloc(p.n_params * sizeof *params), clean[2], some[2], all[2];
    attn_rng rng;
    attn_rng_seed(&rng, 3);
    ck_assert_int_eq(attn_lm_params_init(&p, params, &rng, &err), ATTN_OK);
    const int32_t idx[10] = {1, 2, 3, 1, 2, 1, 2, 3, 1, 2}; /* both rows the same text */
    attn_lm_ablate row1 = {.layer = 0, .head = 1, .batch_start = 1, .batch_count = 1};
    attn_lm_ablate every = {.layer = 0, .head = 1};
    attn_lm_inputs in = {.idx = idx};
    attn_lm_outputs out = {.loss = clean};
    ck_assert_int_eq(attn_lm_run(&p, params, &in, NULL, &out, &err), ATTN_OK);
    in.ablations = &row1, in.n_ablations = 1, out.loss = some;
    ck_assert_int_eq(attn_lm_run(&p, params, &in, NULL, &out, &err), ATTN_OK);
    in.ablations = &every, out.loss = all;
    ck_assert_int_eq(attn_lm_run(&p, params, &in, NULL, &out, &err), ATTN_OK);
    ck_assert(some[0] == clean[0] && some[1] == all[1] && all[1] != clean[1]);
    row1.batch_start = 2;
    in.ablations = &row1;
    ck_assert_int_eq(attn_lm_run(&p, params, &in, NULL, &out, &err), ATTN_ERR_ARG);
    ck_assert_str_eq(err.field, "ablations[0]");
    free(params);
}
END_TEST

START_TEST(refusals) {
    attn_lm_config c = tiny();
    attn_lm_plan p, one, train;
    attn_error err = {0};
    ck_assert_int_eq(attn_lm_plan_make(&c, 1, 4, 0, &p, &err), ATTN_OK);
    ck_assert_int_eq(attn_lm_plan_make(&c, 1, 1, 0, &one, &err), ATTN_OK);
    ck_assert_int_eq(attn_lm_plan_make(&c, 1, 4, 1, &train, &err), ATTN_OK);
    float *params = malloc(p.n_params * sizeof *params), dst[2 * 4 * 4], loss[1], resid[4 * 8] = {0};
    attn_rng rng;
    attn_rng_seed(&rng, 1);
    ck_assert_int_eq(attn_lm_params_init(&p, params, &rng, &err), ATTN_OK);
    const int32_t idx[4] = {1, 2, 1, 2};
    attn_lm_inputs in = {.idx = idx};
    attn_lm_outputs out = {0};
    out.analysis[ATTN_ANALYSIS_IMPORTANCE] = dst;
    int status;
    /* importance is attn_lm_run's alone, in eval mode, without patches, on 2+ tokens */
    ck_assert_int_eq(attn_lm_run_many(&p, params, &in, &out, 1, NULL, &status, &err), ATTN_ERR_ARG);
    ck_assert_str_eq(err.field, "analysis");
    ck_assert_int_eq(attn_lm_run(&train, params, &in, NULL, &out, &err), ATTN_ERR_ARG);
    ck_assert_str_eq(err.field, "analysis");
    ck_assert_int_eq(attn_lm_run(&one, params, &in, NULL, &out, &err), ATTN_ERR_ARG);
    ck_assert_str_eq(err.field, "analysis");
    attn_lm_patch patch = {.layer = 0, .hook = ATTN_HOOK_RESID_PRE, .index = 0, .src = resid};
    in.patches = &patch, in.n_patches = 1;
    ck_assert_int_eq(attn_lm_run(&p, params, &in, NULL, &out, &err), ATTN_ERR_ARG);
    ck_assert_str_eq(err.field, "analysis");
    /* the maps' analyses read every block and the ids */
    attn_lm_outputs maps = {0};
    maps.analysis[ATTN_ANALYSIS_SINK] = dst;
    attn_lm_inputs part = {.resid = resid, .start_layer = 1};
    ck_assert_int_eq(attn_lm_run(&p, params, &part, NULL, &maps, &err), ATTN_ERR_ARG);
    ck_assert_str_eq(err.field, "analysis");
    part.idx = idx;
    ck_assert_int_eq(attn_lm_run(&p, params, &part, NULL, &maps, &err), ATTN_ERR_ARG);
    /* the loss: idx and two tokens */
    attn_lm_outputs lo = {.loss = loss};
    part.idx = NULL;
    ck_assert_int_eq(attn_lm_run(&p, params, &part, NULL, &lo, &err), ATTN_ERR_ARG);
    ck_assert_str_eq(err.field, "idx");
    attn_lm_inputs first = {.idx = idx};
    ck_assert_int_eq(attn_lm_run(&one, params, &first, NULL, &lo, &err), ATTN_ERR_ARG);
    ck_assert_str_eq(err.field, "loss");
    /* training mode: the maps' analyses are of the weights before dropout, allowed */
    ck_assert_int_eq(attn_lm_run(&train, params, &first, NULL, &maps, &err), ATTN_OK);
    free(params);
}
END_TEST

/* ==== The suite =========================================================== */

START_TEST(files_exist) {
    ck_assert_msg(g_files.n >= 3, "expected the files of tests/golden/analysis (found %d)", g_files.n);
}
END_TEST

static Suite *suite(void) {
    openblas_set_num_threads(1);
    const char *dirs[] = {"tests/golden/analysis"};
    gpt2_files_list(&g_files, dirs, 1);
    Suite *s = suite_create("core_analysis");
    const TTest *tests[] = {files_exist, analyses_of_the_maps, grouped_queries_and_a_window,
                            table_and_shapes, ablation_batch_rows, refusals, NULL};
    TCase *tc = tcase_with(s, "analysis", 30, tests);
    const TTest *per_file[] = {golden_analyses, golden_importance_ablated, NULL};
    for (int i = 0; per_file[i] && g_files.n > 0; i++)
        tcase_add_loop_test(tc, per_file[i], 0, g_files.n);
    return s;
}

static void free_files(void) { gpt2_files_free(&g_files); }

const test_program TEST_PROGRAM = {.suites = {suite}, .after = free_files};
