/* decode.c - one step of incremental decoding: one token per batch row at
 * position t, every block computed for that row alone against the keys and
 * values the cache holds for positions 0..t (cache.c), the same operations
 * as a forward pass in the same order (model_block.c), both families.
 *
 * The products are few-row products (gemv.c): the weights are read once
 * per step, by blocks shared over the pool; the attention is one query per
 * (batch row, head) against t + 1 cached keys, also split over the pool.
 */
#include "cache.h"
#include "gemv.h"
#include "layers.h"
#include "linear.h"
#include "model.h"
#include "parallel.h"
#include "vexp.h"

#include <cblas.h>
#include <string.h>

typedef struct {
    const attn_gpt2_cache *c;
    int l, n;           /* block, keys attended (t + 1) */
    float *rows;        /* [B][H][n] to keep, or NULL (the cache's scores) */
} attend_job;

/* One (batch row, head): scores, softmax, the weighted sum of the values. */
static void attend_item(void *ctx, long item, int slot) {
    (void)slot;
    const attend_job *j = ctx;
    const attn_gpt2_cache *c = j->c;
    const attn_gpt2_plan *p = &c->plan;
    int b = (int)(item / p->H), h = (int)(item % p->H), D = p->D, n = j->n;
    size_t C = (size_t)p->C;
    const float *q = c->qkv + (size_t)b * 3 * C + (size_t)h * (size_t)D;
    float *s = j->rows ? j->rows + (size_t)item * (size_t)n
                       : c->scores + (size_t)item * (size_t)c->capacity;
    cblas_sgemv(CblasRowMajor, CblasNoTrans, n, D, p->attn_plan.scale,
                attn__cache_at(c, 0, j->l, b, h), D, q, 1, 0.0f, s, 1);
    float max = attn__row_max(s, n); /* finite: key 0 is never masked */
    attn__scale_row(s, 1.0f / attn__exp_shifted(s, s, max, n), n);
    cblas_sgemv(CblasRowMajor, CblasTrans, n, D, 1.0f, attn__cache_at(c, 1, j->l, b, h), D, s,
                1, 0.0f, c->z + (size_t)b * C + (size_t)h * (size_t)D, 1);
}

/* y[B][out] (row stride ldy) = x · Wᵀ + b. */
static void product(attn_pool *pool, const attn_gpt2_plan *p, float *y, int ldy, const float *x,
                    int in, int out, const float *w, const float *bias, int gelu) {
    attn__gemv_args a = {.y = y, .ldy = ldy, .x = x, .rows = p->B, .in = in, .out = out,
                         .w = w, .bias = bias, .gelu = gelu};
    attn__gemv_run(pool, &a);
}

/* Block l's attention for position t: Q, K, V of the new rows, K and V
 * into the cache, then each head's query against positions 0..t. */
static void step_attention(attn_gpt2_cache *c, const attn__block_view *bv, int l, int t,
                           attn_pool *pool, float *rows) {
    const attn_gpt2_plan *p = &c->plan;
    int C = p->C, D = p->D;
    if (bv->wqkv) {
        product(pool, p, c->qkv, 3 * C, c->h, C, 3 * C, bv->wqkv, bv->bqkv, ATTN__NO_GELU);
    } else {
        const float *w[3] = {bv->wq, bv->wk, bv->wv}, *b[3] = {bv->bq, bv->bk, bv->bv};
        for (int i = 0; i < 3; i++)
            product(pool, p, c->qkv + (size_t)i * (size_t)C, 3 * C, c->h, C, C, w[i], b[i],
                    ATTN__NO_GELU);
    }
    for (int b = 0; b < p->B; b++)
        for (int h = 0; h < p->H; h++)
            for (int which = 0; which < 2; which++)
                memcpy(attn__cache_at(c, which, l, b, h) + (size_t)t * (size_t)D,
                       c->qkv + ((size_t)b * 3 + 1 + (size_t)which) * (size_t)C +
                           (size_t)h * (size_t)D,
                       (size_t)D * sizeof(float));
    attend_job j = {.c = c, .l = l, .n = t + 1, .rows = rows};
    /* shared when the keys and values to read pass 1 MB (t above ~170 at
     * GPT-2's width): below, waking a helper costs about what it saves */
    double bytes = 8.0 * p->B * p->H * (double)(t + 1) * D;
    attn__parallel(pool, (long)p->B * p->H, bytes > 1e6, attend_item, &j);
}

