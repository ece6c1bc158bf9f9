/* model_forward.c - a whole model's forward pass: the work space, the
 * embeddings, the blocks in turn (model_block.c) and the final LayerNorm
 * with the output head.
 *
 * One code path for both families: they differ only in what the plan and
 * the typed views say (names, tied head, Q/K/V layout and biases, the
 * LayerNorm formula, GELU's form, where dropout acts).
 */
#include "cache.h"
#include "flash.h"
#include "kernel.h"
#include "layers.h"
#include "linear.h"
#include "model.h"

#include <stdlib.h>
#include <string.h>

/* ==== Work space ========================================================== */

int attn__run_materialises(const attn__run *r, int l) {
    (void)l;
    const attn_gpt2_plan *p = r->p;
    return r->out->attn_weights != NULL ||
           (p->dropout_active && p->attn_plan.drop_site == ATTN_DROP_WEIGHTS);
}

static size_t align16(size_t n) { return (n + 15) & ~(size_t)15; }

void *attn__run_alloc(attn__run *r, attn_error *err) {
    const attn_gpt2_plan *p = r->p;
    size_t BTC = (size_t)p->B * (size_t)p->T * (size_t)p->C;
    size_t BHTT = (size_t)p->B * (size_t)p->H * (size_t)p->T * (size_t)p->T;
    size_t BTT = (size_t)p->B * (size_t)p->T * (size_t)p->T, T = (size_t)p->T;
    int any_map = 0;
    for (int l = 0; l < p->n_layer; l++) any_map |= attn__run_materialises(r, l);
    int weight_drop = p->dropout_active && p->attn_plan.drop_site == ATTN_DROP_WEIGHTS;
    r->width = attn_pool_width(r->pool);
    /* floats of each piece, 16-aligned: x h z a, qkv, m, flash, then the maps' */
    size_t n[8] = {4 * BTC, 3 * BTC, 4 * BTC,
                   (size_t)r->width * attn__flash_scratch(&p->attn_plan),
                   any_map ? (BTT + 3) / 4 : 0,
                   any_map ? 3 * (size_t)r->width * ATTN__MAP_ROWS * T : 0,
                   weight_drop && !r->out->dropout_masks ? BHTT : 0,
                   weight_drop && r->out->attn_weights ? BHTT : 0};
    size_t total = 0;
    for (int i = 0; i < 8; i++) total += align16(n[i]);
    float *base = malloc(total * sizeof *base);
    if (base == NULL) {
        attn__fail(err, ATTN_ERR_NOMEM, "", "cannot allocate %zu bytes of work space",
                   total * sizeof *base);
        return NULL;
    }
    float *at = base, *piece[8];
    for (int i = 0; i < 8; i++) {
        piece[i] = n[i] ? at : NULL;
        at += align16(n[i]);
    }
    r->x = piece[0], r->h = r->x + BTC, r->z = r->h + BTC, r->a = r->z + BTC;
    r->qkv = piece[1], r->m = piece[2], r->flash = piece[3];
    r->mask = (uint8_t *)piece[4], r->rows = piece[5], r->wdrop = piece[6], r->masked = piece[7];
    if (any_map) attn__model_causal_mask(r);
    return base;
}

size_t attn__dropout_offset(const attn_gpt2_plan *p, int l) {
    size_t BTC = (size_t)p->B * (size_t)p->T * (size_t)p->C;
    size_t per = 2 * BTC;
    if (p->attn_plan.drop_site == ATTN_DROP_WEIGHTS)
        per += (size_t)p->B * (size_t)p->H * (size_t)p->T * (size_t)p->T;
    return BTC + (size_t)l * per;
}

/* ==== The model =========================================================== */

void attn__model_layernorm(const attn_gpt2_plan *p, float *y, const float *x, const float *w,
                           const float *b, size_t rows) {
    if (p->family == ATTN_FAMILY_GPTMODEL)
        attn__layernorm_div(y, x, w, b, rows, p->C);
    else
        attn__layernorm(y, x, w, b, rows, p->C);
}

static int check_idx(const attn_gpt2_plan *p, const int32_t *idx, attn_error *err) {
    size_t BT = (size_t)p->B * (size_t)p->T;
    for (size_t i = 0; i < BT; i++)
        if (idx[i] < 0 || idx[i] >= p->V)
            return attn__fail(err, ATTN_ERR_ARG, "idx",
                              "idx[%zu][%zu] is %d, outside [0, vocab_size %d)", i / (size_t)p->T,
                              i % (size_t)p->T, (int)idx[i], p->V);
    return ATTN_OK;
}

