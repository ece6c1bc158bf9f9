/* block.c - the one block of every architecture, in every mode (a forward
 * pass, a prefill, a cached step, the runs that look inside):
 *
 *   sequential:  x = x + drop(post1(o(attn(norm1(x)))))
 *                x = x + drop(post2(mlp(norm2(x))))
 *   parallel:    x = (drop(mlp(norm2(x))) + drop(o(attn(norm1(x))))) + x
 *   post-LN:     x = norm1(x + o(attn(x))); x = norm2(x + mlp(x))   (BERT)
 *   mlp:         down(act(up(h)))  or, gated, down(act(gate(h)) * up(h))
 *
 * post1 and post2 exist where the row has their tensors (Gemma's norms
 * after the attention and the MLP). Dropout draws from r->rng in PyTorch's
 * order: the weights (attend.c), after the attention, after the MLP.
 * TransformerLens's hook points are marked where they are captured or
 * patched (capture.c). */
#include "core/gemv.h"
#include "core/layers/layers.h"
#include "core/linear.h"
#include "core/lm/lm.h"

#include <string.h>

/* Where block l's dropout multipliers go in dropout_masks: the one after the
 * attention (which = 0) or after the MLP (1); NULL when not asked. */
static float *resid_mask(const attn__run *r, int l, int which) {
    const attn_lm_plan *p = r->p;
    if (r->out->dropout_masks == NULL) return NULL;
    size_t BTC = (size_t)p->B * (size_t)p->T * (size_t)p->C, at = attn__dropout_offset(p, l);
    if (p->spec.weight_dropout) at += (size_t)p->B * (size_t)p->H * (size_t)p->T * (size_t)p->T;
    return r->out->dropout_masks + at + (size_t)which * BTC;
}

/* y = drop(y), then its hook point (attn_out or mlp_out). */
static void drop_out(attn__run *r, int l, int which, float *y, attn_hook hook) {
    const attn_lm_plan *p = r->p;
    size_t n = (size_t)r->rows * (size_t)p->C;
    if (p->dropout_active) attn__dropout_masked(y, resid_mask(r, l, which), n, p->cfg.dropout, r->rng);
    attn__patch_resid(r, l, hook, y);
    attn__capture(r, l, hook, y, (size_t)r->rows, p->C, p->C);
}

/* x += y, then the hook point of the sum (resid_mid or resid_post). */
static void add_to_stream(attn__run *r, int l, const float *y, attn_hook sum) {
    const attn_lm_plan *p = r->p;
    attn__add(r->x, y, (size_t)r->rows * (size_t)p->C);
    attn__patch_resid(r, l, sum, r->x);
    attn__capture(r, l, sum, r->x, (size_t)r->rows, p->C, p->C);
}

/* A gated MLP's gate and up from r->h; in a step as one call over the pool
 * (the same blocks, one hand-off instead of two: a thin model such as
 * SmolLM2's makes hundreds of these calls per token). */
static void gate_up(attn__run *r, const attn__weights *w, float *gate, float *up) {
    const attn_lm_plan *p = r->p;
    int C = p->C, F = p->F;
    if (!r->step) {
        attn__product(r, gate, 0, r->h, C, F, w->w[ATTN__GATE_W], w->w[ATTN__GATE_B], ATTN__NO_ACT);
        attn__product(r, up, 0, r->h, C, F, w->w[ATTN__UP_W], w->w[ATTN__UP_B], ATTN__NO_ACT);
        return;
    }
    attn__gemv_args g[2] = {{.y = gate, .x = r->h, .rows = r->rows, .in = C, .out = F,
                             .w = w->w[ATTN__GATE_W], .wtype = p->cfg.weights_dtype,
                             .bias = w->w[ATTN__GATE_B], .act = ATTN__NO_ACT}};
    g[1] = g[0];
    g[1].y = up, g[1].w = w->w[ATTN__UP_W], g[1].bias = w->w[ATTN__UP_B];
    attn__gemv_run_many(r->pool, g, 2);
}

/* r->a2 = the MLP of r->h: the activation on up's blocks while in cache
 * unless mlp.hook_pre is captured; then post2 when the row has it. */
static void mlp(attn__run *r, int l, const attn__weights *w) {
    const attn_lm_plan *p = r->p;
    int rows = r->rows, F = p->F, pre = attn__capture_dst(r, l, ATTN_HOOK_MLP_PRE) != NULL;
    if (p->spec.gated) {
        float *gate = r->m, *up = r->m + (size_t)rows * (size_t)F;
        gate_up(r, w, gate, up);
        attn__capture(r, l, ATTN_HOOK_MLP_PRE, gate, (size_t)rows, F, F);
        attn__capture(r, l, ATTN_HOOK_MLP_PRE_LINEAR, up, (size_t)rows, F, F);
        for (int i = 0; i < rows; i++)
            attn__gated_row(gate + (size_t)i * (size_t)F, up + (size_t)i * (size_t)F, F, p->spec.act);
    } else {
        attn__product(r, r->m, 0, r->h, p->C, F, w->w[ATTN__UP_W], w->w[ATTN__UP_B],
                      pre ? ATTN__NO_ACT : (int)p->spec.act);
        if (pre) {
            attn__capture(r, l, ATTN_HOOK_MLP_PRE, r->m, (size_t)rows, F, F);
            for (int i = 0; i < rows; i++) attn__act_row(r->m + (size_t)i * (size_t)F, F, p->spec.act);
        }
    }
    attn__capture(r, l, ATTN_HOOK_MLP_POST, r->m, (size_t)rows, F, F);
    attn__product(r, r->a2, 0, r->m, F, p->C, w->w[ATTN__DOWN_W], w->w[ATTN__DOWN_B], ATTN__NO_ACT);
    if (w->w[ATTN__POST2_W]) attn__run_norm(r, r->a2, r->a2, w->w[ATTN__POST2_W], NULL, (size_t)rows);
}

