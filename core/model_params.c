/* model_params.c - a whole model's state_dict: its entries in PyTorch's
 * order with the family's names, where each tensor the forward pass reads
 * lives (the typed views of model.h), the construction after
 * torch.manual_seed draw for draw, and the checks of given parameters.
 *
 * Each family's layout is one table (layouts[] below): the names of the
 * embeddings, of the entries of a block in state_dict order (the attention
 * entry stands for every entry of the attention module's own layout,
 * attn_param_get) and of the final LayerNorm and head.
 */
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* What each entry of a block is. */
typedef enum {
    R_LN1_W, R_LN1_B, R_ATTN, R_LN2_W, R_LN2_B, R_FC_W, R_FC_B, R_PROJ_W, R_PROJ_B, R_ROLES
} block_role;

typedef struct {
    block_role role;
    const char *name;  /* after the block's prefix; R_ATTN: the attention's prefix */
} block_entry;

typedef struct {
    const char *top[2];        /* token and position embeddings */
    const char *block_prefix;  /* printf format of a block's prefix */
    block_entry block[R_ROLES];
    const char *tail[3];       /* final LayerNorm weight and bias, the head (untied only) */
} family_layout;

static const family_layout layouts[ATTN_FAMILY_COUNT] = {
    [ATTN_FAMILY_GPT2] = {
        {"wte.weight", "wpe.weight"}, "h.%d.",
        {{R_LN1_W, "ln_1.weight"}, {R_LN1_B, "ln_1.bias"}, {R_ATTN, "attn."},
         {R_LN2_W, "ln_2.weight"}, {R_LN2_B, "ln_2.bias"}, {R_FC_W, "mlp.fc.weight"},
         {R_FC_B, "mlp.fc.bias"}, {R_PROJ_W, "mlp.proj.weight"}, {R_PROJ_B, "mlp.proj.bias"}},
        {"ln_f.weight", "ln_f.bias", NULL}},
    [ATTN_FAMILY_GPTMODEL] = {
        {"tok_emb.weight", "pos_emb.weight"}, "trf_blocks.%d.",
        {{R_ATTN, "att."}, {R_FC_W, "ff.layers.0.weight"}, {R_FC_B, "ff.layers.0.bias"},
         {R_PROJ_W, "ff.layers.2.weight"}, {R_PROJ_B, "ff.layers.2.bias"},
         {R_LN1_W, "norm1.scale"}, {R_LN1_B, "norm1.shift"}, {R_LN2_W, "norm2.scale"},
         {R_LN2_B, "norm2.shift"}},
        {"final_norm.scale", "final_norm.shift", "out_head.weight"}},
};

/* ==== Layout ============================================================== */

/* Rank and shape of a block entry other than the attention. */
static void role_shape(const attn_gpt2_plan *p, block_role r, int *rank, int shape[2]) {
    int C = p->C;
    *rank = 1, shape[0] = C, shape[1] = 1;
    if (r == R_FC_W) *rank = 2, shape[0] = 4 * C, shape[1] = C;
    if (r == R_FC_B) shape[0] = 4 * C;
    if (r == R_PROJ_W) *rank = 2, shape[0] = C, shape[1] = 4 * C;
}

static size_t role_count(const attn_gpt2_plan *p, block_role r) {
    if (r == R_ATTN) return p->attn_plan.n_params;
    int rank, shape[2];
    role_shape(p, r, &rank, shape);
    return (size_t)shape[0] * (size_t)shape[1];
}

static size_t blocks_start(const attn_gpt2_plan *p) {
    return ((size_t)p->V + (size_t)p->cfg.block_size) * (size_t)p->C;
}

static size_t block_start(const attn_gpt2_plan *p, int l) {
    return blocks_start(p) + (size_t)l * p->n_layer_params;
}

/* at[r]: where each role of block l starts, in floats into the buffer. */
static void block_offsets(const attn_gpt2_plan *p, int l, size_t at[R_ROLES]) {
    size_t o = block_start(p, l);
    for (int i = 0; i < R_ROLES; i++) {
        block_role r = layouts[p->family].block[i].role;
        at[r] = o;
        o += role_count(p, r);
    }
}

static void set_param(attn_param *out, const char *prefix, const char *name, int rank,
                      const int shape[2], size_t offset) {
    *out = (attn_param){.rank = rank, .shape = {shape[0], shape[1], 1, 1}, .offset = offset};
    char full[2 * ATTN_PARAM_NAME_MAX];
    snprintf(full, sizeof full, "%s%s", prefix, name);
    snprintf(out->name, sizeof out->name, "%.*s", ATTN_PARAM_NAME_MAX - 1, full);
    out->count = (size_t)shape[0] * (size_t)(rank > 1 ? shape[1] : 1);
}

/* Entry e of block l. */
static void block_param(const attn_gpt2_plan *p, int l, int e, attn_param *out) {
    const family_layout *lay = &layouts[p->family];
    char prefix[ATTN_PARAM_NAME_MAX];
    snprintf(prefix, sizeof prefix, lay->block_prefix, l);
    size_t at[R_ROLES];
    block_offsets(p, l, at);
    int na = p->attn_plan.param_count;
    for (int i = 0; i < R_ROLES; i++) {
        const block_entry *be = &lay->block[i];
        int span = be->role == R_ATTN ? na : 1;
        if (e >= span) {
            e -= span;
            continue;
        }
        if (be->role == R_ATTN) {
            attn_param ap;
            attn_param_get(&p->attn, &p->attn_plan, e, &ap);
            char full[3 * ATTN_PARAM_NAME_MAX];
            snprintf(full, sizeof full, "%s%s%s", prefix, be->name, ap.name);
            *out = ap;
            snprintf(out->name, sizeof out->name, "%.*s", ATTN_PARAM_NAME_MAX - 1, full);
            out->offset = at[R_ATTN] + ap.offset;
            return;
        }
        int rank, shape[2];
        role_shape(p, be->role, &rank, shape);
        set_param(out, prefix, be->name, rank, shape, at[be->role]);
        return;
    }
}

