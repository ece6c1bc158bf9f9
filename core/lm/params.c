/* params.c - a model's state_dict from its row's tables (core/arch/): the
 * entries in PyTorch's order with the row's names and shapes, where each
 * tensor of each role lives (in the buffer's bytes: the weight matrices may
 * be half-size), the construction after torch.manual_seed draw for draw,
 * the checks of given parameters, and the dropout calls. */
#include "core/half.h"
#include "core/lm/lm.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ==== Layout ============================================================== */

size_t attn__dim_size(const attn_lm_plan *p, attn__dim d) {
    switch (d) {
    case ATTN__DIM_V: return (size_t)p->V;
    case ATTN__DIM_CTX: return (size_t)p->cfg.context;
    case ATTN__DIM_C: return (size_t)p->C;
    case ATTN__DIM_F: return (size_t)p->F;
    case ATTN__DIM_QD: return (size_t)p->QD;
    case ATTN__DIM_KVD: return (size_t)p->KVD;
    case ATTN__DIM_QKV: return (size_t)p->QD + 2 * (size_t)p->KVD;
    case ATTN__DIM_D: return (size_t)p->D;
    case ATTN__DIM_TYPES: return (size_t)p->cfg.type_vocab;
    default: return 1;
    }
}

int attn__tensor_present(const attn_lm_spec *s, const attn__tensor *t) {
    switch (t->when) {
    case ATTN__IF_QKV_BIAS: return s->qkv_bias;
    case ATTN__IF_O_BIAS: return s->o_bias;
    case ATTN__IF_MLP_BIAS: return s->mlp_bias;
    case ATTN__IF_UNTIED: return !s->tied;
    case ATTN__IF_QK_NORM: return s->qk_norm;
    case ATTN__IF_TYPES: return s->type_vocab > 0;
    case ATTN__IF_MLM: return s->mlm_head;
    case ATTN__IF_POOLER: return s->pooler;
    default: return 1;
    }
}

/* Elements of t (its dims are within the plan's checks). */
static size_t tensor_count(const attn_lm_plan *p, const attn__tensor *t) {
    size_t n = 1;
    for (int d = 0; d < t->rank; d++) n *= attn__dim_size(p, t->dims[d]);
    return n;
}

/* How plan p's buffer holds t: a weight matrix (a rank-2 parameter, not a
 * buffer) in the weights' dtype, anything else float32. */
static attn_dtype tensor_dtype(const attn_lm_plan *p, const attn__tensor *t) {
    int matrix = t->rank == 2 && t->init != ATTN__INIT_TRIL && t->init != ATTN__INIT_TRIU;
    return matrix ? p->cfg.weights_dtype : ATTN_DTYPE_F32;
}

/* Bytes t takes in the buffer: rounded up to 4, so that every tensor
 * starts 4-byte aligned (float32 tensors exactly where they always were). */
static size_t tensor_bytes(const attn_lm_plan *p, const attn__tensor *t) {
    return (tensor_count(p, t) * attn_dtype_size(tensor_dtype(p, t)) + 3) & ~(size_t)3;
}

static size_t table_size(const attn_lm_plan *p, const attn__tensor *t, int n, int bytes) {
    size_t sum = 0;
    for (int i = 0; i < n; i++)
        if (attn__tensor_present(&p->spec, &t[i]))
            sum += bytes ? tensor_bytes(p, &t[i]) : tensor_count(p, &t[i]);
    return sum;
}

void attn__layout_sizes(const attn_lm_plan *p, int bytes, size_t *top, size_t *block,
                        size_t *tail) {
    const attn__arch *a = attn__arch_get(p->cfg.arch);
    *top = table_size(p, a->layout->top, a->layout->n_top, bytes);
    *block = table_size(p, a->layout->block, a->layout->n_block, bytes);
    *tail = table_size(p, a->layout->tail, a->layout->n_tail, bytes);
}

int attn__block_entries(const attn_lm_plan *p) {
    const attn__arch *a = attn__arch_get(p->cfg.arch);
    int n = 0;
    const attn__layout *lay = a->layout;
    for (int i = 0; i < lay->n_block; i++) n += attn__tensor_present(&p->spec, &lay->block[i]);
    return n;
}

/* One entry of the state_dict: its table row, block (-1 outside), first
 * byte. */
typedef struct {
    const attn__tensor *t;
    int layer;
    size_t byte;
} entry;

/* Calls visit on every present entry in state_dict order; stops when it
 * returns nonzero and returns that. */
