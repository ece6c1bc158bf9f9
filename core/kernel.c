/* kernel.c - scores, masks, softmax, dropout and the weighted sum, per head. */
#include "kernel.h"

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
    float max = -INFINITY;
    for (int j = 0; j < n; j++) max = s[j] > max ? s[j] : max;
    if (max == -INFINITY) {
        memset(w, 0, (size_t)n * sizeof *w);
        return;
    }
    float sum = 0.0f;
    for (int j = 0; j < n; j++) {
        w[j] = s[j] == -INFINITY ? 0.0f : expf(s[j] - max);
        sum += w[j];
    }
    float inv = 1.0f / sum; /* sum >= 1: the max contributes exp(0) */
    for (int j = 0; j < n; j++) w[j] *= inv;
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

/* Weights of one query row from its raw scores. */
static void weigh_row(const attn__heads *a, const float *raw, const float *add,
                      const uint8_t *mask, float *masked, float *w) {
    int S = a->plan->S;
    float scale = a->plan->scale;
    for (int j = 0; j < S; j++) {
        float s = raw[j] * scale + (add ? add[j] : 0.0f);
        masked[j] = mask[j] ? -INFINITY : s;
    }
    if (a->cfg->normalization == ATTN_NORM_SUM) {
        for (int j = 0; j < S; j++) w[j] = mask[j] ? 0.0f : masked[j];
        normalise_row(w, S);
    } else if (a->cfg->mask_method == ATTN_MASK_RENORM) {
        /* 3.5.1, first way: softmax over every key, zero the masked ones,
         * renormalise. Here `w` first holds the unmasked scaled scores. */
        for (int j = 0; j < S; j++) w[j] = raw[j] * scale + (add ? add[j] : 0.0f);
        softmax_row(w, w, S);
        for (int j = 0; j < S; j++)
            if (mask[j]) w[j] = 0.0f;
        normalise_row(w, S);
    } else {
        softmax_row(w, masked, S);
    }
}

void attn__attend(attn__heads *a) {
    const attn_plan *p = a->plan;
    const attn_inputs *in = a->inputs;
    int L = p->L, S = p->S, group = p->H / p->Hkv;
    size_t LS = (size_t)L * (size_t)S;
    for (int b = 0; b < p->B; b++) {
        const float *add = NULL;
        if (in->attn_mask_add) add = in->attn_mask_add + (in->attn_mask_batched ? (size_t)b * LS : 0);
        const uint8_t *mask = a->mask + (size_t)b * LS;
        for (int h = 0; h < p->H; h++) {
            int hk = h / group; /* grouped-query: each K/V head serves `group` query heads */
            const float *q = a->q.p + (size_t)b * a->q.sb + (size_t)h * a->q.sh;
            const float *k = a->k.p + (size_t)b * a->k.sb + (size_t)hk * a->k.sh;
            const float *v = a->v.p + (size_t)b * a->v.sb + (size_t)hk * a->v.sh;
            size_t bh = (size_t)b * p->H + (size_t)h, off = bh * LS;
            float *raw = a->scores + bh * a->scores_step, *masked = a->masked + bh * a->masked_step;
            float *w = a->weights + bh * a->weights_step;

            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, L, S, p->Dk, 1.0f, q, a->q.ld, k,
                        a->k.ld, 0.0f, raw, S);
            for (int i = 0; i < L; i++) {
                size_t r = (size_t)i * S;
                weigh_row(a, raw + r, add ? add + r : NULL, mask + r, masked + r, w + r);
            }
            if (a->dropout) {
                const float *d = a->dropout + off;
                for (size_t e = 0; e < LS; e++) w[e] *= d[e];
            }
            float *ctx = a->context_heads + (size_t)b * L * p->ctx_width + (size_t)h * p->Dv;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, L, p->Dv, S, 1.0f, w, S, v,
                        a->v.ld, 0.0f, ctx, p->ctx_width);
        }
    }
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
