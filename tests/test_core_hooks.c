/* test_core_hooks.c - inside the models (attn_lm_run's captures,
 * ablations and patches, attn_lm_run_many, attn_lm_logit_lens) against
 * PyTorch with forward hooks on the same weights, both families: every
 * file of tests/golden/hooks/ (written by tests/golden/generate_hooks.py).
 *
 * Per file, within |got - want| <= 1e-4 + 1e-3 |want| (and -inf where
 * PyTorch has -inf, the masked scores):
 *   every TransformerLens hook of every block and ln_final, captured in one
 *     clean run (and the logits);
 *   each ablation's logits (a head's hook_z zeroed or set to its mean);
 *   each patch's logits: the corrupted ids run with one site (a head's
 *     hook_z, or one position of resid_pre, attn_out, mlp_out) taken from
 *     core's own clean run; the same run started at the patched block from
 *     the corrupted run's hook_resid_pre gives the same bits;
 *   the logit lens on each block's input and the last block's output.
 * Plus the hook table, names, shapes and every refusal. Run from the
 * repository root.
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
#define MAX_TENSORS 128

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
    tensor t[MAX_TENSORS];
    int n;
} hcase;

static void hcase_free(hcase *g) {
    for (int i = 0; i < g->n; i++) free(g->t[i].data);
}

static const tensor *find(const hcase *g, const char *name) {
    for (int i = 0; i < g->n; i++)
        if (strcmp(g->t[i].name, name) == 0) return &g->t[i];
    return NULL;
}

/* A header line: the config (gpt2_files.h), B and T. */
static void config_line(hcase *g, const char *key, const char *val) {
    if (gpt2_config_key(&g->cfg, key, val)) return;
    if (!strcmp(key, "B")) g->B = atoi(val);
    else if (!strcmp(key, "T")) g->T = atoi(val);
}

static void hcase_load(const char *path, hcase *g) {
    *g = (hcase){0};
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
            config_line(g, key, line + strlen(key) + (line[strlen(key)] ? 1 : 0));
    }
    free(line);
    fclose(f);
}

/* n floats within the tolerance; -inf must meet -inf. */
static void expect_close(const char *file, const char *what, const float *got, const float *want,
                         size_t n) {
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (isinf(want[i]) || isinf(got[i])) {
            ck_assert_msg(got[i] == want[i], "%s %s[%zu]: core %g, PyTorch %g", file, what, i,
                          (double)got[i], (double)want[i]);
            continue;
        }
        double d = fabs((double)got[i] - (double)want[i]);
        ck_assert_msg(d <= ATOL + RTOL * fabs((double)want[i]), "%s %s[%zu]: core %.9g, PyTorch %.9g",
                      file, what, i, (double)got[i], (double)want[i]);
        worst = fmax(worst, d);
    }
}

/* ==== One case's runs ===================================================== */

static gpt2_files g_files;

typedef struct {
    hcase g;
    attn_lm_plan plan;
    const float *params;
    const int32_t *idx, *corrupted;
    float *hooks[64][ATTN_HOOK_COUNT]; /* core's clean run, every hook */
} fixture;

static void fixture_make(int i, fixture *fx) {
    memset(fx, 0, sizeof *fx);
    hcase_load(g_files.paths[i], &fx->g);
    attn_error err = {0};
    ck_assert_int_eq(attn_lm_plan_make(&fx->g.cfg, fx->g.B, fx->g.T, 0, &fx->plan, &err), ATTN_OK);
    ck_assert_int_le(fx->plan.n_layer, 64);
    const tensor *p = find(&fx->g, "params"), *idx = find(&fx->g, "idx");
    const tensor *cor = find(&fx->g, "corrupted_idx");
    ck_assert(p && idx && cor && p->n == fx->plan.n_params);
    fx->params = p->data, fx->idx = idx->data, fx->corrupted = cor->data;
}

