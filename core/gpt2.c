/* gpt2.c - the GPT2 model of seed 003 (gpt2_min.py): its state_dict, its
 * construction from a seed and its forward pass.
 *
 * The parameter buffer is the state_dict in PyTorch's order (lm_head.weight
 * excepted: it is wte.weight). Each block's attention is the ATTN_GPT2
 * module of core's table, called through attn_forward on its own slice of
 * the buffer (h.<l>.attn.bias, c_attn.*, c_proj.*, exactly the layout
 * attn_param_get gives that module), so the attention maps are those of
 * /attention/multihead's GPT2CausalSelfAttention.
 */
#include "internal.h"
#include "parallel.h"
#include "layers.h"
#include "linear.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ==== Layout ============================================================== */

enum { TOP_ENTRIES = 2, LN_ENTRIES = 2, MLP_ENTRIES = 4, TAIL_ENTRIES = 2 };

/* Where one block's tensors start in the parameter buffer, in floats. */
typedef struct {
    size_t ln1_w, ln1_b, attn, ln2_w, ln2_b, fc_w, fc_b, proj_w, proj_b;
} block_offsets;

static size_t top_size(const attn_gpt2_plan *p) {
    return (size_t)p->V * (size_t)p->C + (size_t)p->cfg.block_size * (size_t)p->C;
}

static int layer_entries(const attn_gpt2_plan *p) {
    return 2 * LN_ENTRIES + p->attn_plan.param_count + MLP_ENTRIES;
}

static block_offsets block_at(const attn_gpt2_plan *p, int l) {
    size_t C = (size_t)p->C;
    block_offsets o;
    o.ln1_w = top_size(p) + (size_t)l * p->n_layer_params;
    o.ln1_b = o.ln1_w + C;
    o.attn = o.ln1_b + C;
    o.ln2_w = o.attn + p->attn_plan.n_params;
    o.ln2_b = o.ln2_w + C;
    o.fc_w = o.ln2_b + C;
    o.fc_b = o.fc_w + 4 * C * C;
    o.proj_w = o.fc_b + 4 * C;
    o.proj_b = o.proj_w + 4 * C * C;
    return o;
}

static void set_param(attn_param *out, const char *name, int rank, int d0, int d1, size_t offset) {
    *out = (attn_param){.rank = rank, .shape = {d0, d1, 1, 1}, .offset = offset};
    snprintf(out->name, sizeof out->name, "%s", name);
    out->count = (size_t)d0 * (size_t)(rank > 1 ? d1 : 1);
}

int attn_gpt2_param_get(const attn_gpt2_plan *p, int index, attn_param *out) {
    if (p == NULL || out == NULL || index < 0 || index >= p->param_count) return ATTN_ERR_ARG;
    int C = p->C;
    if (index == 0) {
        set_param(out, "wte.weight", 2, p->V, C, 0);
        return ATTN_OK;
    }
    if (index == 1) {
        set_param(out, "wpe.weight", 2, p->cfg.block_size, C, (size_t)p->V * (size_t)C);
        return ATTN_OK;
    }
    int per = layer_entries(p), k = index - TOP_ENTRIES;
    if (k >= per * p->n_layer) {
        size_t at = top_size(p) + (size_t)p->n_layer * p->n_layer_params;
        int which = k - per * p->n_layer;
        set_param(out, which ? "ln_f.bias" : "ln_f.weight", 1, C, 0, at + (size_t)which * C);
        return ATTN_OK;
    }
    int l = k / per, e = k % per, na = p->attn_plan.param_count;
    size_t base = top_size(p) + (size_t)l * p->n_layer_params, A = p->attn_plan.n_params;
    char name[ATTN_PARAM_NAME_MAX];
    if (e >= LN_ENTRIES && e < LN_ENTRIES + na) {
        attn_param ap;
        attn_param_get(&p->attn, &p->attn_plan, e - LN_ENTRIES, &ap);
        snprintf(name, sizeof name, "h.%d.attn.%.24s", l, ap.name);
        *out = ap;
        snprintf(out->name, sizeof out->name, "%s", name);
        out->offset = base + 2 * (size_t)C + ap.offset;
        return ATTN_OK;
    }
    static const char *const ln[4] = {"ln_1.weight", "ln_1.bias", "ln_2.weight", "ln_2.bias"};
    size_t C4 = 4 * (size_t)C, mlp = base + 4 * (size_t)C + A;
    if (e < LN_ENTRIES) {
        snprintf(name, sizeof name, "h.%d.%s", l, ln[e]);
        set_param(out, name, 1, C, 0, base + (size_t)e * C);
    } else if ((e -= na) < 2 * LN_ENTRIES) {
        snprintf(name, sizeof name, "h.%d.%s", l, ln[e]);
        set_param(out, name, 1, C, 0, base + 2 * (size_t)C + A + (size_t)(e - 2) * C);
    } else if ((e -= 2 * LN_ENTRIES) == 0) {
        snprintf(name, sizeof name, "h.%d.mlp.fc.weight", l);
        set_param(out, name, 2, 4 * C, C, mlp);
    } else if (e == 1) {
        snprintf(name, sizeof name, "h.%d.mlp.fc.bias", l);
        set_param(out, name, 1, 4 * C, 0, mlp + C4 * C);
    } else if (e == 2) {
        snprintf(name, sizeof name, "h.%d.mlp.proj.weight", l);
        set_param(out, name, 2, C, 4 * C, mlp + C4 * C + C4);
    } else {
        snprintf(name, sizeof name, "h.%d.mlp.proj.bias", l);
        set_param(out, name, 1, C, 0, mlp + 2 * C4 * C + C4);
    }
    return ATTN_OK;
}

