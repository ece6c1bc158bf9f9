/* test_core_gpt2.c - core's whole models (attn_lm_*) against PyTorch:
 * seed 003's gpt2_min.py GPT2 (every file of tests/golden/gpt2/, written by
 * tests/golden/generate_gpt2.py) and the book's chapter-4 GPTModel
 * (tests/golden/gptmodel/, tests/golden/generate_gptmodel.py), plus the
 * errors.
 *
 * Per golden file:
 *   "state_dict": attn_lm_param_get's names, in order, and the float count
 *      equal PyTorch's state_dict (lm_head.weight excepted, it is tied);
 *   "init": attn_lm_params_init from the file's seed gives PyTorch's
 *      parameters bit for bit (memcmp);
 *   "forward": attn_lm_forward with PyTorch's parameters and the generator
 *      left by the init (training files draw their dropout from it): logits,
 *      hidden states and every attention map within
 *      |got - want| <= 1e-4 + 1e-3 |want|, and every dropout multiplier
 *      bit for bit (memcmp). In training mode a single dropout draw out of
 *      place changes whole rows, far beyond the tolerance too.
 * Set GOLDEN_GPT2_DIR to use another directory instead of both; run from the
 * repository root.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/lm.h"
#include "core/vexp.h"
#include "tests/support/check_main.h"
#include "tests/support/gpt2_files.h"

#include <cblas.h> /* openblas_set_num_threads */

#define ATOL 1e-4
#define RTOL 1e-3

/* ==== The golden file ===================================================== */

typedef struct {
    char name[128];
    attn_lm_config cfg;
    unsigned long long seed;
    int training, B, T;
    char *names;        /* space-separated state_dict names */
    int32_t *idx;
    float *params, *logits, *hidden, *attn, *dropout;
    size_t n_idx, n_params, n_logits, n_hidden, n_attn, n_dropout;
} gcase;

static void gcase_free(gcase *g) {
    free(g->names);
    free(g->idx);
    free(g->params);
    free(g->logits);
    free(g->hidden);
    free(g->attn);
    free(g->dropout);
}

/* Reads one *.gpt2 file; 0 on success, else -1 with a reason. */
static int gcase_load(const char *path, gcase *g, char *why, size_t len) {
    *g = (gcase){0};
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, len, "cannot open %s", path);
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    int rc = 0;
    while (getline(&line, &cap, f) > 0) {
        line[strcspn(line, "\n")] = 0;
        char key[32], tname[32], dtype[8];
        size_t count;
        if (sscanf(line, "tensor %31s %7s %zu", tname, dtype, &count) == 3) {
            void *data = malloc(count ? count * 4 : 4);
            if (!data || fread(data, 4, count, f) != count || fgetc(f) != '\n') {
                snprintf(why, len, "%s: truncated tensor %s", path, tname);
                free(data);
                rc = -1;
                break;
            }
            if (!strcmp(tname, "idx")) g->idx = data, g->n_idx = count;
            else if (!strcmp(tname, "params")) g->params = data, g->n_params = count;
            else if (!strcmp(tname, "logits")) g->logits = data, g->n_logits = count;
            else if (!strcmp(tname, "hidden")) g->hidden = data, g->n_hidden = count;
            else if (!strcmp(tname, "attn")) g->attn = data, g->n_attn = count;
            else if (!strcmp(tname, "dropout")) g->dropout = data, g->n_dropout = count;
            else free(data);
            continue;
        }
        if (sscanf(line, "%31s", key) != 1) continue;
        const char *val = line + strlen(key) + (line[strlen(key)] ? 1 : 0);
        if (gpt2_config_key(&g->cfg, key, val)) continue;
        if (!strcmp(key, "case")) snprintf(g->name, sizeof g->name, "%s", val);
        else if (!strcmp(key, "seed")) g->seed = strtoull(val, NULL, 10);
        else if (!strcmp(key, "training")) g->training = atoi(val);
        else if (!strcmp(key, "B")) g->B = atoi(val);
        else if (!strcmp(key, "T")) g->T = atoi(val);
        else if (!strcmp(key, "names")) g->names = strdup(val);
    }
    free(line);
    fclose(f);
    if (rc == 0 && (!g->idx || !g->params || !g->logits || !g->hidden || !g->attn || !g->names ||
                    !g->dropout)) {
        snprintf(why, len, "%s: a tensor or the names line is missing", path);
        rc = -1;
    }
    if (rc) gcase_free(g);
    return rc;
}

/* Compares n floats; returns the index of the first failure or -1, and
 * writes a description. */
