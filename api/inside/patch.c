/* patch.c - activation patching, the experiment of the indirect-
 * object-identification work (TransformerLens's patching.py): the clean
 * run (the request's own), the corrupted run, then for every block l and
 * every head (site attn_head: hook_z) or position (the residual sites) the
 * corrupted input with that one activation taken from the clean run. Each
 * result is the last position's logit[a] - logit[b].
 *
 * What does not change is reused: a patch at block l leaves blocks 0..l-1
 * as the corrupted run computed them, so each patched run starts at block
 * l from the corrupted run's hook_resid_pre of l (attn_lm_inputs.resid),
 * and computes the head on the last position only. G items of one block
 * share a run (api__inside_sweep): a batch of G copies of the corrupted
 * input, where each item's patch source holds the clean activation in its
 * own row block and the corrupted run's elsewhere, so that row block g sees
 * exactly its one patch. The runs are shared over the compute pool one run
 * per thread (attn_lm_run_many), K at a time. Ablations of the request
 * apply to every run: the corrupted run's, and the patched runs' from their
 * first block on (the earlier ones are in their input).
 */
#include "api/inside/inside.h"

#include <stdlib.h>
#include <string.h>

/* out[b * stride] = logit[d0] - logit[d1] at each batch row's last position;
 * logits [B][T][V], or [B][V] with last_only. */
static void diffs(const attn_lm_plan *p, const float *logits, int last_only,
                  const int32_t d[2], float *out, size_t stride) {
    for (int b = 0; b < p->B; b++) {
        size_t row = last_only ? (size_t)b : (size_t)b * (size_t)p->T + (size_t)(p->T - 1);
        const float *x = logits + row * (size_t)p->V;
        out[(size_t)b * stride] = x[d[0]] - x[d[1]];
    }
}

static int core_fail(api_err *e, const attn_error *ae) {
    api__from_attn(e, ae, ATTN_MODULE_COUNT);
    return -1;
}

/* The site's activation's floats per position: the heads' QD for hook_z,
 * the residual stream's C otherwise. */
static size_t site_width(const inside_rq *rq, const attn_lm_plan *p) {
    return (size_t)(api__inside_site(rq->site)->per_head ? p->QD : p->C);
}

/* The corrupted run: its hook_resid_pre of every block into resid
 * ([n_layer][B][T][C]) and its activation at the site into site
 * ([n_layer][B][T][site_width]; the same array for resid_pre), its logit
 * differences into io->corrupted. */
static int corrupted_run(const inside_rq *rq, const attn_lm_plan *p, const void *weights,
                         attn_pool *pool, float *resid, float *site, float *last, inside_out *io,
                         api_err *e) {
    size_t BT = (size_t)p->B * (size_t)p->T, BTC = BT * (size_t)p->C, BTW = BT * site_width(rq, p);
    attn_hook hook = api__inside_site(rq->site)->hook;
    int L = p->n_layer, n = 0;
    attn_lm_capture *caps = calloc(2 * (size_t)L + 1, sizeof *caps);
    if (caps == NULL) return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the patching");
    for (int l = 0; l < L; l++) {
        caps[n++] = (attn_lm_capture){l, ATTN_HOOK_RESID_PRE, resid + (size_t)l * BTC};
        if (hook != ATTN_HOOK_RESID_PRE) caps[n++] = (attn_lm_capture){l, hook, site + (size_t)l * BTW};
    }
    attn_lm_inputs in = {.idx = rq->corrupted, .captures = caps, .n_captures = n,
                           .ablations = rq->ablate, .n_ablations = rq->n_ablate, .pool = pool};
    attn_lm_outputs out = {.logits = last, .last_only = 1};
    attn_error ae = {0};
    int rc = attn_lm_run(p, weights, &in, NULL, &out, &ae);
    free(caps);
    if (rc != ATTN_OK) return core_fail(e, &ae);
    diffs(p, last, 1, rq->diff, io->corrupted, 1);
    return 0;
}

/* The sweep's work lists, K runs at a time. */
typedef struct {
    attn_lm_inputs *in;
    attn_lm_outputs *out;
    attn_lm_patch *pt;  /* [K][G] */
    int *status;
    attn_error *errs;
    float *bufs;          /* [K][run_floats]: each run's input, patch source, logits */
} sweep_lists;

static int lists_make(sweep_lists *s, const inside_sweep *sw) {
    size_t K = (size_t)sw->K;
    s->in = calloc(K, sizeof *s->in);
    s->out = calloc(K, sizeof *s->out);
    s->pt = calloc(K * (size_t)sw->G, sizeof *s->pt);
    s->status = calloc(K, sizeof *s->status);
    s->errs = calloc(K, sizeof *s->errs);
    s->bufs = malloc(K * sw->run_floats * sizeof *s->bufs);
    return s->in && s->out && s->pt && s->status && s->errs && s->bufs ? 0 : -1;
}

static void lists_free(sweep_lists *s) {
    free(s->in), free(s->out), free(s->pt), free(s->status), free(s->errs), free(s->bufs);
}

/* The item of row block g of run r: a head or position of its block (the
 * last run of a block repeats its first item where it has fewer than G). */
static int item_of(const inside_sweep *sw, int r, int g) {
    int first = (r % sw->per_layer) * sw->G;
    return first + g < sw->X ? first + g : first;
}

/* dst = the corrupted activation src [B][T][C] (hook_z: [B][T][QD]) with
 * item x's slice (head x's columns, or position x's row) from the clean one. */