/* A clean run capturing every hook (caps, n) into fx->hooks. */
static void clean_run(fixture *fx, float *logits) {
    attn_lm_capture caps[64 * ATTN_HOOK_COUNT];
    int n = 0;
    for (int h = 0; h < ATTN_HOOK_COUNT; h++) {
        size_t count;
        attn_hook_dims(&fx->plan, (attn_hook)h, NULL, &count);
        int blocks = attn_hook_get((attn_hook)h)->per_block ? fx->plan.n_layer : 1;
        if (!attn_lm_has_hook(&fx->plan, (attn_hook)h)) continue; /* rotary hooks: not GPT-2's */
        for (int l = 0; l < blocks; l++) {
            fx->hooks[l][h] = malloc(count * sizeof(float));
            ck_assert_ptr_nonnull(fx->hooks[l][h]);
            caps[n++] = (attn_lm_capture){.layer = l, .hook = (attn_hook)h,
                                            .dst = fx->hooks[l][h]};
        }
    }
    attn_lm_inputs in = {.idx = fx->idx, .captures = caps, .n_captures = n};
    attn_lm_outputs out = {.logits = logits};
    attn_error err = {0};
    ck_assert_msg(attn_lm_run(&fx->plan, fx->params, &in, NULL, &out, &err) == ATTN_OK, "%s",
                  err.message);
}

static void fixture_free(fixture *fx) {
    for (int l = 0; l < 64; l++)
        for (int h = 0; h < ATTN_HOOK_COUNT; h++) free(fx->hooks[l][h]);
    hcase_free(&fx->g);
}

/* Every hook of the clean run, and its logits. */
START_TEST(golden_hooks) {
    fixture fx;
    fixture_make(_i, &fx);
    float *logits = malloc(fx.plan.n_logits * sizeof(float));
    ck_assert_ptr_nonnull(logits);
    clean_run(&fx, logits);
    expect_close(fx.g.path, "logits", logits, find(&fx.g, "logits")->data, fx.plan.n_logits);
    int checked = 0;
    for (int h = 0; h < ATTN_HOOK_COUNT; h++) {
        const attn_hook_info *info = attn_hook_get((attn_hook)h);
        size_t count;
        if (!attn_lm_has_hook(&fx.plan, (attn_hook)h)) continue;
        attn_hook_dims(&fx.plan, (attn_hook)h, NULL, &count);
        for (int l = 0; l < (info->per_block ? fx.plan.n_layer : 1); l++) {
            char name[96];
            if (info->per_block) snprintf(name, sizeof name, "blocks.%d.%s", l, info->name);
            else snprintf(name, sizeof name, "%s", info->name);
            const tensor *want = find(&fx.g, name);
            ck_assert_msg(want != NULL && want->n == count, "%s: %s missing or %zu values",
                          fx.g.path, name, want ? want->n : 0);
            expect_close(fx.g.path, name, fx.hooks[l][h], want->data, count);
            checked++;
        }
    }
    printf("%s: %d hooks within tolerance\n", fx.g.path, checked);
    free(logits);
    fixture_free(&fx);
}
END_TEST

/* Each ablation's logits. */
START_TEST(golden_ablations) {
    fixture fx;
    fixture_make(_i, &fx);
    float *logits = malloc(fx.plan.n_logits * sizeof(float));
    ck_assert_ptr_nonnull(logits);
    int done = 0;
    for (int i = 0; i < fx.g.n; i++) {
        attn_lm_ablate a = {0};
        char method[8];
        if (sscanf(fx.g.t[i].name, "ablate.%d.%d.%7s", &a.layer, &a.head, method) != 3) continue;
        a.method = strcmp(method, "mean") == 0 ? ATTN_ABLATE_MEAN : ATTN_ABLATE_ZERO;
        attn_lm_inputs in = {.idx = fx.idx, .ablations = &a, .n_ablations = 1};
        attn_lm_outputs out = {.logits = logits};
        attn_error err = {0};
        ck_assert_int_eq(attn_lm_run(&fx.plan, fx.params, &in, NULL, &out, &err), ATTN_OK);
        expect_close(fx.g.path, fx.g.t[i].name, logits, fx.g.t[i].data, fx.plan.n_logits);
        done++;
    }
    ck_assert_int_ge(done, 2);
    free(logits);
    fixture_free(&fx);
}
END_TEST