/* r->h = norm2(x), with its hook point. */
static void norm2(attn__run *r, int l, const attn__weights *w) {
    attn__capture_normalized(r, l, ATTN_HOOK_LN2_NORMALIZED, r->x);
    attn__run_norm(r, r->h, r->x, w->w[ATTN__NORM2_W], w->w[ATTN__NORM2_B], (size_t)r->rows);
}

/* BERT's order (post-LN): the attention reads the stream itself and each
 * norm follows its residual add; ln1 and ln2 normalise resid_mid and
 * resid_post, as TransformerLens's BertBlock names them. */
static void post_norm_block(attn__run *r, int l, const attn__weights *w) {
    const attn_lm_plan *p = r->p;
    size_t rows = (size_t)r->rows, bytes = rows * (size_t)p->C * sizeof(float);
    memcpy(r->h, r->x, bytes);
    attn__lm_attend(r, l, w); /* hook_q, k, v, attn_scores, pattern */
    attn__intervene_z(r, l);
    attn__capture(r, l, ATTN_HOOK_Z, r->z, rows, p->QD, p->QD);
    attn__product(r, r->a, 0, r->z, p->QD, p->C, w->w[ATTN__O_W], w->w[ATTN__O_B], ATTN__NO_ACT);
    drop_out(r, l, 0, r->a, ATTN_HOOK_ATTN_OUT);
    add_to_stream(r, l, r->a, ATTN_HOOK_RESID_MID);
    attn__capture_normalized(r, l, ATTN_HOOK_LN1_NORMALIZED, r->x);
    attn__run_norm(r, r->h, r->x, w->w[ATTN__NORM1_W], w->w[ATTN__NORM1_B], rows);
    mlp(r, l, w);
    drop_out(r, l, 1, r->a2, ATTN_HOOK_MLP_OUT);
    memcpy(r->x, r->h, bytes);
    add_to_stream(r, l, r->a2, ATTN_HOOK_RESID_POST);
    attn__capture_normalized(r, l, ATTN_HOOK_LN2_NORMALIZED, r->x);
    attn__run_norm(r, r->x, r->x, w->w[ATTN__NORM2_W], w->w[ATTN__NORM2_B], rows);
    attn__capture(r, l, ATTN_HOOK_NORMALIZED_RESID_POST, r->x, rows, p->C, p->C);
}

void attn__block_run(attn__run *r, int l) {
    const attn_lm_plan *p = r->p;
    size_t rows = (size_t)r->rows, n = rows * (size_t)p->C;
    attn__weights w;
    attn__block_weights(p, r->params, l, &w);
    attn__patch_resid(r, l, ATTN_HOOK_RESID_PRE, r->x);
    attn__capture(r, l, ATTN_HOOK_RESID_PRE, r->x, rows, p->C, p->C);
    size_t BTC = (size_t)p->B * (size_t)p->T * (size_t)p->C;
    if (r->out->hidden_states) attn__rows_out(r, r->out->hidden_states + (size_t)l * BTC, r->x, p->C);
    if (r->keep) attn__rows_out(r, r->keep + (size_t)l * BTC, r->x, p->C);
    if (p->spec.post_norm) {
        post_norm_block(r, l, &w);
        return;
    }
    attn__capture_normalized(r, l, ATTN_HOOK_LN1_NORMALIZED, r->x);
    attn__run_norm(r, r->h, r->x, w.w[ATTN__NORM1_W], w.w[ATTN__NORM1_B], rows);
    attn__lm_attend(r, l, &w); /* hook_q, k, v, attn_scores, pattern */
    attn__intervene_z(r, l);
    attn__capture(r, l, ATTN_HOOK_Z, r->z, rows, p->QD, p->QD);
    attn__product(r, r->a, 0, r->z, p->QD, p->C, w.w[ATTN__O_W], w.w[ATTN__O_B], ATTN__NO_ACT);
    if (w.w[ATTN__POST1_W]) attn__run_norm(r, r->a, r->a, w.w[ATTN__POST1_W], NULL, rows);
    if (p->spec.parallel) { /* both from the block's input, added together */
        norm2(r, l, &w);
        mlp(r, l, &w);
        drop_out(r, l, 0, r->a, ATTN_HOOK_ATTN_OUT);
        drop_out(r, l, 1, r->a2, ATTN_HOOK_MLP_OUT);
        attn__add2(r->x, r->a2, r->a, n);
        attn__patch_resid(r, l, ATTN_HOOK_RESID_POST, r->x);
        attn__capture(r, l, ATTN_HOOK_RESID_POST, r->x, rows, p->C, p->C);
        return;
    }
    drop_out(r, l, 0, r->a, ATTN_HOOK_ATTN_OUT);
    add_to_stream(r, l, r->a, ATTN_HOOK_RESID_MID);
    norm2(r, l, &w);
    mlp(r, l, &w);
    drop_out(r, l, 1, r->a2, ATTN_HOOK_MLP_OUT);
    add_to_stream(r, l, r->a2, ATTN_HOOK_RESID_POST);
}
