/* inside_patch.c - activation patching, the experiment of the indirect-
 * object-identification work (TransformerLens's patching.py): the clean
 * run (the request's own), the corrupted run, then for every block l and
 * every head (site attn_head: hook_z) or position (the residual sites) the
 * corrupted input with that one activation taken from the clean run. Each
 * result is the last position's logit[a] - logit[b].
 *
 * What does not change is reused: a patch at block l leaves blocks 0..l-1
 * as the corrupted run computed them, so each patched run starts at block
 * l from the corrupted run's hook_resid_pre of l (attn_gpt2_inputs.resid),
 * and computes the head on the last position only. The runs are shared
 * over the compute pool one run per thread (attn_gpt2_run_many), in chunks
 * whose logits are held at once (api__inside_patch_chunk). Ablations of
 * the request apply to every run: the corrupted run's, and the patched
 * runs' from their first block on (the earlier ones are in their input).
 */
#include "api/model/model.h"

#include <stdlib.h>
#include <string.h>

/* out[b * stride] = logit[d0] - logit[d1] at each batch row's last position;
 * logits [B][T][V], or [B][V] with last_only. */
static void diffs(const attn_gpt2_plan *p, const float *logits, int last_only,
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

/* The corrupted run: its hook_resid_pre of every block into resid
 * [n_layer][B][T][C], its logit differences into io->corrupted. */
static int corrupted_run(const inside_rq *rq, const attn_gpt2_plan *p, const float *weights,
                         attn_pool *pool, float *resid, float *last, inside_out *io, api_err *e) {
    size_t BTC = (size_t)p->B * (size_t)p->T * (size_t)p->C;
    attn_gpt2_capture *caps = calloc((size_t)p->n_layer + 1, sizeof *caps);
    if (caps == NULL) return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the patching");
    for (int l = 0; l < p->n_layer; l++)
        caps[l] = (attn_gpt2_capture){l, ATTN_HOOK_RESID_PRE, resid + (size_t)l * BTC};
    attn_gpt2_inputs in = {.idx = rq->corrupted, .captures = caps, .n_captures = p->n_layer,
                           .ablations = rq->ablate, .n_ablations = rq->n_ablate, .pool = pool};
    attn_gpt2_outputs out = {.logits = last, .last_only = 1};
    attn_error ae = {0};
    int rc = attn_gpt2_run(p, weights, &in, NULL, &out, &ae);
    free(caps);
    if (rc != ATTN_OK) return core_fail(e, &ae);
    diffs(p, last, 1, rq->diff, io->corrupted, 1);
    return 0;
}

/* The sweep's work lists, K runs at a time. */
typedef struct {
    attn_gpt2_inputs *in;
    attn_gpt2_outputs *out;
    attn_gpt2_patch *pt;
    int *status;
    attn_error *errs;
    float *logits;   /* [K][B][V] */
} sweep_lists;

static int lists_make(sweep_lists *s, const attn_gpt2_plan *p, int K) {
    s->in = calloc((size_t)K, sizeof *s->in);
    s->out = calloc((size_t)K, sizeof *s->out);
    s->pt = calloc((size_t)K, sizeof *s->pt);
    s->status = calloc((size_t)K, sizeof *s->status);
    s->errs = calloc((size_t)K, sizeof *s->errs);
    s->logits = malloc((size_t)K * (size_t)p->B * (size_t)p->V * sizeof *s->logits);
    return s->in && s->out && s->pt && s->status && s->errs && s->logits ? 0 : -1;
}

static void lists_free(sweep_lists *s) {
    free(s->in), free(s->out), free(s->pt), free(s->status), free(s->errs), free(s->logits);
}

/* Run r of the sweep (block r / X, head or position r % X) as item i. */
static void sweep_item(const inside_rq *rq, const attn_gpt2_plan *p, const inside_out *io,
                       const float *resid, sweep_lists *s, int i, int r, int X) {
    const inside_site_info *site = api__inside_site(rq->site);
    int l = r / X, first = 0;
    while (first < rq->n_ablate && rq->ablate[first].layer < l) first++;
    s->pt[i] = (attn_gpt2_patch){.layer = l, .hook = site->hook, .index = r % X,
                                 .src = api__inside_capture(io, l, site->hook)};
    size_t BTC = (size_t)p->B * (size_t)p->T * (size_t)p->C;
    s->in[i] = (attn_gpt2_inputs){.resid = resid + (size_t)l * BTC, .start_layer = l,
                                  .patches = &s->pt[i], .n_patches = 1,
                                  .ablations = rq->ablate + first, .n_ablations = rq->n_ablate - first};
    s->out[i] = (attn_gpt2_outputs){.logits = s->logits + (size_t)i * (size_t)p->B * (size_t)p->V,
                                    .last_only = 1};
}

static int sweep(const inside_rq *rq, const attn_gpt2_plan *p, const float *weights,
                 attn_pool *pool, const float *resid, inside_out *io, api_err *e) {
    int X = api__inside_site(rq->site)->per_head ? p->H : p->T, n = p->n_layer * X;
    if (n == 0) return 0;
    int K = api__inside_patch_chunk(p, attn_pool_width(pool), n), rc = 0;
    sweep_lists s;
    if (lists_make(&s, p, K)) rc = api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the patching");
    for (int r0 = 0; rc == 0 && r0 < n; r0 += K) {
        int m = n - r0 < K ? n - r0 : K;
        for (int i = 0; i < m; i++) sweep_item(rq, p, io, resid, &s, i, r0 + i, X);
        if (attn_gpt2_run_many(p, weights, s.in, s.out, m, pool, s.status, s.errs) != ATTN_OK) {
            int bad = 0;
            while (s.status[bad] == ATTN_OK) bad++;
            rc = core_fail(e, &s.errs[bad]);
            break;
        }
        for (int i = 0; i < m; i++) diffs(p, s.out[i].logits, 1, rq->diff, io->result + r0 + i, (size_t)n);
    }
    lists_free(&s);
    return rc;
}

int api__inside_patch(const inside_rq *rq, const attn_gpt2_plan *p, const float *weights,
                      const float *logits, int last_only, attn_pool *pool, inside_out *io,
                      api_arrays *a, api_err *e) {
    int X = api__inside_site(rq->site)->per_head ? p->H : p->T;
    size_t B = (size_t)p->B, BTC = B * (size_t)p->T * (size_t)p->C;
    io->result = api__arrays_take(a, (size_t)p->n_layer * (size_t)X * B, sizeof(float));
    io->clean = api__arrays_take(a, B, sizeof(float));
    io->corrupted = api__arrays_take(a, B, sizeof(float));
    float *resid = malloc(((size_t)p->n_layer * BTC + 1) * sizeof *resid);
    float *last = malloc(B * (size_t)p->V * sizeof *last);
    int rc = 0;
    if (a->failed || resid == NULL || last == NULL)
        rc = api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the patching");
    if (rc == 0) diffs(p, logits, last_only, rq->diff, io->clean, 1);
    if (rc == 0) rc = corrupted_run(rq, p, weights, pool, resid, last, io, e);
    free(last);
    if (rc == 0) rc = sweep(rq, p, weights, pool, resid, io, e);
    free(resid);
    return rc;
}