static long compare(const char *what, const float *got, const float *want, size_t n, char *why,
                    size_t len) {
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - (double)want[i]);
        if (!(d <= ATOL + RTOL * fabs((double)want[i]))) {
            snprintf(why, len, "%s[%zu]: core %.9g, PyTorch %.9g", what, i, (double)got[i],
                     (double)want[i]);
            return (long)i;
        }
        if (d > worst) worst = d;
    }
    snprintf(why, len, "%s: max abs diff %.3g", what, worst);
    return -1;
}

/* Plans c for B x T (training or not) and makes its parameters as
 * torch.manual_seed(seed); Model(c) does: malloc'd, the caller frees them;
 * *rng is left where PyTorch's generator is after the constructor. */
static float *seeded_model(const attn_lm_config *c, int B, int T, int training, uint64_t seed,
                           attn_lm_plan *plan, attn_rng *rng) {
    attn_error err = {0};
    int rc = attn_lm_plan_make(c, B, T, training, plan, &err);
    ck_assert_msg(rc == ATTN_OK, "attn_lm_plan_make: %s (%s)", attn_status_name(rc), err.message);
    float *params = malloc(plan->n_params * sizeof *params);
    ck_assert_ptr_nonnull(params);
    attn_rng_seed(rng, seed);
    rc = attn_lm_params_init(plan, params, rng, &err);
    ck_assert_msg(rc == ATTN_OK, "attn_lm_params_init: %s (%s)", attn_status_name(rc), err.message);
    return params;
}

/* ==== The files =========================================================== */

static gpt2_files g_files;

/* The directories of golden files: one per family, or GOLDEN_GPT2_DIR. */
static int golden_dirs(const char *dirs[2]) {
    const char *d = getenv("GOLDEN_GPT2_DIR");
    if (d) {
        dirs[0] = d;
        return 1;
    }
    dirs[0] = "tests/golden/gpt2";
    dirs[1] = "tests/golden/gptmodel";
    return 2;
}

START_TEST(golden_files_exist) {
    const char *dirs[2];
    int n = golden_dirs(dirs);
    for (int i = 0; i < n; i++)
        ck_assert_msg(g_files.per_dir[i] >= 10, "expected the golden files of %s (found %d)", dirs[i],
                      g_files.per_dir[i]);
}
END_TEST

/* state_dict names, order and sizes. */
START_TEST(golden_state_dict) {
    gcase g;
    char why[512];
    ck_assert_msg(gcase_load(g_files.paths[_i], &g, why, sizeof why) == 0, "%s", why);
    attn_lm_plan plan;
    attn_error err = {0};
    ck_assert_msg(attn_lm_plan_make(&g.cfg, g.B, g.T, g.training, &plan, &err) == ATTN_OK,
                  "%s: %s", g.name, err.message);
    ck_assert_uint_eq(plan.n_params, g.n_params);
    char *save = NULL, *names = strdup(g.names);
    ck_assert_ptr_nonnull(names);
    int i = 0;
    size_t next_offset = 0;
    for (char *tok = strtok_r(names, " ", &save); tok; tok = strtok_r(NULL, " ", &save), i++) {
        attn_param p;
        ck_assert_msg(i < plan.param_count, "%s: PyTorch has more entries than core (%s)", g.name,
                      tok);
        ck_assert_int_eq(attn_lm_param_get(&plan, i, &p), ATTN_OK);
        ck_assert_msg(strcmp(p.name, tok) == 0, "%s: entry %d is %s in core, %s in PyTorch",
                      g.name, i, p.name, tok);
        ck_assert_msg(p.offset == next_offset, "%s: %s not contiguous", g.name, p.name);
        next_offset += p.count;
    }
    ck_assert_int_eq(i, plan.param_count);
    ck_assert_uint_eq(next_offset, plan.n_params);
    free(names);
    gcase_free(&g);
}
END_TEST

/* Initialisation from the seed: bit-identical to PyTorch's. */
START_TEST(golden_init) {
    gcase g;
    char why[512];
    ck_assert_msg(gcase_load(g_files.paths[_i], &g, why, sizeof why) == 0, "%s", why);
    attn_lm_plan plan;
    attn_rng rng;
    float *params = seeded_model(&g.cfg, g.B, g.T, g.training, g.seed, &plan, &rng);
    attn_error err = {0};
    size_t diff = 0, first = 0;
    for (size_t i = 0; i < plan.n_params; i++)
        if (memcmp(&params[i], &g.params[i], sizeof(float)) != 0 && diff++ == 0) first = i;
    ck_assert_msg(diff == 0, "%s: %zu of %zu parameters differ from PyTorch, first at %zu "
                  "(core %.9g, PyTorch %.9g)", g.name, diff, plan.n_params, first,
                  (double)params[first], (double)g.params[first]);
    ck_assert_int_eq(attn_lm_params_check(&plan, g.params, &err), ATTN_OK);
    printf("%-28s init: %zu parameters bit-identical\n", g.name, plan.n_params);
    free(params);
    gcase_free(&g);
}
END_TEST

