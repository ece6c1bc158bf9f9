/* head.c - after the blocks: the final norm (decoders; an encoder's blocks
 * end in their own norm), the hidden states' last entry, the pooler
 * (tanh(dense(x)) of each batch row's first token: BertPooler) and the
 * head: x · Wᵀ, or for an encoder's MLM head LayerNorm(act(dense(x))) · Eᵀ
 * + b (BertLMPredictionHead, RobertaLMHead, DistilBERT's vocab_*), for
 * every row, or each batch row's last token. The logit lens (lens.c) uses
 * the same head. */
#include "core/layers/layers.h"
#include "core/linear.h"
#include "core/lm/lm.h"

#include <math.h>
#include <string.h>

void attn__head_rows(attn_pool *pool, const attn_lm_plan *p, const attn__weights *mw,
                     const float *x, int ldx, int rows, float *tmp, float *wtile, float *y, int *bad) {
    if (mw->w[ATTN__HEAD_DENSE_W]) { /* the MLM transform into tmp */
        attn__linear_args t = {.y = tmp, .x = x, .ldx = ldx, .rows = rows, .in = p->C, .out = p->C,
                               .w = mw->w[ATTN__HEAD_DENSE_W], .bias = mw->w[ATTN__HEAD_DENSE_B],
                               .act = (int)p->spec.head_act};
        attn__product_dense(p, wtile, pool, &t);
        attn__norm(p->spec.norm, tmp, tmp, mw->w[ATTN__HEAD_NORM_W], mw->w[ATTN__HEAD_NORM_B],
                   (size_t)rows, p->C, p->spec.norm_eps);
        x = tmp, ldx = 0;
    }
    attn__linear_args h = {.y = y, .x = x, .ldx = ldx, .rows = rows, .in = p->C, .out = p->V,
                           .w = mw->w[ATTN__HEAD_W], .bias = mw->w[ATTN__HEAD_B],
                           .act = ATTN__NO_ACT, .nonfinite = bad};
    attn__product_dense(p, wtile, pool, &h);
}

/* 1 if batch row b has no token (a packed run's empty row). */
static int empty_row(const attn__run *r, int b) {
    return r->packed && r->start[b + 1] == r->start[b];
}

/* Gathers each batch row's first (last = 0) or last token's row of h into
 * dst [B][C] (0 for a row without tokens). */
static void gather(const attn__run *r, const float *h, int last, float *dst) {
    size_t C = (size_t)r->p->C;
    for (int b = 0; b < r->p->B; b++) {
        int row = last ? attn__row_last(r, b) : attn__row_first(r, b);
        if (empty_row(r, b)) memset(dst + (size_t)b * C, 0, C * sizeof *dst);
        else memcpy(dst + (size_t)b * C, h + (size_t)row * C, C * sizeof *dst);
    }
}

/* pooler_output [B][C] = tanh(dense(h[first token])). tmp: [B][C]. */
static void pooler(const attn__run *r, const float *h, float *tmp) {
    const attn_lm_plan *p = r->p;
    size_t n = (size_t)p->B * (size_t)p->C;
    gather(r, h, 0, tmp);
    attn__linear_args a = {.y = r->out->pooler_output, .x = tmp, .rows = p->B, .in = p->C,
                           .out = p->C, .w = r->mw.w[ATTN__POOLER_W], .bias = r->mw.w[ATTN__POOLER_B],
                           .act = ATTN__NO_ACT};
    attn__product_dense(p, r->wtile, r->pool, &a);
    for (size_t i = 0; i < n; i++) r->out->pooler_output[i] = tanhf(r->out->pooler_output[i]);
}

/* The logits of every row into [B][T][V] (packed: each batch row's tokens
 * into its own rows, 0 at padding), or of each batch row's last token into
 * [B][V]. r->a and r->a2 are free here: the transform's rows and the
 * gathered last rows. */
static void logits(attn__run *r, const float *h, int *bad) {
    const attn_lm_plan *p = r->p;
    size_t T = (size_t)p->T, V = (size_t)p->V;
    float *y = r->out->logits;
    if (r->out->last_only) {
        gather(r, h, 1, r->a2);
        attn__head_rows(r->pool, p, &r->mw, r->a2, 0, p->B, r->a, r->wtile, y, bad);
        return;
    }
    if (!r->packed) {
        attn__head_rows(r->pool, p, &r->mw, h, 0, r->rows, r->a, r->wtile, y, bad);
        return;
    }
    for (int b = 0; b < p->B; b++) {
        int n = r->start[b + 1] - r->start[b];
        float *yb = y + (size_t)b * T * V;
        if (n) attn__head_rows(r->pool, p, &r->mw, h + (size_t)r->start[b] * p->C, 0, n, r->a, r->wtile, yb, bad);
        memset(yb + (size_t)n * V, 0, (T - (size_t)n) * V * sizeof *y);
    }
}

int attn__finish(attn__run *r, attn_error *err) {
    const attn_lm_plan *p = r->p;
    size_t rows = (size_t)r->rows, C = (size_t)p->C, BTC = (size_t)p->B * (size_t)p->T * C;
    const float *h = r->x;
    if (r->mw.w[ATTN__FINAL_NORM_W]) {
        attn__capture_normalized(r, 0, ATTN_HOOK_LN_FINAL_NORMALIZED, r->x);
        attn__run_norm(r, r->h, r->x, r->mw.w[ATTN__FINAL_NORM_W], r->mw.w[ATTN__FINAL_NORM_B], rows);
        h = r->h;
    }
    if (r->out->hidden_states) attn__rows_out(r, r->out->hidden_states + (size_t)p->n_layer * BTC, h, p->C);
    if (r->out->last_hidden) attn__rows_out(r, r->out->last_hidden, h, p->C);
    if (r->out->pooler_output) pooler(r, h, r->a2);
    int bad = 0; /* checked by the blocks of the head */
    if (r->out->logits) logits(r, h, &bad);
    if (!attn__all_finite(h, rows * C) || bad)
        return attn__fail(err, ATTN_ERR_NONFINITE, "params",
                          "the result overflowed float32: parameters are too large");
    if (r->out->loss && h != r->h) memcpy(r->h, h, rows * C * sizeof *h); /* the loss reads r->h */
    return ATTN_OK;
}
