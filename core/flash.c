/* flash.c - the fused attention kernel (see flash.h). */
#include "flash.h"
#include "rows.h"
#include "vexp.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

#define BQ ATTN__FLASH_BQ
#define BK ATTN__FLASH_BK

int attn__flash_applies(const attn_config *cfg) {
    return cfg->normalization == ATTN_NORM_SOFTMAX && cfg->mask_method == ATTN_MASK_NEG_INF;
}

unsigned attn__outputs_asked(const attn_outputs *o) {
    return (o->context ? ATTN_OUT_CONTEXT : 0u) | (o->context_heads ? ATTN_OUT_CONTEXT_HEADS : 0u) |
           (o->queries ? ATTN_OUT_QUERIES : 0u) | (o->keys ? ATTN_OUT_KEYS : 0u) |
           (o->values ? ATTN_OUT_VALUES : 0u) | (o->scores ? ATTN_OUT_SCORES : 0u) |
           (o->masked_scores ? ATTN_OUT_MASKED_SCORES : 0u) | (o->mask ? ATTN_OUT_MASK : 0u) |
           (o->weights ? ATTN_OUT_WEIGHTS : 0u) | (o->weights_avg ? ATTN_OUT_WEIGHTS_AVG : 0u) |
           (o->dropout_mask ? ATTN_OUT_DROPOUT_MASK : 0u);
}

int attn__flash_used(const attn_config *cfg, const attn_plan *p, unsigned outputs) {
    unsigned maps = ATTN_OUT_SCORES | ATTN_OUT_MASKED_SCORES | ATTN_OUT_MASK | ATTN_OUT_WEIGHTS |
                    ATTN_OUT_WEIGHTS_AVG;
    int on_weights = p->drop_site == ATTN_DROP_WEIGHTS;
    if (on_weights) maps |= ATTN_OUT_DROPOUT_MASK;
    return attn__flash_applies(cfg) && !(outputs & maps) && !(on_weights && p->dropout_active);
}

size_t attn__flash_scratch(const attn_plan *plan) {
    (void)plan;
    return (size_t)BQ * BK + 2 * (size_t)BQ; /* scores of one tile, row maxima, row sums */
}

static int query_tiles(const attn_plan *p) { return (p->L + BQ - 1) / BQ; }

/* Applies the masks to one tile of scaled scores: x[r][c] is the score
 * of query i0 + r and key j0 + c. */
static void mask_tile(const attn__flash *f, float *x, int b, int i0, int rows, int j0, int cols) {
    const attn_plan *p = f->plan;
    const attn_inputs *in = f->inputs;
    size_t moff = in->attn_mask_batched ? (size_t)b * p->L * (size_t)p->S : 0;
    const uint8_t *pad = in->key_padding_mask ? in->key_padding_mask + (size_t)b * p->S + j0 : NULL;
    for (int r = 0; r < rows; r++) {
        size_t row = moff + (size_t)(i0 + r) * p->S + (size_t)j0;
        const float *add = in->attn_mask_add ? in->attn_mask_add + row : NULL;
        const uint8_t *bm = in->attn_mask_bool ? in->attn_mask_bool + row : NULL;
        /* causal: keys j > i are masked, columns from i + 1 - j0 on */
        int causal_from = f->cfg->causal ? i0 + r + 1 - j0 : cols;
        attn__mask_row(x + (size_t)r * BK, add, bm, pad, causal_from, cols);
    }
}

/* One (b, h, query tile): item 0 is the last (most expensive, under a causal
 * mask) tile, so the long items start first. */
static void flash_item(void *ctx, long item, int slot) {
    const attn__flash *f = ctx;
    const attn_plan *p = f->plan;
    int nq = query_tiles(p);
    int qt = nq - 1 - (int)(item % nq);
    long bh = item / nq;
    int h = (int)(bh % p->H), b = (int)(bh / p->H), hk = h / (p->H / p->Hkv);
    int i0 = qt * BQ, rows = p->L - i0 < BQ ? p->L - i0 : BQ;
    int ldo = p->ctx_width, Dv = p->Dv;

    const float *q = f->q.p + (size_t)b * f->q.sb + (size_t)h * f->q.sh + (size_t)i0 * f->q.ld;
    const float *k = f->k.p + (size_t)b * f->k.sb + (size_t)hk * f->k.sh;
    const float *v = f->v.p + (size_t)b * f->v.sb + (size_t)hk * f->v.sh;
    float *o = f->context_heads + ((size_t)b * p->L + (size_t)i0) * ldo + (size_t)h * Dv;
    float *s = f->scratch + (size_t)slot * attn__flash_scratch(p);
    float *m = s + (size_t)BQ * BK, *l = m + BQ;

    for (int r = 0; r < rows; r++) {
        m[r] = -INFINITY;
        l[r] = 0.0f;
        memset(o + (size_t)r * ldo, 0, (size_t)Dv * sizeof *o);
    }
    /* causal: the last row of the tile sees keys up to i0 + rows - 1 */
    int end = f->cfg->causal && i0 + rows < p->S ? i0 + rows : p->S;
    for (int j0 = 0; j0 < end; j0 += BK) {
        int cols = end - j0 < BK ? end - j0 : BK;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, cols, p->Dk, p->scale, q,
                    f->q.ld, k + (size_t)j0 * f->k.ld, f->k.ld, 0.0f, s, BK);
        mask_tile(f, s, b, i0, rows, j0, cols);
        for (int r = 0; r < rows; r++) {
            float *x = s + (size_t)r * BK;
            float mx = attn__row_max(x, cols);
            float m_new = mx > m[r] ? mx : m[r];
            if (m_new == -INFINITY) { /* every key so far masked: adds nothing */
                memset(x, 0, (size_t)cols * sizeof *x);
                continue;
            }
            float sum = attn__exp_shifted(x, x, m_new, cols);
            if (m_new != m[r]) {
                float alpha = m[r] == -INFINITY ? 0.0f : expf(m[r] - m_new);
                l[r] *= alpha;
                attn__scale_row(o + (size_t)r * ldo, alpha, Dv);
                m[r] = m_new;
            }
            l[r] += sum;
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, Dv, cols, 1.0f, s, BK,
                    v + (size_t)j0 * f->v.ld, f->v.ld, 1.0f, o, ldo);
    }
    for (int r = 0; r < rows; r++) /* l > 0 unless every key was masked (then o is 0) */
        if (l[r] > 0.0f) attn__scale_row(o + (size_t)r * ldo, 1.0f / l[r], Dv);
}

void attn__flash_run(const attn__flash *f, attn_pool *pool) {
    const attn_plan *p = f->plan;
    long items = (long)p->B * p->H * query_tiles(p);
    double flops = 4.0 * p->B * p->H * (double)p->L * p->S * (p->Dk + p->Dv) / 2;
    attn__parallel(pool, items, flops > 4e6, flash_item, (void *)f);
}
