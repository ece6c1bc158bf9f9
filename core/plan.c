/* plan.c - validates an attn_config and derives every size of the call. */
#include "flash.h"
#include "internal.h"

#include <math.h>

/* Sum of products with overflow checks; returns 0 on overflow. */
static int add_product(size_t *acc, size_t a, size_t b, size_t c, size_t d) {
    size_t p;
    if (!attn__mul(a, b, &p) || !attn__mul(p, c, &p) || !attn__mul(p, d, &p)) return 0;
    if (*acc > ATTN_MAX_ELEMENTS - p) return 0;
    *acc += p;
    return 1;
}

static int check_positive(int v, const char *field, attn_error *err) {
    if (v < 1) return attn__fail(err, ATTN_ERR_ARG, field, "%s must be >= 1, got %d", field, v);
    return ATTN_OK;
}

/* SDPA-style modules: Q, K, V are given; their shapes give every size. */
static int derive_given(const attn_config *c, attn_plan *p, attn_error *err) {
    if (c->kv_heads < 0 || c->kv_tokens < 0 || c->vdim < 0)
        return attn__fail(err, ATTN_ERR_ARG,
                          c->kv_heads < 0 ? "kv_heads" : c->kv_tokens < 0 ? "kv_tokens" : "vdim",
                          "kv_heads, kv_tokens and vdim must be >= 1 (0 = default)");
    if (c->kv_heads) p->Hkv = c->kv_heads;
    if (p->H % p->Hkv != 0)
        return attn__fail(err, ATTN_ERR_SHAPE, "kv_heads",
                          "num_heads (%d) must be a multiple of the key/value heads (%d)", p->H,
                          p->Hkv);
    if (c->kv_tokens) p->S = c->kv_tokens;
    p->Dk = c->d_in;
    p->Dv = c->vdim ? c->vdim : c->d_in;
    return ATTN_OK;
}

/* torch.nn.MultiheadAttention style: key and value inputs of their own
 * widths (kdim, vdim) and length. */
static int derive_cross(const attn_config *c, attn_plan *p, attn_error *err) {
    if (c->kdim < 0 || c->vdim < 0)
        return attn__fail(err, ATTN_ERR_ARG, c->kdim < 0 ? "kdim" : "vdim",
                          "kdim and vdim must be >= 1 (0 = embed_dim)");
    if (c->kv_tokens < 0)
        return attn__fail(err, ATTN_ERR_ARG, "kv_tokens", "kv_tokens must be >= 1");
    p->kv_in_width[0] = c->kdim ? c->kdim : c->d_in;
    p->kv_in_width[1] = c->vdim ? c->vdim : c->d_in;
    if (c->kv_tokens) p->S = c->kv_tokens;
    return ATTN_OK;
}

/* Fills the widths and head sizes from the module's row. */
static int derive_shapes(const attn_config *c, attn_plan *p, attn_error *err) {
    const attn_module_info *mod = attn_module_get(c->module);
    int rc;
    int heads = c->num_heads;
    if (mod->flags & ATTN_MOD_MULTI_HEAD) {
        if ((rc = check_positive(heads, "num_heads", err))) return rc;
    } else if (heads > 1 || heads < 0) {
        return attn__fail(err, ATTN_ERR_ARG, "num_heads", "%s has a single head, got num_heads %d",
                          mod->name, heads);
    } else {
        heads = 1;
    }
    p->H = p->Hkv = heads;
    p->L = p->S = c->tokens;
    p->in_width = c->d_in;
    p->kv_in_width[0] = p->kv_in_width[1] = c->d_in;
    p->has_out_proj = (mod->flags & ATTN_MOD_OUT_PROJ) != 0;
    if (mod->flags & ATTN_MOD_QKV_INPUTS) return derive_given(c, p, err);

    /* The projections' width: d_out if the module takes it, else d_in. */
    int width = c->d_in;
    const char *what = mod->in_name;
    if (mod->out_name) {
        if ((rc = check_positive(c->d_out, "d_out", err))) return rc;
        width = c->d_out;
        what = mod->out_name;
    }
    if ((mod->flags & ATTN_MOD_SPLIT_HEADS) && width % heads != 0)
        return attn__fail(err, ATTN_ERR_SHAPE, "num_heads",
                          "%s must be divisible by num_heads (%s %d, num_heads %d)", what, what,
                          width, heads);
    p->Dk = p->Dv = mod->flags & ATTN_MOD_SPLIT_HEADS ? width / heads : width;
    return mod->flags & ATTN_MOD_CROSS ? derive_cross(c, p, err) : ATTN_OK;
}

