/* attend.c - a block's attention inside a whole model: the query, key and
 * value projections (one product when they lie as one matrix), each head's
 * q/k norm and rotary positions where the model has them, then
 *   dense (a forward pass, a prefill): core's kernels straight on views of
 *     the [rows][QD + 2 KVD] buffer, no per-head copy; the fused kernel
 *     (flash.c) unless the block keeps its maps or drops its weights, then
 *     the materialised one (kernel.c), as attn_forward would choose; the
 *     padding of the batch as the kernels' key padding mask;
 *   packed (a padded batch's tokens alone): each batch row's heads among its
 *     own tokens, items over the pool (a long row through the fused kernel);
 *   step: each row's query against its sequence's cached keys (one sgemv
 *     per row and head, split over the pool);
 * the heads written concatenated into r->z for the output projection. */
#include "core/flash.h"
#include "core/layers/layers.h"
#include "core/linear.h"
#include "core/lm/lm.h"
#include "core/vexp.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

static int qkv_width(const attn_lm_plan *p) { return p->QD + 2 * p->KVD; }

/* GPT-NeoX's fused rows [H][q, k, v][D] into q, then k, then v, row by row. */
static void split_per_head(attn__run *r) {
    const attn_lm_plan *p = r->p;
    size_t W = (size_t)qkv_width(p), D = (size_t)p->D;
    for (int i = 0; i < r->rows; i++) {
        float *row = r->qkv + (size_t)i * W;
        memcpy(r->tmp, row, W * sizeof *row);
        for (int h = 0; h < p->H; h++)
            for (int t = 0; t < 3; t++)
                memcpy(row + (size_t)t * (size_t)p->QD + (size_t)h * D,
                       r->tmp + ((size_t)h * 3 + (size_t)t) * D, D * sizeof *row);
    }
}

static void project_qkv(attn__run *r, const attn__weights *w) {
    const attn_lm_plan *p = r->p;
    int C = p->C, W = qkv_width(p);
    if (w->qkv_w) {
        attn__product(r, r->qkv, W, r->h, C, W, w->qkv_w, w->qkv_b, ATTN__NO_ACT);
        if (p->spec.qkv_per_head) split_per_head(r);
        return;
    }
    const attn__role roles[3][2] = {{ATTN__Q_W, ATTN__Q_B}, {ATTN__K_W, ATTN__K_B}, {ATTN__V_W, ATTN__V_B}};
    const int at[3] = {0, p->QD, p->QD + p->KVD}, width[3] = {p->QD, p->KVD, p->KVD};
    for (int t = 0; t < 3; t++)
        attn__product(r, r->qkv + at[t], W, r->h, C, width[t], w->w[roles[t][0]], w->w[roles[t][1]],
                      ATTN__NO_ACT);
}

/* Each query and key head normalised over its D dims (Qwen3, Gemma3). */
static void qk_norm(attn__run *r, const attn__weights *w) {
    const attn_lm_plan *p = r->p;
    if (!w->w[ATTN__Q_NORM]) return;
    for (int i = 0; i < r->rows; i++) {
        float *q = r->qkv + (size_t)i * (size_t)qkv_width(p), *k = q + p->QD;
        attn__norm(p->spec.norm, q, q, w->w[ATTN__Q_NORM], NULL, (size_t)p->H, p->D, p->spec.norm_eps);
        attn__norm(p->spec.norm, k, k, w->w[ATTN__K_NORM], NULL, (size_t)p->Hkv, p->D,
                   p->spec.norm_eps);
    }
}

/* 1 if block l sees only a window of keys (and uses the local base). */
static int local_layer(const attn_lm_plan *p, int l) {
    const attn_lm_spec *s = &p->spec;
    if (s->window <= 0 || l < s->window_from) return 0;
    if (s->layer_list) return l < ATTN_LM_LIST_LAYERS && (s->local_layers[l / 8] >> (l % 8) & 1);
    return s->global_every == 0 || (l + 1) % s->global_every != 0;
}

/* Rotates the first rope.dims dims of every query and key head by its row's
 * position: row i of a dense run is position i % T. */
static void rotate(attn__run *r, int l) {
    const attn_lm_plan *p = r->p;
    const attn_lm_rope *rope = &p->spec.rope;
    int rot = rope->dims;
    if (rot == 0) return;
    /* a model with a local base (Gemma) rotates its local layers by their
     * own frequencies, unscaled (its rotary_emb_local: rope_type default) */
    int own = local_layer(p, l) && rope->local_theta > 0.0;
    attn_lm_rope local = {.dims = rot, .type = ATTN_ROPE_DEFAULT};
    attn__rope_freqs(r->inv_freq, rot, own ? rope->local_theta : rope->theta, own ? &local : rope);
    for (int i = 0; i < r->rows; i++) {
        float *c = r->rope + (size_t)i * (size_t)rot, *s = c + rot / 2;
        float *q = r->qkv + (size_t)i * (size_t)qkv_width(p);
        attn__rope_angles(c, s, r->inv_freq, rot, r->pos ? r->pos[i] : i % p->T);
        attn__rope_apply(q, p->H, p->D, rot, c, s);
        attn__rope_apply(q + p->QD, p->Hkv, p->D, rot, c, s);
    }
}

