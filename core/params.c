/* params.c - the state_dict of each module: names, shapes, PyTorch's
 * initialisation draw for draw, and checks of given parameters. */
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

typedef struct {
    const char *name;
    int rank;
    int shape[4];
    init_kind init;
    int fan_in;      /* INIT_BIAS */
} entry;

/* The entries of one group (the whole module, or one head of the wrapper). */
typedef struct {
    entry e[10];
    int n;
    int groups;
} layout;

static void add(layout *lay, const char *name, int rank, int d0, int d1, init_kind init, int fan_in) {
    entry *e = &lay->e[lay->n++];
    *e = (entry){.name = name, .rank = rank, .shape = {d0, d1, 1, 1}, .init = init, .fan_in = fan_in};
}

static void add_linear(layout *lay, const char *w, const char *b, int in, int out, int bias) {
    add(lay, w, 2, out, in, INIT_KAIMING, in);
    if (bias) add(lay, b, 1, out, 0, INIT_BIAS, in);
}

static void build_layout(const attn_config *c, const attn_plan *p, layout *lay) {
    int din = c->d_in, dout = c->d_out, cl = c->context_length ? c->context_length : c->tokens;
    *lay = (layout){.groups = 1};
    switch (c->module) {
    case ATTN_SELF_V1:
        add(lay, "W_query", 2, din, dout, INIT_RAND, 0);
        add(lay, "W_key", 2, din, dout, INIT_RAND, 0);
        add(lay, "W_value", 2, din, dout, INIT_RAND, 0);
        break;
    case ATTN_SELF_V2: case ATTN_CAUSAL: case ATTN_MHA_WRAPPER: case ATTN_MHA:
        /* A module's own buffers come before its children's parameters in
         * state_dict(); buffers draw nothing, so the draw order is unchanged. */
        if (c->module != ATTN_SELF_V2) add(lay, "mask", 2, cl, cl, INIT_TRIU, 0);
        add_linear(lay, "W_query.weight", "W_query.bias", din, dout, c->bias);
        add_linear(lay, "W_key.weight", "W_key.bias", din, dout, c->bias);
        add_linear(lay, "W_value.weight", "W_value.bias", din, dout, c->bias);
        if (c->module == ATTN_MHA) add_linear(lay, "out_proj.weight", "out_proj.bias", dout, dout, 1);
        if (c->module == ATTN_MHA_WRAPPER) lay->groups = p->H;
        break;
    case ATTN_GPT2:
        add(lay, "bias", 4, 1, 1, INIT_TRIL, 0);
        lay->e[0].shape[2] = lay->e[0].shape[3] = cl;
        add_linear(lay, "c_attn.weight", "c_attn.bias", din, 3 * din, 1);
        add_linear(lay, "c_proj.weight", "c_proj.bias", din, din, 1);
        break;
    case ATTN_TORCH_MHA:
        if (p->kv_in_width[0] == din && p->kv_in_width[1] == din) {
            add(lay, "in_proj_weight", 2, 3 * din, din, INIT_XAVIER, 0);
        } else {
            add(lay, "q_proj_weight", 2, din, din, INIT_XAVIER, 0);
            add(lay, "k_proj_weight", 2, din, p->kv_in_width[0], INIT_XAVIER, 0);
            add(lay, "v_proj_weight", 2, din, p->kv_in_width[1], INIT_XAVIER, 0);
        }
        if (c->bias) add(lay, "in_proj_bias", 1, 3 * din, 0, INIT_ZERO, 0);
        add(lay, "out_proj.weight", 2, din, din, INIT_KAIMING, din);
        if (c->bias) add(lay, "out_proj.bias", 1, din, 0, INIT_ZERO, din);
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
                        .is_buffer = e->init == INIT_TRIU || e->init == INIT_TRIL};
    memcpy(out->shape, e->shape, sizeof out->shape);
    if (cfg->module == ATTN_MHA_WRAPPER)
        snprintf(out->name, sizeof out->name, "heads.%d.%s", group, e->name);
    else
        snprintf(out->name, sizeof out->name, "%s", e->name);
    return ATTN_OK;
}

/* ---- initialisation --------------------------------------------------- */

static void fill_uniform(float *x, size_t n, attn_rng *rng, double bound) {
    float from = (float)-bound, to = (float)bound;
    for (size_t i = 0; i < n; i++) x[i] = attn_rng_uniform(rng, from, to);
}

static void fill_buffer(float *x, const entry *e) {
    int n = e->shape[e->rank - 1];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            x[(size_t)i * (size_t)n + (size_t)j] =
                e->init == INIT_TRIU ? (float)(j > i) : (float)(j <= i);
}

/* One entry, drawing exactly what torch.nn.init draws (in double, as Python). */
static void init_entry(float *x, const entry *e, attn_rng *rng) {
    size_t n = entry_count(e);
    switch (e->init) {
    case INIT_RAND:
        for (size_t i = 0; i < n; i++) x[i] = attn_rng_uniform(rng, 0.0f, 1.0f);
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
    case INIT_TRIU: case INIT_TRIL:
        fill_buffer(x, e);
        break;
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
        if (cfg->module != ATTN_TORCH_MHA) {
            for (int i = 0; i < lay.n; i++) init_entry(params + offsets[i], &lay.e[i], rng);
            continue;
        }
        /* torch.nn.MultiheadAttention: out_proj is a Linear built (and drawn)
         * in __init__; _reset_parameters then draws the input projections
         * with xavier_uniform_ and zeroes both biases. */
        for (int i = 0; i < lay.n; i++)
            if (strncmp(lay.e[i].name, "out_proj.", 9) == 0)
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
        char field[64];
        snprintf(field, sizeof field, "state_dict.%s", p.name);
        if (!attn__all_finite(x, p.count))
            return attn__fail(err, ATTN_ERR_NONFINITE, field, "%s holds NaN or infinity", p.name);
        if (!p.is_buffer) continue;
        int n = p.shape[p.rank - 1];
        int lower = strcmp(p.name, "bias") == 0; /* gpt2_min.py: tril, 1 = allowed */
        for (int r = 0; r < n; r++)
            for (int c = 0; c < n; c++) {
                float want = lower ? (float)(c <= r) : (float)(c > r);
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