static void step_block(attn_gpt2_cache *c, const float *params, int l, int t, attn_pool *pool,
                       float *rows) {
    const attn_gpt2_plan *p = &c->plan;
    size_t B = (size_t)p->B, C = (size_t)p->C;
    attn__block_view bv;
    attn__block_view_make(p, params, l, &bv);
    attn__model_layernorm(p, c->h, c->x, bv.ln1_w, bv.ln1_b, B);
    step_attention(c, &bv, l, t, pool, rows);
    product(pool, p, c->a, 0, c->z, p->C, p->C, bv.wo, bv.bo, ATTN__NO_GELU);
    attn__add(c->x, c->a, B * C);
    attn__model_layernorm(p, c->h, c->x, bv.ln2_w, bv.ln2_b, B);
    product(pool, p, c->m, 0, c->h, p->C, 4 * p->C, bv.fc_w, bv.fc_b, (int)p->gelu);
    product(pool, p, c->a, 0, c->m, 4 * p->C, p->C, bv.proj_w, bv.proj_b, ATTN__NO_GELU);
    attn__add(c->x, c->a, B * C);
}

static int check_step(const attn_gpt2_cache *c, const float *params, const int32_t *tokens,
                      attn_error *err) {
    if (c == NULL || params == NULL || tokens == NULL)
        return attn__fail(err, ATTN_ERR_ARG, "", "cache, params and tokens are required");
    const attn_gpt2_plan *p = &c->plan;
    if (c->length >= c->capacity)
        return attn__fail(err, ATTN_ERR_SHAPE, "cache",
                          "the cache is full (%d positions): reset it and prefill the last "
                          "tokens of the text (the book's context cropping)", c->capacity);
    for (int b = 0; b < p->B; b++)
        if (tokens[b] < 0 || tokens[b] >= p->V)
            return attn__fail(err, ATTN_ERR_ARG, "tokens", "tokens[%d] is %d, outside [0, %d)", b,
                              (int)tokens[b], p->V);
    return ATTN_OK;
}

int attn_gpt2_decode(attn_gpt2_cache *c, const float *params, const int32_t *tokens,
                     attn_pool *pool, attn_gpt2_step_outputs *out, attn_error *err) {
    int rc = check_step(c, params, tokens, err);
    if (rc) return rc;
    const attn_gpt2_plan *p = &c->plan;
    size_t B = (size_t)p->B, C = (size_t)p->C, t = (size_t)c->length;
    attn__model_view mv;
    attn__model_view_make(p, params, &mv);
    for (size_t b = 0; b < B; b++) /* x = tok_emb[token] + pos_emb[t] */
        for (size_t i = 0; i < C; i++)
            c->x[b * C + i] = mv.wte[(size_t)tokens[b] * C + i] + mv.wpe[t * C + i];
    size_t per_layer = B * (size_t)p->H * (t + 1);
    for (int l = 0; l < p->n_layer; l++)
        step_block(c, params, l, (int)t, pool,
                   out && out->attn_rows ? out->attn_rows + (size_t)l * per_layer : NULL);
    attn__model_layernorm(p, c->h, c->x, mv.lnf_w, mv.lnf_b, B);
    float *logits = out ? out->logits : NULL;
    if (logits) product(pool, p, logits, 0, c->h, p->C, p->V, mv.head, NULL, ATTN__NO_GELU);
    if (!attn__all_finite(c->h, B * C) || (logits && !attn__all_finite(logits, B * (size_t)p->V)))
        return attn__fail(err, ATTN_ERR_NONFINITE, "params",
                          "the result overflowed float32: parameters are too large");
    c->length++;
    return ATTN_OK;
}
