/* params.c - the state_dict of each module: names, shapes, PyTorch's
 * initialisation draw for draw, the typed views forward.c reads the weights
 * through, the values of constant buffers, and checks of given parameters.
 *
 * build_layout is the one module-specific part: each entry says its name,
 * shape, initialisation and the role it plays in the forward pass (which
 * view pointer it fills), so a module whose projections are Linear layers
 * (separate or fused into one [3*out][in] matrix) needs no code elsewhere. */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef enum {
    INIT_RAND,       /* torch.rand: U[0, 1) (SelfAttention_v1) */
    INIT_KAIMING,    /* nn.Linear weight: kaiming_uniform_(a=sqrt(5)) */
    INIT_BIAS,       /* nn.Linear bias: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) */
    INIT_XAVIER,     /* xavier_uniform_ (torch.nn.MultiheadAttention in_proj) */
    INIT_ZERO,       /* drawn as a Linear bias, then zeroed (torch out_proj.bias) */
    INIT_TRIU,       /* buffer torch.triu(ones, diagonal=1): 1 = masked */
    INIT_TRIL,       /* buffer torch.tril(ones): 1 = allowed (gpt2_min.py "bias") */
} init_kind;

/* Which pointer of attn__param_views an entry fills. A fused entry (QKV)
 * holds the query, key and value tensors as three equal row blocks. */
typedef enum {
    ROLE_NONE,       /* buffers: forward does not read them */
    ROLE_W_Q, ROLE_W_K, ROLE_W_V, ROLE_W_QKV,
    ROLE_B_Q, ROLE_B_K, ROLE_B_V, ROLE_B_QKV,
    ROLE_W_OUT, ROLE_B_OUT,
} role;

typedef struct {
    const char *name;
    int rank;
    int shape[4];
    init_kind init;
    int fan_in;      /* INIT_BIAS */
    role role;
} entry;

/* The entries of one group (the whole module, or one head of the wrapper). */
typedef struct {
    entry e[10];
    int n;
    int groups;      /* ATTN_MOD_HEAD_MODULES: one group per head, named "heads.<h>." */
    int w_in_out;    /* weights stored [in][out] (SelfAttention_v1's raw matrices) */
    int reset_order; /* torch.nn.MultiheadAttention: out_proj drawn first (see init) */
} layout;

static void add(layout *lay, const char *name, int rank, int d0, int d1, init_kind init,
                int fan_in, role r) {
    entry *e = &lay->e[lay->n++];
    *e = (entry){.name = name, .rank = rank, .shape = {d0, d1, 1, 1}, .init = init,
                 .fan_in = fan_in, .role = r};
}

/* nn.Linear(in, out, bias): weight [out][in], then bias [out]. */
static void add_linear(layout *lay, const char *w, const char *b, int in, int out, int bias,
                       role rw, role rb) {
    add(lay, w, 2, out, in, INIT_KAIMING, in, rw);
    if (bias) add(lay, b, 1, out, 0, INIT_BIAS, in, rb);
}

/* The state_dict of each module, in PyTorch's order: the one module-specific
 * part of this file. */