/* The forward pass against PyTorch's logits, hidden states and maps. */
START_TEST(golden_forward) {
    gcase g;
    char why[512];
    ck_assert_msg(gcase_load(g_files.paths[_i], &g, why, sizeof why) == 0, "%s", why);
    attn_lm_plan plan;
    attn_rng rng; /* the generator as PyTorch's after the constructor */
    free(seeded_model(&g.cfg, g.B, g.T, g.training, g.seed, &plan, &rng));
    ck_assert_uint_eq(plan.n_logits, g.n_logits);
    ck_assert_uint_eq(plan.n_hidden, g.n_hidden);
    ck_assert_uint_eq(plan.n_attn, g.n_attn);
    attn_error err = {0};

    float *logits = malloc(plan.n_logits * sizeof(float));
    float *hidden = malloc(plan.n_hidden * sizeof(float));
    float *attn = malloc((plan.n_attn ? plan.n_attn : 1) * sizeof(float));
    float *drop = malloc(plan.n_dropout * sizeof(float));
    ck_assert(logits && hidden && attn && drop);
    attn_lm_outputs out = {.logits = logits, .hidden_states = hidden, .attn_weights = attn,
                             .dropout_masks = drop};
    int rc = attn_lm_forward(&plan, g.params, g.idx, NULL, &rng, &out, &err);
    ck_assert_msg(rc == ATTN_OK, "%s: %s (%s)", g.name, err.message, err.field);
    /* every dropout multiplier, bit for bit */
    ck_assert_uint_eq(plan.n_dropout, g.n_dropout);
    size_t first_bad = 0;
    while (first_bad < g.n_dropout && drop[first_bad] == g.dropout[first_bad]) first_bad++;
    ck_assert_msg(first_bad == g.n_dropout, "%s: dropout multiplier %zu is %g, PyTorch's %g",
                  g.name, first_bad, (double)drop[first_bad], (double)g.dropout[first_bad]);
    free(drop);
    char r1[256], r2[256], r3[256];
    long bad_l = compare("logits", logits, g.logits, plan.n_logits, r1, sizeof r1);
    long bad_h = compare("hidden", hidden, g.hidden, plan.n_hidden, r2, sizeof r2);
    long bad_a = compare("attn", attn, g.attn, plan.n_attn, r3, sizeof r3);
    printf("%-28s %s; %s; %s\n", g.name, r1, r2, r3);
    ck_assert_msg(bad_l < 0 && bad_h < 0 && bad_a < 0, "%s: %s; %s; %s", g.name, r1, r2, r3);
    /* logits only: the same numbers without the other outputs */
    float *logits2 = malloc(plan.n_logits * sizeof(float));
    ck_assert_ptr_nonnull(logits2);
    if (!g.training) {
        attn_lm_outputs only = {.logits = logits2};
        ck_assert_int_eq(attn_lm_forward(&plan, g.params, g.idx, NULL, NULL, &only, &err), ATTN_OK);
        /* without maps the attention takes its fused path: float rounding apart */
        char why1[256];
        ck_assert_msg(compare("logits only", logits2, logits, plan.n_logits, why1, sizeof why1) < 0,
                      "%s: %s", g.name, why1);
        /* last_only: the last position's rows, within float rounding (another sgemm shape) */
        attn_lm_outputs last = {.logits = logits2, .last_only = 1};
        ck_assert_int_eq(attn_lm_forward(&plan, g.params, g.idx, NULL, NULL, &last, &err), ATTN_OK);
        for (int b = 0; b < g.B; b++) {
            const float *want = logits + ((size_t)b * g.T + (size_t)(g.T - 1)) * plan.V;
            char why2[256];
            ck_assert_msg(compare("last_only", logits2 + (size_t)b * plan.V, want, plan.V, why2,
                                  sizeof why2) < 0, "%s: %s", g.name, why2);
        }
    }
    free(logits2);
    free(logits);
    free(hidden);
    free(attn);
    gcase_free(&g);
}
END_TEST

/* Larger inits, checked through a hash of the whole state_dict (and one
 * draw after the constructor: the head's draws consumed) from
 * init_hashes.txt of each directory (its columns are the family's config). */
static uint64_t fnv1a64(const float *x, size_t n) {
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    const unsigned char *p = (const unsigned char *)x;
    for (size_t i = 0; i < n * sizeof *x; i++) h = (h ^ p[i]) * UINT64_C(0x100000001b3);
    return h;
}

