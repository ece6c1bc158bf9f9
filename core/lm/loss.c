/* loss.c - each batch row's mean cross-entropy (attn_lm_outputs.loss)
 * over its tokens, as transformers' models compute it with labels =
 * input_ids and -100 at the padding (log_softmax with the row's max
 * subtracted, then the mean of the targets' negative logs):
 *
 *   a causal model: position t's logits against idx[t + 1], for each t
 *     where t and t + 1 are tokens (F.cross_entropy(logits[b, :n-1],
 *     idx[b, 1:n]) for a row of n tokens padded on the right);
 *   a two-way model (an MLM): position t's logits against idx[t], for each
 *     token t (BertForMaskedLM's loss with labels = input_ids: how well
 *     the model restores its input).
 *
 * Padded positions are never scored; a row with nothing to score has loss 0.
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

/* The positions scored: T - 1 (causal), or T (two-way). */
static size_t scored(const attn_lm_plan *p) {
    return p->spec.bidirectional ? (size_t)p->T : (size_t)p->T - 1;
}

int attn__loss_rows(const attn_lm_plan *p) {
    size_t rows = LOSS_CHUNK_FLOATS / (size_t)p->V;
    rows = rows < 16 ? 16 : rows / 16 * 16;
    size_t most = scored(p) > 0 ? scored(p) : 1;
    return (int)(rows < most ? rows : most);
}

/* -log softmax(x)[target] of one row of V logits; scratch holds V floats
 * (x may be scratch: it is overwritten then). */
static double nll(const float *x, int V, int target, float *scratch) {
    float want = x[target], max = attn__row_max(x, V);
    float sum = attn__exp_shifted(scratch, x, max, V);
    return (double)logf(sum) - ((double)want - (double)max);
}

/* 1 if position t of a row (mask: its [T] attention mask, or NULL) is
 * scored, against ids[t + shift]. */
static int counts(const uint8_t *mask, size_t t, size_t shift) {
    return !mask || (mask[t] && mask[t + shift]);
}

void attn__loss(attn__run *r) {
    const attn_lm_plan *p = r->p;
    size_t T = (size_t)p->T, C = (size_t)p->C, V = (size_t)p->V, N = scored(p);
    size_t shift = !p->spec.bidirectional;
    int R = attn__loss_rows(p), full = r->out->logits && !r->out->last_only;
    for (int b = 0; b < p->B; b++) {
        const int32_t *ids = r->in->idx + (size_t)b * T;
        const uint8_t *mask = r->in->attention_mask ? r->in->attention_mask + (size_t)b * T : NULL;
        double sum = 0.0;
        size_t n_scored = 0;
        for (size_t t0 = 0; t0 < N; t0 += (size_t)R) {
            int n = N - t0 < (size_t)R ? (int)(N - t0) : R, any = 0;
            for (int i = 0; i < n; i++) any |= counts(mask, t0 + (size_t)i, shift);
            if (!any) continue; /* padding alone: no head to run */
            const float *rows = r->lossbuf;
            if (full) {
                rows = r->out->logits + ((size_t)b * T + t0) * V;
            } else {
                int bad = 0; /* the model's head (an MLM transform, a bias), half-size too */
                attn__head_rows(r->pool, p, &r->mw, r->h + ((size_t)b * T + t0) * C, 0, n, r->a,
                                r->wtile, r->lossbuf, &bad);
            }
            for (int i = 0; i < n; i++) {
                size_t t = t0 + (size_t)i;
                if (!counts(mask, t, shift)) continue;
                const float *x = rows + (size_t)i * V;
                sum += nll(x, p->V, ids[t + shift], full ? r->lossbuf : (float *)x);
                n_scored++;
            }
        }
        r->out->loss[b] = n_scored ? (float)(sum / (double)n_scored) : 0.0f;
    }
}
