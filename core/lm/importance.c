/* importance.c - head importance by ablation
 * (attn_lm_outputs.analysis[ATTN_ANALYSIS_IMPORTANCE]) and what the
 * analyses cost (attn_lm_analysis_cost):
 *
 *   importance[b][l][h] = loss_b(the model with head h of block l's hook_z
 *                         zeroed) - loss_b(the model)
 *
 * loss_b being batch row b's mean cross-entropy over its tokens (loss.c;
 * padding is not scored, and stays padding in the ablated runs): the
 * ablation score of Michel et al. (2019, "Are Sixteen Heads Really Better
 * than One?"), one head at a time.
 *
 * What does not change is not recomputed, as in the patching sweep
 * (api/inside/patch.c): the forward keeps each block's input (r->keep) and
 * the ablated run of (l, h) starts at block l from it. G heads of one block
 * share a run: a batch of G copies of the input in which row block g zeroes
 * its own head (an ablation with a batch range), so that every product of
 * the run has G times the rows. The runs go over the pool one per thread
 * (attn_lm_run_many), K at a time, block 0's (the longest) first; each
 * computes the loss alone (the head over a chunk of rows at a time, no
 * logits kept). The run's own ablations apply in every ablated run from
 * block l on (those before l are in its input).
 */
#include "core/lm/lm.h"
#include "core/parallel.h"

#include <stdlib.h>
#include <string.h>

/* Runs that keep every thread busy; the most rows one run takes (its work
 * space grows with them); the most floats of inputs held at once (64 MB:
 * the 124M shape's 12 runs of T = 128 at once, so that the pool balances
 * them, longest first, instead of waiting at the end of each few). */
#define RUNS_PER_THREAD 2
#define GROUP_ROWS 4096
#define HELD_FLOATS ((size_t)1 << 24)

typedef struct {
    int G, per_layer, n_runs, K;
    attn_lm_plan gp;       /* one ablated run's: batch G * B */
    size_t run_floats;     /* its input, ids, losses and attention mask */
} sweep;

static int sweep_cut(const attn_lm_plan *p, int width, sweep *s, attn_error *err) {
    int L = p->n_layer, H = p->H;
    width = width < 1 ? 1 : width;
    long runs = (long)RUNS_PER_THREAD * width;
    long G = ((long)H * L + runs - 1) / runs, cap = GROUP_ROWS / ((long)p->B * p->T);
    G = G > H ? H : G;
    G = G > cap ? cap : G;
    s->G = G < 1 ? 1 : (int)G;
    s->per_layer = (H + s->G - 1) / s->G;
    s->n_runs = L * s->per_layer;
    attn_error ae = {0};
    if (attn_lm_plan_make(&p->cfg, s->G * p->B, p->T, 0, &s->gp, &ae) != ATTN_OK)
        return attn__fail(err, ATTN_ERR_ARG, "analysis", "importance's ablated runs (a batch of "
                          "%d) cannot be made: %s", s->G * p->B, ae.message);
    size_t rows = (size_t)s->G * (size_t)p->B;
    s->run_floats = rows * (size_t)p->T * ((size_t)p->C + 1) + rows + (rows * (size_t)p->T + 3) / 4;
    size_t k = HELD_FLOATS / s->run_floats;
    k = k < (size_t)width ? (size_t)width : k;
    k = k > (size_t)s->n_runs ? (size_t)s->n_runs : k;
    s->K = k < 1 ? 1 : (int)k;
    return ATTN_OK;
}

/* The head of row block g of run ri: a head of its block (the last run of
 * a block repeats its first head where it has fewer than G). */
static int head_of(const sweep *s, int H, int ri, int g) {
    int first = (ri % s->per_layer) * s->G;
    return first + g < H ? first + g : first;
}

/* ==== The ablated runs ===================================================== */

typedef struct {
    attn_lm_inputs *in;
    attn_lm_outputs *out;
    attn_lm_ablate *abl;   /* [K][per run] */
    int per_run;           /* ablations of one run: G * (the run's own + 1) at most */
    int *status;
    attn_error *errs;
    float *bufs;           /* [K][run_floats] */
} lists;