/* One line of init_hashes.txt; 1 if read. */
static int hash_line(const char *line, int book, attn_lm_config *c, unsigned long long *seed,
                     size_t *n, unsigned long long *hash, double *after) {
    *c = (attn_lm_config){.arch = book ? ATTN_ARCH_GPTMODEL : ATTN_ARCH_GPT2};
    if (book)
        return sscanf(line, "%d %d %d %d %d %lf %d %llu %zu %llx %lf", &c->vocab_size,
                      &c->context, &c->width, &c->n_head, &c->n_layer, &c->dropout,
                      &c->qkv_bias, seed, n, hash, after) == 11;
    return sscanf(line, "%d %d %d %d %d %lf %llu %zu %llx %lf", &c->vocab_size, &c->context,
                  &c->n_layer, &c->n_head, &c->width, &c->dropout, seed, n, hash, after) == 10;
}

START_TEST(golden_init_hashes) {
    const char *dirs[2];
    ck_assert_int_gt(golden_dirs(dirs), _i);
    char path[512];
    snprintf(path, sizeof path, "%s/init_hashes.txt", dirs[_i]);
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    char line[512];
    int cases = 0, book = strstr(dirs[_i], "gptmodel") != NULL;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        attn_lm_config c;
        unsigned long long seed, hash;
        size_t n;
        double after;
        ck_assert_msg(hash_line(line, book, &c, &seed, &n, &hash, &after), "%s: %s", path, line);
        attn_lm_plan plan;
        attn_rng rng;
        float *params = seeded_model(&c, 1, 1, 0, seed, &plan, &rng);
        ck_assert_uint_eq(plan.n_params, n);
        uint64_t got = fnv1a64(params, n);
        ck_assert_msg(got == hash, "GPTConfig(%d, %d, %d, %d, %d), seed %llu: hash %016llx, "
                      "PyTorch's %016llx", c.vocab_size, c.context, c.n_layer, c.n_head,
                      c.width, seed, (unsigned long long)got, hash);
        ck_assert_double_eq(attn_rng_uniform(&rng, 0.0f, 1.0f), (float)after);
        printf("init hash GPTConfig(%d, %d, %d, %d, %d) seed %llu: %zu parameters bit-identical\n",
               c.vocab_size, c.context, c.n_layer, c.n_head, c.width, seed, n);
        free(params);
        cases++;
    }
    fclose(f);
    ck_assert_int_ge(cases, 3);
}
END_TEST

/* ==== Errors ============================================================== */

static const attn_lm_config SMALL = {.vocab_size = 10, .context = 6, .n_layer = 2,
                                       .n_head = 2, .width = 8, .dropout = 0.1};

static void expect_plan_error(attn_lm_config c, int B, int T, int code, const char *field) {
    attn_lm_plan plan;
    attn_error err = {0};
    int rc = attn_lm_plan_make(&c, B, T, 0, &plan, &err);
    ck_assert_msg(rc == code, "expected %s, got %s (%s)", attn_status_name(code),
                  attn_status_name(rc), err.message);
    ck_assert_str_eq(err.field, field);
}

/* The parameter called name in plan's state_dict (fails the test if none). */
static attn_param param_named(const attn_lm_plan *plan, const char *name) {
    attn_param p = {0};
    for (int i = 0; i < plan->param_count; i++)
        if (attn_lm_param_get(plan, i, &p) == ATTN_OK && strcmp(p.name, name) == 0) return p;
    ck_abort_msg("no parameter %s in the state_dict", name);
    return p;
}

/* attn_lm_params_check finds a NaN put at params[i], named field. */
static void expect_nan_named(const attn_lm_plan *plan, float *params, size_t i,
                             const char *field) {
    attn_error err = {0};
    params[i] = NAN;
    ck_assert_int_eq(attn_lm_params_check(plan, params, &err), ATTN_ERR_NONFINITE);
    ck_assert_str_eq(err.field, field);
}

/* The square [T][T] mask buffer p (TRIL or TRIU, checked by the caller):
 * accepted as made, refused and named with a 1 at params[p.offset + at]
 * (the wrong side of the diagonal), accepted again once it is 0. */
static void expect_mask_guarded(const attn_lm_plan *plan, float *params, attn_param p, size_t at,
                                const char *field) {
    attn_error err = {0};
    ck_assert_int_eq(attn_lm_params_check(plan, params, &err), ATTN_OK);
    params[p.offset + at] = 1.0f;
    ck_assert_int_eq(attn_lm_params_check(plan, params, &err), ATTN_ERR_ARG);
    ck_assert_str_eq(err.field, field);
    params[p.offset + at] = 0.0f;
    ck_assert_int_eq(attn_lm_params_check(plan, params, &err), ATTN_OK);
}

/* With no blocks, logits[t][5] = hidden[t] · head[5] (the head's rows of
 * SMALL's C = 8 floats, V = 10) at both positions. */
