/* plan.c - the plan of a whole-model call: the config's defaults filled in,
 * the checks every architecture shares (in its own field names), then its
 * row's own (describe), every size derived and overflow-checked, and the
 * costs that limits weigh a request by. */
#include "core/lm/lm.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The row's name of hyperparameter h, or the config's field name. */
static const char *hp_name(const attn__arch *a, attn_hparam h) {
    const char *n = attn__hparam_name(a, h);
    return n ? n : attn_hparam_field(h);
}

/* ==== Checks ============================================================== */

/* The sizes: each integer hyperparameter of the row at least its minimum,
 * then batch and tokens. */
static int check_ints(const attn_lm_config *c, const attn__arch *a, int batch, int tokens,
                      attn_error *err) {
    for (int i = 0; i < a->n_hparams; i++) {
        const attn_arch_hparam *hp = &a->hparams[i];
        double v = attn_lm_config_get(c, hp->id);
        if (attn_hparam_type(hp->id) != ATTN_HP_INT || v >= hp->min) continue;
        const char *n = hp->name ? hp->name : hp->config_name;
        return attn__fail(err, ATTN_ERR_ARG, n, "%s must be >= %d, got %d", n, hp->min, (int)v);
    }
    if (batch < 1) return attn__fail(err, ATTN_ERR_ARG, "batch", "batch must be >= 1, got %d", batch);
    if (tokens < 1)
        return attn__fail(err, ATTN_ERR_ARG, "tokens", "tokens must be >= 1, got %d", tokens);
    return ATTN_OK;
}

/* Heads that split the width (unless head_dim is given), key/value heads
 * that divide the heads, dropout in [0, 1], a known activation. */
static int check_shapes(const attn_lm_config *c, const attn__arch *a, attn_error *err) {
    const char *width = hp_name(a, ATTN_HP_WIDTH), *heads = hp_name(a, ATTN_HP_HEADS);
    if (c->head_dim == 0 && c->width % c->n_head != 0)
        return attn__fail(err, ATTN_ERR_SHAPE, heads, "%s must be divisible by %s (%s %d, %s %d)",
                          width, heads, width, c->width, heads, c->n_head);
    const char *kv = hp_name(a, ATTN_HP_KV_HEADS);
    if (c->n_kv_head < 0 || c->head_dim < 0 || c->ffn < 0)
        return attn__fail(err, ATTN_ERR_ARG, c->n_kv_head < 0 ? kv : "head_dim",
                          "%s, head_dim and ffn must be >= 0 (0: the default)", kv);
    if (c->n_kv_head && c->n_head % c->n_kv_head != 0)
        return attn__fail(err, ATTN_ERR_SHAPE, kv, "%s must divide %s (%s %d, %s %d)", kv, heads,
                          kv, c->n_kv_head, heads, c->n_head);
    const char *drop = hp_name(a, ATTN_HP_DROPOUT);
    if (!(c->dropout >= 0.0 && c->dropout <= 1.0))
        return attn__fail(err, ATTN_ERR_ARG, drop, "%s must be in [0, 1], got %g", drop, c->dropout);
    if ((unsigned)c->act >= ATTN_ACT_COUNT)
        return attn__fail(err, ATTN_ERR_ARG, "activation", "unknown activation %d", (int)c->act);
    if (!(c->norm_eps >= 0.0 && c->norm_eps < 1.0))
        return attn__fail(err, ATTN_ERR_ARG, hp_name(a, ATTN_HP_NORM_EPS),
                          "the norms' epsilon must be in [0, 1), got %g", c->norm_eps);
    return ATTN_OK;
}

/* The config with its defaults (0 = derived) filled in. */
static void fill_defaults(attn_lm_config *c) {
    if (c->n_kv_head == 0) c->n_kv_head = c->n_head;
    if (c->head_dim == 0) c->head_dim = c->width / c->n_head;
    if (c->ffn == 0 && c->width <= INT32_MAX / 4) c->ffn = 4 * c->width;
    if (c->norm_eps == 0.0) c->norm_eps = 1e-5;
}

/* The name of the position table ("wpe"), for the error of a long input. */
static const char *pos_table(const attn__arch *a, char *out, size_t size) {
    for (int i = 0; i < a->layout->n_top; i++)
        if (a->layout->top[i].role == ATTN__POS_EMB) {
            const char *n = a->layout->top[i].name, *dot = strchr(n, '.');
            snprintf(out, size, "%.*s", dot ? (int)(dot - n) : (int)strlen(n), n);
            return out;
        }
    return NULL;
}

/* tokens within the positions: context of them, past pad_id's rows when the
 * positions count from pad_id + 1 (RoBERTa's 514 rows hold 512 tokens). */