static int lists_make(lists *t, const sweep *s, int n_own) {
    size_t K = (size_t)s->K;
    t->per_run = s->G * (n_own + 1);
    t->in = calloc(K, sizeof *t->in);
    t->out = calloc(K, sizeof *t->out);
    t->abl = calloc(K * (size_t)t->per_run, sizeof *t->abl);
    t->status = calloc(K, sizeof *t->status);
    t->errs = calloc(K, sizeof *t->errs);
    t->bufs = malloc(K * s->run_floats * sizeof *t->bufs);
    return t->in && t->out && t->abl && t->status && t->errs && t->bufs ? 0 : -1;
}

static void lists_free(lists *t) {
    free(t->in), free(t->out), free(t->abl), free(t->status), free(t->errs), free(t->bufs);
}

/* Run ri as item i: G copies of block l's input and of the ids, the run's
 * own ablations from l on in each row block, then each row block's head. */
static void item(const attn__run *r, const sweep *s, lists *t, int i, int ri) {
    const attn_lm_plan *p = r->p;
    const attn_lm_inputs *own = r->in;
    size_t BT = (size_t)p->B * (size_t)p->T, BTC = BT * (size_t)p->C, G = (size_t)s->G;
    int l = ri / s->per_layer, n = 0;
    float *resid = t->bufs + (size_t)i * s->run_floats, *loss = resid + G * BTC + G * BT;
    int32_t *ids = (int32_t *)(resid + G * BTC);
    uint8_t *mask = own->attention_mask ? (uint8_t *)(loss + G * (size_t)p->B) : NULL;
    attn_lm_ablate *abl = t->abl + (size_t)i * (size_t)t->per_run;
    for (int g = 0; g < s->G; g++) {
        memcpy(resid + (size_t)g * BTC, r->keep + (size_t)l * BTC, BTC * sizeof *resid);
        memcpy(ids + (size_t)g * BT, own->idx, BT * sizeof *ids);
        if (mask) memcpy(mask + (size_t)g * BT, own->attention_mask, BT); /* padding stays padding */
        for (int k = 0; k < own->n_ablations; k++) {
            attn_lm_ablate a = own->ablations[k];
            if (a.layer < l) continue;
            a.batch_start = g * p->B + (a.batch_count ? a.batch_start : 0);
            a.batch_count = a.batch_count ? a.batch_count : p->B;
            abl[n++] = a;
        }
    }
    for (int g = 0; g < s->G; g++)
        abl[n++] = (attn_lm_ablate){.layer = l, .head = head_of(s, p->H, ri, g),
                                    .method = ATTN_ABLATE_ZERO, .batch_start = g * p->B,
                                    .batch_count = p->B};
    t->in[i] = (attn_lm_inputs){.idx = ids, .resid = resid, .start_layer = l, .ablations = abl,
                                .n_ablations = n, .attention_mask = mask};
    t->out[i] = (attn_lm_outputs){.loss = loss};
}

/* Run ri's rises into dst [B][n_layer][H] (not the repeated heads). */
static void results(const attn_lm_plan *p, const sweep *s, const float *loss, const float *clean,
                    int ri, float *dst) {
    int l = ri / s->per_layer;
    for (int g = 0; g < s->G; g++) {
        int h = head_of(s, p->H, ri, g);
        if (g > 0 && h == head_of(s, p->H, ri, 0)) break;
        for (int b = 0; b < p->B; b++)
            dst[((size_t)b * (size_t)p->n_layer + (size_t)l) * (size_t)p->H + (size_t)h] =
                loss[(size_t)g * (size_t)p->B + (size_t)b] - clean[b];
    }
}

static int ablated_runs(const attn__run *r, const float *clean, float *dst, attn_error *err) {
    sweep s;
    int rc = sweep_cut(r->p, attn__pool_width(r->pool), &s, err);
    lists t = {0};
    if (rc == ATTN_OK && s.n_runs > 0 && lists_make(&t, &s, r->in->n_ablations))
        rc = attn__fail(err, ATTN_ERR_NOMEM, "", "cannot allocate importance's runs");
    for (int r0 = 0; rc == ATTN_OK && r0 < s.n_runs; r0 += s.K) {
        int m = s.n_runs - r0 < s.K ? s.n_runs - r0 : s.K;
        for (int i = 0; i < m; i++) item(r, &s, &t, i, r0 + i);
        if (attn_lm_run_many(&s.gp, r->params, t.in, t.out, m, r->pool, t.status, t.errs)) {
            int bad = 0;
            while (t.status[bad] == ATTN_OK) bad++;
            *err = t.errs[bad];
            rc = t.status[bad];
            break;
        }
        for (int i = 0; i < m; i++) results(r->p, &s, t.out[i].loss, clean, r0 + i, dst);
    }
    lists_free(&t);
    return rc;
}