static void build_layout(const attn_config *c, const attn_plan *p, layout *lay) {
    const attn_module_info *mod = attn_module_get(c->module);
    int din = c->d_in, dout = c->d_out, cl = c->context_length ? c->context_length : c->tokens;
    *lay = (layout){.groups = mod->flags & ATTN_MOD_HEAD_MODULES ? p->H : 1};
    switch (c->module) {
    case ATTN_SELF_V1:
        add(lay, "W_query", 2, din, dout, INIT_RAND, 0, ROLE_W_Q);
        add(lay, "W_key", 2, din, dout, INIT_RAND, 0, ROLE_W_K);
        add(lay, "W_value", 2, din, dout, INIT_RAND, 0, ROLE_W_V);
        lay->w_in_out = 1;
        break;
    case ATTN_SELF_V2: case ATTN_CAUSAL: case ATTN_MHA_WRAPPER: case ATTN_MHA:
        /* The modules that take context_length register a triu "mask" of
         * that size. A module's own buffers come before its children's
         * parameters in state_dict(); buffers draw nothing, so the draw
         * order is unchanged. */
        if (mod->context_name) add(lay, "mask", 2, cl, cl, INIT_TRIU, 0, ROLE_NONE);
        add_linear(lay, "W_query.weight", "W_query.bias", din, dout, c->bias, ROLE_W_Q, ROLE_B_Q);
        add_linear(lay, "W_key.weight", "W_key.bias", din, dout, c->bias, ROLE_W_K, ROLE_B_K);
        add_linear(lay, "W_value.weight", "W_value.bias", din, dout, c->bias, ROLE_W_V, ROLE_B_V);
        if (mod->flags & ATTN_MOD_OUT_PROJ)
            add_linear(lay, "out_proj.weight", "out_proj.bias", dout, dout, 1, ROLE_W_OUT,
                       ROLE_B_OUT);
        break;
    case ATTN_GPT2:
        add(lay, "bias", 4, 1, 1, INIT_TRIL, 0, ROLE_NONE);
        lay->e[0].shape[2] = lay->e[0].shape[3] = cl;
        add_linear(lay, "c_attn.weight", "c_attn.bias", din, 3 * din, 1, ROLE_W_QKV, ROLE_B_QKV);
        add_linear(lay, "c_proj.weight", "c_proj.bias", din, din, 1, ROLE_W_OUT, ROLE_B_OUT);
        break;
    case ATTN_TORCH_MHA:
        if (p->kv_in_width[0] == din && p->kv_in_width[1] == din) {
            add(lay, "in_proj_weight", 2, 3 * din, din, INIT_XAVIER, 0, ROLE_W_QKV);
        } else {
            add(lay, "q_proj_weight", 2, din, din, INIT_XAVIER, 0, ROLE_W_Q);
            add(lay, "k_proj_weight", 2, din, p->kv_in_width[0], INIT_XAVIER, 0, ROLE_W_K);
            add(lay, "v_proj_weight", 2, din, p->kv_in_width[1], INIT_XAVIER, 0, ROLE_W_V);
        }
        if (c->bias) add(lay, "in_proj_bias", 1, 3 * din, 0, INIT_ZERO, 0, ROLE_B_QKV);
        add(lay, "out_proj.weight", 2, din, din, INIT_KAIMING, din, ROLE_W_OUT);
        if (c->bias) add(lay, "out_proj.bias", 1, din, 0, INIT_ZERO, din, ROLE_B_OUT);
        lay->reset_order = 1;
        break;
    default: /* simple and SDPA have no parameters */
        break;
    }
}

static size_t entry_count(const entry *e) {
    size_t n = 1;
    for (int d = 0; d < e->rank; d++) n *= (size_t)e->shape[d];
    return n;
}

static attn_buffer entry_buffer(const entry *e) {
    return e->init == INIT_TRIU ? ATTN_BUFFER_TRIU
           : e->init == INIT_TRIL ? ATTN_BUFFER_TRIL
                                  : ATTN_BUFFER_NONE;
}

int attn__param_layout(const attn_config *cfg, attn_plan *plan, attn_error *err) {
    layout lay;
    build_layout(cfg, plan, &lay);
    size_t group = 0;
    for (int i = 0; i < lay.n; i++) {
        size_t n = 1;
        for (int d = 0; d < lay.e[i].rank; d++) {
            if (!attn__mul(n, (size_t)lay.e[i].shape[d], &n))
                return attn__fail(err, ATTN_ERR_RANGE, lay.e[i].name,
                                  "parameter %s would exceed %zu elements", lay.e[i].name,
                                  (size_t)ATTN_MAX_ELEMENTS);
        }
        if (group > ATTN_MAX_ELEMENTS - n)
            return attn__fail(err, ATTN_ERR_RANGE, "params", "the parameters are too large");
        group += n;
    }
    if (!attn__mul(group, (size_t)lay.groups, &plan->n_params))
        return attn__fail(err, ATTN_ERR_RANGE, "params", "the parameters are too large");
    if ((size_t)lay.n * (size_t)lay.groups > (size_t)INT32_MAX)
        return attn__fail(err, ATTN_ERR_RANGE, "num_heads", "too many parameter tensors");
    plan->param_count = lay.n * lay.groups;
    return ATTN_OK;
}