static int check_tokens(const attn_lm_config *c, const attn_lm_spec *s, const attn__arch *a,
                        int tokens, attn_error *err) {
    int skip = s->pos_after_pad ? s->pad_id + 1 : 0;
    if (tokens <= c->context - skip) return ATTN_OK;
    char table[48];
    const char *ctx = hp_name(a, ATTN_HP_CONTEXT), *t = pos_table(a, table, sizeof table);
    if (skip)
        return attn__fail(err, ATTN_ERR_SHAPE, "idx", "%d tokens exceed the %d positions after "
                          "padding_idx %d in %s %d", tokens, c->context - skip, s->pad_id, ctx,
                          c->context);
    if (t)
        return attn__fail(err, ATTN_ERR_SHAPE, "idx", "%d tokens exceed %s %d (%s has only %d rows)",
                          tokens, ctx, c->context, t, c->context);
    return attn__fail(err, ATTN_ERR_SHAPE, "idx", "%d tokens exceed %s %d", tokens, ctx, c->context);
}

/* ==== Sizes =============================================================== */

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
static int check_tensors(const attn_lm_config *c, const attn__arch *a, attn_error *err) {
    size_t emb = 0, mask = 0, mlp = 0, qkv = 0;
    if (!add3(&emb, (size_t)c->vocab_size, (size_t)c->width, 1))
        return too_large(err, hp_name(a, ATTN_HP_VOCAB), "the token embedding");
    if (!add3(&mask, (size_t)c->context, (size_t)c->context, 1))
        return too_large(err, hp_name(a, ATTN_HP_CONTEXT), "the mask buffers");
    if (!add3(&mlp, (size_t)c->ffn, (size_t)c->width, 2))
        return too_large(err, hp_name(a, ATTN_HP_WIDTH), "the MLP's weights");
    if (!add3(&qkv, (size_t)c->n_head + 2 * (size_t)c->n_kv_head, (size_t)c->head_dim,
              (size_t)c->width))
        return too_large(err, hp_name(a, ATTN_HP_HEADS), "the attention's weights");
    return ATTN_OK;
}

/* Floats of the dropout multipliers of one block. */
static size_t dropout_per_block(const attn_lm_plan *p) {
    size_t BTC = (size_t)p->B * (size_t)p->T * (size_t)p->C;
    size_t BHTT = (size_t)p->B * (size_t)p->H * (size_t)p->T * (size_t)p->T;
    return 2 * BTC + (p->spec.weight_dropout ? BHTT : 0);
}

/* Every count of the plan from its shapes; 0 on overflow. */
static int derive_counts(attn_lm_plan *p) {
    size_t B = (size_t)p->B, T = (size_t)p->T, C = (size_t)p->C, L = (size_t)p->n_layer;
    size_t top, block, tail, params = 0, drop = 0, total = 0, row = 0, BHTT;
    attn__layout_sizes(p, 0, &top, &block, &tail);
    int ok = add3(&params, top, 1, 1) && add3(&params, block, L, 1) && add3(&params, tail, 1, 1);
    attn__layout_sizes(p, 1, &top, &block, &tail); /* at most 4 bytes a value: no overflow */
    p->param_bytes = ok ? top + block * L + tail : 0;
    ok = ok && add3(&p->n_logits, B * T, (size_t)p->V, 1) && add3(&p->n_hidden, L + 1, B * T, C) &&
         add3(&p->n_attn, L, B * (size_t)p->H, T * T) && attn__mul(B * (size_t)p->H, T * T, &BHTT);
    ok = ok && add3(&drop, B * T, C, 1) && add3(&drop, dropout_per_block(p), L, 1);
    /* the work space: per row the residual, a norm's output, the attention's
     * and the MLP's outputs (4 C), q/k/v, the heads and the MLP's hidden
     * layer (twice with a gate); one attention's intermediates, and a
     * [B][H][T][T] map of scores kept for the maps or dropout */
    ok = ok && add3(&row, 4, C, 1) && add3(&row, (size_t)p->QD + 2 * (size_t)p->KVD, 1, 1) &&
         add3(&row, (size_t)p->QD, 1, 1) && add3(&row, (size_t)p->F, p->spec.gated ? 2 : 1, 1);
    ok = ok && add3(&total, params, 1, 1) && add3(&total, p->n_logits, 1, 1) &&
         add3(&total, p->n_hidden, 1, 1) && add3(&total, p->n_attn, 1, 1) &&
         add3(&total, drop, 1, 1) && add3(&total, row, B * T, 1) &&
         add3(&total, p->attn_plan.total_elements, 1, 1) && add3(&total, BHTT, 1, 1) &&
         add3(&total, attn__lm_tile_floats(p), 1, 1); /* one thread's widened block */
    p->n_params = params;
    p->n_dropout = drop;
    p->total_elements = total;
    return ok;
}

/* One block's attention for the kernels: [B][H][T][D] queries against
 * [B][Hkv][T][D] keys and values, causal (unless two-way), the spec's scale, dropout on the
 * weights only where the model drops them. */