static int check_options(const attn_config *c, attn_plan *p, attn_error *err) {
    const attn_module_info *mod = attn_module_get(c->module);
    if (!(c->dropout >= 0.0f && c->dropout <= 1.0f))
        return attn__fail(err, ATTN_ERR_ARG, "dropout", "dropout must be in [0, 1], got %g",
                          (double)c->dropout);
    if (c->has_scale && !isfinite(c->scale))
        return attn__fail(err, ATTN_ERR_NONFINITE, "scale", "scale must be a finite number");
    if (c->normalization != ATTN_NORM_SOFTMAX && c->normalization != ATTN_NORM_SUM)
        return attn__fail(err, ATTN_ERR_ARG, "normalization", "unknown normalization %d",
                          (int)c->normalization);
    if (c->normalization == ATTN_NORM_SUM && !(mod->flags & ATTN_MOD_SUM_NORM))
        return attn__fail(err, ATTN_ERR_ARG, "normalization",
                          "the sum normalization exists only for simple attention");
    if (c->mask_method != ATTN_MASK_NEG_INF && c->mask_method != ATTN_MASK_RENORM)
        return attn__fail(err, ATTN_ERR_ARG, "mask_method", "unknown mask method %d",
                          (int)c->mask_method);
    if (c->context_length < 0)
        return attn__fail(err, ATTN_ERR_ARG, "context_length", "context_length must be >= 1");
    if (mod->context_name && c->context_length && c->tokens > c->context_length) {
        const char *field = mod->context_name;
        return attn__fail(err, ATTN_ERR_SHAPE, field,
                          "%d tokens exceed %s %d (the mask buffer has only %d rows)", c->tokens,
                          field, c->context_length, c->context_length);
    }
    if (c->has_scale)
        p->scale = c->scale;
    else if (mod->flags & ATTN_MOD_UNSCALED)
        p->scale = 1.0f;
    else
        p->scale = (float)(1.0 / sqrt((double)p->Dk));
    p->drop_site = mod->drop_site;
    p->dropout_active = c->training && c->dropout > 0.0f;
    return ATTN_OK;
}

/* Elements of every tensor of the call (n_inputs, n_context, ..., n_dropout);
 * 0 when one would overflow. */
static int count_tensors(const attn_config *cfg, attn_plan *p) {
    const attn_module_info *mod = attn_module_get(cfg->module);
    size_t B = (size_t)p->B, H = (size_t)p->H, Hkv = (size_t)p->Hkv;
    size_t L = (size_t)p->L, S = (size_t)p->S, Dk = (size_t)p->Dk, Dv = (size_t)p->Dv;
    int ok = 1;
    size_t n = 0;
    if (mod->flags & ATTN_MOD_QKV_INPUTS) {
        ok = add_product(&n, B, H, L, Dk) && add_product(&n, B, Hkv, S, Dk) &&
             add_product(&n, B, Hkv, S, Dv);
    } else {
        ok = add_product(&n, B, L, (size_t)p->in_width, 1);
        if (ok && (mod->flags & ATTN_MOD_CROSS) &&
            (p->S != p->L || p->kv_in_width[0] != p->in_width || p->kv_in_width[1] != p->in_width))
            ok = add_product(&n, B, S, (size_t)p->kv_in_width[0], 1) &&
                 add_product(&n, B, S, (size_t)p->kv_in_width[1], 1);
    }
    p->n_inputs = n;
    ok = ok && attn__mul(B, L, &n) && attn__mul(n, (size_t)p->out_width, &p->n_context) &&
         attn__mul(B * L, (size_t)p->ctx_width, &p->n_context_heads);
    size_t *const counts[] = {&p->n_queries, &p->n_keys, &p->n_values, &p->n_scores, &p->n_mask};
    const size_t dims[][4] = {{B, H, L, Dk}, {B, Hkv, S, Dk}, {B, Hkv, S, Dv}, {B, H, L, S}, {B, L, S, 1}};
    for (int i = 0; ok && i < 5; i++) {
        size_t t = 0;
        ok = add_product(&t, dims[i][0], dims[i][1], dims[i][2], dims[i][3]);
        *counts[i] = t;
    }
    p->n_avg = p->n_mask;
    p->n_dropout = p->drop_site == ATTN_DROP_OUTPUT ? p->n_context : p->n_scores;
    return ok;
}

