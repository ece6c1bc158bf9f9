/* model_block.c - one block of either family:
 *   x = x + drop(attention(ln1(x)))     GPT2: attn.resid_drop; GPTModel: drop_shortcut
 *   x = x + drop(proj(gelu(fc(ln2(x))))) GPT2: mlp.drop;        GPTModel: drop_shortcut
 * (GPTModel's attention also drops its weights, model_attend.c). Dropout
 * draws from r->rng in PyTorch's order: the weights, then after the
 * attention, then after the MLP. */
#include "layers.h"
#include "linear.h"
#include "model.h"

#include <string.h>

/* Where block l's dropout multipliers go in dropout_masks: the one after the
 * attention (which = 0) or after the MLP (1); NULL when not asked. */
static float *resid_mask(const attn__run *r, int l, int which) {
    const attn_gpt2_plan *p = r->p;
    if (r->out->dropout_masks == NULL) return NULL;
    size_t BTC = (size_t)p->B * (size_t)p->T * (size_t)p->C, at = attn__dropout_offset(p, l);
    if (p->attn_plan.drop_site == ATTN_DROP_WEIGHTS)
        at += (size_t)p->B * (size_t)p->H * (size_t)p->T * (size_t)p->T;
    return r->out->dropout_masks + at + (size_t)which * BTC;
}

/* x += drop(a). */
static void add_dropped(attn__run *r, int l, int which) {
    const attn_gpt2_plan *p = r->p;
    size_t BTC = (size_t)p->B * (size_t)p->T * (size_t)p->C;
    if (p->dropout_active)
        attn__dropout_masked(r->a, resid_mask(r, l, which), BTC, p->cfg.dropout, r->rng);
    attn__add(r->x, r->a, BTC);
}

/* r->a = proj(gelu(fc(r->h))). */
static void mlp(attn__run *r, const attn__block_view *bv) {
    const attn_gpt2_plan *p = r->p;
    int rows = p->B * p->T;
    attn__linear_args fc = {.y = r->m, .x = r->h, .rows = rows, .in = p->C, .out = 4 * p->C,
                            .w = bv->fc_w, .bias = bv->fc_b, .gelu = (int)p->gelu};
    attn__linear_run(r->pool, &fc); /* gelu(fc(x)), block by block while in cache */
    attn__linear(r->pool, r->a, r->m, rows, 4 * p->C, p->C, bv->proj_w, 0, bv->proj_b);
}

void attn__block_run(attn__run *r, int l) {
    const attn_gpt2_plan *p = r->p;
    size_t BT = (size_t)p->B * (size_t)p->T, BTC = BT * (size_t)p->C;
    attn__block_view bv;
    attn__block_view_make(p, r->params, l, &bv);
    if (r->out->hidden_states)
        memcpy(r->out->hidden_states + (size_t)l * BTC, r->x, BTC * sizeof(float));
    attn__model_layernorm(p, r->h, r->x, bv.ln1_w, bv.ln1_b, BT);
    attn__model_attend(r, l, &bv);
    attn__linear(r->pool, r->a, r->z, (int)BT, p->C, p->C, bv.wo, 0, bv.bo);
    add_dropped(r, l, 0);
    attn__model_layernorm(p, r->h, r->x, bv.ln2_w, bv.ln2_b, BT);
    mlp(r, &bv);
    add_dropped(r, l, 1);
}
