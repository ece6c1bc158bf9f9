/* forward.c - one call of a module: projections, per-head attention, heads
 * concatenated, output projection.
 *
 * Every module reduces to the same pipeline on views of Q, K and V:
 *   element (b, h, i, :) of a view lives at p + b*sb + h*sh + i*ld,
 * so projected tensors ([B][T][H*hd], token-major, as nn.Linear leaves them)
 * and given ones (SDPA's [B][H][L][E], head-major) need no copy before the
 * matrix products: cblas_sgemm reads rows with stride ld.
 */
#include "flash.h"
#include "internal.h"
#include "kernel.h"
#include "linear.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- work space --------------------------------------------------------- */

/* One allocation carved into 64-byte aligned pieces. */
typedef struct {
    char *base;
    size_t used, size;
} arena;

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

static void *arena_take(arena *a, size_t bytes) {
    void *p = a->base + a->used;
    a->used += align64(bytes);
    return p;
}

/* The output buffer if the caller gave one, else a piece of the arena. */
#define OR_TAKE(given, a, n, type) ((given) ? (given) : (type *)arena_take((a), (n) * sizeof(type)))

/* ---- projections -------------------------------------------------------- */

/* Locates a named tensor of the state_dict in the parameter buffer. */
static const float *param(const attn_config *cfg, const attn_plan *plan, const float *params,
                          int index) {
    attn_param p;
    attn_param_get(cfg, plan, index, &p);
    return params + p.offset;
}

/* The named tensor, or NULL when the module has none by that name. */
static const float *find_param(const attn_config *cfg, const attn_plan *plan, const float *params,
                               const char *name) {
    for (int i = 0; i < plan->param_count; i++) {
        attn_param p;
        attn_param_get(cfg, plan, i, &p);
        if (strcmp(p.name, name) == 0) return params + p.offset;
    }
    return NULL;
}

/* Projects the inputs into token-major Q, K, V ([rows][H*hd]) and sets the
 * views. `proj` has room for plan->n_queries + n_keys + n_values floats and,
 * for the wrapper, its packed weights. */
static void project(const attn_config *cfg, const attn_plan *p, const attn_inputs *in,
                    float *proj, attn__view v[3]) {
    const float *P = in->params;
    int rows_q = p->B * p->L, rows_kv = p->B * p->S;
    float *q = proj, *k = q + p->n_queries, *val = k + p->n_keys;
    int hq = p->H * p->Dk, hv = p->H * p->Dv;
    int bias = cfg->bias;

    float *dst[3] = {q, k, val};
    static const char *const weight[3] = {"W_query.weight", "W_key.weight", "W_value.weight"};
    static const char *const bias_name[3] = {"W_query.bias", "W_key.bias", "W_value.bias"};
    switch (cfg->module) {
    case ATTN_SELF_V1: {
        static const char *const raw[3] = {"W_query", "W_key", "W_value"};
        for (int t = 0; t < 3; t++)
            attn__linear(in->pool, dst[t], in->x, rows_q, p->in_width, hq, find_param(cfg, p, P, raw[t]), 1, NULL);
        break;
    }
    case ATTN_SELF_V2: case ATTN_CAUSAL: case ATTN_MHA:
        for (int t = 0; t < 3; t++)
            attn__linear(in->pool, dst[t], in->x, rows_q, p->in_width, hq, find_param(cfg, p, P, weight[t]), 0,
                   find_param(cfg, p, P, bias_name[t]));
        break;
    case ATTN_MHA_WRAPPER: {
        /* Pack every head's W_query (then W_key, W_value) into one [H*d_out][d_in]
         * matrix so each projection is one sgemm instead of one per head. Each
         * head's entries are: mask, then weight (and bias) per projection. */
        int per_head = p->param_count / p->H, step = bias ? 2 : 1;
        size_t wsize = (size_t)p->Dk * (size_t)p->in_width;
        float *packed = val + p->n_values, *packed_b = packed + (size_t)p->H * wsize;
        for (int t = 0; t < 3; t++) {
            for (int h = 0; h < p->H; h++) {
                int w_index = h * per_head + 1 + t * step;
                memcpy(packed + (size_t)h * wsize, param(cfg, p, P, w_index), wsize * sizeof(float));
                if (bias)
                    memcpy(packed_b + (size_t)h * p->Dk, param(cfg, p, P, w_index + 1),
                           (size_t)p->Dk * sizeof(float));
            }
            attn__linear(in->pool, dst[t], in->x, rows_q, p->in_width, hq, packed, 0, bias ? packed_b : NULL);
        }
        break;
    }
    case ATTN_GPT2: {
        /* c_attn is [3C][C]: rows 0..C-1 make q, then k, then v. */
        const float *w = find_param(cfg, p, P, "c_attn.weight");
        const float *b = find_param(cfg, p, P, "c_attn.bias");
        size_t C = (size_t)p->in_width;
        for (int t = 0; t < 3; t++)
            attn__linear(in->pool, dst[t], in->x, rows_q, p->in_width, hq, w + t * C * C, 0, b + t * C);
        break;
    }
    case ATTN_TORCH_MHA: {
        const float *xs[3] = {in->x, in->x_key ? in->x_key : in->x,
                              in->x_value ? in->x_value : (in->x_key ? in->x_key : in->x)};
        int widths[3] = {p->in_width, p->kv_in_width[0], p->kv_in_width[1]};
        int rows[3] = {rows_q, rows_kv, rows_kv};
        static const char *const sep[3] = {"q_proj_weight", "k_proj_weight", "v_proj_weight"};
        const float *fused = find_param(cfg, p, P, "in_proj_weight");
        const float *b = find_param(cfg, p, P, "in_proj_bias");
        size_t E = (size_t)p->in_width;
        for (int t = 0; t < 3; t++) {
            const float *w = fused ? fused + t * E * E : find_param(cfg, p, P, sep[t]);
            attn__linear(in->pool, dst[t], xs[t], rows[t], widths[t], hq, w, 0, b ? b + t * E : NULL);
        }
        break;
    }
    default:
        break;
    }
    size_t ldq = (size_t)hq, ldv = (size_t)hv;
    v[0] = (attn__view){q, (size_t)p->L * ldq, (size_t)p->Dk, (int)ldq};
    v[1] = (attn__view){k, (size_t)p->S * ldq, (size_t)p->Dk, (int)ldq};
    v[2] = (attn__view){val, (size_t)p->S * ldv, (size_t)p->Dv, (int)ldv};
}

