/* kernel.c - scores, masks, softmax, dropout and the weighted sum, per head. */
#include "kernel.h"
#include "rows.h"
#include "vexp.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

void attn__build_mask(attn__heads *a) {
    const attn_plan *p = a->plan;
    const attn_inputs *in = a->inputs;
    size_t LS = (size_t)p->L * (size_t)p->S;
    for (int b = 0; b < p->B; b++) {
        const uint8_t *bm = NULL;
        const float *am = NULL;
        size_t moff = in->attn_mask_batched ? (size_t)b * LS : 0;
        if (in->attn_mask_bool) bm = in->attn_mask_bool + moff;
        if (in->attn_mask_add) am = in->attn_mask_add + moff;
        const uint8_t *pad = in->key_padding_mask ? in->key_padding_mask + (size_t)b * p->S : NULL;
        uint8_t *m = a->mask + (size_t)b * LS;
        for (int i = 0; i < p->L; i++)
            for (int j = 0; j < p->S; j++) {
                size_t ij = (size_t)i * p->S + (size_t)j;
                m[ij] = (a->cfg->causal && j > i) || (bm && bm[ij]) || (pad && pad[j]) ||
                        (am && am[ij] == -INFINITY);
            }
    }
}

/* Softmax of one row; masked entries (-inf) get 0; an all-masked row is all 0. */
static void softmax_row(float *w, const float *s, int n) {
    float max = attn__row_max(s, n);
    if (max == -INFINITY) {
        memset(w, 0, (size_t)n * sizeof *w);
        return;
    }
    float sum = attn__exp_shifted(w, s, max, n);
    attn__scale_row(w, 1.0f / sum, n); /* sum >= 1: the max contributes exp(0) */
}

/* Divides a row by its sum, or zeroes it when the sum is 0. */
static void normalise_row(float *w, int n) {
    float sum = 0.0f;
    for (int j = 0; j < n; j++) sum += w[j];
    if (sum == 0.0f) {
        memset(w, 0, (size_t)n * sizeof *w);
        return;
    }
    for (int j = 0; j < n; j++) w[j] /= sum;
}

/* Weights of one query row from its raw scores. Only keys j < n were
 * multiplied (the others are above the causal diagonal): they get -inf and 0. */
static void weigh_row(const attn__heads *a, const float *raw, const float *add,
                      const uint8_t *mask, float *masked, float *w, int n) {
    int S = a->plan->S;
    float scale = a->plan->scale;
    attn__scores_row(masked, raw, scale, add, mask, n);
    for (int j = n; j < S; j++) masked[j] = -INFINITY, w[j] = 0.0f;
    if (a->cfg->normalization == ATTN_NORM_SUM) {
        for (int j = 0; j < S; j++) w[j] = mask[j] ? 0.0f : masked[j];
        normalise_row(w, S);
    } else if (a->cfg->mask_method == ATTN_MASK_RENORM) {
        /* 3.5.1, first way: softmax over every key, zero the masked ones,
         * renormalise. Here `w` first holds the unmasked scaled scores. */
        attn__scores_row(w, raw, scale, add, NULL, S);
        softmax_row(w, w, S);
        for (int j = 0; j < S; j++)
            if (mask[j]) w[j] = 0.0f;
        normalise_row(w, S);
    } else {
        softmax_row(w, masked, n);
    }
}

static int row_blocks(const attn_plan *p) { return (p->L + ATTN__MAP_ROWS - 1) / ATTN__MAP_ROWS; }

/* Rows [i0, i0 + rows) of one score-sized tensor of head bh: kept per head
 * (step L*S) or the thread's own block of rows. */
static float *rows_of(float *base, size_t step, size_t bh, int i0, int slot, const attn_plan *p) {
    if (step) return base + bh * step + (size_t)i0 * p->S;
    return base + (size_t)slot * ATTN__MAP_ROWS * p->S;
}

/* One (b, h, block of query rows); item 0 is the last block (the most keys
 * under a causal mask), so the long items start first. */