static int attention_plan(attn_lm_plan *p, attn_error *err) {
    double drop = p->spec.weight_dropout ? p->cfg.dropout : 0.0;
    p->attn = (attn_config){.module = ATTN_SDPA, .batch = p->B, .tokens = p->T, .d_in = p->D,
                            .num_heads = p->H, .kv_heads = p->Hkv,
                            .causal = !p->spec.bidirectional,
                            .dropout = drop, .training = p->training,
                            .has_scale = p->spec.attn_scale != 0.0f, .scale = p->spec.attn_scale};
    return attn_plan_make(&p->attn, &p->attn_plan, err);
}

static int sizes(attn_lm_plan *p, const attn__arch *a, attn_error *err) {
    const attn_lm_config *c = &p->cfg;
    p->C = c->width, p->H = c->n_head, p->Hkv = c->n_kv_head, p->D = c->head_dim;
    p->F = c->ffn, p->V = c->vocab_size, p->n_layer = c->n_layer;
    p->QD = p->H * p->D, p->KVD = p->Hkv * p->D; /* within check_tensors' bounds */
    p->tied = p->spec.tied;
    p->head = !p->spec.bidirectional || p->spec.mlm_head;
    p->dropout_active = p->training && c->dropout > 0.0;
    int rc = attention_plan(p, err);
    if (rc) return rc;
    size_t B = (size_t)p->B, T = (size_t)p->T, C = (size_t)p->C;
    size_t entries = (size_t)a->layout->n_top + (size_t)a->layout->n_tail +
                     (size_t)p->n_layer * (size_t)attn__block_entries(p);
    /* OpenBLAS takes int sizes: rows B*T, and the stride T*C of the last-position logits */
    if (!derive_counts(p) || B * T > (size_t)INT32_MAX || T * C > (size_t)INT32_MAX ||
        entries > (size_t)INT32_MAX)
        return too_large(err, hp_name(a, ATTN_HP_WIDTH), "the tensors of this model");
    p->param_count = (int)entries;
    const attn__layout *lay = a->layout;
    for (int i = 0; i < lay->n_top + lay->n_tail; i++) {
        const attn__tensor *t = i < lay->n_top ? &lay->top[i] : &lay->tail[i - lay->n_top];
        if (!attn__tensor_present(&p->spec, t)) p->param_count--;
    }
    p->ops = attn_lm_block_ops(p, (double)B * (double)T, (double)T) * p->n_layer +
             attn_lm_head_ops(p, (double)B * (double)T);
    return ATTN_OK;
}

int attn_lm_plan_make(const attn_lm_config *cfg, int batch, int tokens, int training,
                      attn_lm_plan *plan, attn_error *err) {
    if (cfg == NULL || plan == NULL)
        return attn__fail(err, ATTN_ERR_ARG, "", "config and plan must not be NULL");
    *plan = (attn_lm_plan){0};
    const attn__arch *a = attn__arch_get(cfg->arch);
    if (a == NULL)
        return attn__fail(err, ATTN_ERR_ARG, "arch", "unknown architecture %d", (int)cfg->arch);
    attn_lm_config c = *cfg;
    if ((unsigned)c.weights_dtype >= ATTN_DTYPE_COUNT)
        return attn__fail(err, ATTN_ERR_ARG, "weights_dtype", "unknown weights dtype %d",
                          (int)c.weights_dtype);
    int rc = check_ints(&c, a, batch, tokens, err);
    if (rc || (rc = check_shapes(&c, a, err))) return rc;
    fill_defaults(&c);
    /* sizes before the row's own checks: a row may multiply the shapes */
    if ((rc = check_tensors(&c, a, err)) || (rc = a->describe(&c, &plan->spec, err)) ||
        (rc = check_tokens(&c, &plan->spec, a, tokens, err)))
        return rc;
    if (training && a->dropout.emb == NULL)
        return attn__fail(err, ATTN_ERR_ARG, "training", "%s runs in eval mode here (its rows "
                          "name no dropout to draw)", a->name);
    plan->cfg = c;
    plan->B = batch, plan->T = tokens, plan->training = training != 0;
    return sizes(plan, a, err);
}

/* ==== Costs =============================================================== */

double attn_lm_block_ops(const attn_lm_plan *p, double rows, double keys) {
    double C = p->C, QD = p->QD, KVD = p->KVD, F = p->F;
    double proj = C * (QD + 2.0 * KVD) + QD * C, mlp = C * F * (p->spec.gated ? 3.0 : 2.0);
    return rows * (proj + mlp) + rows * p->H * keys * (2.0 * p->D + 64.0);
}

double attn_lm_head_ops(const attn_lm_plan *p, double logit_rows) {
    if (!p->head) return 0.0;
    double transform = p->spec.mlm_head ? (double)p->C * (double)p->C : 0.0;
    return logit_rows * ((double)p->C * (double)p->V + transform);
}