/* Everything at once: inputs, parameters, projections and their per-head
 * copies, dropout and contexts; then either three score-sized tensors,
 * masks and averages (materialised), or one tile of scores per thread
 * (fused: nothing grows with L * S; the score-sized dropout mask exists
 * only on the materialised path). 0 when it would overflow. */
static int count_total(const attn_config *cfg, attn_plan *p) {
    p->fused = attn__flash_used(cfg, p, cfg->outputs ? cfg->outputs : ~0u);
    size_t total = 0;
    int ok = add_product(&total, p->n_inputs, 1, 1, 1) && add_product(&total, p->n_params, 1, 1, 1) &&
             add_product(&total, p->n_queries + p->n_keys + p->n_values, 2, 1, 1) &&
             add_product(&total, p->n_context_heads, 1, 1, 1) &&
             add_product(&total, p->n_context, 1, 1, 1);
    if (ok && p->fused)
        ok = add_product(&total, attn__flash_scratch(p), 1, 1, 1) &&
             (p->drop_site != ATTN_DROP_OUTPUT || add_product(&total, p->n_dropout, 1, 1, 1));
    else if (ok)
        ok = add_product(&total, p->n_scores, 3, 1, 1) && add_product(&total, p->n_mask, 2, 1, 1) &&
             add_product(&total, p->n_dropout, 1, 1, 1);
    p->total_elements = total;
    return ok;
}

int attn_plan_make(const attn_config *cfg, attn_plan *plan, attn_error *err) {
    int rc;
    if (cfg == NULL || plan == NULL)
        return attn__fail(err, ATTN_ERR_ARG, "", "config and plan must not be NULL");
    *plan = (attn_plan){0};
    if (attn_module_name(cfg->module) == NULL)
        return attn__fail(err, ATTN_ERR_ARG, "module", "unknown module %d", (int)cfg->module);
    if ((rc = check_positive(cfg->batch, "batch", err)) ||
        (rc = check_positive(cfg->tokens, "tokens", err)) ||
        (rc = check_positive(cfg->d_in, "d_in", err)) ||
        (rc = derive_shapes(cfg, plan, err)) || (rc = check_options(cfg, plan, err)))
        return rc;

    attn_plan *p = plan;
    p->B = cfg->batch;
    size_t B = (size_t)p->B, L = (size_t)p->L, S = (size_t)p->S;
    if ((size_t)p->H * (size_t)p->Dv > (size_t)INT32_MAX)
        return attn__fail(err, ATTN_ERR_RANGE, "num_heads", "num_heads * d_out is too large");
    /* OpenBLAS takes int sizes: the rows of one matrix product must fit. */
    if (B * L > (size_t)INT32_MAX || B * S > (size_t)INT32_MAX)
        return attn__fail(err, ATTN_ERR_RANGE, "batch",
                          "batch * tokens is too large (%zu rows)", B * (L > S ? L : S));
    const attn_module_info *mod = attn_module_get(cfg->module);
    p->ctx_width = p->H * p->Dv;
    /* an output projection maps back to d_out if the module takes it, else to d_in */
    if (!p->has_out_proj)
        p->out_width = p->ctx_width;
    else
        p->out_width = mod->out_name ? cfg->d_out : cfg->d_in;
    if (!count_tensors(cfg, p))
        return attn__fail(err, ATTN_ERR_RANGE, "inputs",
                          "the tensors of this call would exceed %zu elements",
                          (size_t)ATTN_MAX_ELEMENTS);
    if ((rc = attn__param_layout(cfg, plan, err))) return rc;
    if (!count_total(cfg, p))
        return attn__fail(err, ATTN_ERR_RANGE, "inputs",
                          "the tensors of this call would exceed %zu elements",
                          (size_t)ATTN_MAX_ELEMENTS);
    return ATTN_OK;
}
