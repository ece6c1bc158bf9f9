/* inputs.c - what a run takes in besides the weights: the padding of a
 * batch (attention_mask: the kernels' key padding mask), each row's
 * position (t; RoBERTa's count past padding_idx; a packed row's own), the
 * token types, and the embeddings made from them.
 *
 * Packing: a batch padded on the right whose run keeps no map and no
 * activation (embeddings, logits, hidden states) runs on its tokens alone:
 * rows = the tokens, batch row after batch row, so that the projections and
 * MLPs do no work for padding; each batch row's attention is the fused
 * kernel on its own rows (a plan of its own length). Outputs go back to
 * [B][T] with 0 at the padded positions. */
#include "core/layers/layers.h"
#include "core/half.h"
#include "core/lm/lm.h"

#include <stdlib.h>
#include <string.h>

int attn__inputs_check(const attn_lm_plan *p, const attn_lm_inputs *in, attn_error *err) {
    size_t BT = (size_t)p->B * (size_t)p->T;
    if (in->token_type_ids && p->spec.type_vocab == 0)
        return attn__fail(err, ATTN_ERR_ARG, "token_type_ids", "%s has no token types",
                          attn_arch_name(p->cfg.arch));
    for (size_t i = 0; in->token_type_ids && i < BT; i++)
        if (in->token_type_ids[i] < 0 || in->token_type_ids[i] >= p->spec.type_vocab)
            return attn__fail(err, ATTN_ERR_ARG, "token_type_ids",
                              "token_type_ids[%zu][%zu] is %d, outside [0, type_vocab_size %d)",
                              i / (size_t)p->T, i % (size_t)p->T, (int)in->token_type_ids[i],
                              p->spec.type_vocab);
    if (in->attention_mask && in->resid == NULL && p->training)
        return attn__fail(err, ATTN_ERR_ARG, "training", "a padded batch runs in eval mode");
    return ATTN_OK;
}

/* ==== Packing ============================================================= */

/* 1 when the run may pack its rows: padding on the right only (some), and
 * nothing asked that is [B][T]-shaped inside the blocks. */
static int can_pack(const attn__run *r) {
    const attn_lm_plan *p = r->p;
    const attn_lm_inputs *in = r->in;
    const uint8_t *m = in->attention_mask;
    if (!m || in->resid || r->cache || p->dropout_active || in->n_captures || in->n_ablations ||
        in->n_patches || r->out->attn_weights || r->out->dropout_masks ||
        (p->spec.window > 0 && p->spec.window < p->T))
        return 0;
    /* the loss, the analyses and importance's kept inputs read [B][T] rows */
    if (r->out->loss || r->keep || attn__analysing(r) || r->out->analysis[ATTN_ANALYSIS_IMPORTANCE])
        return 0;
    int pads = 0;
    for (int b = 0; b < p->B; b++)
        for (int t = 0, ended = 0; t < p->T; t++) {
            int token = m[(size_t)b * p->T + (size_t)t] != 0;
            if (token && ended) return 0; /* a token after padding */
            ended |= !token;
            pads += !token;
        }
    return pads > 0;
}

/* pos[B][T]: RoBERTa's create_position_ids_from_input_ids (tokens that are
 * not padding_idx count from padding_idx + 1; padding_idx's own row for
 * them), else t. */
static void positions(const attn__run *r, int *pos) {
    const attn_lm_plan *p = r->p;
    int pad = p->spec.pad_id;
    for (int b = 0; b < p->B; b++)
        for (int t = 0, n = 0; t < p->T; t++) {
            size_t i = (size_t)b * p->T + (size_t)t;
            if (!p->spec.pos_after_pad) {
                pos[i] = t;
                continue;
            }
            n += r->in->idx[i] != pad;
            pos[i] = r->in->idx[i] != pad ? pad + n : pad;
        }
}

/* Each batch row's plan: its own length, one batch row (flash.c reads only
 * its sizes). */
static int seq_plans(attn__run *r, attn_error *err) {
    const attn_lm_plan *p = r->p;
    for (int b = 0; b < p->B; b++) {
        int n = r->start[b + 1] - r->start[b];
        if (n == 0) continue;
        attn_config c = p->attn;
        c.batch = 1, c.tokens = n;
        int rc = attn_plan_make(&c, &r->seq_plan[b], err);
        if (rc != ATTN_OK) return rc;
    }
    return ATTN_OK;
}