/* x = drop(wte[idx] + wpe[t]); the dropout multipliers go to the first
 * slice of dropout_masks when asked. */
static void embed(attn__run *r, const int32_t *idx) {
    const attn_gpt2_plan *p = r->p;
    size_t BTC = (size_t)p->B * (size_t)p->T * (size_t)p->C;
    attn__embed(r->x, idx, r->mv.wte, r->mv.wpe, p->B, p->T, p->C);
    float *masks = r->out->dropout_masks;
    if (masks && !p->dropout_active)
        for (size_t i = 0; i < p->n_dropout; i++) masks[i] = 1.0f;
    if (p->dropout_active) attn__dropout_masked(r->x, masks, BTC, p->cfg.dropout, r->rng);
}

/* The final LayerNorm into r->h, then the head: logits of every position
 * or of the last ones. Returns ATTN_ERR_NONFINITE if anything overflowed. */
static int finish(attn__run *r, attn_error *err) {
    const attn_gpt2_plan *p = r->p;
    size_t BT = (size_t)p->B * (size_t)p->T, C = (size_t)p->C;
    attn__model_layernorm(p, r->h, r->x, r->mv.lnf_w, r->mv.lnf_b, BT);
    if (r->out->hidden_states)
        memcpy(r->out->hidden_states + (size_t)p->n_layer * BT * C, r->h, BT * C * sizeof(float));
    attn__linear_args head = {.y = r->out->logits, .x = r->h, .rows = (int)BT, .in = p->C,
                              .out = p->V, .w = r->mv.head, .gelu = ATTN__NO_GELU};
    if (r->out->last_only) { /* rows T-1, 2T-1, ... (stride T*C) */
        head.x = r->h + (size_t)(p->T - 1) * C;
        head.ldx = p->T * p->C;
        head.rows = p->B;
    }
    int bad_logits = 0; /* checked by the blocks of the head */
    head.nonfinite = &bad_logits;
    if (r->out->logits) attn__linear_run(r->pool, &head);
    if (!attn__all_finite(r->h, BT * C) || bad_logits)
        return attn__fail(err, ATTN_ERR_NONFINITE, "params",
                          "the result overflowed float32: parameters are too large");
    return ATTN_OK;
}

/* The call: the embeddings, every block, the head. */
static int run(attn__run *r, const int32_t *idx, attn_error *err) {
    int rc = check_idx(r->p, idx, err);
    if (rc) return rc;
    attn_rng local;
    if (r->p->dropout_active && r->rng == NULL) {
        attn_rng_seed(&local, ATTN_TORCH_DEFAULT_SEED);
        r->rng = &local;
    }
    attn__model_view_make(r->p, r->params, &r->mv);
    void *work = attn__run_alloc(r, err);
    if (work == NULL) return ATTN_ERR_NOMEM;
    embed(r, idx);
    for (int l = 0; l < r->p->n_layer; l++) attn__block_run(r, l);
    rc = finish(r, err);
    free(work);
    return rc;
}

int attn_gpt2_forward(const attn_gpt2_plan *p, const float *params, const int32_t *idx,
                      attn_pool *pool, attn_rng *rng, attn_gpt2_outputs *out, attn_error *err) {
    if (p == NULL || params == NULL || idx == NULL || out == NULL)
        return attn__fail(err, ATTN_ERR_ARG, "", "plan, params, idx and outputs are required");
    attn__run r = {.p = p, .params = params, .pool = pool, .rng = rng, .out = out};
    return run(&r, idx, err);
}

int attn_gpt2_prefill(const attn_gpt2_plan *p, const float *params, const int32_t *idx,
                      attn_gpt2_cache *cache, attn_pool *pool, attn_gpt2_outputs *out,
                      attn_error *err) {
    attn_gpt2_outputs none = {0};
    if (p == NULL || params == NULL || idx == NULL || cache == NULL)
        return attn__fail(err, ATTN_ERR_ARG, "", "plan, params, idx and cache are required");
    int rc = attn__cache_accepts(cache, p, err);
    if (rc) return rc;
    attn_gpt2_cache_reset(cache);
    attn__run r = {.p = p, .params = params, .pool = pool, .out = out ? out : &none,
                   .cache = cache};
    if ((rc = run(&r, idx, err)) == ATTN_OK) cache->length = p->T;
    return rc;
}
