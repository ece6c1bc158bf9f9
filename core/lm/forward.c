/* forward.c - a whole model's forward pass: the work space, the
 * embeddings, the blocks in turn (block.c) and the final norm with the
 * output head (and the loss); the prefill that also fills a cache. One code
 * path for every architecture: they differ only in what the plan and the
 * weights by role say. The public runs over it are run.c's. */
#include "core/layers/layers.h"
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
    attn__embed_input(r);
    if (p->dropout_active) attn__dropout_masked(r->x, masks, BTC, p->cfg.dropout, r->rng);
}

/* The call: the embeddings (or the given residual), every block from
 * start_layer, the head. */
int attn__run_call(attn__run *r, attn_error *err) {
    int rc = attn__check_inputs(r->p, r->in, err);
    if (rc || (r->in->idx && (rc = check_idx(r->p, r->in->idx, err))) ||
        (rc = attn__inputs_check(r->p, r->in, err)) || (rc = attn__analysis_check(r, err)))
        return rc;
    if (r->out->logits && !r->p->head)
        return attn__fail(err, ATTN_ERR_ARG, "logits", "this %s has no head for logits (its "
                          "checkpoint has no MLM head)", attn_arch_name(r->p->cfg.arch));
    if (r->out->pooler_output && !r->p->spec.pooler)
        return attn__fail(err, ATTN_ERR_ARG, "pooler_output", "this %s has no pooler",
                          attn_arch_name(r->p->cfg.arch));
    attn_rng local;
    if (r->p->dropout_active && r->rng == NULL) {
        attn_rng_seed(&local, ATTN_TORCH_DEFAULT_SEED);
        r->rng = &local;
    }
    r->arch = attn__arch_get(r->p->cfg.arch);
    attn__model_weights(r->p, r->params, &r->mw);
    if ((rc = attn__inputs_prepare(r, err)) != ATTN_OK) {
        attn__inputs_free(r);
        return rc;
    }
    void *work = attn__run_alloc(r, err);
    if (work == NULL) {
        attn__inputs_free(r);
        return ATTN_ERR_NOMEM;
    }
    embed(r);
    attn__analysis_start(r);
    for (int l = r->in->start_layer; l < r->p->n_layer && !attn__cancelled(); l++)
        attn__block_run(r, l);
    rc = attn__finish(r, err);
    if (rc == ATTN_OK && r->out->loss) attn__loss(r);
    if (rc == ATTN_OK) rc = attn__cancel_check(err); /* items skipped: the caller's check said stop */
    free(work);
    attn__inputs_free(r);
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
