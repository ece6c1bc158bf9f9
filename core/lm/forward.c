/* forward.c - a whole model's forward pass: the work space, the
 * embeddings, the blocks in turn (block.c) and the final norm with the
 * output head (and the loss); the prefill that also fills a cache. One code
 * path for every architecture: they differ only in what the plan and the
 * weights by role say. The public runs over it are run.c's. */
#include "core/layers/layers.h"
#include "core/linear.h"
#include "core/lm/lm.h"
#include "core/parallel.h"

#include <stdlib.h>
#include <string.h>

static int check_idx(const attn_lm_plan *p, const int32_t *idx, attn_error *err) {
    size_t BT = (size_t)p->B * (size_t)p->T;
    for (size_t i = 0; i < BT; i++)
        if (idx[i] < 0 || idx[i] >= p->V)
            return attn__fail(err, ATTN_ERR_ARG, "idx",
                              "idx[%zu][%zu] is %d, outside [0, vocab_size %d)", i / (size_t)p->T,
                              i % (size_t)p->T, (int)idx[i], p->V);
    return ATTN_OK;
}

/* x = drop(embeddings of idx), or the given input of block start_layer;
 * the embeddings' dropout multipliers go to the first slice of
 * dropout_masks when asked. */
static void embed(attn__run *r) {
    const attn_lm_plan *p = r->p;
    size_t BTC = (size_t)p->B * (size_t)p->T * (size_t)p->C;
    float *masks = r->out->dropout_masks;
    if (masks && !p->dropout_active)
        for (size_t i = 0; i < p->n_dropout; i++) masks[i] = 1.0f;
    if (r->in->resid) {
        memcpy(r->x, r->in->resid, BTC * sizeof(float));
        return;
    }
    attn__run_embed(p, &r->mw, r->x, r->in->idx, NULL, p->B * p->T);
    if (p->dropout_active) attn__dropout_masked(r->x, masks, BTC, p->cfg.dropout, r->rng);
}

/* The final norm into r->h, then the head: logits of every position or of
 * the last ones. Returns ATTN_ERR_NONFINITE if anything overflowed. */
static int finish(attn__run *r, attn_error *err) {
    const attn_lm_plan *p = r->p;
    size_t BT = (size_t)p->B * (size_t)p->T, C = (size_t)p->C;
    attn__capture_normalized(r, 0, ATTN_HOOK_LN_FINAL_NORMALIZED, r->x);
    attn__run_norm(r, r->h, r->x, r->mw.w[ATTN__FINAL_NORM_W], r->mw.w[ATTN__FINAL_NORM_B], BT);
    if (r->out->hidden_states)
        memcpy(r->out->hidden_states + (size_t)p->n_layer * BT * C, r->h, BT * C * sizeof(float));
    attn__linear_args head = {.y = r->out->logits, .x = r->h, .rows = (int)BT, .in = p->C,
                              .out = p->V, .w = r->mw.w[ATTN__HEAD_W], .act = ATTN__NO_ACT};
    if (r->out->last_only) { /* rows T-1, 2T-1, ... (stride T*C) */
        head.x = r->h + (size_t)(p->T - 1) * C;
        head.ldx = p->T * p->C;
        head.rows = p->B;
    }
    int bad_logits = 0; /* checked by the blocks of the head */
    head.nonfinite = &bad_logits;
    if (r->out->logits) attn__product_dense(p, r->wtile, r->pool, &head);
    if (!attn__all_finite(r->h, BT * C) || bad_logits)
        return attn__fail(err, ATTN_ERR_NONFINITE, "params",
                          "the result overflowed float32: parameters are too large");
    if (r->out->loss) attn__loss(r);
    return ATTN_OK;
}

/* The call: the embeddings (or the given residual), every block from
 * start_layer, the head. */
int attn__run_call(attn__run *r, attn_error *err) {
    int rc = attn__check_inputs(r->p, r->in, err);
    if (rc || (r->in->idx && (rc = check_idx(r->p, r->in->idx, err))) ||
        (rc = attn__analysis_check(r, err)))
        return rc;
    attn_rng local;
    if (r->p->dropout_active && r->rng == NULL) {
        attn_rng_seed(&local, ATTN_TORCH_DEFAULT_SEED);
        r->rng = &local;
    }
    r->arch = attn__arch_get(r->p->cfg.arch);
    r->rows = r->p->B * r->p->T;
    attn__model_weights(r->p, r->params, &r->mw);
    void *work = attn__run_alloc(r, err);
    if (work == NULL) return ATTN_ERR_NOMEM;
    embed(r);
    attn__analysis_start(r);
    for (int l = r->in->start_layer; l < r->p->n_layer && !attn__cancelled(); l++)
        attn__block_run(r, l);
    rc = finish(r, err);
    if (rc == ATTN_OK) rc = attn__cancel_check(err); /* items skipped: the caller's check said stop */
    free(work);
    return rc;
}

int attn_lm_prefill(const attn_lm_plan *p, const void *params, const int32_t *idx,
                    attn_lm_cache *cache, attn_pool *pool, attn_lm_outputs *out,
                    attn_error *err) {
    attn_lm_outputs none = {0};
    if (p == NULL || params == NULL || idx == NULL || cache == NULL)
        return attn__fail(err, ATTN_ERR_ARG, "", "plan, params, idx and cache are required");
    int rc = attn__cache_accepts(cache, p, err);
    if (rc) return rc;
    for (int b = 0; b < p->B; b++) attn_lm_cache_reset(cache, b);
    attn_lm_inputs in = {.idx = idx, .pool = pool};
    attn__run r = {.p = p, .params = params, .pool = pool, .out = out ? out : &none, .in = &in,
                   .cache = cache};
    if ((rc = attn__run_call(&r, err)) == ATTN_OK)
        for (int b = 0; b < p->B; b++) cache->length[b] = cache->next_pos[b] = p->T;
    return rc;
}