int attn__importance(attn__run *r, attn_error *err) {
    const attn_lm_plan *p = r->p;
    if (p->training)
        return attn__fail(err, ATTN_ERR_ARG, "analysis", "importance ablates heads in eval mode: "
                          "leave training out");
    if (r->in->n_patches)
        return attn__fail(err, ATTN_ERR_ARG, "analysis", "importance does not combine with "
                          "patches (their sources are one batch's)");
    size_t n = (size_t)p->n_layer * (size_t)p->B * (size_t)p->T * (size_t)p->C;
    float *keep = malloc((n + (size_t)p->B) * sizeof *keep);
    if (keep == NULL) return attn__fail(err, ATTN_ERR_NOMEM, "", "cannot allocate importance");
    attn_lm_outputs out = *r->out;
    if (out.loss == NULL) out.loss = keep + n;
    r->out = &out, r->keep = keep;
    int rc = attn__run_call(r, err);
    if (rc == ATTN_OK) rc = ablated_runs(r, out.loss, out.analysis[ATTN_ANALYSIS_IMPORTANCE], err);
    if (rc == ATTN_OK) rc = attn__cancel_check(err);
    free(keep);
    return rc;
}

/* ==== Costs ================================================================ */

/* Floats of one run's work space (its plan's total without the parameters
 * and the outputs). */
static double run_space(const attn_lm_plan *p) {
    return (double)p->total_elements - (double)p->n_params - (double)p->n_logits -
           (double)p->n_hidden - (double)p->n_attn - (double)p->n_dropout;
}

static int importance_cost(const attn_lm_plan *p, int width, double *floats, double *ops,
                           attn_error *err) {
    sweep s;
    if (p->training)
        return attn__fail(err, ATTN_ERR_ARG, "analysis", "importance ablates heads in eval mode: "
                          "leave training out");
    if (p->T < 2)
        return attn__fail(err, ATTN_ERR_ARG, "analysis",
                          "importance compares next-token losses: it needs at least 2 tokens");
    if (sweep_cut(p, width, &s, err)) return ATTN_ERR_ARG;
    double B = p->B, T = p->T, L = p->n_layer, rows = (double)s.G * s.per_layer;
    double loss_rows = (double)attn__loss_rows(p) * p->V;
    *floats += L * B * T * p->C + B + (double)s.K * s.run_floats +
               (width < 1 ? 1 : width) * (run_space(&s.gp) + (double)attn__loss_rows(&s.gp) * p->V) +
               loss_rows;
    double block = attn_lm_block_ops(p, B * T, T), head = attn_lm_head_ops(p, B * (T - 1));
    for (int l = 0; l < p->n_layer; l++) *ops += rows * (block * (L - l) + head);
    *ops += head; /* the forward's own loss */
    return ATTN_OK;
}

int attn_lm_analysis_cost(const attn_lm_plan *p, unsigned asked, int width, size_t *floats,
                          double *ops, attn_error *err) {
    if (p == NULL || floats == NULL || ops == NULL)
        return attn__fail(err, ATTN_ERR_ARG, "", "plan, floats and ops are required");
    double f = 0.0, w = 0.0, B = p->B, T = p->T, L = p->n_layer;
    int maps = 0;
    for (int a = 0; a < ATTN_ANALYSIS_COUNT; a++)
        maps |= (asked >> a & 1u) && attn_analysis_get((attn_analysis)a)->from_maps;
    if (maps) { /* one block's weights, the previous occurrences; a pass over each map */
        f += B * p->H * T * T + B * T;
        w += L * B * p->H * T * T * 4.0;
    }
    if (asked >> ATTN_ANALYSIS_ROLLOUT & 1u) { /* the head means; their products */
        f += B * T * T;
        w += L * B * T * T * (p->H + T);
    }
    if ((asked >> ATTN_ANALYSIS_IMPORTANCE & 1u) && importance_cost(p, width, &f, &w, err))
        return ATTN_ERR_ARG;
    *floats = f >= 0x1p50 ? (size_t)1 << 50 : (size_t)f;
    *ops = w;
    return ATTN_OK;
}