static int walk(const attn_lm_plan *p, int (*visit)(void *ctx, const entry *e), void *ctx) {
    const attn__arch *a = attn__arch_get(p->cfg.arch);
    entry e = {0};
    int rc = 0;
    for (int part = 0; part < 3 && rc == 0; part++) {
        const attn__layout *lay = a->layout;
        const attn__tensor *t = part == 0 ? lay->top : part == 1 ? lay->block : lay->tail;
        int n = part == 0 ? lay->n_top : part == 1 ? lay->n_block : lay->n_tail;
        int layers = part == 1 ? p->n_layer : 1;
        for (int l = 0; l < layers && rc == 0; l++)
            for (int i = 0; i < n && rc == 0; i++) {
                if (!attn__tensor_present(&p->spec, &t[i])) continue;
                e.t = &t[i], e.layer = part == 1 ? l : -1;
                rc = visit(ctx, &e);
                e.byte += tensor_bytes(p, &t[i]);
            }
    }
    return rc;
}

/* ==== Entries ============================================================= */

static void describe_entry(const attn_lm_plan *p, const entry *e, attn_param *out) {
    const attn__arch *a = attn__arch_get(p->cfg.arch);
    attn_dtype dtype = tensor_dtype(p, e->t);
    *out = (attn_param){.rank = e->t->rank, .offset = e->byte / attn_dtype_size(dtype),
                        .count = tensor_count(p, e->t),
                        .buffer = e->t->init == ATTN__INIT_TRIL   ? ATTN_BUFFER_TRIL
                                  : e->t->init == ATTN__INIT_TRIU ? ATTN_BUFFER_TRIU
                                                                  : ATTN_BUFFER_NONE,
                        .dtype = dtype, .byte_offset = e->byte};
    for (int d = 0; d < 4; d++) out->shape[d] = d < e->t->rank ? (int)attn__dim_size(p, e->t->dims[d]) : 1;
    char prefix[ATTN_PARAM_NAME_MAX] = "", full[2 * ATTN_PARAM_NAME_MAX];
    if (e->layer >= 0) snprintf(prefix, sizeof prefix, a->layout->block_prefix, e->layer);
    snprintf(full, sizeof full, "%s%s", prefix, e->t->name);
    snprintf(out->name, sizeof out->name, "%.*s", ATTN_PARAM_NAME_MAX - 1, full);
}

typedef struct {
    const attn_lm_plan *p;
    int want, at;
    attn_param *out;
} get_ctx;

static int get_visit(void *ctx, const entry *e) {
    get_ctx *g = ctx;
    if (g->at++ != g->want) return 0;
    describe_entry(g->p, e, g->out);
    return 1;
}

int attn_lm_param_get(const attn_lm_plan *p, int index, attn_param *out) {
    if (p == NULL || out == NULL || index < 0 || index >= p->param_count) return ATTN_ERR_ARG;
    get_ctx g = {p, index, 0, out};
    return walk(p, get_visit, &g) ? ATTN_OK : ATTN_ERR_ARG;
}

const char *attn_lm_tied_head_name(const attn_lm_plan *p) {
    const attn__arch *a = p ? attn__arch_get(p->cfg.arch) : NULL;
    return a && p->tied ? a->layout->tied_head : NULL;
}

const char *attn_lm_base_prefix(const attn_lm_plan *p) {
    const attn__arch *a = p ? attn__arch_get(p->cfg.arch) : NULL;
    return a ? a->layout->base_prefix : NULL;
}

int attn_lm_ignored_name(const attn_lm_plan *p, const char *name) {
    const attn__arch *a = p && name ? attn__arch_get(p->cfg.arch) : NULL;
    const char *base = a ? a->layout->base_prefix : NULL;
    size_t nb = base ? strlen(base) : 0;
    for (const char *const *n = a && a->layout->ignored ? a->layout->ignored : NULL; n && *n; n++)
        if (strcmp(*n, name) == 0 || (base && strncmp(*n, base, nb) == 0 && strcmp(*n + nb, name) == 0))
            return 1;
    return 0;
}

/* ==== Weights by role ===================================================== */

static void bind(const attn_lm_plan *p, const void *params, const attn__tensor *t, int n,
                 size_t at, attn__weights *v) {
    for (int i = 0; i < n; i++) {
        if (!attn__tensor_present(&p->spec, &t[i])) continue;
        v->w[t[i].role] = (const char *)params + at;
        at += tensor_bytes(p, &t[i]);
    }
}

