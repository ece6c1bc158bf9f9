/* loss.c - each batch row's mean next-token cross-entropy
 * (attn_lm_outputs.loss): position t's logits against idx[t + 1] for
 * t < T - 1, as F.cross_entropy(logits[b, :-1], idx[b, 1:]) computes it
 * (log_softmax with the row's max subtracted, then the mean of the targets'
 * negative logs).
 *
 * When the logits are not asked (importance's ablated runs, which want the
 * loss alone), the head runs over attn__loss_rows rows at a time into one
 * chunk, so a run never holds [B][T][V] logits for a number per row.
 */
#include "core/linear.h"
#include "core/lm/lm.h"
#include "core/vexp.h"

#include <math.h>

/* A chunk of at most 4M floats of logits (16 MB), rows a multiple of 16
 * (the sgemm kernels' blocks), at least 16. */
#define LOSS_CHUNK_FLOATS ((size_t)1 << 22)

int attn__loss_rows(const attn_lm_plan *p) {
    size_t rows = LOSS_CHUNK_FLOATS / (size_t)p->V;
    rows = rows < 16 ? 16 : rows / 16 * 16;
    size_t most = p->T > 1 ? (size_t)p->T - 1 : 1;
    return (int)(rows < most ? rows : most);
}

/* -log softmax(x)[target] of one row of V logits; scratch holds V floats
 * (x may be scratch: it is overwritten then). */
static double nll(const float *x, int V, int target, float *scratch) {
    float want = x[target], max = attn__row_max(x, V);
    float sum = attn__exp_shifted(scratch, x, max, V);
    return (double)logf(sum) - ((double)want - (double)max);
}

void attn__loss(attn__run *r) {
    const attn_lm_plan *p = r->p;
    size_t T = (size_t)p->T, C = (size_t)p->C, V = (size_t)p->V;
    int R = attn__loss_rows(p), full = r->out->logits && !r->out->last_only;
    for (int b = 0; b < p->B; b++) {
        const int32_t *ids = r->in->idx + (size_t)b * T;
        double sum = 0.0;
        for (size_t t0 = 0; t0 + 1 < T; t0 += (size_t)R) {
            int n = T - 1 - t0 < (size_t)R ? (int)(T - 1 - t0) : R;
            const float *rows = r->lossbuf;
            if (full) {
                rows = r->out->logits + ((size_t)b * T + t0) * V;
            } else {
                int bad = 0; /* the model's head (an MLM transform, a bias), half-size too */
                attn__head_rows(r->pool, p, &r->mw, r->h + ((size_t)b * T + t0) * C, 0, n, r->a,
                                r->wtile, r->lossbuf, &bad);
            }
            for (int i = 0; i < n; i++) {
                const float *x = rows + (size_t)i * V;
                sum += nll(x, p->V, ids[t0 + (size_t)i + 1], full ? r->lossbuf : (float *)x);
            }
        }
        r->out->loss[b] = (float)(sum / (double)(T - 1));
    }
}