/* ==== Dense: the kernels ==================================================== */

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
 * (attn_weights, hook_pattern: the softmax's output, the analyses' weights)
 * and the masked scores (hook_attn_scores). With dropout on the weights the kernel's weights are
 * after dropout, so the maps are then the softmax of the kept masked scores. */
static void materialised(attn__run *r, int l, const attn__view v[3], uint8_t *mask) {
    const attn_lm_plan *p = r->p;
    size_t LS = (size_t)p->T * (size_t)p->T, BHTT = (size_t)p->B * (size_t)p->H * LS;
    size_t per = (size_t)r->width * ATTN__MAP_ROWS * (size_t)p->T;
    float *maps = r->out->attn_weights ? r->out->attn_weights + (size_t)l * BHTT : NULL;
    float *pattern = maps ? maps : attn__capture_dst(r, l, ATTN_HOOK_PATTERN);
    if (pattern == NULL && attn__analysing(r)) pattern = r->pattern; /* the analyses' alone */
    int wdrop = p->dropout_active && p->spec.weight_dropout;
    attn_inputs none = {0};
    attn__heads hd = {.plan = &p->attn_plan, .cfg = &p->attn, .inputs = &none,
                      .q = v[0], .k = v[1], .v = v[2], .scores = r->rowbuf,
                      .masked = r->rowbuf + per, .weights = r->rowbuf + 2 * per,
                      .mask = mask, .context_heads = r->z};
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
    if (pattern) attn__analyse_block(r, l, pattern);
}

static void dense(attn__run *r, int l) {
    const attn_lm_plan *p = r->p;
    int W = qkv_width(p), local = local_layer(p, l) && r->wbool;
    size_t sb = (size_t)p->T * (size_t)W, D = (size_t)p->D;
    attn__view v[3] = {{r->qkv, sb, D, W}, {r->qkv + p->QD, sb, D, W},
                       {r->qkv + p->QD + p->KVD, sb, D, W}};
    if (attn__run_materialises(r, l)) {
        materialised(r, l, v, local ? r->wmask : r->mask);
        return;
    }
    attn_inputs in = {.attn_mask_bool = local ? r->wbool : NULL, .key_padding_mask = r->kpm};
    attn__flash f = {.plan = &p->attn_plan, .cfg = &p->attn, .inputs = &in, .q = v[0],
                     .k = v[1], .v = v[2], .context_heads = r->z, .scratch = r->flash};
    attn__flash_run(&f, r->pool);
}

/* ==== Packed: each batch row among its own tokens ============================ */

/* Rows of a packed batch row short enough for one item's score matrix in
 * the fused kernel's scratch (BQ x BK floats); longer ones go through it. */
#define PACKED_DIRECT 128

typedef struct {
    const attn__run *r;
} packed_job;

/* One (batch row, head) of up to PACKED_DIRECT tokens: its n x n scores
 * (scaled, causal for a decoder), the softmax of each row as the kernels'
 * (max subtracted), the weighted sum of values into r->z. */
static void packed_item(void *ctx, long item, int slot) {
    const attn__run *r = ((const packed_job *)ctx)->r;
    const attn_lm_plan *p = r->p;
    int b = (int)(item / p->H), h = (int)(item % p->H), hk = h / (p->H / p->Hkv);
    int s0 = r->start[b], n = r->start[b + 1] - s0, W = qkv_width(p), D = p->D;
    if (n == 0 || n > PACKED_DIRECT) return;
    const float *q = r->qkv + (size_t)s0 * (size_t)W + (size_t)h * (size_t)D;
    const float *k = r->qkv + (size_t)s0 * (size_t)W + (size_t)p->QD + (size_t)hk * (size_t)D;
    float *s = r->flash + (size_t)slot * attn__flash_scratch(&p->attn_plan);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, D, p->attn_plan.scale, q, W, k, W, 0.0f, s, n);
    for (int i = 0; i < n; i++) {
        float *row = s + (size_t)i * (size_t)n;
        int m = p->spec.bidirectional ? n : i + 1; /* causal: keys after i get weight 0 */
        attn__scale_row(row, 1.0f / attn__exp_shifted(row, row, attn__row_max(row, m), m), m);
        for (int j = m; j < n; j++) row[j] = 0.0f;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, D, n, 1.0f, s, n, k + p->KVD, W, 0.0f,
                r->z + (size_t)s0 * (size_t)p->QD + (size_t)h * (size_t)D, p->QD);
}

/* A packed run: the short batch rows' heads as items over the pool, each
 * longer one through the fused kernel with its own plan (its length). */