int attn_param_get(const attn_config *cfg, const attn_plan *plan, int index, attn_param *out) {
    if (cfg == NULL || plan == NULL || out == NULL || index < 0 || index >= plan->param_count)
        return ATTN_ERR_ARG;
    layout lay;
    build_layout(cfg, plan, &lay);
    int group = index / lay.n, k = index % lay.n;
    size_t group_size = plan->n_params / (size_t)lay.groups;
    size_t offset = group_size * (size_t)group;
    for (int i = 0; i < k; i++) offset += entry_count(&lay.e[i]);
    const entry *e = &lay.e[k];
    *out = (attn_param){.rank = e->rank, .offset = offset, .count = entry_count(e),
                        .buffer = entry_buffer(e), .byte_offset = offset * sizeof(float)};
    memcpy(out->shape, e->shape, sizeof out->shape);
    if (attn_module_has(cfg->module, ATTN_MOD_HEAD_MODULES))
        snprintf(out->name, sizeof out->name, "heads.%d.%s", group, e->name);
    else
        snprintf(out->name, sizeof out->name, "%s", e->name);
    return ATTN_OK;
}

/* ---- typed views --------------------------------------------------------- */

static void bind(attn__param_views *v, const entry *e, const float *x) {
    size_t third = entry_count(e) / 3;
    switch (e->role) {
    case ROLE_W_Q: v->w_query = x; break;
    case ROLE_W_K: v->w_key = x; break;
    case ROLE_W_V: v->w_value = x; break;
    case ROLE_W_QKV: v->w_query = x, v->w_key = x + third, v->w_value = x + 2 * third; break;
    case ROLE_B_Q: v->b_query = x; break;
    case ROLE_B_K: v->b_key = x; break;
    case ROLE_B_V: v->b_value = x; break;
    case ROLE_B_QKV: v->b_query = x, v->b_key = x + third, v->b_value = x + 2 * third; break;
    case ROLE_W_OUT: v->out_proj_w = x; break;
    case ROLE_B_OUT: v->out_proj_b = x; break;
    case ROLE_NONE: break;
    }
}

void attn__param_views_make(const attn_config *cfg, const attn_plan *plan, const float *params,
                            attn__param_views *v) {
    layout lay;
    build_layout(cfg, plan, &lay);
    *v = (attn__param_views){.w_in_out = lay.w_in_out};
    if (params == NULL) return;
    const float *x = params;
    for (int i = 0; i < lay.n; i++) {
        bind(v, &lay.e[i], x);
        x += entry_count(&lay.e[i]);
    }
    if (attn_module_has(cfg->module, ATTN_MOD_HEAD_MODULES)) v->head_stride = (size_t)(x - params);
}

/* ---- buffers --------------------------------------------------------------- */

float attn_param_buffer_value(const attn_param *p, int row, int col) {
    switch (p->buffer) {
    case ATTN_BUFFER_TRIU: return (float)(col > row);
    case ATTN_BUFFER_TRIL: return (float)(col <= row);
    default: return 0.0f;
    }
}

void attn_param_buffer_fill(const attn_param *p, float *x) {
    int n = p->shape[p->rank - 1];
    for (int r = 0; r < n; r++)
        for (int c = 0; c < n; c++)
            x[(size_t)r * (size_t)n + (size_t)c] = attn_param_buffer_value(p, r, c);
}

/* ---- initialisation --------------------------------------------------- */

static void fill_uniform(float *x, size_t n, attn_rng *rng, double bound) {
    attn_rng_uniform_fill(rng, x, n, (float)-bound, (float)bound);
}

