/* forward.c - one call of a module: projections, per-head attention, heads
 * concatenated, output projection.
 *
 * Every module reduces to the same pipeline on views of Q, K and V:
 *   element (b, h, i, :) of a view lives at p + b*sb + h*sh + i*ld,
 * so projected tensors ([B][T][H*hd], token-major, as nn.Linear leaves them)
 * and given ones (SDPA's [B][H][L][E], head-major) need no copy before the
 * matrix products: cblas_sgemm reads rows with stride ld.
 *
 * Nothing here names a module: the module table (ATTN_MOD_* flags) says
 * which inputs there are and whether they are projected, and the typed
 * parameter views of params.c say where each weight is. The work space is
 * one list of pieces, summed once to size one allocation and walked once to
 * carve it.
 */
#include "flash.h"
#include "internal.h"
#include "kernel.h"
#include "linear.h"

#include <assert.h>
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- work space --------------------------------------------------------- */

/* One piece of the work space: the caller's buffer if it gave one, else
 * `bytes` carved from the single allocation (nothing if bytes is 0). */
typedef struct {
    void *given;
    size_t bytes;
} piece;

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

/* Sizes the pieces the caller did not give, allocates them at once (64-byte
 * aligned) and points ptr[i] at each piece. Returns the allocation to free,
 * NULL if it failed (*bytes says how much was asked). */
static void *workspace_carve(const piece *w, int n, void *ptr[], size_t *bytes) {
    size_t size = 0, used = 0;
    for (int i = 0; i < n; i++)
        if (!w[i].given) size += align64(w[i].bytes);
    *bytes = size;
    char *base = malloc(size ? size : 1);
    if (base == NULL) return NULL;
    for (int i = 0; i < n; i++) {
        ptr[i] = w[i].given;
        if (ptr[i] || w[i].bytes == 0) continue;
        ptr[i] = base + used;
        used += align64(w[i].bytes);
    }
    assert(used == size); /* the carving walks the list that sized it */
    return base;
}

/* ---- projections -------------------------------------------------------- */

/* Floats of `proj`: Q, K and V, and room to pack the heads' weights of an
 * ATTN_MOD_HEAD_MODULES module ([H*Dk][widest input] and [H*Dk]). */
static size_t projection_size(const attn_config *cfg, const attn_plan *p) {
    size_t n = p->n_queries + p->n_keys + p->n_values;
    int width = p->in_width;
    if (p->kv_in_width[0] > width) width = p->kv_in_width[0];
    if (p->kv_in_width[1] > width) width = p->kv_in_width[1];
    if (attn_module_has(cfg->module, ATTN_MOD_HEAD_MODULES))
        n += (size_t)p->H * (size_t)p->Dk * ((size_t)width + 1);
    return n;
}

/* 1 when Q, K and V are one product: the same input, and weights (and
 * biases, if any) that follow one another in memory as one [hq + hq + hv][in]
 * matrix (GPT-2's c_attn, torch's in_proj_weight, bias-free separate
 * Linears stored in a row). One call then shares the work: one wake-up of
 * the pool instead of three, and the blocks of all three over its threads. */
static int qkv_fused(const attn_config *cfg, const attn_plan *p, const attn_inputs *in,
                     const attn__param_views *pv, const float *const xs[3]) {
    size_t hq = (size_t)p->H * (size_t)p->Dk, w = (size_t)p->in_width;
    if (attn_module_has(cfg->module, ATTN_MOD_HEAD_MODULES) || pv->w_in_out || p->S != p->L ||
        xs[1] != in->x || xs[2] != in->x || p->kv_in_width[0] != p->in_width ||
        p->kv_in_width[1] != p->in_width)
        return 0;
    if (pv->w_key != pv->w_query + hq * w || pv->w_value != pv->w_key + hq * w) return 0;
    if (!pv->b_query && !pv->b_key && !pv->b_value) return 1;
    return pv->b_query && pv->b_key == pv->b_query + hq && pv->b_value == pv->b_key + hq;
}

/* Projects the inputs into token-major Q, K, V ([rows][H*hd], or one
 * [rows][2 H*Dk + H*Dv] when qkv_fused) with the module's weights (pv) and
 * sets the views. `proj` has projection_size() floats. */