static void expect_head_product(const float *logits, const float *hidden, const float *head) {
    for (int t = 0; t < 2; t++) {
        double dot = 0.0;
        for (int k = 0; k < 8; k++) dot += (double)hidden[t * 8 + k] * head[5 * 8 + k];
        ck_assert_double_eq_tol(logits[t * 10 + 5], dot, 1e-5);
    }
}

START_TEST(plan_errors) {
    attn_lm_config c = SMALL;
    expect_plan_error(c, 1, 7, ATTN_ERR_SHAPE, "idx"); /* T > block_size */
    c.n_head = 3;
    expect_plan_error(c, 1, 2, ATTN_ERR_SHAPE, "n_head");
    c = SMALL, c.vocab_size = 0;
    expect_plan_error(c, 1, 2, ATTN_ERR_ARG, "vocab_size");
    c = SMALL, c.dropout = 1.5;
    expect_plan_error(c, 1, 2, ATTN_ERR_ARG, "dropout");
    c = SMALL, c.n_layer = -1;
    expect_plan_error(c, 1, 2, ATTN_ERR_ARG, "n_layer");
    c = SMALL;
    expect_plan_error(c, 0, 2, ATTN_ERR_ARG, "batch");
    c = SMALL, c.vocab_size = 1 << 30, c.width = 1 << 30, c.n_head = 1;
    expect_plan_error(c, 1, 2, ATTN_ERR_RANGE, "vocab_size");
    c = SMALL, c.width = 1 << 20, c.n_head = 1;
    expect_plan_error(c, 1, 2, ATTN_ERR_RANGE, "n_embd");
    c = SMALL, c.context = 1 << 19, c.n_layer = 1 << 10;
    expect_plan_error(c, 1, 2, ATTN_ERR_RANGE, "n_embd");
}
END_TEST

START_TEST(forward_errors) {
    attn_lm_plan plan;
    attn_rng rng;
    float *params = seeded_model(&SMALL, 1, 3, 0, 1, &plan, &rng);
    attn_error err = {0};
    float logits[3 * 10];
    attn_lm_outputs out = {.logits = logits};
    int32_t idx[3] = {1, 10, 2};
    ck_assert_int_eq(attn_lm_forward(&plan, params, idx, NULL, NULL, &out, &err), ATTN_ERR_ARG);
    ck_assert_str_eq(err.field, "idx");
    ck_assert_ptr_nonnull(strstr(err.message, "idx[0][1] is 10"));
    idx[1] = -1;
    ck_assert_int_eq(attn_lm_forward(&plan, params, idx, NULL, NULL, &out, &err), ATTN_ERR_ARG);
    idx[1] = 9;
    ck_assert_int_eq(attn_lm_forward(&plan, params, idx, NULL, NULL, &out, &err), ATTN_OK);
    /* a tril buffer that is not tril, and a NaN, are named */
    attn_param p = param_named(&plan, "h.1.attn.bias");
    ck_assert(p.buffer == ATTN_BUFFER_TRIL && p.count == 36);
    /* [0][1]: above the diagonal */
    expect_mask_guarded(&plan, params, p, 1, "state_dict.h.1.attn.bias");
    expect_nan_named(&plan, params, plan.n_params - 1, "state_dict.ln_f.bias");
    free(params);
}
END_TEST

/* Results beyond float32 are errors, not NaN in the outputs: logits that
 * overflow (found by lm_head's blocks), a NaN weight of the MLP (it reaches
 * the hidden state); a NaN attention weight is attn_lm_params_check's to
 * find (the forward does not check the parameters per block). */
START_TEST(nonfinite_results) {
    attn_lm_plan plan;
    attn_rng rng;
    float *params = seeded_model(&SMALL, 1, 3, 0, 4, &plan, &rng);
    float *logits = malloc(plan.n_logits * sizeof *logits);
    ck_assert_ptr_nonnull(logits);
    attn_error err = {0};
    int32_t idx[3] = {1, 2, 3};
    attn_lm_outputs out = {.logits = logits};
    /* wte x 1e20 and ln_f.weight 1e20: h about 1e20, logits about 1e40 */
    size_t VC = (size_t)plan.V * (size_t)plan.C;
    float *ln_f = params + plan.n_params - 2 * (size_t)plan.C;
    for (int last = 0; last < 2; last++) {
        out.last_only = last;
        for (size_t i = 0; i < VC; i++) params[i] *= 1e20f;
        for (int c = 0; c < plan.C; c++) ln_f[c] = 1e20f;
        ck_assert_int_eq(attn_lm_forward(&plan, params, idx, NULL, NULL, &out, &err),
                         ATTN_ERR_NONFINITE);
        for (size_t i = 0; i < VC; i++) params[i] /= 1e20f;
        for (int c = 0; c < plan.C; c++) ln_f[c] = 1.0f;
        ck_assert_int_eq(attn_lm_forward(&plan, params, idx, NULL, NULL, &out, &err), ATTN_OK);
    }
    attn_param p = param_named(&plan, "h.0.attn.c_attn.weight");
    ck_assert_str_eq(p.name, "h.0.attn.c_attn.weight");
    /* a NaN weight is found by the check the forward's callers make once
     * (attn_lm_params_check), named */
    expect_nan_named(&plan, params, p.offset + 5, "state_dict.h.0.attn.c_attn.weight");
    /* one in the MLP reaches the hidden state, which the forward checks */
    params[p.offset + 5] = 0.5f;
    p = param_named(&plan, "h.1.mlp.fc.weight");
    params[p.offset + 3] = NAN;
    ck_assert_int_eq(attn_lm_forward(&plan, params, idx, NULL, NULL, &out, &err),
                     ATTN_ERR_NONFINITE);
    free(params);
    free(logits);
}
END_TEST

