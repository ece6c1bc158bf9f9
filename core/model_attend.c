/* model_attend.c - a block's attention inside the whole model: Q, K and V
 * by one product (or three into one [B][T][3C] buffer), then core's
 * attention kernels straight on views of that buffer (no per-head copy),
 * the heads written concatenated into r->z for the output projection.
 *
 * The fused kernel (flash.c) runs unless the block keeps its maps or drops
 * its weights (GPTModel in training mode): then the materialised kernel
 * (kernel.c) does, as attn_forward would choose for the same module.
 */
#include "cache.h"
#include "flash.h"
#include "kernel.h"
#include "linear.h"
#include "model.h"
#include "vexp.h"

#include <math.h>
#include <string.h>

static void project_qkv(attn__run *r, const attn__block_view *bv) {
    const attn_gpt2_plan *p = r->p;
    int rows = p->B * p->T, C = p->C;
    if (bv->wqkv) {
        attn__linear(r->pool, r->qkv, r->h, rows, C, 3 * C, bv->wqkv, 0, bv->bqkv);
        return;
    }
    const float *w[3] = {bv->wq, bv->wk, bv->wv}, *b[3] = {bv->bq, bv->bk, bv->bv};
    for (int t = 0; t < 3; t++) {
        attn__linear_args a = {.y = r->qkv + (size_t)t * (size_t)C, .ldy = 3 * C, .x = r->h,
                               .rows = rows, .in = C, .out = C, .w = w[t], .bias = b[t],
                               .gelu = ATTN__NO_GELU};
        attn__linear_run(r->pool, &a);
    }
}

/* softmax of each of n rows of masked scores (width T) into w, as the
 * kernel's weigh_row computes it. */
static void softmax_rows(float *w, const float *masked, size_t n, int T) {
    for (size_t i = 0; i < n; i++) {
        const float *s = masked + i * (size_t)T;
        float *wi = w + i * (size_t)T, max = attn__row_max(s, T);
        if (max == -INFINITY) {
            memset(wi, 0, (size_t)T * sizeof *wi);
            continue;
        }
        attn__scale_row(wi, 1.0f / attn__exp_shifted(wi, s, max, T), T);
    }
}

/* The materialised kernel, keeping what block l is asked for: the maps
 * (attn_weights, hook_pattern: the softmax's output) and the masked scores
 * (hook_attn_scores). With dropout on the weights the kernel's weights are
 * after dropout, so the maps are then the softmax of the kept masked scores. */
static void materialised(attn__run *r, int l, const attn__view v[3]) {
    const attn_gpt2_plan *p = r->p;
    size_t LS = (size_t)p->T * (size_t)p->T, BHTT = (size_t)p->B * (size_t)p->H * LS;
    size_t per = (size_t)r->width * ATTN__MAP_ROWS * (size_t)p->T;
    float *maps = r->out->attn_weights ? r->out->attn_weights + (size_t)l * BHTT : NULL;
    float *pattern = maps ? maps : attn__capture_dst(r, l, ATTN_HOOK_PATTERN);
    int wdrop = p->dropout_active && p->attn_plan.drop_site == ATTN_DROP_WEIGHTS;
    attn_inputs none = {0};
    attn__heads hd = {.plan = &p->attn_plan, .cfg = &p->attn, .inputs = &none,
                      .q = v[0], .k = v[1], .v = v[2], .scores = r->rows,
                      .masked = r->rows + per, .weights = r->rows + 2 * per,
                      .mask = r->mask, .context_heads = r->z};
    if (attn__run_keeps_masked(r, l)) hd.masked = r->masked, hd.masked_step = LS;
    if (wdrop) {
        float *mult = r->out->dropout_masks
                          ? r->out->dropout_masks + attn__dropout_offset(p, l) : r->wdrop;
        attn__dropout_mask(mult, &p->attn_plan, &p->attn, r->rng);
        hd.dropout = mult;
    } else if (pattern) {
        hd.weights = pattern, hd.weights_step = LS;
    }
    attn__attend(&hd, r->pool);
    if (wdrop && pattern) softmax_rows(pattern, r->masked, BHTT / (size_t)p->T, p->T);
    size_t rows = BHTT / (size_t)p->T;
    if (pattern) attn__capture(r, l, ATTN_HOOK_PATTERN, pattern, rows, p->T, p->T);
    if (hd.masked_step) attn__capture(r, l, ATTN_HOOK_ATTN_SCORES, r->masked, rows, p->T, p->T);
}

void attn__model_attend(attn__run *r, int l, const attn__block_view *bv) {
    const attn_gpt2_plan *p = r->p;
    project_qkv(r, bv);
    if (r->cache) attn__cache_store(r->cache, l, r->qkv, p->T);
    size_t C = (size_t)p->C, sb = (size_t)p->T * 3 * C, BT = (size_t)p->B * (size_t)p->T;
    static const attn_hook qkv_hooks[3] = {ATTN_HOOK_Q, ATTN_HOOK_K, ATTN_HOOK_V};
    for (int t = 0; t < 3; t++)
        attn__capture(r, l, qkv_hooks[t], r->qkv + (size_t)t * C, BT, p->C, 3 * p->C);
    attn__view v[3];
    for (int t = 0; t < 3; t++)
        v[t] = (attn__view){r->qkv + (size_t)t * C, sb, (size_t)p->D, 3 * p->C};
    if (attn__run_materialises(r, l)) {
        materialised(r, l, v);
        return;
    }
    attn_inputs none = {0};
    attn__flash f = {.plan = &p->attn_plan, .cfg = &p->attn, .inputs = &none, .q = v[0],
                     .k = v[1], .v = v[2], .context_heads = r->z, .scratch = r->flash};
    attn__flash_run(&f, r->pool);
}
