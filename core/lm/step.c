/* step.c - one step of incremental decoding over rows of (sequence, token,
 * position): every block (block.c, the same as a forward pass's) for those
 * rows alone, each row attending to the keys and values its sequence holds
 * in the cache (cache.c) up to itself.
 *
 * The products are few-row products (gemv.c): each weight is read once per
 * step for every row of every sequence, by blocks shared over the pool; the
 * attention is one query per (row, head) against its sequence's cached
 * keys, also split over the pool.
 */
#include "core/layers/layers.h"
#include "core/linear.h"
#include "core/lm/lm.h"

#include <stdlib.h>

/* Each row's sequence, slot (its index in the sequence's cache) and
 * position, checked: the rows of one sequence follow its length in order. */
static int place_rows(const attn_lm_cache *c, const attn_lm_row *rows, int n, int *seq, int *slot,
                      int *pos, attn_error *err) {
    const attn_lm_plan *p = &c->plan;
    for (int i = 0; i < n; i++) {
        const attn_lm_row *row = &rows[i];
        if (row->seq < 0 || row->seq >= c->seqs)
            return attn__fail(err, ATTN_ERR_ARG, "rows", "rows[%d].seq is %d, outside [0, %d)", i,
                              row->seq, c->seqs);
        if (row->token < 0 || row->token >= p->V)
            return attn__fail(err, ATTN_ERR_ARG, "rows", "rows[%d].token is %d, outside [0, %d)", i,
                              (int)row->token, p->V);
        int before = 0, last = -1;
        for (int k = 0; k < i; k++)
            if (rows[k].seq == row->seq) before++, last = k;
        seq[i] = row->seq;
        slot[i] = c->length[row->seq] + before;
        pos[i] = row->pos >= 0 ? row->pos : last >= 0 ? pos[last] + 1 : c->next_pos[row->seq];
        if (slot[i] >= c->capacity)
            return attn__fail(err, ATTN_ERR_SHAPE, "cache",
                              "the cache is full (%d positions): reset it and prefill the last "
                              "tokens of the text (the book's context cropping)", c->capacity);
        if (pos[i] >= p->cfg.context)
            return attn__fail(err, ATTN_ERR_ARG, "rows", "rows[%d]'s position %d is past the "
                              "model's %d positions", i, pos[i], p->cfg.context);
    }
    return ATTN_OK;
}

/* The blocks, the final norm and the head over the rows r holds. */
static int run_rows(attn__run *r, const attn_lm_row *rows, attn_lm_step_outputs *out,
                    attn_error *err) {
    const attn_lm_plan *p = r->p;
    for (int i = 0; i < r->rows; i++)
        attn__run_embed(p, &r->mw, r->x + (size_t)i * (size_t)p->C, &rows[i].token, &r->pos[i], 1);
    for (int l = 0; l < p->n_layer; l++) attn__block_run(r, l);
    size_t n = (size_t)r->rows * (size_t)p->C;
    attn__run_norm(r, r->h, r->x, r->mw.w[ATTN__FINAL_NORM_W], r->mw.w[ATTN__FINAL_NORM_B],
                   (size_t)r->rows);
    float *logits = out ? out->logits : NULL;
    if (logits) attn__product(r, logits, 0, r->h, p->C, p->V, r->mw.w[ATTN__HEAD_W], NULL, ATTN__NO_ACT);
    if (!attn__all_finite(r->h, n) || (logits && !attn__all_finite(logits, (size_t)r->rows * (size_t)p->V)))
        return attn__fail(err, ATTN_ERR_NONFINITE, "params",
                          "the result overflowed float32: parameters are too large");
    return ATTN_OK;
}

int attn_lm_step(attn_lm_cache *c, const void *params, const attn_lm_row *rows, int n,
                 attn_pool *pool, attn_lm_step_outputs *out, attn_error *err) {
    if (c == NULL || params == NULL || rows == NULL)
        return attn__fail(err, ATTN_ERR_ARG, "", "cache, params and rows are required");
    if (n < 1 || n > INT32_MAX / 4)
        return attn__fail(err, ATTN_ERR_ARG, "rows", "a step takes 1 or more rows, got %d", n);
    static const attn_lm_inputs none_in;
    static const attn_lm_outputs none_out;
    attn__run r = {.p = &c->plan, .arch = attn__arch_get(c->plan.cfg.arch), .params = params,
                   .pool = pool, .out = &none_out, .in = &none_in, .cache = c, .rows = n,
                   .step = 1, .step_out = out};
    void *own = NULL, *base = c->work;
    if (n > c->seqs) { /* more rows than the cache's own work space holds */
        size_t floats = attn__step_work_floats(&c->plan, n, c->capacity);
        if ((base = own = malloc(floats * sizeof(float))) == NULL)
            return attn__fail(err, ATTN_ERR_NOMEM, "rows", "cannot allocate a step of %d rows", n);
    }
    int *ints = attn__step_work_carve(&r, base, c->capacity);
    int *seq = ints, *slot = ints + n, *pos = ints + 2 * n;
    int rc = place_rows(c, rows, n, seq, slot, pos, err);
    r.seq = seq, r.slot = slot, r.pos = pos;
    int longest = 0;
    for (int i = 0; rc == ATTN_OK && i < n; i++) longest = slot[i] + 1 > longest ? slot[i] + 1 : longest;
    if (rc == ATTN_OK && out && out->attn_rows && out->ld <= 0) out->ld = longest;
    if (rc == ATTN_OK && out && out->attn_rows && out->ld < longest)
        rc = attn__fail(err, ATTN_ERR_ARG, "ld", "attn_rows' ld %d is shorter than a row's %d "
                        "positions", out->ld, longest);
    if (rc == ATTN_OK) {
        attn__model_weights(&c->plan, params, &r.mw);
        rc = run_rows(&r, rows, out, err);
    }
    for (int i = 0; rc == ATTN_OK && i < n; i++) {
        c->length[seq[i]] = slot[i] + 1;
        c->next_pos[seq[i]] = pos[i] + 1;
    }
    free(own);
    return rc;
}

int attn_lm_decode(attn_lm_cache *c, const void *params, const int32_t *tokens,
                   attn_pool *pool, attn_lm_step_outputs *out, attn_error *err) {
    if (c == NULL || tokens == NULL)
        return attn__fail(err, ATTN_ERR_ARG, "", "cache and tokens are required");
    for (int s = 0; s < c->seqs; s++)
        if (tokens[s] < 0 || tokens[s] >= c->plan.V)
            return attn__fail(err, ATTN_ERR_ARG, "tokens", "tokens[%d] is %d, outside [0, %d)", s,
                              (int)tokens[s], c->plan.V);
    attn_lm_row few[64], *rows = c->seqs <= 64 ? few : malloc((size_t)c->seqs * sizeof *rows);
    if (rows == NULL) return attn__fail(err, ATTN_ERR_NOMEM, "", "cannot allocate the rows");
    for (int s = 0; s < c->seqs; s++) rows[s] = (attn_lm_row){.seq = s, .token = tokens[s], .pos = -1};
    int rc = attn_lm_step(c, params, rows, c->seqs, pool, out, err);
    if (rows != few) free(rows);
    return rc;
}