/* n_layer 0 is a valid model: embeddings, the final norm and the head,
 * logits = final_norm(x) · head. GPT2's head is tied to wte (its first
 * parameter); GPTModel's is its own out_head (untied: not the token
 * embedding). SMALL without blocks, parameters from seed 2, ids {3, 4}. */
static const struct {
    attn_arch arch;
    int param_count, head;
    const char *head_name;
} NO_LAYERS[] = {
    {ATTN_ARCH_GPT2, 4, 0, "wte.weight"},
    {ATTN_ARCH_GPTMODEL, 5, 4, "out_head.weight"},
};

START_TEST(no_layers) {
    attn_lm_config c = SMALL;
    c.arch = NO_LAYERS[_i].arch, c.n_layer = 0;
    attn_lm_plan plan;
    attn_rng rng;
    float *params = seeded_model(&c, 1, 2, 0, 2, &plan, &rng);
    ck_assert_int_eq(plan.param_count, NO_LAYERS[_i].param_count);
    ck_assert_uint_eq(plan.n_attn, 0);
    attn_param head;
    ck_assert_int_eq(attn_lm_param_get(&plan, NO_LAYERS[_i].head, &head), ATTN_OK);
    ck_assert_str_eq(head.name, NO_LAYERS[_i].head_name);
    float logits[2 * 10], hidden[2 * 8];
    int32_t idx[2] = {3, 4};
    attn_lm_outputs out = {.logits = logits, .hidden_states = hidden};
    attn_error err = {0};
    ck_assert_int_eq(attn_lm_forward(&plan, params, idx, NULL, NULL, &out, &err), ATTN_OK);
    /* logits[t][v] = final_norm(x[t]) · head[v] */
    expect_head_product(logits, hidden, params + head.offset);
    free(params);
}
END_TEST

/* The vectorised GELU against the formulas in double: F.act's erf form
 * (Abramowitz and Stegun's erf, as PyTorch's kernel) and gelu_new's tanh,
 * over [-12, 12] and a few extremes, within 2e-7 per unit of |x|. */
