/* step.c - one step of incremental decoding over rows of (sequence, token,
 * position): every block (block.c, the same as a forward pass's) for those
 * rows alone, each row attending to the keys and values its sequence holds
 * in the cache (cache.c) up to itself.
 *
 * The products are few-row products (gemv.c): each weight is read once per
 * step for every row of every sequence, by blocks shared over the pool; the
 * attention is one query per (row, head) against its sequence's cached
 * keys, also split over the pool.
 *
 * The rows may come from several caches of one model (attn_lm_step_caches:
 * a server's generations, each with its own cache, decoded together).
 */
#include "core/layers/layers.h"
#include "core/linear.h"
#include "core/lm/lm.h"

#include <stdlib.h>
#include <string.h>

/* The caches of one step: their number and their sequences one after the
 * other (global sequence g is cache k's g - first[k]). */
typedef struct {
    attn_lm_cache *const *c;
    int n, seqs, capacity; /* caches, their sequences in all, the largest capacity */
} step_caches;

/* Global sequence g: its cache, its index there in *s. */
static int locate(const step_caches *sc, int g, int *s) {
    for (int k = 0; k < sc->n; k++) {
        if (g < sc->c[k]->seqs) {
            *s = g;
            return k;
        }
        g -= sc->c[k]->seqs;
    }
    return -1;
}

/* Each row's cache, sequence, slot (its index in the sequence's cache) and
 * position, checked: the rows of one sequence follow its length in order. */
