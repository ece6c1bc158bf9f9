/* model_block.c - one block of either family:
 *   x = x + drop(attention(ln1(x)))     GPT2: attn.resid_drop; GPTModel: drop_shortcut
 *   x = x + drop(proj(gelu(fc(ln2(x))))) GPT2: mlp.drop;        GPTModel: drop_shortcut
 * (GPTModel's attention also drops its weights, model_attend.c). Dropout
 * draws from r->rng in PyTorch's order: the weights, then after the
 * attention, then after the MLP. The hook points of TransformerLens are
 * marked where they are captured or patched (model_hooks.c). */
#include "layers.h"
#include "linear.h"
#include "model.h"
#include "vexp.h"

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

/* x += drop(a), with the hook points of the added output (attn_out or
 * mlp_out) and of the sum (resid_mid or resid_post). */
static void add_dropped(attn__run *r, int l, int which, attn_hook out, attn_hook sum) {
    const attn_gpt2_plan *p = r->p;
    size_t BT = (size_t)p->B * (size_t)p->T, BTC = BT * (size_t)p->C;
    if (p->dropout_active)
        attn__dropout_masked(r->a, resid_mask(r, l, which), BTC, p->cfg.dropout, r->rng);
    attn__patch_resid(r, l, out, r->a);
    attn__capture(r, l, out, r->a, BT, p->C, p->C);
    attn__add(r->x, r->a, BTC);
    attn__patch_resid(r, l, sum, r->x);
    attn__capture(r, l, sum, r->x, BT, p->C, p->C);
}

/* r->a = proj(gelu(fc(r->h))); GELU on fc's blocks while in cache unless
 * mlp.hook_pre is captured. */
static void mlp(attn__run *r, int l, const attn__block_view *bv) {
    const attn_gpt2_plan *p = r->p;
    int rows = p->B * p->T, pre = attn__capture_dst(r, l, ATTN_HOOK_MLP_PRE) != NULL;
    attn__linear_args fc = {.y = r->m, .x = r->h, .rows = rows, .in = p->C, .out = 4 * p->C,
                            .w = bv->fc_w, .bias = bv->fc_b,
                            .gelu = pre ? ATTN__NO_GELU : (int)p->gelu};
    attn__linear_run(r->pool, &fc);
    if (pre) {
        attn__capture(r, l, ATTN_HOOK_MLP_PRE, r->m, (size_t)rows, 4 * p->C, 4 * p->C);
        for (int i = 0; i < rows; i++)
            attn__gelu_row(r->m + (size_t)i * 4 * (size_t)p->C, 4 * p->C, (int)p->gelu);
    }
    attn__capture(r, l, ATTN_HOOK_MLP_POST, r->m, (size_t)rows, 4 * p->C, 4 * p->C);
    attn__linear(r->pool, r->a, r->m, rows, 4 * p->C, p->C, bv->proj_w, 0, bv->proj_b);
}

void attn__block_run(attn__run *r, int l) {
    const attn_gpt2_plan *p = r->p;
    size_t BT = (size_t)p->B * (size_t)p->T, BTC = BT * (size_t)p->C;
    attn__block_view bv;
    attn__block_view_make(p, r->params, l, &bv);
    attn__patch_resid(r, l, ATTN_HOOK_RESID_PRE, r->x);
    attn__capture(r, l, ATTN_HOOK_RESID_PRE, r->x, BT, p->C, p->C);
    if (r->out->hidden_states)
        memcpy(r->out->hidden_states + (size_t)l * BTC, r->x, BTC * sizeof(float));
    attn__capture_normalized(r, l, ATTN_HOOK_LN1_NORMALIZED, r->x);
    attn__model_layernorm(p, r->h, r->x, bv.ln1_w, bv.ln1_b, BT);
    attn__model_attend(r, l, &bv); /* hook_q, k, v, attn_scores, pattern */
    attn__intervene_z(r, l);
    attn__capture(r, l, ATTN_HOOK_Z, r->z, BT, p->C, p->C);
    attn__linear(r->pool, r->a, r->z, (int)BT, p->C, p->C, bv.wo, 0, bv.bo);
    add_dropped(r, l, 0, ATTN_HOOK_ATTN_OUT, ATTN_HOOK_RESID_MID);
    attn__capture_normalized(r, l, ATTN_HOOK_LN2_NORMALIZED, r->x);
    attn__model_layernorm(p, r->h, r->x, bv.ln2_w, bv.ln2_b, BT);
    mlp(r, l, &bv);
    add_dropped(r, l, 1, ATTN_HOOK_MLP_OUT, ATTN_HOOK_RESID_POST);
}