START_TEST(gelu_forms) {
    enum { N = 4801 + 6 };
    static float x[N], y[N];
    for (int i = 0; i < 4801; i++) x[i] = -12.0f + (float)i * 0.005f;
    const float extreme[6] = {-1e30f, -100.0f, -1e-30f, 1e-30f, 100.0f, 1e30f};
    for (int i = 0; i < 6; i++) x[4801 + i] = extreme[i];
    for (int form = 0; form < 2; form++) {
        memcpy(y, x, sizeof x);
        attn__gelu_row(y, N, form);
        for (int i = 0; i < N; i++) {
            double v = x[i], want;
            if (form == 0)
                want = 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
            else
                want = 0.5 * v * (1.0 + tanh(sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
            double tol = 2e-7 * (fabs(v) > 1.0 ? fabs(v) : 1.0);
            ck_assert_msg(isfinite(y[i]) && fabs(y[i] - want) <= tol,
                          "form %d: gelu(%.9g) = %.9g, expected %.9g", form, v, (double)y[i], want);
        }
    }
}
END_TEST

/* The compute pool changes which thread runs a block, never a bit: a model
 * big enough for every product to be split (rows over 128, two column blocks
 * at least), every output, pools of 2 and 3 against none; eval,
 * and training with dropout (the draws stay in order on the calling thread). */
START_TEST(same_bits_any_pool) {
    attn_lm_config c = {.vocab_size = 700, .context = 160, .n_layer = 2, .n_head = 4,
                          .width = 96, .dropout = 0.2, .act = (attn_act)(_i & 1),
                          .arch = _i >= 4 ? ATTN_ARCH_GPTMODEL : ATTN_ARCH_GPT2,
                          .qkv_bias = _i & 1};
    int training = (_i & 2) != 0, B = 2, T = 150;
    attn_lm_plan plan;
    attn_rng rng;
    float *params = seeded_model(&c, B, T, training, 11, &plan, &rng);
    int32_t *idx = malloc((size_t)B * T * sizeof *idx);
    ck_assert_ptr_nonnull(idx);
    attn_error err = {0};
    for (int i = 0; i < B * T; i++) idx[i] = (int32_t)((i * 7919u) % 700u);
    size_t n = plan.n_logits + plan.n_hidden + plan.n_attn + plan.n_dropout;
    float *want = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
    float *want_only = malloc(plan.n_logits * sizeof(float));
    ck_assert(want && got && want_only);
    for (int width = 1; width <= 3; width++) {
        attn_pool *pool = width > 1 ? attn_pool_create(width) : NULL;
        float *dst = width == 1 ? want : got;
        attn_lm_outputs out = {.logits = dst, .hidden_states = dst + plan.n_logits,
                                 .attn_weights = dst + plan.n_logits + plan.n_hidden,
                                 .dropout_masks = dst + n - plan.n_dropout};
        attn_rng r;
        attn_rng_seed(&r, 5);
        ck_assert_int_eq(attn_lm_forward(&plan, params, idx, pool, &r, &out, &err), ATTN_OK);
        if (width > 1) ck_assert_msg(memcmp(want, got, n * sizeof(float)) == 0, "pool of %d", width);
        /* logits alone (the fused attention path) */
        attn_lm_outputs only = {.logits = width == 1 ? want_only : got};
        attn_rng_seed(&r, 5);
        ck_assert_int_eq(attn_lm_forward(&plan, params, idx, pool, &r, &only, &err), ATTN_OK);
        if (width > 1)
            ck_assert_msg(memcmp(want_only, got, plan.n_logits * sizeof(float)) == 0,
                          "logits only, pool of %d", width);
        attn_pool_destroy(pool);
    }
    free(want_only);
    free(want), free(got), free(params), free(idx);
}
END_TEST

/* The architecture table: names both ways (and the names a config.json
 * gives), each row's hyperparameters under its own names. */
START_TEST(arch_table) {
    attn_arch a;
    ck_assert_int_eq(attn_arch_from_name("GPTModel", &a), ATTN_OK);
    ck_assert_int_eq(a, ATTN_ARCH_GPTMODEL);
    ck_assert_int_eq(attn_arch_from_name("GPT2", &a), ATTN_OK);
    ck_assert_int_eq(a, ATTN_ARCH_GPT2);
    a = ATTN_ARCH_GPTMODEL;
    ck_assert_int_eq(attn_arch_from_name("gpt2", &a), ATTN_OK); /* config.json's model_type */
    ck_assert_int_eq(a, ATTN_ARCH_GPT2);
    ck_assert_int_eq(attn_arch_from_name("gptmodel", &a), ATTN_ERR_ARG);
    ck_assert_int_eq(attn_arch_from_name(NULL, &a), ATTN_ERR_ARG);
    ck_assert_ptr_null(attn_arch_name(ATTN_ARCH_COUNT));
    const attn_arch_hparam *hp;
    int n = attn_arch_hparams(ATTN_ARCH_GPTMODEL, &hp), context = 0, bias = 0;
    for (int i = 0; i < n; i++) {
        context |= hp[i].id == ATTN_HP_CONTEXT && !strcmp(hp[i].name, "context_length");
        bias |= hp[i].id == ATTN_HP_QKV_BIAS && !strcmp(hp[i].name, "qkv_bias");
    }
    ck_assert(context && bias);
    n = attn_arch_hparams(ATTN_ARCH_GPT2, &hp);
    for (int i = 0; i < n; i++) ck_assert_int_ne(hp[i].id, ATTN_HP_QKV_BIAS);
    /* the tied head is GPT2's */
    attn_lm_config c = SMALL;
    attn_lm_plan plan;
    ck_assert_int_eq(attn_lm_plan_make(&c, 1, 2, 0, &plan, NULL), ATTN_OK);
    ck_assert_str_eq(attn_lm_tied_head_name(&plan), "lm_head.weight");
    c.arch = ATTN_ARCH_GPTMODEL;
    ck_assert_int_eq(attn_lm_plan_make(&c, 1, 2, 0, &plan, NULL), ATTN_OK);
    ck_assert_ptr_null(attn_lm_tied_head_name(&plan));
}
END_TEST

/* GPTModel's errors name the book's config keys. */
START_TEST(gptmodel_plan_errors) {
    attn_lm_config c = SMALL;
    c.arch = ATTN_ARCH_GPTMODEL;
    expect_plan_error(c, 1, 7, ATTN_ERR_SHAPE, "idx");
    c.n_head = 3;
    expect_plan_error(c, 1, 2, ATTN_ERR_SHAPE, "n_heads");
    c = SMALL, c.arch = ATTN_ARCH_GPTMODEL, c.n_layer = -1;
    expect_plan_error(c, 1, 2, ATTN_ERR_ARG, "n_layers");
    c = SMALL, c.arch = ATTN_ARCH_GPTMODEL, c.context = 0;
    expect_plan_error(c, 1, 2, ATTN_ERR_ARG, "context_length");
    c = SMALL, c.arch = ATTN_ARCH_GPTMODEL, c.dropout = -0.1;
    expect_plan_error(c, 1, 2, ATTN_ERR_ARG, "drop_rate");
    c = SMALL, c.arch = ATTN_ARCH_GPTMODEL, c.width = 1 << 20, c.n_head = 1;
    expect_plan_error(c, 1, 2, ATTN_ERR_RANGE, "emb_dim");
    c = SMALL, c.arch = ATTN_ARCH_COUNT;
    expect_plan_error(c, 1, 2, ATTN_ERR_ARG, "arch");
    attn_lm_plan plan;
    attn_error err = {0};
    c = SMALL, c.arch = ATTN_ARCH_GPTMODEL;
    ck_assert_int_eq(attn_lm_plan_make(&c, 1, 7, 0, &plan, &err), ATTN_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(err.message, "context_length 6"));
    /* GPTModel's GELU is the tanh form whatever cfg.act says */
    ck_assert_int_eq(attn_lm_plan_make(&c, 1, 2, 0, &plan, &err), ATTN_OK);
    ck_assert_int_eq(plan.spec.act, ATTN_ACT_GELU_TANH);
}
END_TEST

/* att.mask must hold triu(ones, diagonal=1); a NaN is named too. */
START_TEST(gptmodel_mask_buffer) {
    attn_lm_config c = SMALL;
    c.arch = ATTN_ARCH_GPTMODEL, c.qkv_bias = 1;
    attn_lm_plan plan;
    attn_rng rng;
    float *params = seeded_model(&c, 1, 3, 0, 1, &plan, &rng);
    attn_param p = param_named(&plan, "trf_blocks.1.att.mask");
    ck_assert(p.buffer == ATTN_BUFFER_TRIU && p.count == 36 && p.rank == 2);
    /* [1][0]: below the diagonal */
    expect_mask_guarded(&plan, params, p, 6, "state_dict.trf_blocks.1.att.mask");
    expect_nan_named(&plan, params, plan.n_params - 1, "state_dict.out_head.weight");
    free(params);
}
END_TEST

/* normal_ below 16 elements caches the sine half across calls, as PyTorch's
 * generator does: 3 + 3 draws equal one draw of 6 element by element. */
START_TEST(normal_small_cache) {
    attn_rng a, b;
    attn_rng_seed(&a, 9);
    attn_rng_seed(&b, 9);
    attn_normal_cache ca = {0}, cb = {0};
    float x[6], y[6];
    attn_rng_normal_fill(&a, &ca, x, 3, 0.0, 1.0);
    attn_rng_normal_fill(&a, &ca, x + 3, 3, 0.0, 1.0);
    attn_rng_normal_fill(&b, &cb, y, 6, 0.0, 1.0);
    ck_assert(memcmp(x, y, sizeof x) == 0);
    ck_assert(ca.has_next == 0 && cb.has_next == 0);
}
END_TEST

static Suite *suite(void) {
    /* Bits depend on OpenBLAS's thread count (attention.h): one thread, as
     * attn_pool_create and the server set it. */
    openblas_set_num_threads(1);
    const char *dirs[2];
    int n_dirs = golden_dirs(dirs);
    gpt2_files_list(&g_files, dirs, n_dirs);
    Suite *s = suite_create("core_gpt2");
    const TTest *golden[] = {golden_files_exist, NULL};
    TCase *files = tcase_with(s, "golden", 30, golden);
    tcase_add_loop_test(files, golden_init_hashes, 0, n_dirs);
    if (g_files.n > 0) {
        tcase_add_loop_test(files, golden_state_dict, 0, g_files.n);
        tcase_add_loop_test(files, golden_init, 0, g_files.n);
        tcase_add_loop_test(files, golden_forward, 0, g_files.n);
    }
    const TTest *errors[] = {plan_errors, forward_errors, nonfinite_results, normal_small_cache,
                             gelu_forms, arch_table, gptmodel_plan_errors, gptmodel_mask_buffer,
                             NULL};
    TCase *tc = tcase_with(s, "errors", 0, errors);
    tcase_add_loop_test(tc, no_layers, 0, (int)(sizeof NO_LAYERS / sizeof NO_LAYERS[0]));
    tcase_add_loop_test(tc, same_bits_any_pool, 0, 8);
    return s;
}

static void free_files(void) {
    gpt2_files_free(&g_files);
}

const test_program TEST_PROGRAM = {.suites = {suite}, .after = free_files};