static void project(const attn_config *cfg, const attn_plan *p, const attn_inputs *in,
                    const attn__param_views *pv, float *proj, attn__view v[3]) {
    float *q = proj, *k = q + p->n_queries, *val = k + p->n_keys;
    int hq = p->H * p->Dk, hv = p->H * p->Dv;
    const float *x_key = in->x, *x_value = in->x;
    if (attn_module_has(cfg->module, ATTN_MOD_CROSS)) {
        x_key = in->x_key ? in->x_key : in->x;
        x_value = in->x_value ? in->x_value : x_key;
    }
    const float *xs[3] = {in->x, x_key, x_value};
    if (qkv_fused(cfg, p, in, pv, xs)) {
        int all = 2 * hq + hv;
        attn__linear(in->pool, proj, in->x, p->B * p->L, p->in_width, all, pv->w_query, 0,
                     pv->b_query);
        size_t sb = (size_t)p->L * (size_t)all;
        v[0] = (attn__view){proj, sb, (size_t)p->Dk, all};
        v[1] = (attn__view){proj + hq, sb, (size_t)p->Dk, all};
        v[2] = (attn__view){proj + 2 * hq, sb, (size_t)p->Dv, all};
        return;
    }
    const float *w[3] = {pv->w_query, pv->w_key, pv->w_value};
    const float *b[3] = {pv->b_query, pv->b_key, pv->b_value};
    int widths[3] = {p->in_width, p->kv_in_width[0], p->kv_in_width[1]};
    int rows[3] = {p->B * p->L, p->B * p->S, p->B * p->S};
    int outs[3] = {hq, hq, hv};
    float *dst[3] = {q, k, val};
    for (int t = 0; t < 3; t++) {
        const float *wt = w[t], *bt = b[t];
        if (attn_module_has(cfg->module, ATTN_MOD_HEAD_MODULES)) {
            /* Pack every head's weight (and bias) into one [H*Dk][in] matrix so
             * that each projection is one sgemm instead of one per head. */
            size_t wsize = (size_t)p->Dk * (size_t)widths[t];
            float *packed = val + p->n_values, *packed_b = packed + (size_t)p->H * wsize;
            for (int h = 0; h < p->H; h++) {
                size_t at = (size_t)h * pv->head_stride;
                memcpy(packed + (size_t)h * wsize, w[t] + at, wsize * sizeof(float));
                if (b[t]) memcpy(packed_b + (size_t)h * p->Dk, b[t] + at, (size_t)p->Dk * sizeof(float));
            }
            wt = packed;
            bt = b[t] ? packed_b : NULL;
        }
        attn__linear(in->pool, dst[t], xs[t], rows[t], widths[t], outs[t], wt, pv->w_in_out, bt);
    }
    size_t ldq = (size_t)hq, ldv = (size_t)hv;
    v[0] = (attn__view){q, (size_t)p->L * ldq, (size_t)p->Dk, (int)ldq};
    v[1] = (attn__view){k, (size_t)p->S * ldq, (size_t)p->Dk, (int)ldq};
    v[2] = (attn__view){val, (size_t)p->S * ldv, (size_t)p->Dv, (int)ldv};
}

/* Views straight onto the inputs, for the modules without projections: the
 * given query, key and value, or x itself as all three. */
static void direct_views(const attn_config *cfg, const attn_plan *p, const attn_inputs *in,
                         attn__view v[3]) {
    if (!attn_module_has(cfg->module, ATTN_MOD_QKV_INPUTS)) {
        attn__view x = {in->x, (size_t)p->L * (size_t)p->in_width, 0, p->in_width};
        v[0] = v[1] = v[2] = x;
        return;
    }
    size_t L = (size_t)p->L, S = (size_t)p->S, Dk = (size_t)p->Dk, Dv = (size_t)p->Dv;
    v[0] = (attn__view){in->query, (size_t)p->H * L * Dk, L * Dk, p->Dk};
    v[1] = (attn__view){in->key, (size_t)p->Hkv * S * Dk, S * Dk, p->Dk};
    v[2] = (attn__view){in->value, (size_t)p->Hkv * S * Dv, S * Dv, p->Dv};
}

/* Copies a view into a dense [B][heads][rows][width] tensor. */
static void copy_view(float *dst, const attn__view *v, int B, int heads, int rows, int width) {
    for (int b = 0; b < B; b++)
        for (int h = 0; h < heads; h++)
            for (int i = 0; i < rows; i++) {
                const float *src = v->p + (size_t)b * v->sb + (size_t)h * v->sh + (size_t)i * v->ld;
                memcpy(dst, src, (size_t)width * sizeof *dst);
                dst += width;
            }
}

/* ---- validation ----------------------------------------------------------- */

