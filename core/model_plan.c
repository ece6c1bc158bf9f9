/* model_plan.c - the model families (ATTN_FAMILY_MAP) and the plan of a
 * whole-model call: the configuration checked, every size derived and
 * overflow-checked. */
#include "internal.h"

#include <string.h>

/* ==== The family table ==================================================== */

static const attn_family_info families[ATTN_FAMILY_COUNT] = {
#define XX(id, ...) {ATTN_FAMILY_##id, __VA_ARGS__},
    ATTN_FAMILY_MAP(XX)
#undef XX
};

const attn_family_info *attn_family_get(attn_family f) {
    return (unsigned)f < ATTN_FAMILY_COUNT ? &families[f] : NULL;
}

int attn_family_from_name(const char *name, attn_family *out) {
    for (int f = 0; name && f < ATTN_FAMILY_COUNT; f++)
        if (strcmp(name, families[f].name) == 0) {
            if (out) *out = (attn_family)f;
            return ATTN_OK;
        }
    return ATTN_ERR_ARG;
}

/* ==== Checks ============================================================== */

static int check_config(const attn_gpt2_config *c, const attn_family_info *f, int batch,
                        int tokens, attn_error *err) {
    struct {
        const char *name;
        int value, min;
    } ints[] = {{f->vocab_name, c->vocab_size, 1}, {f->context_name, c->block_size, 1},
                {f->layers_name, c->n_layer, 0},   {f->heads_name, c->n_head, 1},
                {f->width_name, c->n_embd, 1},     {"batch", batch, 1},
                {"tokens", tokens, 1}};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (ints[i].value < ints[i].min)
            return attn__fail(err, ATTN_ERR_ARG, ints[i].name, "%s must be >= %d, got %d",
                              ints[i].name, ints[i].min, ints[i].value);
    if (c->n_embd % c->n_head != 0)
        return attn__fail(err, ATTN_ERR_SHAPE, f->heads_name,
                          "%s must be divisible by %s (%s %d, %s %d)", f->width_name,
                          f->heads_name, f->width_name, c->n_embd, f->heads_name, c->n_head);
    if (!(c->dropout >= 0.0 && c->dropout <= 1.0))
        return attn__fail(err, ATTN_ERR_ARG, f->dropout_name, "%s must be in [0, 1], got %g",
                          f->dropout_name, c->dropout);
    if (c->gelu != ATTN_GELU_ERF && c->gelu != ATTN_GELU_TANH)
        return attn__fail(err, ATTN_ERR_ARG, "gelu", "unknown activation %d", (int)c->gelu);
    if (tokens > c->block_size)
        return attn__fail(err, ATTN_ERR_SHAPE, "idx",
                          "%d tokens exceed %s %d (%s has only %d rows)", tokens,
                          f->context_name, c->block_size,
                          f->family == ATTN_FAMILY_GPT2 ? "wpe" : "pos_emb", c->block_size);
    return ATTN_OK;
}

/* acc += a * b * c, overflow-checked. */
static int add3(size_t *acc, size_t a, size_t b, size_t c) {
    size_t p;
    if (!attn__mul(a, b, &p) || !attn__mul(p, c, &p) || *acc > ATTN_MAX_ELEMENTS - p) return 0;
    *acc += p;
    return 1;
}

static int too_large(attn_error *err, const char *field, const char *what) {
    return attn__fail(err, ATTN_ERR_RANGE, field, "%s would exceed %zu elements", what,
                      (size_t)ATTN_MAX_ELEMENTS);
}

/* The largest single tensors first, so that the error names the field. */
static int check_tensors(const attn_gpt2_config *c, const attn_family_info *f, attn_error *err) {
    size_t wte = 0, mask = 0, fc = 0;
    if (!add3(&wte, (size_t)c->vocab_size, (size_t)c->n_embd, 1))
        return too_large(err, f->vocab_name, "the token embedding");
    if (!add3(&mask, (size_t)c->block_size, (size_t)c->block_size, 1))
        return too_large(err, f->context_name, "the mask buffers");
    if (!add3(&fc, 4, (size_t)c->n_embd, (size_t)c->n_embd))
        return too_large(err, f->width_name, "the MLP's weights");
    return ATTN_OK;
}

/* ==== Sizes =============================================================== */