void attn__model_weights(const attn_lm_plan *p, const void *params, attn__weights *v) {
    const attn__arch *a = attn__arch_get(p->cfg.arch);
    size_t top, block, tail;
    attn__layout_sizes(p, 1, &top, &block, &tail);
    *v = (attn__weights){0};
    bind(p, params, a->layout->top, a->layout->n_top, 0, v);
    bind(p, params, a->layout->tail, a->layout->n_tail, top + block * (size_t)p->n_layer, v);
    if (p->tied) v->w[ATTN__HEAD_W] = v->w[ATTN__TOK_EMB];
}

/* 1 if tensor b starts where a, of n values of size bytes each, ends. */
static int follows(const void *a, size_t n, size_t size, const void *b) {
    return a && b && (const char *)a + n * size == (const char *)b;
}

void attn__block_weights(const attn_lm_plan *p, const void *params, int l, attn__weights *v) {
    const attn__arch *a = attn__arch_get(p->cfg.arch);
    size_t top, block, tail;
    attn__layout_sizes(p, 1, &top, &block, &tail);
    *v = (attn__weights){0};
    bind(p, params, a->layout->block, a->layout->n_block, top + block * (size_t)l, v);
    const void **w = v->w;
    if (w[ATTN__QKV_W]) { /* one tensor already */
        v->qkv_w = w[ATTN__QKV_W], v->qkv_b = w[ATTN__QKV_B];
        return;
    }
    size_t qd = (size_t)p->QD * (size_t)p->C, kvd = (size_t)p->KVD * (size_t)p->C;
    size_t ws = attn_dtype_size(p->cfg.weights_dtype), fs = sizeof(float);
    int w_one = follows(w[ATTN__Q_W], qd, ws, w[ATTN__K_W]) &&
                follows(w[ATTN__K_W], kvd, ws, w[ATTN__V_W]);
    int b_one = w[ATTN__Q_B] == NULL || (follows(w[ATTN__Q_B], (size_t)p->QD, fs, w[ATTN__K_B]) &&
                                         follows(w[ATTN__K_B], (size_t)p->KVD, fs, w[ATTN__V_B]));
    if (w_one && b_one) v->qkv_w = w[ATTN__Q_W], v->qkv_b = w[ATTN__Q_B];
}

/* ==== Construction ======================================================== */

typedef struct {
    const attn_lm_plan *p;
    float *params;
    attn_rng *rng;
    attn_normal_cache normal;
} init_ctx;

static void fill(float *x, size_t n, float v) {
    for (size_t i = 0; i < n; i++) x[i] = v;
}

/* What torch.nn.init draws, in double as Python computes the bounds. */
static int init_visit(void *ctx, const entry *e) {
    init_ctx *c = ctx;
    float *x = c->params + e->byte / sizeof(float);
    size_t n = tensor_count(c->p, e->t);
    double bound;
    switch (e->t->init) {
    case ATTN__INIT_NORMAL: attn_rng_normal_fill(c->rng, &c->normal, x, n, 0.0, 1.0); break;
    case ATTN__INIT_KAIMING: /* kaiming_uniform_(a=sqrt(5)) on [out][in] */
        bound = sqrt(3.0) * (sqrt(2.0 / (1.0 + sqrt(5.0) * sqrt(5.0))) /
                             sqrt((double)attn__dim_size(c->p, e->t->dims[1])));
        attn_rng_uniform_fill(c->rng, x, n, (float)-bound, (float)bound);
        break;
    case ATTN__INIT_BIAS:
        bound = 1.0 / sqrt((double)attn__dim_size(c->p, e->t->fan_in));
        attn_rng_uniform_fill(c->rng, x, n, (float)-bound, (float)bound);
        break;
    case ATTN__INIT_ONES: fill(x, n, 1.0f); break;
    case ATTN__INIT_ZEROS: fill(x, n, 0.0f); break;
    case ATTN__INIT_TRIL: case ATTN__INIT_TRIU: {
        attn_param prm;
        describe_entry(c->p, e, &prm);
        attn_param_buffer_fill(&prm, x);
        break;
    }
    }
    return 0;
}

int attn_lm_params_init(const attn_lm_plan *p, float *params, attn_rng *rng, attn_error *err) {
    if (p == NULL || params == NULL || rng == NULL)
        return attn__fail(err, ATTN_ERR_ARG, "params", "plan, params and rng are required");
    const attn__arch *a = attn__arch_get(p->cfg.arch);
    if (!a->seeded)
        return attn__fail(err, ATTN_ERR_ARG, "init", "%s is not built from a seed here: give its "
                          "state_dict or load its checkpoint", a->name);
    if (p->cfg.weights_dtype != ATTN_DTYPE_F32)
        return attn__fail(err, ATTN_ERR_ARG, "weights_dtype", "a model built from a seed holds "
                          "float32 weights: build it so, then convert it (attn_lm_params_convert)");
    init_ctx c = {.p = p, .params = params, .rng = rng};
    walk(p, init_visit, &c);
    /* a tied head (GPT2's lm_head = nn.Linear(C, V, bias=False)) draws its
     * weight before the model ties it: V * C draws, values thrown away */
    size_t VC = (size_t)p->V * (size_t)p->C;
    for (size_t i = 0; p->tied && a->tied_head_draws && i < VC; i++) (void)attn_rng_u32(rng);
    return ATTN_OK;
}