static void attend_item(void *ctx, long item, int slot) {
    const attn__heads *a = ctx;
    const attn_plan *p = a->plan;
    const attn_inputs *in = a->inputs;
    int nb = row_blocks(p), L = p->L, S = p->S, group = p->H / p->Hkv;
    int blk = nb - 1 - (int)(item % nb);
    size_t bh = (size_t)(item / nb);
    int h = (int)(bh % (size_t)p->H), b = (int)(bh / (size_t)p->H), hk = h / group;
    int i0 = blk * ATTN__MAP_ROWS, rows = L - i0 < ATTN__MAP_ROWS ? L - i0 : ATTN__MAP_ROWS;
    size_t LS = (size_t)L * (size_t)S, r0 = (size_t)i0 * S;

    const float *add = NULL;
    if (in->attn_mask_add) add = in->attn_mask_add + (in->attn_mask_batched ? (size_t)b * LS : 0) + r0;
    const uint8_t *mask = a->mask + (size_t)b * LS + r0;
    const float *q = a->q.p + (size_t)b * a->q.sb + (size_t)h * a->q.sh + (size_t)i0 * a->q.ld;
    const float *k = a->k.p + (size_t)b * a->k.sb + (size_t)hk * a->k.sh;
    const float *v = a->v.p + (size_t)b * a->v.sb + (size_t)hk * a->v.sh;
    float *raw = rows_of(a->scores, a->scores_step, bh, i0, slot, p);
    float *masked = rows_of(a->masked, a->masked_step, bh, i0, slot, p);
    float *w = rows_of(a->weights, a->weights_step, bh, i0, slot, p);

    /* Keys above the diagonal of the block's last row are masked for every
     * row: unless the raw scores are wanted (or the renorm method needs
     * them), they are neither multiplied nor weighed. */
    int n = S;
    if (a->cfg->causal && !a->scores_step && a->cfg->normalization == ATTN_NORM_SOFTMAX &&
        a->cfg->mask_method == ATTN_MASK_NEG_INF && i0 + rows < S)
        n = i0 + rows;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, n, p->Dk, 1.0f, q, a->q.ld, k,
                a->k.ld, 0.0f, raw, S);
    for (int r = 0; r < rows; r++) {
        size_t o = (size_t)r * S;
        weigh_row(a, raw + o, add ? add + o : NULL, mask + o, masked + o, w + o, n);
    }
    if (a->dropout) {
        const float *d = a->dropout + bh * LS + r0;
        for (int r = 0; r < rows; r++) attn__mul_row(w + (size_t)r * S, d + (size_t)r * S, n);
    }
    float *o = a->context_heads + ((size_t)b * L + (size_t)i0) * p->ctx_width + (size_t)h * p->Dv;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, p->Dv, n, 1.0f, w, S, v, a->v.ld,
                0.0f, o, p->ctx_width);
}

void attn__attend(attn__heads *a, attn_pool *pool) {
    const attn_plan *p = a->plan;
    long items = (long)p->B * p->H * row_blocks(p);
    double flops = 2.0 * p->B * p->H * (double)p->L * p->S * (p->Dk + p->Dv);
    attn__parallel(pool, items, flops > 4e6, attend_item, a);
}

void attn__dropout_mask(float *mask, const attn_plan *p, const attn_config *cfg, attn_rng *rng) {
    size_t n = p->n_dropout;
    if (cfg->dropout >= 1.0) { /* PyTorch multiplies by zero and draws nothing */
        memset(mask, 0, n * sizeof *mask);
        return;
    }
    double keep = 1.0 - cfg->dropout;
    float kept = (float)(1.0 / keep);
    if (!attn_module_has(cfg->module, ATTN_MOD_HEAD_MODULES)) {
        for (size_t i = 0; i < n; i++) mask[i] = attn_rng_bernoulli(rng, keep) ? kept : 0.0f;
        return;
    }
    /* Heads that are submodules (the wrapper) run one after another: head 0 draws its whole
     * [B][T][T] mask before head 1 draws anything. */
    size_t LS = (size_t)p->L * (size_t)p->S;
    for (int h = 0; h < p->H; h++)
        for (int b = 0; b < p->B; b++) {
            float *m = mask + ((size_t)b * p->H + (size_t)h) * LS;
            for (size_t e = 0; e < LS; e++) m[e] = attn_rng_bernoulli(rng, keep) ? kept : 0.0f;
        }
}

void attn__average_heads(float *avg, const float *weights, const attn_plan *p) {
    size_t LS = (size_t)p->L * (size_t)p->S;
    for (int b = 0; b < p->B; b++) {
        float *dst = avg + (size_t)b * LS;
        memset(dst, 0, LS * sizeof *dst);
        for (int h = 0; h < p->H; h++) {
            const float *w = weights + ((size_t)b * p->H + (size_t)h) * LS;
            for (size_t e = 0; e < LS; e++) dst[e] += w[e];
        }
        for (size_t e = 0; e < LS; e++) dst[e] /= (float)p->H; /* sum / H, as torch */
    }
}
