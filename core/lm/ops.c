/* ops.c - the products, norms and embeddings of a run, in its mode: a dense
 * run's products by blocks of rows (linear.c), a step's few-row products by
 * blocks of weight rows read once (gemv.c); every norm the model's kind;
 * weight matrices of the plan's dtype (half-size ones widened as they are
 * read). The lowest file of core/lm/: it calls only core's kernels and
 * layers. */
#include "core/gemv.h"
#include "core/half.h"
#include "core/layers/layers.h"
#include "core/linear.h"
#include "core/lm/lm.h"

void attn__product_dense(const attn_lm_plan *p, float *wtile, attn_pool *pool,
                         attn__linear_args *a) {
    a->wtype = p->cfg.weights_dtype;
    a->scratch = a->wtype == ATTN_DTYPE_F32 ? NULL : wtile;
    attn__linear_run(pool, a);
}

void attn__product(const attn__run *r, float *y, int ldy, const float *x, int in, int out,
                   const void *w, const float *b, int act) {
    if (r->step) {
        attn__gemv_args g = {.y = y, .ldy = ldy, .x = x, .rows = r->rows, .in = in, .out = out,
                             .w = w, .wtype = r->p->cfg.weights_dtype, .bias = b, .act = act};
        attn__gemv_run(r->pool, &g);
        return;
    }
    attn__linear_args a = {.y = y, .ldy = ldy, .x = x, .rows = r->rows, .in = in, .out = out,
                           .w = w, .bias = b, .act = act};
    attn__product_dense(r->p, r->wtile, r->pool, &a);
}

size_t attn__lm_tile_floats(const attn_lm_plan *p) {
    if (p->cfg.weights_dtype == ATTN_DTYPE_F32) return 0;
    /* (in, out) of every product a dense run makes: q/k/v (fused or not),
     * the output projection, the MLP's up (and gate) and down, the head */
    int W = p->QD + 2 * p->KVD;
    const int in[] = {p->C, p->C, p->C, p->QD, p->C, p->F, p->C};
    const int out[] = {W, p->QD, p->KVD, p->C, p->F, p->C, p->V};
    size_t most = 0;
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
        size_t n = attn__linear_scratch(in[i], out[i]);
        most = n > most ? n : most;
    }
    return most;
}

void attn__run_norm(const attn__run *r, float *y, const float *x, const float *w, const float *b,
                    size_t rows) {
    attn__norm(r->p->spec.norm, y, x, w, b, rows, r->p->C, r->p->spec.norm_eps);
}

/* One row of a half-size table: row = tok * scale (+ pos), the float32
 * path's operations on the widened values. */
static void embed_half_row(const attn_lm_plan *p, float *row, const uint16_t *tok,
                           const uint16_t *pos, float scale) {
    attn_dtype t = p->cfg.weights_dtype;
    attn__half_widen(t, tok, row, (size_t)p->C);
    if (scale != 1.0f)
        for (int c = 0; c < p->C; c++) row[c] = row[c] * scale;
    for (int c = 0; pos && c < p->C; c++) row[c] += attn__half_to_f32(t, pos[c]);
}

void attn__run_embed(const attn_lm_plan *p, const attn__weights *mw, float *x,
                     const int32_t *tok, const int *pos, int rows) {
    float scale = p->spec.emb_scale != 0.0f ? p->spec.emb_scale : 1.0f;
    const void *wte = mw->w[ATTN__TOK_EMB], *wpe = mw->w[ATTN__POS_EMB];
    size_t C = (size_t)p->C;
    if (p->cfg.weights_dtype == ATTN_DTYPE_F32 && pos == NULL) { /* a dense run: [B][T] */
        attn__embed(x, tok, wte, wpe, scale, rows / p->T, p->T, p->C);
        return;
    }
    for (int i = 0; i < rows; i++) {
        int at = pos ? pos[i] : i % p->T;
        if (p->cfg.weights_dtype == ATTN_DTYPE_F32) {
            attn__embed_rows(x + (size_t)i * C, &tok[i], &at, 1, wte, wpe, scale, p->C);
            continue;
        }
        const uint16_t *t = (const uint16_t *)wte + (size_t)tok[i] * C;
        const uint16_t *q = wpe ? (const uint16_t *)wpe + (size_t)at * C : NULL;
        embed_half_row(p, x + (size_t)i * C, t, q, scale);
    }
}