/* Every count of the plan from its shapes; 0 on overflow. */
static int derive_counts(attn_gpt2_plan *p) {
    size_t C = (size_t)p->C, B = (size_t)p->B, T = (size_t)p->T, L = (size_t)p->n_layer;
    size_t BTC = B * T * C, BHTT = B * (size_t)p->H * T * T; /* within the checks below */
    size_t layer = 0, params = 0, total = 0, drop = 0, drop_layer = 0;
    int ok = add3(&layer, 4, C, 1) && add3(&layer, p->attn_plan.n_params, 1, 1) &&
             add3(&layer, 8, C, C) && add3(&layer, 5, C, 1);
    ok = ok && add3(&params, (size_t)p->V, C, 1) &&
         add3(&params, (size_t)p->cfg.block_size, C, 1) && add3(&params, layer, L, 1) &&
         add3(&params, 2, C, 1) && (p->tied || add3(&params, (size_t)p->V, C, 1));
    ok = ok && add3(&p->n_logits, B * T, (size_t)p->V, 1) && add3(&p->n_hidden, L + 1, B * T, C) &&
         add3(&p->n_attn, L, B * (size_t)p->H, T * T);
    ok = ok && add3(&drop_layer, 2, BTC, 1) &&
         (p->family != ATTN_FAMILY_GPTMODEL || add3(&drop_layer, BHTT, 1, 1)) &&
         add3(&drop, BTC, 1, 1) && add3(&drop, drop_layer, L, 1);
    /* parameters, outputs, and the work space: the residual, LayerNorm,
     * Q/K/V, heads, block outputs and the MLP's [B][T][4C] (10 BTC), one
     * attention's intermediates, and a [B][H][T][T] map of pre-dropout
     * scores for GPTModel in training mode */
    ok = ok && add3(&total, params, 1, 1) && add3(&total, p->n_logits, 1, 1) &&
         add3(&total, p->n_hidden, 1, 1) && add3(&total, p->n_attn, 1, 1) &&
         add3(&total, drop, 1, 1) && add3(&total, 10, BTC, 1) &&
         add3(&total, p->attn_plan.total_elements, 1, 1) && add3(&total, BHTT, 1, 1);
    p->n_layer_params = layer;
    p->n_params = params;
    p->n_dropout = drop;
    p->total_elements = total;
    return ok;
}

static int entries_per_block(const attn_gpt2_plan *p) { return 8 + p->attn_plan.param_count; }

int attn_gpt2_plan_make(const attn_gpt2_config *cfg, int batch, int tokens, int training,
                        attn_gpt2_plan *plan, attn_error *err) {
    if (cfg == NULL || plan == NULL)
        return attn__fail(err, ATTN_ERR_ARG, "", "config and plan must not be NULL");
    *plan = (attn_gpt2_plan){0};
    const attn_family_info *f = attn_family_get(cfg->family);
    if (f == NULL)
        return attn__fail(err, ATTN_ERR_ARG, "family", "unknown model family %d", (int)cfg->family);
    int rc = check_config(cfg, f, batch, tokens, err);
    if (rc || (rc = check_tensors(cfg, f, err))) return rc;
    attn_gpt2_plan *p = plan;
    p->cfg = *cfg;
    p->B = batch, p->T = tokens, p->C = cfg->n_embd, p->H = cfg->n_head, p->V = cfg->vocab_size;
    p->n_layer = cfg->n_layer;
    p->D = p->C / p->H;
    p->family = cfg->family;
    p->tied = f->tied;
    p->gelu = cfg->family == ATTN_FAMILY_GPTMODEL ? ATTN_GELU_TANH : cfg->gelu;
    p->training = training != 0;
    p->dropout_active = p->training && cfg->dropout > 0.0;
    p->attn = (attn_config){.module = f->attn, .batch = batch, .tokens = tokens,
                            .d_in = cfg->n_embd, .d_out = cfg->n_embd, .num_heads = cfg->n_head,
                            .context_length = cfg->block_size, .causal = 1,
                            .bias = cfg->family == ATTN_FAMILY_GPT2 ? 1 : cfg->qkv_bias != 0,
                            .dropout = cfg->dropout, .training = p->training};
    if ((rc = attn_plan_make(&p->attn, &p->attn_plan, err))) return rc;
    size_t B = (size_t)batch, T = (size_t)tokens, C = (size_t)p->C;
    /* OpenBLAS takes int sizes: rows B*T, and the stride T*C of the last-position logits */
    if (!derive_counts(p) || B * T > (size_t)INT32_MAX || T * C > (size_t)INT32_MAX ||
        (size_t)p->n_layer * (size_t)entries_per_block(p) > (size_t)INT32_MAX - 8)
        return too_large(err, f->width_name, "the tensors of this model");
    p->param_count = 2 + p->n_layer * entries_per_block(p) + (p->tied ? 2 : 3);
    return ATTN_OK;
}