static void packed(attn__run *r) {
    const attn_lm_plan *p = r->p;
    int W = qkv_width(p);
    size_t D = (size_t)p->D;
    packed_job job = {r};
    attn__parallel(r->pool, (long)p->B * p->H, 1, packed_item, &job);
    attn_inputs none = {0};
    for (int b = 0; b < p->B; b++) {
        int n = r->start[b + 1] - r->start[b];
        if (n <= PACKED_DIRECT) continue;
        float *q = r->qkv + (size_t)r->start[b] * (size_t)W;
        size_t sb = (size_t)n * (size_t)W;
        attn__flash f = {.plan = &r->seq_plan[b], .cfg = &p->attn, .inputs = &none,
                         .q = {q, sb, D, W}, .k = {q + p->QD, sb, D, W},
                         .v = {q + p->QD + p->KVD, sb, D, W},
                         .context_heads = r->z + (size_t)r->start[b] * (size_t)p->QD,
                         .scratch = r->flash};
        attn__flash_run(&f, r->pool);
    }
}

/* ==== Step: rows against the cache ========================================= */

typedef struct {
    const attn__run *r;
    int l;
} cached_job;

/* One (row, head): scores over its sequence's keys up to its own slot (a
 * window's worth on a local layer), softmax, the weighted sum of values. */
static void cached_item(void *ctx, long item, int slot) {
    (void)slot;
    const cached_job *j = ctx;
    const attn__run *r = j->r;
    const attn_lm_plan *p = r->p;
    int i = (int)(item / p->H);
    const attn_lm_cache *c = r->row_cache ? r->row_cache[i] : r->cache;
    int h = (int)(item % p->H), hk = h / (p->H / p->Hkv), D = p->D;
    int seq = r->seq[i];
    int n = r->slot[i] + 1, from = local_layer(p, j->l) && n > p->spec.window ? n - p->spec.window : 0;
    const float *q = r->qkv + (size_t)i * (size_t)qkv_width(p) + (size_t)h * (size_t)D;
    float *s = r->scores + (size_t)item * (size_t)r->score_ld;
    cblas_sgemv(CblasRowMajor, CblasNoTrans, n - from, D, p->attn_plan.scale,
                attn__cache_at(c, 0, j->l, seq, hk) + (size_t)from * (size_t)D, D, q, 1, 0.0f, s, 1);
    float max = attn__row_max(s, n - from); /* finite: the row's own key is never masked */
    attn__scale_row(s, 1.0f / attn__exp_shifted(s, s, max, n - from), n - from);
    cblas_sgemv(CblasRowMajor, CblasTrans, n - from, D, 1.0f,
                attn__cache_at(c, 1, j->l, seq, hk) + (size_t)from * (size_t)D, D, s, 1, 0.0f,
                r->z + (size_t)i * (size_t)p->QD + (size_t)h * (size_t)D, 1);
    const attn_lm_step_outputs *out = r->step_out;
    if (out == NULL || out->attn_rows == NULL) return;
    float *dst = out->attn_rows +
                 (((size_t)j->l * (size_t)r->rows + (size_t)i) * (size_t)p->H + (size_t)h) * (size_t)out->ld;
    memset(dst, 0, (size_t)out->ld * sizeof *dst);
    memcpy(dst + from, s, (size_t)(n - from) * sizeof *dst);
}

static void cached(attn__run *r, int l) {
    const attn_lm_plan *p = r->p;
    cached_job j = {.r = r, .l = l};
    double keys = 0;
    for (int i = 0; i < r->rows; i++) keys += r->slot[i] + 1;
    /* shared when the keys and values to read pass 1 MB (t above ~170 at
     * GPT-2's width): below, waking a helper costs about what it saves */
    double bytes = 8.0 * p->H * keys * p->D;
    attn__parallel(r->pool, (long)r->rows * p->H, bytes > 1e6, cached_item, &j);
}

void attn__lm_attend(attn__run *r, int l, const attn__weights *w) {
    const attn_lm_plan *p = r->p;
    int W = qkv_width(p);
    project_qkv(r, w);
    static const attn_hook qkv_hooks[3] = {ATTN_HOOK_Q, ATTN_HOOK_K, ATTN_HOOK_V};
    const int at[3] = {0, p->QD, p->QD + p->KVD}, width[3] = {p->QD, p->KVD, p->KVD};
    for (int t = 0; t < 3; t++)
        attn__capture(r, l, qkv_hooks[t], r->qkv + at[t], (size_t)r->rows, width[t], W);
    qk_norm(r, w);
    rotate(r, l);
    attn__capture(r, l, ATTN_HOOK_ROT_Q, r->qkv, (size_t)r->rows, p->QD, W);
    attn__capture(r, l, ATTN_HOOK_ROT_K, r->qkv + p->QD, (size_t)r->rows, p->KVD, W);
    if (r->cache) attn__cache_store(r, l);
    if (r->step)
        cached(r, l);
    else if (r->packed)
        packed(r);
    else
        dense(r, l);
}
