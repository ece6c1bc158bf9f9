/* model_work.c - the work space of one forward pass: what each block will
 * need (maps materialised or not, masked scores kept or not), sized once
 * and carved from one allocation. */
#include "flash.h"
#include "kernel.h"
#include "model.h"

#include <stdlib.h>

static int weight_dropout(const attn_gpt2_plan *p) {
    return p->dropout_active && p->attn_plan.drop_site == ATTN_DROP_WEIGHTS;
}

int attn__run_materialises(const attn__run *r, int l) {
    return r->out->attn_weights != NULL || weight_dropout(r->p) ||
           attn__capture_dst(r, l, ATTN_HOOK_ATTN_SCORES) ||
           attn__capture_dst(r, l, ATTN_HOOK_PATTERN);
}

int attn__run_keeps_masked(const attn__run *r, int l) {
    int weights_wanted = r->out->attn_weights || attn__capture_dst(r, l, ATTN_HOOK_PATTERN);
    return attn__capture_dst(r, l, ATTN_HOOK_ATTN_SCORES) ||
           (weight_dropout(r->p) && weights_wanted);
}

/* The causal mask of the materialised kernel, once per call. */
static void causal_mask(attn__run *r) {
    attn_inputs none = {0};
    attn__heads hd = {.plan = &r->p->attn_plan, .cfg = &r->p->attn, .inputs = &none,
                      .mask = r->mask};
    attn__build_mask(&hd);
}

static size_t align16(size_t n) { return (n + 15) & ~(size_t)15; }

/* What the blocks of this call need: any materialised map, any kept masked
 * scores, any normalised LayerNorm input. */
static void needs(const attn__run *r, int *map, int *masked, int *unit) {
    const attn_gpt2_plan *p = r->p;
    *map = *masked = 0;
    for (int l = r->in->start_layer; l < p->n_layer; l++) {
        *map |= attn__run_materialises(r, l);
        *masked |= attn__run_keeps_masked(r, l);
    }
    *unit = 0;
    for (int i = 0; i < r->in->n_captures; i++) {
        attn_hook h = r->in->captures[i].hook;
        *unit |= h == ATTN_HOOK_LN1_NORMALIZED || h == ATTN_HOOK_LN2_NORMALIZED ||
                 h == ATTN_HOOK_LN_FINAL_NORMALIZED;
    }
}

void *attn__run_alloc(attn__run *r, attn_error *err) {
    const attn_gpt2_plan *p = r->p;
    size_t BTC = (size_t)p->B * (size_t)p->T * (size_t)p->C;
    size_t BHTT = (size_t)p->B * (size_t)p->H * (size_t)p->T * (size_t)p->T;
    size_t BTT = (size_t)p->B * (size_t)p->T * (size_t)p->T, T = (size_t)p->T;
    int map, masked, unit;
    needs(r, &map, &masked, &unit);
    r->width = attn_pool_width(r->pool);
    /* floats of each piece, 16-aligned: x h z a, qkv, m, flash, then the maps' */
    enum { N = 9 };
    size_t n[N] = {4 * BTC, 3 * BTC, 4 * BTC,
                   (size_t)r->width * attn__flash_scratch(&p->attn_plan),
                   map ? (BTT + 3) / 4 : 0,
                   map ? 3 * (size_t)r->width * ATTN__MAP_ROWS * T : 0,
                   weight_dropout(p) && !r->out->dropout_masks ? BHTT : 0,
                   masked ? BHTT : 0, unit ? 2 * (size_t)p->C : 0};
    size_t total = 0;
    for (int i = 0; i < N; i++) total += align16(n[i]);
    float *base = malloc(total * sizeof *base);
    if (base == NULL) {
        attn__fail(err, ATTN_ERR_NOMEM, "", "cannot allocate %zu bytes of work space",
                   total * sizeof *base);
        return NULL;
    }
    float *at = base, *piece[N];
    for (int i = 0; i < N; i++) {
        piece[i] = n[i] ? at : NULL;
        at += align16(n[i]);
    }
    r->x = piece[0], r->h = r->x + BTC, r->z = r->h + BTC, r->a = r->z + BTC;
    r->qkv = piece[1], r->m = piece[2], r->flash = piece[3];
    r->mask = (uint8_t *)piece[4], r->rows = piece[5], r->wdrop = piece[6], r->masked = piece[7];
    r->unit = piece[8];
    for (int c = 0; unit && c < p->C; c++) r->unit[c] = 1.0f, r->unit[p->C + c] = 0.0f;
    if (map) causal_mask(r);
    return base;
}

size_t attn__dropout_offset(const attn_gpt2_plan *p, int l) {
    size_t BTC = (size_t)p->B * (size_t)p->T * (size_t)p->C;
    size_t per = 2 * BTC;
    if (p->attn_plan.drop_site == ATTN_DROP_WEIGHTS)
        per += (size_t)p->B * (size_t)p->H * (size_t)p->T * (size_t)p->T;
    return BTC + (size_t)l * per;
}