/* ==== Plan ================================================================ */

static int check_config(const attn_gpt2_config *c, int batch, int tokens, attn_error *err) {
    struct {
        const char *name;
        int value, min;
    } ints[] = {{"vocab_size", c->vocab_size, 1}, {"block_size", c->block_size, 1},
                {"n_layer", c->n_layer, 0},       {"n_head", c->n_head, 1},
                {"n_embd", c->n_embd, 1},         {"batch", batch, 1},
                {"tokens", tokens, 1}};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (ints[i].value < ints[i].min)
            return attn__fail(err, ATTN_ERR_ARG, ints[i].name, "%s must be >= %d, got %d",
                              ints[i].name, ints[i].min, ints[i].value);
    if (c->n_embd % c->n_head != 0)
        return attn__fail(err, ATTN_ERR_SHAPE, "n_head",
                          "n_embd must be divisible by n_head (n_embd %d, n_head %d)", c->n_embd,
                          c->n_head);
    if (!(c->dropout >= 0.0 && c->dropout <= 1.0))
        return attn__fail(err, ATTN_ERR_ARG, "dropout", "dropout must be in [0, 1], got %g",
                          c->dropout);
    if (c->gelu != ATTN_GELU_ERF && c->gelu != ATTN_GELU_TANH)
        return attn__fail(err, ATTN_ERR_ARG, "gelu", "unknown activation %d", (int)c->gelu);
    if (tokens > c->block_size)
        return attn__fail(err, ATTN_ERR_SHAPE, "idx",
                          "%d tokens exceed block_size %d (wpe has only %d rows)", tokens,
                          c->block_size, c->block_size);
    return ATTN_OK;
}

/* acc += a * b * c, overflow-checked. */
static int add3(size_t *acc, size_t a, size_t b, size_t c) {
    size_t p;
    if (!attn__mul(a, b, &p) || !attn__mul(p, c, &p) || *acc > ATTN_MAX_ELEMENTS - p) return 0;
    *acc += p;
    return 1;
}