int attn__inputs_prepare(attn__run *r, attn_error *err) {
    const attn_lm_plan *p = r->p;
    const uint8_t *m = r->in->attention_mask;
    size_t BT = (size_t)p->B * (size_t)p->T, B = (size_t)p->B;
    int pack = can_pack(r), need_pos = pack || (p->spec.pos_after_pad && !r->in->resid);
    r->rows = p->B * p->T;
    /* kpm [BT] bytes, then pos and src [BT] ints, start [B + 1], the plans */
    size_t ints = 2 * BT + B + 1, bytes = ((BT + 7) & ~(size_t)7) + ints * sizeof(int);
    bytes = (bytes + 63) & ~(size_t)63;
    char *mem = malloc(bytes + B * sizeof(attn_plan));
    if (mem == NULL) return attn__fail(err, ATTN_ERR_NOMEM, "", "cannot allocate the inputs");
    r->inputs_mem = mem;
    uint8_t *kpm = (uint8_t *)mem;
    int *pos = (int *)(mem + ((BT + 7) & ~(size_t)7)), *src = pos + BT, *start = src + BT;
    r->seq_plan = (attn_plan *)(mem + bytes);
    int any_pad = 0;
    for (size_t i = 0; m && i < BT; i++) any_pad |= (kpm[i] = m[i] == 0);
    r->kpm = any_pad ? kpm : NULL;
    if (need_pos) positions(r, pos);
    r->pos = need_pos ? pos : NULL;
    if (!pack) return ATTN_OK;
    int n = 0;
    for (int b = 0; b < p->B; b++) {
        start[b] = n;
        for (int t = 0; t < p->T; t++) {
            size_t i = (size_t)b * p->T + (size_t)t;
            if (m[i]) pos[n] = pos[i], src[n++] = (int)i; /* n <= i: pos[i] is still unread */
        }
    }
    start[p->B] = n;
    r->packed = 1, r->rows = n, r->start = start, r->src = src;
    return seq_plans(r, err);
}

void attn__inputs_free(attn__run *r) {
    free(r->inputs_mem);
    r->inputs_mem = NULL;
}

/* ==== Embeddings ========================================================== */

/* Row i of r: its index in [B][T]. */
static size_t src_of(const attn__run *r, int i) { return r->packed ? (size_t)r->src[i] : (size_t)i; }

/* row[c] (+)= table's row i (times scale), widened from the plan's dtype. */
static void table_row(const attn_lm_plan *p, float *row, const void *table, size_t i, float scale,
                      int add) {
    size_t C = (size_t)p->C;
    attn_dtype t = p->cfg.weights_dtype;
    const float *f = t == ATTN_DTYPE_F32 ? (const float *)table + i * C : NULL;
    const uint16_t *h = t == ATTN_DTYPE_F32 ? NULL : (const uint16_t *)table + i * C;
    for (size_t c = 0; c < C; c++) {
        float v = f ? f[c] : attn__half_to_f32(t, h[c]);
        if (scale != 1.0f) v = v * scale;
        row[c] = add ? row[c] + v : v;
    }
}

void attn__embed_input(attn__run *r) {
    const attn_lm_plan *p = r->p;
    const void *wte = r->mw.w[ATTN__TOK_EMB], *wpe = r->mw.w[ATTN__POS_EMB];
    const void *types = r->mw.w[ATTN__TYPE_EMB];
    float scale = p->spec.emb_scale != 0.0f ? p->spec.emb_scale : 1.0f;
    size_t C = (size_t)p->C;
    if (!r->packed && !r->pos && !types) { /* the decoders' path, as it always was */
        attn__run_embed(p, &r->mw, r->x, r->in->idx, NULL, p->B * p->T);
    } else {
        /* BertEmbeddings' order: words + token types, then + positions */
        for (int i = 0; i < r->rows; i++) {
            size_t s = src_of(r, i);
            float *row = r->x + (size_t)i * C;
            table_row(p, row, wte, (size_t)r->in->idx[s], scale, 0);
            if (types)
                table_row(p, row, types, (size_t)(r->in->token_type_ids ? r->in->token_type_ids[s] : 0),
                          1.0f, 1);
            if (wpe) table_row(p, row, wpe, (size_t)(r->pos ? r->pos[i] : (int)(s % (size_t)p->T)), 1.0f, 1);
        }
    }
    if (r->mw.w[ATTN__EMB_NORM_W])
        attn__run_norm(r, r->x, r->x, r->mw.w[ATTN__EMB_NORM_W], r->mw.w[ATTN__EMB_NORM_B],
                       (size_t)r->rows);
}

/* ==== Rows out ============================================================ */

void attn__rows_out(const attn__run *r, float *dst, const float *src, int width) {
    const attn_lm_plan *p = r->p;
    size_t W = (size_t)width, T = (size_t)p->T;
    if (!r->packed) {
        memcpy(dst, src, (size_t)r->rows * W * sizeof *dst);
        return;
    }
    for (int b = 0; b < p->B; b++) {
        size_t n = (size_t)(r->start[b + 1] - r->start[b]);
        float *d = dst + (size_t)b * T * W;
        memcpy(d, src + (size_t)r->start[b] * W, n * W * sizeof *dst);
        memset(d + n * W, 0, (T - n) * W * sizeof *dst);
    }
}

int attn__row_first(const attn__run *r, int b) {
    return r->packed ? r->start[b] : b * r->p->T;
}

int attn__row_last(const attn__run *r, int b) {
    const attn_lm_plan *p = r->p;
    if (r->packed) return r->start[b + 1] > r->start[b] ? r->start[b + 1] - 1 : r->start[b];
    const uint8_t *m = r->in->attention_mask;
    int t = p->T - 1;
    while (m && t > 0 && m[(size_t)b * p->T + (size_t)t] == 0) t--;
    return b * p->T + t;
}