static int place_rows(const step_caches *sc, const attn_lm_row *rows, int n,
                      attn_lm_cache **cache, int *seq, int *slot, int *pos, attn_error *err) {
    const attn_lm_plan *p = &sc->c[0]->plan;
    for (int i = 0; i < n; i++) {
        const attn_lm_row *row = &rows[i];
        int s = 0, k = row->seq < 0 ? -1 : locate(sc, row->seq, &s);
        if (k < 0)
            return attn__fail(err, ATTN_ERR_ARG, "rows", "rows[%d].seq is %d, outside [0, %d)", i,
                              row->seq, sc->seqs);
        if (row->token < 0 || row->token >= p->V)
            return attn__fail(err, ATTN_ERR_ARG, "rows", "rows[%d].token is %d, outside [0, %d)", i,
                              (int)row->token, p->V);
        const attn_lm_cache *c = sc->c[k];
        int before = 0, last = -1;
        for (int j = 0; j < i; j++)
            if (rows[j].seq == row->seq) before++, last = j;
        cache[i] = sc->c[k], seq[i] = s;
        slot[i] = c->length[s] + before;
        pos[i] = row->pos >= 0 ? row->pos : last >= 0 ? pos[last] + 1 : c->next_pos[s];
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

/* The caches checked: present, of one model, eval-only by construction. */
static int check_caches(attn_lm_cache *const *caches, int n_caches, step_caches *sc,
                        attn_error *err) {
    if (caches == NULL || n_caches < 1)
        return attn__fail(err, ATTN_ERR_ARG, "caches", "a step needs 1 or more caches");
    *sc = (step_caches){.c = caches, .n = n_caches};
    for (int k = 0; k < n_caches; k++) {
        if (caches[k] == NULL) return attn__fail(err, ATTN_ERR_ARG, "caches", "caches[%d] is NULL", k);
        attn_lm_plan one = caches[0]->plan; /* one row of caches[0]'s model */
        one.B = 1, one.T = 1;
        int rc = k ? attn__cache_accepts(caches[k], &one, err) : ATTN_OK;
        if (rc) return rc;
        sc->seqs += caches[k]->seqs;
        sc->capacity = caches[k]->capacity > sc->capacity ? caches[k]->capacity : sc->capacity;
    }
    return ATTN_OK;
}

/* The step's work space: the cache's own (one cache, rows within its
 * sequences) or *own. */
static int step_work(const step_caches *sc, int n, void **own, void **base, attn_error *err) {
    *own = NULL, *base = sc->c[0]->work;
    if (sc->n == 1 && n <= sc->c[0]->seqs) return ATTN_OK;
    size_t floats = attn__step_work_floats(&sc->c[0]->plan, n, sc->capacity);
    if ((*base = *own = malloc(floats * sizeof(float))) == NULL)
        return attn__fail(err, ATTN_ERR_NOMEM, "rows", "cannot allocate a step of %d rows", n);
    return ATTN_OK;
}

/* The longest row checked against attn_rows' ld (set when 0). */
static int check_ld(const attn__run *r, attn_lm_step_outputs *out, attn_error *err) {
    int longest = 0;
    for (int i = 0; i < r->rows; i++) longest = r->slot[i] + 1 > longest ? r->slot[i] + 1 : longest;
    if (out == NULL || out->attn_rows == NULL) return ATTN_OK;
    if (out->ld <= 0) out->ld = longest;
    if (out->ld < longest)
        return attn__fail(err, ATTN_ERR_ARG, "ld", "attn_rows' ld %d is shorter than a row's %d "
                          "positions", out->ld, longest);
    return ATTN_OK;
}

int attn_lm_step_caches(attn_lm_cache *const *caches, int n_caches, const void *params,
                        const attn_lm_row *rows, int n, attn_pool *pool,
                        attn_lm_step_outputs *out, attn_error *err) {
    step_caches sc = {0};
    int rc = check_caches(caches, n_caches, &sc, err);
    if (rc) return rc;
    if (params == NULL || rows == NULL)
        return attn__fail(err, ATTN_ERR_ARG, "", "cache, params and rows are required");
    if (n < 1 || n > INT32_MAX / 4)
        return attn__fail(err, ATTN_ERR_ARG, "rows", "a step takes 1 or more rows, got %d", n);
    static const attn_lm_inputs none_in;
    static const attn_lm_outputs none_out;
    attn_lm_cache *c0 = caches[0];
    attn__run r = {.p = &c0->plan, .arch = attn__arch_get(c0->plan.cfg.arch), .params = params,
                   .pool = pool, .out = &none_out, .in = &none_in, .cache = c0, .rows = n,
                   .step = 1, .step_out = out, .score_ld = sc.capacity};
    void *own, *base;
    if ((rc = step_work(&sc, n, &own, &base, err))) return rc;
    int *ints = attn__step_work_carve(&r, base, sc.capacity);
    int *seq = ints, *slot = ints + n, *pos = ints + 2 * n;
    attn_lm_cache *few[64], **cache = few, **more = NULL;
    if (n > 64) cache = more = malloc((size_t)n * sizeof *cache);
    rc = cache ? place_rows(&sc, rows, n, cache, seq, slot, pos, err)
              : attn__fail(err, ATTN_ERR_NOMEM, "rows", "cannot allocate a step of %d rows", n);
    r.seq = seq, r.slot = slot, r.pos = pos, r.row_cache = n_caches > 1 ? cache : NULL;
    if (rc == ATTN_OK) rc = check_ld(&r, out, err);
    if (rc == ATTN_OK) {
        attn__model_weights(&c0->plan, params, &r.mw);
        rc = run_rows(&r, rows, out, err);
    }
    for (int i = 0; rc == ATTN_OK && i < n; i++) {
        cache[i]->length[seq[i]] = slot[i] + 1;
        cache[i]->next_pos[seq[i]] = pos[i] + 1;
    }
    free(more);
    free(own);
    return rc;
}

int attn_lm_step(attn_lm_cache *c, const void *params, const attn_lm_row *rows, int n,
                 attn_pool *pool, attn_lm_step_outputs *out, attn_error *err) {
    if (c == NULL) return attn__fail(err, ATTN_ERR_ARG, "", "cache, params and rows are required");
    return attn_lm_step_caches(&c, 1, params, rows, n, pool, out, err);
}
int attn_lm_decode(attn_lm_cache *c, const void *params, const int32_t *tokens,
                   attn_pool *pool, attn_lm_step_outputs *out, attn_error *err) {
    if (c == NULL || tokens == NULL)
        return attn__fail(err, ATTN_ERR_ARG, "", "cache and tokens are required");
    for (int s = 0; s < c->seqs; s++)
        if (tokens[s] < 0 || tokens[s] >= c->plan.V)
            return attn__fail(err, ATTN_ERR_ARG, "tokens", "tokens[%d] is %d, outside [0, %d)", s,
                              (int)tokens[s], c->plan.V);
    attn_lm_row few[64] = {{0}}, *rows = c->seqs <= 64 ? few : malloc((size_t)c->seqs * sizeof *rows);
    if (rows == NULL) return attn__fail(err, ATTN_ERR_NOMEM, "", "cannot allocate the rows");
    for (int s = 0; s < c->seqs; s++) rows[s] = (attn_lm_row){.seq = s, .token = tokens[s], .pos = -1};
    int rc = attn_lm_step(c, params, rows, c->seqs, pool, out, err);
    if (rows != few) free(rows);
    return rc;
}