int attn_gpt2_plan_make(const attn_gpt2_config *cfg, int batch, int tokens, int training,
                        attn_gpt2_plan *plan, attn_error *err) {
    if (cfg == NULL || plan == NULL)
        return attn__fail(err, ATTN_ERR_ARG, "", "config and plan must not be NULL");
    *plan = (attn_gpt2_plan){0};
    int rc = check_config(cfg, batch, tokens, err);
    if (rc) return rc;
    attn_gpt2_plan *p = plan;
    p->cfg = *cfg;
    p->B = batch, p->T = tokens, p->C = cfg->n_embd, p->H = cfg->n_head, p->V = cfg->vocab_size;
    p->n_layer = cfg->n_layer;
    p->training = training != 0;
    p->dropout_active = p->training && cfg->dropout > 0.0;
    p->attn = (attn_config){.module = ATTN_GPT2, .batch = batch, .tokens = tokens,
                            .d_in = cfg->n_embd, .num_heads = cfg->n_head,
                            .context_length = cfg->block_size, .bias = 1, .causal = 1,
                            .dropout = cfg->dropout, .training = p->training};
    /* the largest single tensors first, so that the error names the field */
    size_t wte = 0, mask = 0, fc = 0;
    if (!add3(&wte, (size_t)p->V, (size_t)p->C, 1))
        return attn__fail(err, ATTN_ERR_RANGE, "vocab_size", "wte would exceed %zu elements",
                          (size_t)ATTN_MAX_ELEMENTS);
    if (!add3(&mask, (size_t)cfg->block_size, (size_t)cfg->block_size, 1))
        return attn__fail(err, ATTN_ERR_RANGE, "block_size", "the attn.bias buffers would exceed "
                          "%zu elements", (size_t)ATTN_MAX_ELEMENTS);
    if (!add3(&fc, 4, (size_t)p->C, (size_t)p->C))
        return attn__fail(err, ATTN_ERR_RANGE, "n_embd", "mlp.fc would exceed %zu elements",
                          (size_t)ATTN_MAX_ELEMENTS);
    if ((rc = attn_plan_make(&p->attn, &p->attn_plan, err))) return rc;

    size_t C = (size_t)p->C, B = (size_t)batch, T = (size_t)tokens, L = (size_t)p->n_layer;
    size_t layer = 0, params = 0, hidden = 0, attn = 0, logits = 0, total = 0;
    int ok = add3(&layer, 4, C, 1) && add3(&layer, p->attn_plan.n_params, 1, 1) &&
             add3(&layer, 8, C, C) && add3(&layer, 5, C, 1);
    ok = ok && add3(&params, (size_t)p->V, C, 1) && add3(&params, (size_t)cfg->block_size, C, 1) &&
         add3(&params, layer, L, 1) && add3(&params, 2, C, 1);
    ok = ok && add3(&logits, B * T, (size_t)p->V, 1) && add3(&hidden, L + 1, B * T, C) &&
         add3(&attn, L, B * (size_t)p->H, T * T);
    /* parameters, outputs, and the work space: x, ln and attention outputs,
     * heads, the MLP's [B][T][4C], and one attention call */
    ok = ok && add3(&total, params, 1, 1) && add3(&total, logits, 1, 1) &&
         add3(&total, hidden, 1, 1) && add3(&total, attn, 1, 1) && add3(&total, 8, B * T, C) &&
         add3(&total, p->attn_plan.total_elements, 1, 1);
    /* OpenBLAS takes int sizes: rows B*T, and the stride T*C of the last-position logits */
    if (!ok || B * T > (size_t)INT32_MAX || T * C > (size_t)INT32_MAX)
        return attn__fail(err, ATTN_ERR_RANGE, "n_embd",
                          "the tensors of this model would exceed %zu elements",
                          (size_t)ATTN_MAX_ELEMENTS);
    p->n_layer_params = layer;
    p->n_params = params;
    p->n_logits = logits;
    p->n_hidden = hidden;
    p->n_attn = attn;
    p->total_elements = total;
    p->param_count = TOP_ENTRIES + p->n_layer * layer_entries(p) + TAIL_ENTRIES;
    return ATTN_OK;
}

/* ==== Parameters ========================================================== */

static void fill(float *x, size_t n, float v) {
    for (size_t i = 0; i < n; i++) x[i] = v;
}

/* nn.Linear(in, out)'s reset_parameters: kaiming_uniform_(a=sqrt(5)) on
 * [out][in], then (if bias) U(-1/sqrt(in), 1/sqrt(in)); bounds in double as
 * Python computes them. */
static void init_linear(float *w, float *b, int in, int out, attn_rng *rng) {
    double gain = sqrt(2.0 / (1.0 + 5.0)), bound = sqrt(3.0) * gain / sqrt((double)in);
    attn_rng_uniform_fill(rng, w, (size_t)out * (size_t)in, (float)-bound, (float)bound);
    if (b == NULL) return;
    double bb = 1.0 / sqrt((double)in);
    attn_rng_uniform_fill(rng, b, (size_t)out, (float)-bb, (float)bb);
}