static attn_hook site_hook(const char *site) {
    if (!strcmp(site, "attn_head")) return ATTN_HOOK_Z;
    if (!strcmp(site, "resid_pre")) return ATTN_HOOK_RESID_PRE;
    if (!strcmp(site, "attn_out")) return ATTN_HOOK_ATTN_OUT;
    ck_assert_str_eq(site, "mlp_out");
    return ATTN_HOOK_MLP_OUT;
}

/* Each patch: the corrupted run with one site from core's clean run; then
 * the same run from the patched block's input, bit for bit. */
START_TEST(golden_patches) {
    fixture fx;
    fixture_make(_i, &fx);
    size_t nl = fx.plan.n_logits, BTC = (size_t)fx.plan.B * fx.plan.T * fx.plan.C;
    float *logits = malloc(nl * 4), *again = malloc(nl * 4), *resid = malloc(64 * BTC * 4);
    ck_assert(logits && again && resid);
    clean_run(&fx, logits);
    attn_lm_capture pre[64];
    for (int l = 0; l < fx.plan.n_layer; l++)
        pre[l] = (attn_lm_capture){l, ATTN_HOOK_RESID_PRE, resid + (size_t)l * BTC};
    attn_lm_inputs corrupted = {.idx = fx.corrupted, .captures = pre,
                                  .n_captures = fx.plan.n_layer};
    attn_lm_outputs out = {.logits = logits};
    attn_error err = {0};
    ck_assert_int_eq(attn_lm_run(&fx.plan, fx.params, &corrupted, NULL, &out, &err), ATTN_OK);
    int done = 0;
    for (int i = 0; i < fx.g.n; i++) {
        char site[16];
        attn_lm_patch pt;
        if (sscanf(fx.g.t[i].name, "patch.%15[a-z_].%d.%d", site, &pt.layer, &pt.index) != 3)
            continue;
        pt.hook = site_hook(site);
        pt.src = fx.hooks[pt.layer][pt.hook];
        attn_lm_inputs in = {.idx = fx.corrupted, .patches = &pt, .n_patches = 1};
        ck_assert_int_eq(attn_lm_run(&fx.plan, fx.params, &in, NULL, &out, &err), ATTN_OK);
        expect_close(fx.g.path, fx.g.t[i].name, logits, fx.g.t[i].data, nl);
        attn_lm_inputs from = {.resid = resid + (size_t)pt.layer * BTC,
                                 .start_layer = pt.layer, .patches = &pt, .n_patches = 1};
        attn_lm_outputs out2 = {.logits = again};
        ck_assert_int_eq(attn_lm_run(&fx.plan, fx.params, &from, NULL, &out2, &err), ATTN_OK);
        ck_assert_msg(memcmp(again, logits, nl * 4) == 0, "%s: from block %d differs",
                      fx.g.t[i].name, pt.layer);
        done++;
    }
    ck_assert_int_ge(done, 4);
    free(logits), free(again), free(resid);
    fixture_free(&fx);
}
END_TEST

/* The logit lens on each block's input and the last block's output. */
START_TEST(golden_lens) {
    fixture fx;
    fixture_make(_i, &fx);
    int L = fx.plan.n_layer, rows = fx.plan.B * fx.plan.T;
    size_t per = (size_t)rows * fx.plan.V;
    float *got = malloc((size_t)(L + 1) * per * 4);
    ck_assert_ptr_nonnull(got);
    clean_run(&fx, got);
    attn_error err = {0};
    for (int l = 0; l <= L; l++) {
        const float *r = l < L ? fx.hooks[l][ATTN_HOOK_RESID_PRE] : fx.hooks[L - 1][ATTN_HOOK_RESID_POST];
        ck_assert_int_eq(attn_lm_logit_lens(&fx.plan, fx.params, r, rows, NULL,
                                              got + (size_t)l * per, &err), ATTN_OK);
    }
    const tensor *want = find(&fx.g, "lens");
    ck_assert(want && want->n == (size_t)(L + 1) * per);
    expect_close(fx.g.path, "lens", got, want->data, want->n);
    free(got);
    fixture_free(&fx);
}
END_TEST