static int check_inputs(const attn_config *cfg, const attn_plan *p, const attn_inputs *in,
                        attn_error *err) {
    size_t bls = (size_t)p->B * (size_t)p->L * (size_t)p->S;
    size_t mask_n = in->attn_mask_batched ? bls : (size_t)p->L * (size_t)p->S;
    if (attn_module_has(cfg->module, ATTN_MOD_QKV_INPUTS)) {
        if (!in->query || !in->key || !in->value)
            return attn__fail(err, ATTN_ERR_ARG, !in->query ? "query" : !in->key ? "key" : "value",
                              "query, key and value are required");
        if (!attn__all_finite(in->query, p->n_queries))
            return attn__fail(err, ATTN_ERR_NONFINITE, "query", "query holds NaN or infinity");
        if (!attn__all_finite(in->key, p->n_keys))
            return attn__fail(err, ATTN_ERR_NONFINITE, "key", "key holds NaN or infinity");
        if (!attn__all_finite(in->value, p->n_values))
            return attn__fail(err, ATTN_ERR_NONFINITE, "value", "value holds NaN or infinity");
    } else {
        if (!in->x) return attn__fail(err, ATTN_ERR_ARG, "inputs", "inputs are required");
        if (!attn__all_finite(in->x, (size_t)p->B * p->L * (size_t)p->in_width))
            return attn__fail(err, ATTN_ERR_NONFINITE, "inputs", "inputs hold NaN or infinity");
        int cross = p->S != p->L || p->kv_in_width[0] != p->in_width ||
                    p->kv_in_width[1] != p->in_width;
        if (attn_module_has(cfg->module, ATTN_MOD_CROSS) && cross) {
            if (!in->x_key || !in->x_value)
                return attn__fail(err, ATTN_ERR_ARG, in->x_key ? "value" : "key",
                                  "key and value inputs are required when kdim, vdim or the "
                                  "key length differ from the query's");
            if (!attn__all_finite(in->x_key, (size_t)p->B * p->S * (size_t)p->kv_in_width[0]))
                return attn__fail(err, ATTN_ERR_NONFINITE, "key", "key holds NaN or infinity");
            if (!attn__all_finite(in->x_value, (size_t)p->B * p->S * (size_t)p->kv_in_width[1]))
                return attn__fail(err, ATTN_ERR_NONFINITE, "value", "value holds NaN or infinity");
        }
    }
    if (p->n_params) {
        if (!in->params) return attn__fail(err, ATTN_ERR_ARG, "params", "parameters are required");
        if (!in->params_checked && !attn__all_finite(in->params, p->n_params))
            return attn__fail(err, ATTN_ERR_NONFINITE, "params", "parameters hold NaN or infinity");
    }
    if (in->attn_mask_add) {
        for (size_t i = 0; i < mask_n; i++) {
            float m = in->attn_mask_add[i];
            if (isnan(m) || m == INFINITY)
                return attn__fail(err, ATTN_ERR_NONFINITE, "attn_mask",
                                  "attn_mask holds NaN or +infinity (only -infinity masks)");
        }
    }
    return ATTN_OK;
}

/* ---- forward ---------------------------------------------------------------- */

/* The work space: everything the caller did not ask for. The fused kernel
 * needs one tile of scores per thread and nothing [L][S]-sized; the
 * materialised one keeps the score-sized intermediates nobody wants as one
 * block of query rows per thread instead of [B][H][L][S]. */
enum { W_PROJ, W_FLASH, W_SCORES, W_MASKED, W_WEIGHTS, W_MASK, W_DROPOUT, W_CTX_HEADS, W_CONTEXT,
       W_N };

static void *workspace(const attn_config *cfg, const attn_plan *p, const attn_inputs *in,
                       const attn_outputs *out, int fused, void *w[W_N], size_t *bytes) {
    int projected = attn_module_has(cfg->module, ATTN_MOD_PROJECTED);
    size_t mat = !fused; /* 0: no [L][S] piece at all */
    size_t width = (size_t)attn__pool_width(in->pool);
    size_t rows = width * ATTN__MAP_ROWS * (size_t)p->S; /* < 1024 * 64 * 2^31: no overflow */
    int keep_weights = out->weights || out->weights_avg;
    const piece pieces[W_N] = {
        [W_PROJ] = {NULL, projected ? projection_size(cfg, p) * sizeof(float) : 0},
        [W_FLASH] = {NULL, fused ? width * attn__flash_scratch(p) * sizeof(float) : 0},
        [W_SCORES] = {out->scores, mat * rows * sizeof(float)},
        [W_MASKED] = {out->masked_scores, mat * rows * sizeof(float)},
        [W_WEIGHTS] = {out->weights, mat * (keep_weights ? p->n_scores : rows) * sizeof(float)},
        [W_MASK] = {out->mask, mat * p->n_mask},
        [W_DROPOUT] = {out->dropout_mask, p->dropout_active ? p->n_dropout * sizeof(float) : 0},
        [W_CTX_HEADS] = {out->context_heads, p->n_context_heads * sizeof(float)},
        [W_CONTEXT] = {out->context, p->n_context * sizeof(float)},
    };
    return workspace_carve(pieces, W_N, w, bytes);
}

/* The dropout multipliers into dst when dropout acts (from rng, reseeded
 * with dropout_seed when set; a fresh process's generator when rng is
 * NULL), else 1s into the caller's dropout_mask. Returns dst or NULL. */