int attn_gpt2_params_init(const attn_gpt2_plan *p, float *params, attn_rng *rng,
                          attn_error *err) {
    if (p == NULL || params == NULL || rng == NULL)
        return attn__fail(err, ATTN_ERR_ARG, "params", "plan, params and rng are required");
    size_t C = (size_t)p->C, VC = (size_t)p->V * C;
    attn_normal_cache cache = {0};
    attn_rng_normal_fill(rng, &cache, params, VC, 0.0, 1.0);                         /* wte */
    attn_rng_normal_fill(rng, &cache, params + VC, (size_t)p->cfg.block_size * C, 0.0, 1.0); /* wpe */
    for (int l = 0; l < p->n_layer; l++) {
        block_offsets o = block_at(p, l);
        fill(params + o.ln1_w, C, 1.0f);
        fill(params + o.ln1_b, C, 0.0f);
        int rc = attn_params_init(&p->attn, &p->attn_plan, params + o.attn, rng, err);
        if (rc) return rc;
        fill(params + o.ln2_w, C, 1.0f);
        fill(params + o.ln2_b, C, 0.0f);
        init_linear(params + o.fc_w, params + o.fc_b, p->C, 4 * p->C, rng);
        init_linear(params + o.proj_w, params + o.proj_b, 4 * p->C, p->C, rng);
    }
    float *ln_f = params + top_size(p) + (size_t)p->n_layer * p->n_layer_params;
    fill(ln_f, C, 1.0f);
    fill(ln_f + C, C, 0.0f);
    /* lm_head = nn.Linear(C, V, bias=False) draws its weight before the
     * model ties it to wte: V*C draws, values thrown away. */
    for (size_t i = 0; i < VC; i++) (void)attn_rng_u32(rng);
    return ATTN_OK;
}

int attn_gpt2_params_check(const attn_gpt2_plan *p, const float *params, attn_error *err) {
    if (p == NULL || params == NULL)
        return attn__fail(err, ATTN_ERR_ARG, "params", "plan and params are required");
    for (int i = 0; i < p->param_count; i++) {
        attn_param e;
        attn_gpt2_param_get(p, i, &e);
        const float *x = params + e.offset;
        char field[64];
        snprintf(field, sizeof field, "state_dict.%s", e.name);
        if (!attn__all_finite(x, e.count))
            return attn__fail(err, ATTN_ERR_NONFINITE, field, "%s holds NaN or infinity", e.name);
        if (!e.buffer) continue;
        int n = e.shape[e.rank - 1];
        for (int r = 0; r < n; r++)
            for (int c = 0; c < n; c++)
                if (x[(size_t)r * (size_t)n + (size_t)c] != attn_param_buffer_value(&e, r, c))
                    return attn__fail(err, ATTN_ERR_ARG, field,
                                      "%s[0][0][%d][%d] is %g, the module's buffer holds "
                                      "torch.tril(ones)",
                                      e.name, r, c, (double)x[(size_t)r * (size_t)n + (size_t)c]);
    }
    return ATTN_OK;
}

/* ==== Forward ============================================================= */