static void source(const attn_lm_plan *p, int per_head, int x, const float *src,
                   const float *clean, float *dst) {
    size_t BT = (size_t)p->B * (size_t)p->T, C = (size_t)(per_head ? p->QD : p->C);
    size_t D = (size_t)p->D;
    memcpy(dst, src, BT * C * sizeof *dst);
    if (per_head)
        for (size_t bt = 0; bt < BT; bt++)
            memcpy(dst + bt * C + (size_t)x * D, clean + bt * C + (size_t)x * D, D * sizeof *dst);
    else
        for (int b = 0; b < p->B; b++) {
            size_t at = ((size_t)b * (size_t)p->T + (size_t)x) * C;
            memcpy(dst + at, clean + at, C * sizeof *dst);
        }
}

/* Run r of the sweep as item i of the lists: G copies of the corrupted
 * run's input to its block, the patch source, one patch per item. */
static void sweep_item(const inside_rq *rq, const attn_lm_plan *p, const inside_sweep *sw,
                       const inside_out *io, const float *resid, const float *site,
                       sweep_lists *s, int i, int r) {
    const inside_site_info *info = api__inside_site(rq->site);
    size_t BT = (size_t)p->B * (size_t)p->T, BTC = BT * (size_t)p->C, BTW = BT * site_width(rq, p);
    size_t G = (size_t)sw->G;
    int l = r / sw->per_layer, first = 0;
    while (first < rq->n_ablate && rq->ablate[first].layer < l) first++;
    float *R = s->bufs + (size_t)i * sw->run_floats, *S = R + G * BTC, *logits = S + G * BTW;
    const float *clean = api__inside_capture(io, l, info->hook);
    for (int g = 0; g < sw->G; g++) {
        int x = item_of(sw, r, g);
        memcpy(R + (size_t)g * BTC, resid + (size_t)l * BTC, BTC * sizeof *R);
        source(p, info->per_head, x, site + (size_t)l * BTW, clean, S + (size_t)g * BTW);
        s->pt[(size_t)i * G + (size_t)g] = (attn_lm_patch){l, info->hook, x, S};
    }
    s->in[i] = (attn_lm_inputs){.resid = R, .start_layer = l, .patches = s->pt + (size_t)i * G,
                                  .n_patches = sw->G, .ablations = rq->ablate + first,
                                  .n_ablations = rq->n_ablate - first};
    s->out[i] = (attn_lm_outputs){.logits = logits, .last_only = 1};
}

/* Run r's results: row block g's differences for its item (not the repeats). */
static void sweep_results(const inside_rq *rq, const attn_lm_plan *p, const inside_sweep *sw,
                          const float *logits, int r, float *result) {
    size_t n = (size_t)p->n_layer * (size_t)sw->X, BV = (size_t)p->B * (size_t)p->V;
    int l = r / sw->per_layer;
    for (int g = 0; g < sw->G; g++) {
        int x = item_of(sw, r, g);
        if (g > 0 && x == item_of(sw, r, 0)) break;
        diffs(p, logits + (size_t)g * BV, 1, rq->diff, result + (size_t)l * sw->X + (size_t)x, n);
    }
}

static int sweep(const inside_rq *rq, const attn_lm_plan *p, const void *weights,
                 attn_pool *pool, const float *resid, const float *site, inside_out *io, api_err *e) {
    inside_sweep sw;
    if (api__inside_sweep(rq, p, attn_pool_width(pool), &sw, e)) return -1;
    if (sw.n_runs == 0) return 0;
    sweep_lists s;
    int rc = 0;
    if (lists_make(&s, &sw)) rc = api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the patching");
    for (int r0 = 0; rc == 0 && r0 < sw.n_runs; r0 += sw.K) {
        int m = sw.n_runs - r0 < sw.K ? sw.n_runs - r0 : sw.K;
        for (int i = 0; i < m; i++) sweep_item(rq, p, &sw, io, resid, site, &s, i, r0 + i);
        if (attn_lm_run_many(&sw.gp, weights, s.in, s.out, m, pool, s.status, s.errs) != ATTN_OK) {
            int bad = 0;
            while (s.status[bad] == ATTN_OK) bad++;
            rc = core_fail(e, &s.errs[bad]);
            break;
        }
        for (int i = 0; i < m; i++) sweep_results(rq, p, &sw, s.out[i].logits, r0 + i, io->result);
    }
    lists_free(&s);
    return rc;
}

int api__inside_patch(const inside_rq *rq, const attn_lm_plan *p, const void *weights,
                      const float *logits, int last_only, attn_pool *pool, inside_out *io,
                      api_arrays *a, api_err *e) {
    int X = api__inside_site(rq->site)->per_head ? p->H : p->T;
    int other = api__inside_site(rq->site)->hook != ATTN_HOOK_RESID_PRE;
    size_t B = (size_t)p->B, LBT = (size_t)p->n_layer * B * (size_t)p->T;
    size_t LBTC = LBT * (size_t)p->C, LBTW = LBT * site_width(rq, p);
    io->result = api__arrays_take(a, (size_t)p->n_layer * (size_t)X * B, sizeof(float));
    io->clean = api__arrays_take(a, B, sizeof(float));
    io->corrupted = api__arrays_take(a, B, sizeof(float));
    float *resid = malloc((LBTC + (other ? LBTW : 0) + 1) * sizeof *resid);
    float *site = other ? resid + LBTC : resid, *last = malloc(B * (size_t)p->V * sizeof *last);
    int rc = 0;
    if (a->failed || resid == NULL || last == NULL)
        rc = api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the patching");
    if (rc == 0) diffs(p, logits, last_only, rq->diff, io->clean, 1);
    if (rc == 0) rc = corrupted_run(rq, p, weights, pool, resid, site, last, io, e);
    free(last);
    if (rc == 0) rc = sweep(rq, p, weights, pool, resid, site, io, e);
    free(resid);
    return rc;
}