static float *dropout_draw(const attn_config *cfg, const attn_plan *p, attn_rng *rng, float *dst,
                           const attn_outputs *out) {
    if (!p->dropout_active) {
        for (size_t i = 0; out->dropout_mask && i < p->n_dropout; i++) out->dropout_mask[i] = 1.0f;
        return NULL;
    }
    attn_rng local;
    if (rng == NULL || cfg->has_dropout_seed) {
        if (rng == NULL) rng = &local;
        attn_rng_seed(rng, cfg->has_dropout_seed ? cfg->dropout_seed : ATTN_TORCH_DEFAULT_SEED);
    }
    attn__dropout_mask(dst, p, cfg, rng);
    return dst;
}

/* After the heads: the output projection (and dropout on the output), the
 * per-head tensors asked for, the averaged weights. */
static void finish(const attn_plan *p, const attn_inputs *in, const attn__param_views *pv,
                   const attn__heads *hd, const attn__view v[3], const float *dropout,
                   float *context, attn_outputs *out) {
    if (p->has_out_proj) {
        attn__linear(in->pool, context, hd->context_heads, p->B * p->L, p->ctx_width, p->out_width,
                     pv->out_proj_w, 0, pv->out_proj_b);
        if (p->drop_site == ATTN_DROP_OUTPUT && dropout)
            for (size_t i = 0; i < p->n_context; i++) context[i] *= dropout[i];
    } else if (context != hd->context_heads) {
        memcpy(context, hd->context_heads, p->n_context * sizeof(float));
    }
    if (out->queries) copy_view(out->queries, &v[0], p->B, p->H, p->L, p->Dk);
    if (out->keys) copy_view(out->keys, &v[1], p->B, p->Hkv, p->S, p->Dk);
    if (out->values) copy_view(out->values, &v[2], p->B, p->Hkv, p->S, p->Dv);
    if (out->weights_avg) attn__average_heads(out->weights_avg, hd->weights, p);
}

int attn_forward(const attn_config *cfg, const attn_plan *plan, const attn_inputs *in,
                 attn_rng *rng, attn_outputs *out, attn_error *err) {
    if (cfg == NULL || plan == NULL || in == NULL || out == NULL)
        return attn__fail(err, ATTN_ERR_ARG, "", "config, plan, inputs and outputs are required");
    const attn_plan *p = plan;
    int rc = check_inputs(cfg, p, in, err);
    if (rc) return rc;
    int projected = attn_module_has(cfg->module, ATTN_MOD_PROJECTED);
    int fused = attn__flash_used(cfg, p, attn__outputs_asked(out));
    void *w[W_N];
    size_t bytes, LS = (size_t)p->L * (size_t)p->S;
    void *base = workspace(cfg, p, in, out, fused, w, &bytes);
    if (base == NULL)
        return attn__fail(err, ATTN_ERR_NOMEM, "", "cannot allocate %zu bytes of work space", bytes);

    attn__view v[3];
    attn__param_views pv;
    attn__param_views_make(cfg, p, projected ? in->params : NULL, &pv);
    if (projected) project(cfg, p, in, &pv, w[W_PROJ], v);
    else direct_views(cfg, p, in, v);

    int keep_weights = out->weights || out->weights_avg;
    attn__heads hd = {
        .plan = p, .cfg = cfg, .q = v[0], .k = v[1], .v = v[2],
        .scores = w[W_SCORES], .masked = w[W_MASKED], .weights = w[W_WEIGHTS],
        .scores_step = out->scores ? LS : 0, .masked_step = out->masked_scores ? LS : 0,
        .weights_step = keep_weights ? LS : 0,
        .mask = w[W_MASK], .context_heads = w[W_CTX_HEADS], .inputs = in,
    };
    float *dropout = dropout_draw(cfg, p, rng, w[W_DROPOUT], out);
    hd.dropout = p->drop_site == ATTN_DROP_WEIGHTS ? dropout : NULL;
    if (fused) {
        attn__flash f = {.plan = p, .cfg = cfg, .inputs = in, .q = v[0], .k = v[1], .v = v[2],
                         .context_heads = hd.context_heads, .scratch = w[W_FLASH]};
        attn__flash_run(&f, in->pool);
    } else {
        attn__build_mask(&hd);
        attn__attend(&hd, in->pool);
    }
    float *context = w[W_CONTEXT];
    finish(p, in, &pv, &hd, v, dropout, context, out);
    rc = attn__cancel_check(err); /* items skipped: the caller's check said stop */
    /* NaN or inf anywhere in the weights reaches the context: one check. */
    if (rc == ATTN_OK && !attn__all_finite(context, p->n_context))
        rc = attn__fail(err, ATTN_ERR_NONFINITE, "inputs",
                        "the result overflowed float32: inputs or parameters are too large");
    free(base);
    return rc;
}