/* ==== Checks ============================================================== */

typedef struct {
    const attn_lm_plan *p;
    const void *params;
    attn_error *err;
} check_ctx;

static int check_buffer(const attn_param *e, const float *x, const char *field, attn_error *err) {
    int n = e->shape[e->rank - 1], tril = e->buffer == ATTN_BUFFER_TRIL;
    for (int r = 0; r < n; r++)
        for (int c = 0; c < n; c++) {
            float v = x[(size_t)r * (size_t)n + (size_t)c];
            if (v != attn_param_buffer_value(e, r, c))
                return attn__fail(err, ATTN_ERR_ARG, field,
                                  "%s[%d][%d] is %g, the module's buffer holds %s", e->name, r, c,
                                  (double)v, tril ? "torch.tril(ones)" : "torch.triu(ones, diagonal=1)");
        }
    return ATTN_OK;
}

static int check_visit(void *ctx, const entry *en) {
    check_ctx *c = ctx;
    attn_param e;
    describe_entry(c->p, en, &e);
    const void *x = (const char *)c->params + e.byte_offset;
    char field[128];
    snprintf(field, sizeof field, "state_dict.%s", e.name);
    int finite = e.dtype == ATTN_DTYPE_F32 ? attn__all_finite(x, e.count)
                                           : attn__half_finite(e.dtype, x, e.count);
    if (!finite)
        return attn__fail(c->err, ATTN_ERR_NONFINITE, field, "%s holds NaN or infinity", e.name);
    return e.buffer ? check_buffer(&e, x, field, c->err) : ATTN_OK;
}

int attn_lm_params_check(const attn_lm_plan *p, const void *params, attn_error *err) {
    if (p == NULL || params == NULL)
        return attn__fail(err, ATTN_ERR_ARG, "params", "plan and params are required");
    check_ctx c = {p, params, err};
    return walk(p, check_visit, &c);
}

/* ==== Dropout calls ======================================================= */

size_t attn__dropout_offset(const attn_lm_plan *p, int l) {
    size_t BTC = (size_t)p->B * (size_t)p->T * (size_t)p->C;
    size_t per = 2 * BTC;
    if (p->spec.weight_dropout) per += (size_t)p->B * (size_t)p->H * (size_t)p->T * (size_t)p->T;
    return BTC + (size_t)l * per;
}

int attn_lm_dropout_count(const attn_lm_plan *p) {
    return p ? 1 + (2 + p->spec.weight_dropout) * p->n_layer : 0;
}

int attn_lm_dropout_get(const attn_lm_plan *p, int index, attn_lm_dropout *out) {
    if (p == NULL || out == NULL || index < 0 || index >= attn_lm_dropout_count(p))
        return ATTN_ERR_ARG;
    const attn__arch *a = attn__arch_get(p->cfg.arch);
    size_t BTC = (size_t)p->B * (size_t)p->T * (size_t)p->C;
    size_t BHTT = (size_t)p->B * (size_t)p->H * (size_t)p->T * (size_t)p->T;
    *out = (attn_lm_dropout){.rank = 3, .shape = {p->B, p->T, p->C, 1}};
    if (index == 0) {
        snprintf(out->name, sizeof out->name, "%s", a->dropout.emb);
        return ATTN_OK;
    }
    int per = 2 + p->spec.weight_dropout, l = (index - 1) / per, k = (index - 1) % per;
    if (!p->spec.weight_dropout) k++; /* 0: weights, 1: after the attention, 2: after the MLP */
    const char *names[3] = {a->dropout.weights, a->dropout.attn_out, a->dropout.mlp_out};
    char prefix[32];
    snprintf(prefix, sizeof prefix, a->layout->block_prefix, l);
    snprintf(out->name, sizeof out->name, "%s%s", prefix, names[k]);
    out->offset = attn__dropout_offset(p, l) + (k == 0 ? 0 : p->spec.weight_dropout ? BHTT : 0) +
                  (k == 2 ? BTC : 0);
    if (k == 0) out->rank = 4, out->shape[1] = p->H, out->shape[2] = out->shape[3] = p->T;
    return ATTN_OK;
}