/* One entry, drawing exactly what torch.nn.init draws (in double, as Python). */
static void init_entry(float *x, const entry *e, attn_rng *rng) {
    size_t n = entry_count(e);
    switch (e->init) {
    case INIT_RAND:
        attn_rng_uniform_fill(rng, x, n, 0.0f, 1.0f);
        break;
    case INIT_KAIMING: {
        double a = sqrt(5.0);
        double gain = sqrt(2.0 / (1.0 + a * a));
        double std = gain / sqrt((double)e->shape[1]);
        fill_uniform(x, n, rng, sqrt(3.0) * std);
        break;
    }
    case INIT_BIAS: case INIT_ZERO:
        fill_uniform(x, n, rng, 1.0 / sqrt((double)e->fan_in));
        break;
    case INIT_XAVIER: {
        double std = 1.0 * sqrt(2.0 / (double)(e->shape[0] + e->shape[1]));
        fill_uniform(x, n, rng, sqrt(3.0) * std);
        break;
    }
    case INIT_TRIU: case INIT_TRIL: {
        attn_param p = {.rank = e->rank, .buffer = entry_buffer(e)};
        memcpy(p.shape, e->shape, sizeof p.shape);
        attn_param_buffer_fill(&p, x);
        break;
    }
    }
}

int attn_params_init(const attn_config *cfg, const attn_plan *plan, float *params,
                     attn_rng *rng, attn_error *err) {
    if (cfg == NULL || plan == NULL || rng == NULL || (params == NULL && plan->n_params))
        return attn__fail(err, ATTN_ERR_ARG, "params", "config, plan, params and rng are required");
    layout lay;
    build_layout(cfg, plan, &lay);
    size_t offsets[10], off = 0;
    for (int g = 0; g < lay.groups; g++) {
        for (int i = 0; i < lay.n; i++) {
            offsets[i] = off;
            off += entry_count(&lay.e[i]);
        }
        if (!lay.reset_order) {
            for (int i = 0; i < lay.n; i++) init_entry(params + offsets[i], &lay.e[i], rng);
            continue;
        }
        /* torch.nn.MultiheadAttention: out_proj is a Linear built (and drawn)
         * in __init__; _reset_parameters then draws the input projections
         * with xavier_uniform_ and zeroes both biases. */
        for (int i = 0; i < lay.n; i++)
            if (lay.e[i].role == ROLE_W_OUT || lay.e[i].role == ROLE_B_OUT)
                init_entry(params + offsets[i], &lay.e[i], rng);
        for (int i = 0; i < lay.n; i++)
            if (lay.e[i].init == INIT_XAVIER) init_entry(params + offsets[i], &lay.e[i], rng);
        for (int i = 0; i < lay.n; i++)
            if (lay.e[i].init == INIT_ZERO)
                memset(params + offsets[i], 0, entry_count(&lay.e[i]) * sizeof(float));
    }
    return ATTN_OK;
}

int attn_params_check(const attn_config *cfg, const attn_plan *plan, const float *params,
                      attn_error *err) {
    if (cfg == NULL || plan == NULL || (params == NULL && plan->n_params))
        return attn__fail(err, ATTN_ERR_ARG, "params", "config, plan and params are required");
    for (int i = 0; i < plan->param_count; i++) {
        attn_param p;
        attn_param_get(cfg, plan, i, &p);
        const float *x = params + p.offset;
        char field[128];
        snprintf(field, sizeof field, "state_dict.%s", p.name);
        if (!attn__all_finite(x, p.count))
            return attn__fail(err, ATTN_ERR_NONFINITE, field, "%s holds NaN or infinity", p.name);
        if (!p.buffer) continue;
        int n = p.shape[p.rank - 1], lower = p.buffer == ATTN_BUFFER_TRIL;
        for (int r = 0; r < n; r++)
            for (int c = 0; c < n; c++) {
                float want = attn_param_buffer_value(&p, r, c);
                if (x[(size_t)r * (size_t)n + (size_t)c] != want)
                    return attn__fail(err, ATTN_ERR_ARG, field,
                                      "%s[%d][%d] is %g, the module's buffer holds %g "
                                      "(torch.%s(ones)%s)",
                                      p.name, r, c, (double)x[(size_t)r * (size_t)n + (size_t)c],
                                      (double)want, lower ? "tril" : "triu",
                                      lower ? "" : ", diagonal=1");
            }
    }
    return ATTN_OK;
}
