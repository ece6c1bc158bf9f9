/* run.c - the request's own run with its captures and ablations,
 * then what is computed from it: the patching sweep (inside_patch.c) and
 * the logit lens (each block's input and the last block's output through
 * the model's final LayerNorm and head: ids and probabilities of the k most
 * likely tokens at every position). */
#include "api/inside/inside.h"
#include "api/maps/maps.h"

#include <math.h>
#include <stdlib.h>

int api__inside_inputs(const inside_rq *rq, const attn_lm_plan *p, inside_out *io, api_arrays *a,
                       attn_lm_inputs *in, attn_lm_outputs *out, api_err *e) {
    if (api__inside_analysis_outputs(rq, p, io, a, out, e)) return -1;
    for (int i = 0; i < io->n_caps; i++)
        io->caps[i].dst = api__arrays_take(a, io->cap_count[i], sizeof(float));
    if (a->failed) return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the activations");
    in->captures = io->caps;
    in->n_captures = io->n_caps;
    in->ablations = rq->ablate;
    in->n_ablations = rq->n_ablate;
    return 0;
}

/* probs[0..k) (the row's top-k logits on entry) become their softmax
 * probabilities over the whole row x[0..V). */
static void top_probs(const float *x, int V, float *probs, int k) {
    double max = probs[0], sum = 0.0;
    for (int v = 0; v < V; v++) sum += exp((double)x[v] - max);
    for (int i = 0; i < k; i++) probs[i] = (float)(exp((double)probs[i] - max) / sum);
}

/* The lens of one residual stream resid [B*T][C] into ids, probs [B*T][k]. */
static int lens_entry(const attn_lm_plan *p, const void *weights, const float *resid, int k,
                      attn_pool *pool, float *logits, int *scratch, int32_t *ids, float *probs,
                      api_err *e) {
    int rows = p->B * p->T, R = api__inside_lens_rows(p);
    for (int r0 = 0; r0 < rows; r0 += R) {
        int n = rows - r0 < R ? rows - r0 : R;
        attn_error ae = {0};
        if (attn_lm_logit_lens(p, weights, resid + (size_t)r0 * p->C, n, pool, logits, &ae)) {
            api__from_attn(e, &ae, ATTN_MODULE_COUNT);
            return -1;
        }
        size_t at = (size_t)r0 * (size_t)k;
        api__topk_f32(logits, (size_t)n, p->V, NULL, 0, k, probs + at, ids + at, scratch);
        for (int i = 0; i < n; i++)
            top_probs(logits + (size_t)i * p->V, p->V, probs + at + (size_t)i * k, k);
    }
    return 0;
}

static int lens(const inside_rq *rq, const attn_lm_plan *p, const void *weights,
                attn_pool *pool, inside_out *io, api_arrays *a, api_err *e) {
    int L = p->n_layer, k = rq->lens_k;
    size_t per = (size_t)p->B * (size_t)p->T * (size_t)k;
    io->lens_ids = api__arrays_take(a, (size_t)(L + 1) * per, sizeof(int32_t));
    io->lens_probs = api__arrays_take(a, (size_t)(L + 1) * per, sizeof(float));
    float *logits = malloc((size_t)api__inside_lens_rows(p) * (size_t)p->V * sizeof *logits);
    int *scratch = malloc((size_t)p->V * sizeof *scratch), rc = 0;
    if (a->failed || logits == NULL || scratch == NULL)
        rc = api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the logit lens");
    for (int l = 0; rc == 0 && l <= L; l++) {
        const float *resid = l < L ? api__inside_capture(io, l, ATTN_HOOK_RESID_PRE)
                                   : api__inside_capture(io, L - 1, attn_lm_block_output_hook(p));
        rc = lens_entry(p, weights, resid, k, pool, logits, scratch, io->lens_ids + (size_t)l * per,
                        io->lens_probs + (size_t)l * per, e);
    }
    free(logits);
    free(scratch);
    return rc;
}

int api__inside_after(const inside_rq *rq, const attn_lm_plan *p, const void *weights,
                      const float *logits, int last_only, attn_pool *pool, inside_out *io,
                      api_arrays *a, api_err *e) {
    if (rq->patch && api__inside_patch(rq, p, weights, logits, last_only, pool, io, a, e)) return -1;
    return rq->lens_k ? lens(rq, p, weights, pool, io, a, e) : 0;
}