/* A sweep of every head of every block: attn_lm_run_many over a pool of
 * 2 gives the bits of the runs one after another. */
START_TEST(run_many_sweep) {
    fixture fx;
    fixture_make(_i, &fx);
    size_t nl = fx.plan.n_logits;
    float *clean = malloc(nl * 4);
    ck_assert_ptr_nonnull(clean);
    clean_run(&fx, clean);
    int L = fx.plan.n_layer, H = fx.plan.H, n = L * H;
    attn_lm_patch *pt = malloc((size_t)n * sizeof *pt);
    attn_lm_inputs *in = malloc((size_t)n * sizeof *in);
    attn_lm_outputs *out = malloc((size_t)n * sizeof *out);
    float *many = malloc((size_t)n * nl * 4), *one = malloc(nl * 4);
    int *status = malloc((size_t)n * sizeof *status);
    ck_assert(pt && in && out && many && one && status);
    for (int k = 0; k < n; k++) {
        pt[k] = (attn_lm_patch){k / H, ATTN_HOOK_Z, k % H, fx.hooks[k / H][ATTN_HOOK_Z]};
        in[k] = (attn_lm_inputs){.idx = fx.corrupted, .patches = &pt[k], .n_patches = 1};
        out[k] = (attn_lm_outputs){.logits = many + (size_t)k * nl};
    }
    attn_pool *pool = attn_pool_create(2);
    attn_error err = {0};
    ck_assert_int_eq(attn_lm_run_many(&fx.plan, fx.params, in, out, n, pool, status, NULL), ATTN_OK);
    for (int k = 0; k < n; k++) {
        attn_lm_outputs o = {.logits = one};
        ck_assert_int_eq(attn_lm_run(&fx.plan, fx.params, &in[k], NULL, &o, &err), ATTN_OK);
        ck_assert(memcmp(one, many + (size_t)k * nl, nl * 4) == 0);
    }
    attn_pool_destroy(pool);
    free(pt), free(in), free(out), free(many), free(one), free(status), free(clean);
    fixture_free(&fx);
}
END_TEST

/* ==== The table and the refusals ========================================= */