int attn_gpt2_param_get(const attn_gpt2_plan *p, int index, attn_param *out) {
    if (p == NULL || out == NULL || index < 0 || index >= p->param_count) return ATTN_ERR_ARG;
    const family_layout *lay = &layouts[p->family];
    int C = p->C, per = 8 + p->attn_plan.param_count;
    if (index < 2) {
        int shape[2] = {index ? p->cfg.block_size : p->V, C};
        set_param(out, "", lay->top[index], 2, shape, index ? (size_t)p->V * (size_t)C : 0);
        return ATTN_OK;
    }
    int k = index - 2;
    if (k < per * p->n_layer) {
        block_param(p, k / per, k % per, out);
        return ATTN_OK;
    }
    int which = k - per * p->n_layer;
    size_t at = block_start(p, p->n_layer) + (size_t)which * (size_t)C;
    int shape[2] = {which == 2 ? p->V : C, C};
    set_param(out, "", lay->tail[which], which == 2 ? 2 : 1, shape, at);
    return ATTN_OK;
}

/* ==== Views =============================================================== */

void attn__model_view_make(const attn_gpt2_plan *p, const float *params, attn__model_view *v) {
    const float *tail = params + block_start(p, p->n_layer);
    v->wte = params;
    v->wpe = params + (size_t)p->V * (size_t)p->C;
    v->lnf_w = tail;
    v->lnf_b = tail + p->C;
    v->head = p->tied ? params : tail + 2 * (size_t)p->C;
}

void attn__block_view_make(const attn_gpt2_plan *p, const float *params, int layer,
                           attn__block_view *v) {
    size_t at[R_ROLES];
    block_offsets(p, layer, at);
    attn__param_views a;
    attn__param_views_make(&p->attn, &p->attn_plan, params + at[R_ATTN], &a);
    size_t CC = (size_t)p->C * (size_t)p->C;
    *v = (attn__block_view){
        .ln1_w = params + at[R_LN1_W], .ln1_b = params + at[R_LN1_B],
        .ln2_w = params + at[R_LN2_W], .ln2_b = params + at[R_LN2_B],
        .wq = a.w_query, .wk = a.w_key, .wv = a.w_value,
        .bq = a.b_query, .bk = a.b_key, .bv = a.b_value,
        .wo = a.out_proj_w, .bo = a.out_proj_b,
        .fc_w = params + at[R_FC_W], .fc_b = params + at[R_FC_B],
        .proj_w = params + at[R_PROJ_W], .proj_b = params + at[R_PROJ_B]};
    int w_one = v->wk == v->wq + CC && v->wv == v->wk + CC;
    int b_one = v->bq == NULL || (v->bk == v->bq + p->C && v->bv == v->bk + p->C);
    if (w_one && b_one) v->wqkv = v->wq, v->bqkv = v->bq;
}

/* ==== Construction ======================================================== */

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

/* One block, in construction order: the attention's layers, the MLP's two,
 * the LayerNorms (no draws). */
static int init_block(const attn_gpt2_plan *p, float *params, int l, attn_rng *rng,
                      attn_error *err) {
    size_t at[R_ROLES], C = (size_t)p->C;
    block_offsets(p, l, at);
    int rc = attn_params_init(&p->attn, &p->attn_plan, params + at[R_ATTN], rng, err);
    if (rc) return rc;
    init_linear(params + at[R_FC_W], params + at[R_FC_B], p->C, 4 * p->C, rng);
    init_linear(params + at[R_PROJ_W], params + at[R_PROJ_B], 4 * p->C, p->C, rng);
    fill(params + at[R_LN1_W], C, 1.0f);
    fill(params + at[R_LN1_B], C, 0.0f);
    fill(params + at[R_LN2_W], C, 1.0f);
    fill(params + at[R_LN2_B], C, 0.0f);
    return ATTN_OK;
}

int attn_gpt2_params_init(const attn_gpt2_plan *p, float *params, attn_rng *rng,
                          attn_error *err) {
    if (p == NULL || params == NULL || rng == NULL)
        return attn__fail(err, ATTN_ERR_ARG, "params", "plan, params and rng are required");
    size_t C = (size_t)p->C, VC = (size_t)p->V * C;
    attn_normal_cache cache = {0};
    attn_rng_normal_fill(rng, &cache, params, VC, 0.0, 1.0);
    attn_rng_normal_fill(rng, &cache, params + VC, (size_t)p->cfg.block_size * C, 0.0, 1.0);
    for (int l = 0; l < p->n_layer; l++) {
        int rc = init_block(p, params, l, rng, err);
        if (rc) return rc;
    }
    float *tail = params + block_start(p, p->n_layer);
    fill(tail, C, 1.0f);
    fill(tail + C, C, 0.0f);
    if (!p->tied) {
        init_linear(tail + 2 * C, NULL, p->C, p->V, rng); /* out_head, no bias */
        return ATTN_OK;
    }
    /* lm_head = nn.Linear(C, V, bias=False) draws its weight before the
     * model ties it to wte: V*C draws, values thrown away. */
    for (size_t i = 0; i < VC; i++) (void)attn_rng_u32(rng);
    return ATTN_OK;
}

/* ==== Checks ============================================================== */

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
        int rc = e.buffer ? check_buffer(&e, x, field, err) : ATTN_OK;
        if (rc) return rc;
    }
    return ATTN_OK;
}