/* Views straight onto the inputs, for the modules without projections. */
static void direct_views(const attn_config *cfg, const attn_plan *p, const attn_inputs *in,
                         attn__view v[3]) {
    if (cfg->module == ATTN_SIMPLE) {
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
    if (cfg->module == ATTN_SDPA) {
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
        if (cfg->module == ATTN_TORCH_MHA && cross) {
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
        if (!attn__all_finite(in->params, p->n_params))
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

int attn_forward(const attn_config *cfg, const attn_plan *plan, const attn_inputs *in,
                 attn_rng *rng, attn_outputs *out, attn_error *err) {
    if (cfg == NULL || plan == NULL || in == NULL || out == NULL)
        return attn__fail(err, ATTN_ERR_ARG, "", "config, plan, inputs and outputs are required");
    const attn_plan *p = plan;
    int rc = check_inputs(cfg, p, in, err);
    if (rc) return rc;

    int projected = cfg->module != ATTN_SIMPLE && cfg->module != ATTN_SDPA;
    size_t n_proj = projected ? p->n_queries + p->n_keys + p->n_values : 0;
    if (cfg->module == ATTN_MHA_WRAPPER)
        n_proj += (size_t)p->H * (size_t)p->Dk * ((size_t)p->in_width + 1);

    /* Size the work space: everything the caller did not ask for. The fused
     * kernel needs one tile of scores per thread; the materialised one keeps
     * score-sized intermediates nobody wants as one block of rows per thread
     * instead of a [B][H][L][S] tensor. */
    int fused = attn__flash_used(cfg, p, attn__outputs_asked(out));
    size_t LS = (size_t)p->L * (size_t)p->S, width = (size_t)attn__pool_width(in->pool);
    size_t slot_rows = width * ATTN__MAP_ROWS * (size_t)p->S; /* < width * 64 * 2^31: no overflow */
    int keep_weights = out->weights || out->weights_avg;
    size_t bytes = align64(n_proj * sizeof(float));
    if (fused) {
        bytes += align64(width * attn__flash_scratch(p) * sizeof(float));
    } else {
        bytes += out->scores ? 0 : align64(slot_rows * sizeof(float));
        bytes += out->masked_scores ? 0 : align64(slot_rows * sizeof(float));
        bytes += out->weights ? 0 : align64((keep_weights ? p->n_scores : slot_rows) * sizeof(float));
        bytes += out->mask ? 0 : align64(p->n_mask);
    }
    bytes += p->dropout_active && !out->dropout_mask ? align64(p->n_dropout * sizeof(float)) : 0;
    bytes += out->context_heads ? 0 : align64(p->n_context_heads * sizeof(float));
    bytes += out->context ? 0 : align64(p->n_context * sizeof(float));
    arena a = {.base = malloc(bytes ? bytes : 1), .size = bytes};
    if (a.base == NULL)
        return attn__fail(err, ATTN_ERR_NOMEM, "", "cannot allocate %zu bytes of work space", bytes);

    attn__view v[3];
    if (projected) {
        float *proj = arena_take(&a, n_proj * sizeof(float));
        project(cfg, p, in, proj, v);
    } else {
        direct_views(cfg, p, in, v);
    }

    attn__heads hd = {
        .plan = p, .cfg = cfg, .q = v[0], .k = v[1], .v = v[2],
        .scores_step = out->scores ? LS : 0,
        .masked_step = out->masked_scores ? LS : 0,
        .weights_step = keep_weights ? LS : 0,
        .context_heads = OR_TAKE(out->context_heads, &a, p->n_context_heads, float),
        .inputs = in,
    };
    float *flash_scratch = NULL;
    if (fused) {
        flash_scratch = arena_take(&a, width * attn__flash_scratch(p) * sizeof(float));
    } else {
        hd.scores = OR_TAKE(out->scores, &a, slot_rows, float);
        hd.masked = OR_TAKE(out->masked_scores, &a, slot_rows, float);
        hd.weights = OR_TAKE(out->weights, &a, keep_weights ? p->n_scores : slot_rows, float);
        hd.mask = OR_TAKE(out->mask, &a, p->n_mask, uint8_t);
    }
    float *dropout = NULL;
    if (p->dropout_active) {
        dropout = OR_TAKE(out->dropout_mask, &a, p->n_dropout, float);
        attn_rng local;
        if (rng == NULL || cfg->has_dropout_seed) {
            if (rng == NULL) rng = &local;
            attn_rng_seed(rng, cfg->has_dropout_seed ? cfg->dropout_seed : ATTN_TORCH_DEFAULT_SEED);
        }
        attn__dropout_mask(dropout, p, cfg, rng);
    } else if (out->dropout_mask) {
        for (size_t i = 0; i < p->n_dropout; i++) out->dropout_mask[i] = 1.0f;
    }
    hd.dropout = p->drop_site == ATTN_DROP_WEIGHTS ? dropout : NULL;

    if (fused) {
        attn__flash f = {.plan = p, .cfg = cfg, .inputs = in, .q = v[0], .k = v[1], .v = v[2],
                         .context_heads = hd.context_heads, .scratch = flash_scratch};
        attn__flash_run(&f, in->pool);
    } else {
        attn__build_mask(&hd);
        attn__attend(&hd, in->pool);
    }

    float *context = OR_TAKE(out->context, &a, p->n_context, float);
    if (p->has_out_proj) {
        int gpt2 = cfg->module == ATTN_GPT2;
        const float *w = find_param(cfg, p, in->params, gpt2 ? "c_proj.weight" : "out_proj.weight");
        const float *b = find_param(cfg, p, in->params, gpt2 ? "c_proj.bias" : "out_proj.bias");
        attn__linear(in->pool, context, hd.context_heads, p->B * p->L, p->ctx_width, p->out_width, w, 0, b);
        if (p->drop_site == ATTN_DROP_OUTPUT && dropout)
            for (size_t i = 0; i < p->n_context; i++) context[i] *= dropout[i];
    } else if (context != hd.context_heads) {
        memcpy(context, hd.context_heads, p->n_context * sizeof(float));
    }

    if (out->queries) copy_view(out->queries, &v[0], p->B, p->H, p->L, p->Dk);
    if (out->keys) copy_view(out->keys, &v[1], p->B, p->Hkv, p->S, p->Dk);
    if (out->values) copy_view(out->values, &v[2], p->B, p->Hkv, p->S, p->Dv);
    if (out->weights_avg) attn__average_heads(out->weights_avg, hd.weights, p);

    rc = ATTN_OK;
    /* NaN or inf anywhere in the weights reaches the context: one check. */
    if (!attn__all_finite(context, p->n_context))
        rc = attn__fail(err, ATTN_ERR_NONFINITE, "inputs",
                        "the result overflowed float32: inputs or parameters are too large");
    free(a.base);
    return rc;
}