START_TEST(hook_names_and_shapes) {
    int layer;
    attn_hook h;
    ck_assert_int_eq(attn_hook_parse("blocks.3.attn.hook_z", &layer, &h), ATTN_OK);
    ck_assert(layer == 3 && h == ATTN_HOOK_Z);
    ck_assert_int_eq(attn_hook_parse("blocks.*.hook_resid_pre", &layer, &h), ATTN_OK);
    ck_assert(layer == -1 && h == ATTN_HOOK_RESID_PRE);
    ck_assert_int_eq(attn_hook_parse("ln_final.hook_normalized", &layer, &h), ATTN_OK);
    ck_assert(layer == 0 && h == ATTN_HOOK_LN_FINAL_NORMALIZED);
    const char *bad[] = {"blocks.3.ln_final.hook_normalized", "hook_resid_pre", "blocks..hook_z",
                         "blocks.x.attn.hook_z", "blocks.01.attn.hook_z", "blocks.3.attn.hook_zz",
                         "blocks.99999999999.attn.hook_z", "blocks.-1.attn.hook_z", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ck_assert_msg(attn_hook_parse(bad[i], &layer, &h) == ATTN_ERR_ARG, "%s", bad[i]);
    ck_assert_ptr_null(attn_hook_get(ATTN_HOOK_COUNT));
    for (int i = 0; i < ATTN_HOOK_COUNT; i++) ck_assert_int_eq(attn_hook_get((attn_hook)i)->hook, i);
    attn_lm_config c = {.vocab_size = 10, .context = 8, .n_layer = 2, .n_head = 3,
                          .width = 12};
    attn_lm_plan p;
    attn_error err;
    ck_assert_int_eq(attn_lm_plan_make(&c, 2, 5, 0, &p, &err), ATTN_OK);
    int shape[4];
    size_t n;
    ck_assert_int_eq(attn_hook_dims(&p, ATTN_HOOK_Z, shape, &n), 4);
    ck_assert(shape[0] == 2 && shape[1] == 5 && shape[2] == 3 && shape[3] == 4 && n == 120);
    ck_assert_int_eq(attn_hook_dims(&p, ATTN_HOOK_PATTERN, shape, &n), 4);
    ck_assert(shape[1] == 3 && shape[2] == 5 && shape[3] == 5 && n == 150);
    ck_assert_int_eq(attn_hook_dims(&p, ATTN_HOOK_MLP_POST, shape, &n), 3);
    ck_assert(shape[2] == 48 && n == 480);
    ck_assert_int_eq(attn_hook_dims(&p, ATTN_HOOK_LN_FINAL_NORMALIZED, shape, &n), 3);
    ck_assert_int_eq(attn_hook_dims(&p, ATTN_HOOK_COUNT, shape, &n), 0);
}
END_TEST

static void expect_refused(const attn_lm_plan *p, const float *params, attn_lm_inputs in,
                           int code, const char *field) {
    float logits[2 * 5 * 10];
    attn_lm_outputs out = {.logits = logits};
    attn_error err = {0};
    int rc = attn_lm_run(p, params, &in, NULL, &out, &err);
    ck_assert_msg(rc == code && strcmp(err.field, field) == 0, "expected %s on %s, got %s on %s (%s)",
                  attn_status_name(code), field, attn_status_name(rc), err.field, err.message);
}

START_TEST(refusals) {
    attn_lm_config c = {.vocab_size = 10, .context = 8, .n_layer = 2, .n_head = 3,
                          .width = 12, .dropout = 0.1, .arch = ATTN_ARCH_GPTMODEL};
    attn_lm_plan p, train;
    attn_error err;
    ck_assert_int_eq(attn_lm_plan_make(&c, 2, 5, 0, &p, &err), ATTN_OK);
    ck_assert_int_eq(attn_lm_plan_make(&c, 2, 5, 1, &train, &err), ATTN_OK);
    float *params = malloc(p.n_params * 4), buf[2 * 5 * 48], resid[2 * 5 * 12] = {0};
    ck_assert_ptr_nonnull(params);
    attn_rng rng;
    attn_rng_seed(&rng, 1);
    ck_assert_int_eq(attn_lm_params_init(&p, params, &rng, &err), ATTN_OK);
    int32_t idx[10] = {0};
    attn_lm_capture cap = {2, ATTN_HOOK_Z, buf};
    expect_refused(&p, params, (attn_lm_inputs){.idx = idx, .captures = &cap, .n_captures = 1},
                   ATTN_ERR_ARG, "captures[0]");
    cap = (attn_lm_capture){0, ATTN_HOOK_COUNT, buf};
    expect_refused(&p, params, (attn_lm_inputs){.idx = idx, .captures = &cap, .n_captures = 1},
                   ATTN_ERR_ARG, "captures[0]");
    cap = (attn_lm_capture){0, ATTN_HOOK_Z, buf};
    expect_refused(&p, params, (attn_lm_inputs){.resid = resid, .start_layer = 1,
                                                  .captures = &cap, .n_captures = 1},
                   ATTN_ERR_ARG, "captures[0]"); /* block 0 runs before start_layer */
    attn_lm_ablate ab = {.layer = 0, .head = 3, .method = ATTN_ABLATE_ZERO};
    expect_refused(&p, params, (attn_lm_inputs){.idx = idx, .ablations = &ab, .n_ablations = 1},
                   ATTN_ERR_ARG, "ablations[0]");
    ab = (attn_lm_ablate){.layer = 0, .head = 0, .method = (attn_ablation)2};
    expect_refused(&p, params, (attn_lm_inputs){.idx = idx, .ablations = &ab, .n_ablations = 1},
                   ATTN_ERR_ARG, "ablations[0]");
    attn_lm_patch pt[2] = {{0, ATTN_HOOK_Z, 0, buf}, {1, ATTN_HOOK_RESID_PRE, 5, buf}};
    expect_refused(&p, params, (attn_lm_inputs){.idx = idx, .patches = pt, .n_patches = 2},
                   ATTN_ERR_ARG, "patches[1]"); /* position 5 of 5 */
    pt[1] = (attn_lm_patch){1, ATTN_HOOK_PATTERN, 0, buf};
    expect_refused(&p, params, (attn_lm_inputs){.idx = idx, .patches = pt, .n_patches = 2},
                   ATTN_ERR_ARG, "patches[1]"); /* not a patchable site */
    pt[1] = (attn_lm_patch){1, ATTN_HOOK_MLP_OUT, 0, NULL};
    expect_refused(&p, params, (attn_lm_inputs){.idx = idx, .patches = pt, .n_patches = 2},
                   ATTN_ERR_ARG, "patches[1]");
    expect_refused(&p, params, (attn_lm_inputs){.resid = resid, .start_layer = 3},
                   ATTN_ERR_ARG, "start_layer");
    expect_refused(&p, params, (attn_lm_inputs){.idx = idx, .start_layer = 1},
                   ATTN_ERR_ARG, "start_layer");
    expect_refused(&p, params, (attn_lm_inputs){0}, ATTN_ERR_ARG, "idx");
    expect_refused(&train, params, (attn_lm_inputs){.resid = resid}, ATTN_ERR_ARG, "training");
    resid[7] = NAN;
    expect_refused(&p, params, (attn_lm_inputs){.resid = resid}, ATTN_ERR_NONFINITE, "resid");
    resid[7] = 0;
    /* start_layer n_layer: the final LayerNorm and head alone = the lens */
    float a[100], b[100];
    attn_lm_outputs out = {.logits = a};
    attn_lm_inputs head_only = {.resid = resid, .start_layer = 2};
    ck_assert_int_eq(attn_lm_run(&p, params, &head_only, NULL, &out, &err), ATTN_OK);
    ck_assert_int_eq(attn_lm_logit_lens(&p, params, resid, 10, NULL, b, &err), ATTN_OK);
    ck_assert(memcmp(a, b, sizeof a) == 0);
    ck_assert_int_eq(attn_lm_logit_lens(&p, params, resid, 0, NULL, b, &err), ATTN_ERR_ARG);
    int status;
    attn_lm_inputs one = {.idx = idx};
    ck_assert_int_eq(attn_lm_run_many(&train, params, &one, &out, 1, NULL, &status, &err),
                     ATTN_ERR_ARG);
    free(params);
}
END_TEST

/* ==== The suite =========================================================== */

START_TEST(files_exist) {
    ck_assert_msg(g_files.n >= 3, "expected the files of tests/golden/hooks (found %d)", g_files.n);
}
END_TEST

static Suite *suite(void) {
    openblas_set_num_threads(1);
    const char *dirs[] = {"tests/golden/hooks"};
    gpt2_files_list(&g_files, dirs, 1);
    Suite *s = suite_create("core_hooks");
    const TTest *tests[] = {files_exist, hook_names_and_shapes, refusals, NULL};
    TCase *tc = tcase_with(s, "hooks", 30, tests);
    const TTest *per_file[] = {golden_hooks, golden_ablations, golden_patches, golden_lens,
                               run_many_sweep, NULL};
    for (int i = 0; per_file[i] && g_files.n > 0; i++)
        tcase_add_loop_test(tc, per_file[i], 0, g_files.n);
    return s;
}

static void free_files(void) {
    gpt2_files_free(&g_files);
}

const test_program TEST_PROGRAM = {.suites = {suite}, .after = free_files};