int attn_gpt2_forward(const attn_gpt2_plan *p, const float *params, const int32_t *idx,
                      attn_pool *pool, attn_rng *rng, attn_gpt2_outputs *out, attn_error *err) {
    if (p == NULL || params == NULL || idx == NULL || out == NULL)
        return attn__fail(err, ATTN_ERR_ARG, "", "plan, params, idx and outputs are required");
    size_t BT = (size_t)p->B * (size_t)p->T, C = (size_t)p->C, BTC = BT * C;
    for (size_t i = 0; i < BT; i++)
        if (idx[i] < 0 || idx[i] >= p->V)
            return attn__fail(err, ATTN_ERR_ARG, "idx",
                              "idx[%zu][%zu] is %d, outside [0, vocab_size %d)", i / (size_t)p->T,
                              i % (size_t)p->T, (int)idx[i], p->V);

    /* one allocation: x (the residual stream), h (LayerNorm outputs), a
     * (attention and MLP outputs), heads (attention before c_proj), m [BT][4C] */
    float *work = malloc(8 * BTC * sizeof *work);
    if (work == NULL)
        return attn__fail(err, ATTN_ERR_NOMEM, "", "cannot allocate %zu bytes of work space",
                          8 * BTC * sizeof *work);
    float *x = work, *h = x + BTC, *a = h + BTC, *heads = a + BTC, *m = heads + BTC;

    attn_rng local;
    if (p->dropout_active && rng == NULL) {
        attn_rng_seed(&local, ATTN_TORCH_DEFAULT_SEED);
        rng = &local;
    }
    const float *wte = params, *wpe = params + (size_t)p->V * C;
    attn__embed(x, idx, wte, wpe, p->B, p->T, p->C);
    if (p->dropout_active) attn__dropout(x, BTC, p->cfg.dropout, rng);

    int rc = ATTN_OK, rows = (int)BT;
    size_t per_layer_attn = (size_t)p->B * (size_t)p->H * (size_t)p->T * (size_t)p->T;
    for (int l = 0; l < p->n_layer && rc == ATTN_OK; l++) {
        block_offsets o = block_at(p, l);
        if (out->hidden_states) memcpy(out->hidden_states + (size_t)l * BTC, x, BTC * sizeof *x);
        /* x = x + attn(ln_1(x)) */
        attn__layernorm(h, x, params + o.ln1_w, params + o.ln1_b, BT, p->C);
        /* the attention's parameters are not checked per call: a NaN there
         * reaches h, which is checked at the end */
        attn_inputs in = {.x = h, .params = params + o.attn, .pool = pool, .params_checked = 1};
        attn_outputs ao = {.context = a, .context_heads = heads};
        if (out->attn_weights) ao.weights = out->attn_weights + (size_t)l * per_layer_attn;
        if ((rc = attn_forward(&p->attn, &p->attn_plan, &in, rng, &ao, err))) {
            char field[64];
            snprintf(field, sizeof field, "h.%d.attn", l);
            if (err) snprintf(err->field, sizeof err->field, "%s", field);
            break;
        }
        attn__add(x, a, BTC);
        /* x = x + mlp(ln_2(x)): drop(proj(gelu(fc(x)))) */
        attn__layernorm(h, x, params + o.ln2_w, params + o.ln2_b, BT, p->C);
        attn__linear_args fc = {.y = m, .x = h, .rows = rows, .in = p->C, .out = 4 * p->C,
                                .w = params + o.fc_w, .bias = params + o.fc_b,
                                .gelu = (int)p->cfg.gelu};
        attn__linear_run(pool, &fc); /* gelu(fc(x)), block by block */
        attn__linear(pool, a, m, rows, 4 * p->C, p->C, params + o.proj_w, 0, params + o.proj_b);
        if (p->dropout_active) attn__dropout(a, BTC, p->cfg.dropout, rng);
        attn__add(x, a, BTC);
    }
    if (rc == ATTN_OK) {
        const float *ln_f = params + top_size(p) + (size_t)p->n_layer * p->n_layer_params;
        attn__layernorm(h, x, ln_f, ln_f + C, BT, p->C);
        if (out->hidden_states)
            memcpy(out->hidden_states + (size_t)p->n_layer * BTC, h, BTC * sizeof *h);
        /* lm_head (tied to wte); last_only: rows T-1, 2T-1, ... (stride T*C) */
        attn__linear_args head = {.y = out->logits, .x = h, .rows = rows, .in = p->C, .out = p->V,
                                  .w = wte, .gelu = ATTN__NO_GELU};
        if (out->last_only) {
            head.x = h + (size_t)(p->T - 1) * C;
            head.ldx = p->T * p->C;
            head.rows = p->B;
        }
        int bad_logits = 0; /* checked by the blocks of lm_head */
        head.nonfinite = &bad_logits;
        if (out->logits) attn__linear_run(pool, &head);
        if ((rc = attn__cancel_check(err)) == ATTN_OK && (!attn__all_finite(h, BTC) || bad_logits))
            rc = attn__fail(err, ATTN_ERR_NONFINITE, "params",
                            "the result overflowed float32: parameters are too large");
    }
    free(work);
    return rc;
}
