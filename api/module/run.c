/* run.c - the attention modules' kind (pipeline.h's steps):
 *
 *   parse     api__request_parse: config, contiguous inputs and masks
 *   plan      attn_plan_make: every size; the reply's views (view.c)
 *   prepare   the parameters: init {"seed"} or the state_dict copied out
 *   compute   attn_forward into the requested outputs only, then the cut maps
 *   contents  "shape", then each requested output in the table's order
 */
#include "api/module/module.h"
#include "api/pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bytes of reply text per output value, counted in floats (4 bytes) against
 * the element budget: a round-trip float32 takes about 11 characters and a
 * comma. */
#define REPLY_FLOATS_PER_VALUE 3

typedef struct {
    api_request rq;
    attn_plan plan;
    float *params;               /* in the job's arrays */
    attn_rng rng;
    attn_rng *rng_ptr;           /* the generator dropout continues from (NULL: a fresh one) */
    attn_outputs out;
    api_map maps[API_OUT_COUNT]; /* the reply's view of each map output */
    api_item items[API_OUT_COUNT + 1];
    api_item *state_dict;        /* the params group's tensors, malloc'd */
    api_buf shape, tokens;       /* JSON text of those items */
    const char **labels;         /* the tokens, for pictures */
    char title[256];             /* a picture panel's title without a head axis */
    api_image image;
} module_state;

static module_state *state_of(api_job *j) { return j->state; }

static int parse(api_job *j, const json_t *root, api_err *e) {
    module_state *s = state_of(j);
    if (api__request_parse(j->ep, root, j->lim, &s->rq, e)) return -1;
    j->fmt = s->rq.fmt;
    return 0;
}

/* The ATTN_OUT_* bits of the requested outputs, so that the plan counts
 * only the memory of the path that will run (the fused one, linear in T,
 * when no [T][T] tensor is asked for). */
static unsigned core_outputs(const api_request *rq) {
    unsigned bits = 0;
    attn_plan none = {0};
    for (int k = 0; k < API_OUT_COUNT; k++) {
        if (!(rq->returns & 1u << k)) continue;
        api_out_tensor t;
        api__out_tensor((api_out)k, rq, &none, &t); /* the bits depend on the request alone */
        bits |= t.core;
    }
    if (api__view_needs_mask(rq)) bits |= ATTN_OUT_MASK; /* top-k reads core's mask */
    return bits ? bits : ATTN_OUT_CONTEXT; /* the context is computed in any case */
}

/* The multiply-adds of one attn_forward: the projections of the queries,
 * keys and values, Q·Kᵀ and the weighted sum (each score also costs a
 * softmax, exp and all: counted as 64, about what a score of width 1 costs
 * here), and the output projection. In double: no overflow. */
static double module_ops(const attn_plan *p, int projects) {
    double B = p->B, L = p->L, S = p->S, H = p->H, Hkv = p->Hkv;
    double ops = B * H * L * S * ((double)p->Dk + p->Dv + 64.0);
    if (projects)
        ops += B * L * p->in_width * H * p->Dk + B * S * p->kv_in_width[0] * Hkv * p->Dk +
               B * S * p->kv_in_width[1] * Hkv * p->Dv;
    if (p->has_out_proj) ops += B * L * (double)p->ctx_width * p->out_width;
    return ops;
}

static int plan(api_job *j, api_err *e) {
    module_state *s = state_of(j);
    api_request *rq = &s->rq;
    attn_error ae = {0};
    rq->cfg.outputs = core_outputs(rq);
    if (attn_plan_make(&rq->cfg, &s->plan, &ae) != ATTN_OK) {
        api__from_attn(e, &ae, rq->cfg.module);
        return -1;
    }
    if (api__view_check(rq, &s->plan, e)) return -1;
    size_t out_values = 0; /* each below 2^42: no overflow */
    for (int k = 0; k < API_OUT_COUNT; k++)
        if (rq->returns & 1u << k) out_values += api__view_count(rq, &s->plan, (api_out)k);
    size_t need = s->plan.total_elements + out_values * REPLY_FLOATS_PER_VALUE;
    if (api__select_any(&rq->sel)) need += out_values; /* the selected copies */
    if (attn_module_has(rq->cfg.module, ATTN_MOD_QKV_INPUTS)) need += s->plan.n_context;
    api__job_sized(j, need, need, out_values, "request",
                   "inputs, parameters, intermediates, outputs and reply");
    j->ops = module_ops(&s->plan, !attn_module_has(rq->cfg.module, ATTN_MOD_QKV_INPUTS));
    j->ops_field = "inputs";
    return 0;
}

/* The parameters: state_dict copied out of the tree, or the module's own
 * construction after torch.manual_seed(seed), whose generator dropout then
 * continues from. */
static int prepare(api_job *j, api_err *e) {
    module_state *s = state_of(j);
    const api_request *rq = &s->rq;
    s->params = api__arrays_take(&j->arrays, s->plan.n_params, sizeof(float));
    if (s->params == NULL) return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the parameters");
    if (rq->params.state_dict) return api__state_dict_read(rq->params.state_dict, &rq->cfg, &s->plan, s->params, e);
    if (!rq->params.has_init) return 0;
    attn_rng_seed(&s->rng, rq->params.seed);
    attn_error ae = {0};
    if (attn_params_init(&rq->cfg, &s->plan, s->params, &s->rng, &ae) != ATTN_OK) {
        api__from_attn(e, &ae, rq->cfg.module);
        return -1;
    }
    s->rng_ptr = &s->rng;
    return 0;
}

/* Allocates every requested output that core writes, in the attn_outputs
 * field its row names (and core's mask for top-k). */
static int alloc_outputs(api_job *j, module_state *s, api_err *e) {
    const api_request *rq = &s->rq;
    for (int k = 0; k < API_OUT_COUNT; k++) {
        api_out_tensor t;
        api__out_tensor((api_out)k, rq, &s->plan, &t);
        if (!(rq->returns & 1u << k) || t.slot == API_NO_SLOT) continue;
        size_t size = api__outputs[k].elem == API_ELEM_U8 ? 1 : sizeof(float);
        *(void **)((char *)&s->out + t.slot) = api__arrays_take(&j->arrays, t.count, size);
    }
    if (api__view_needs_mask(rq) && !s->out.mask)
        s->out.mask = api__arrays_take(&j->arrays, s->plan.n_mask, 1);
    if (j->arrays.failed) return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the outputs");
    return 0;
}

/* sdpa: core's context [B][L][H][Dv] copied into a new [B][H][L][Dv]
 * (PyTorch's), which then takes its place in o->context. */
static int context_to_bhld(api_arrays *a, const attn_plan *p, attn_outputs *o, api_err *e) {
    size_t Dv = (size_t)p->Dv;
    float *bhld = api__arrays_take(a, p->n_context, sizeof(float));
    if (bhld == NULL) return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the outputs");
    for (int b = 0; b < p->B; b++)
        for (int h = 0; h < p->H; h++)
            for (int i = 0; i < p->L; i++)
                memcpy(bhld + (((size_t)b * p->H + h) * p->L + i) * Dv,
                       o->context + (((size_t)b * p->L + i) * p->H + h) * Dv, Dv * sizeof(float));
    o->context = bhld;
    return 0;
}

/* The inputs as core takes them: x (and cross-attention's key/value
 * inputs), or sdpa's Q, K, V; the masks. */
static attn_inputs inputs_of(const api_job *j, const module_state *s) {
    const api_request *rq = &s->rq;
    attn_inputs in = {
        .params = s->plan.n_params ? s->params : NULL,
        /* drawn by attn_params_init from finite bounds: nothing to check */
        .params_checked = rq->params.has_init && !rq->params.state_dict,
        .key_padding_mask = rq->kpm_bool,
        .pool = j->lim ? j->lim->compute : NULL,
        .x = rq->x.data, .x_key = rq->x_key.data, .x_value = rq->x_value.data,
        .query = rq->query.data, .key = rq->key.data, .value = rq->value.data,
    };
    if (rq->attn_mask.data) {
        in.attn_mask_batched = rq->attn_mask.rank == 3;
        if (rq->mask_bool) in.attn_mask_bool = rq->mask_bool;
        else in.attn_mask_add = rq->attn_mask.data;
    }
    return in;
}

static int compute(api_job *j, api_err *e) {
    module_state *s = state_of(j);
    const attn_config *c = &s->rq.cfg;
    if (alloc_outputs(j, s, e)) return -1;
    attn_inputs in = inputs_of(j, s);
    attn_error ae = {0};
    if (attn_forward(c, &s->plan, &in, s->rng_ptr, &s->out, &ae) != ATTN_OK) {
        api__from_attn(e, &ae, c->module);
        return -1;
    }
    if (attn_module_has(c->module, ATTN_MOD_QKV_INPUTS) && s->out.context &&
        context_to_bhld(&j->arrays, &s->plan, &s->out, e))
        return -1;
    return api__view_maps(&s->rq, &s->plan, &s->out, &j->arrays, s->maps, e);
}

/* ==== contents ============================================================ */

static void shape_json(api_buf *b, const attn_plan *p) {
    api__buf_printf(b,
                    "{\"batch\":%d,\"tokens\":%d,\"kv_tokens\":%d,\"d_in\":%d,"
                    "\"d_out\":%d,\"num_heads\":%d,\"head_dim\":%d}",
                    p->B, p->L, p->S, p->in_width, p->out_width, p->H, p->Dk);
}

/* The request's token labels as a JSON array (null if none), and as
 * pointers for the pictures. */
static int tokens_json(module_state *s) {
    const api_request *rq = &s->rq;
    if (rq->tokens == NULL) {
        api__buf_puts(&s->tokens, "null");
        return s->tokens.failed ? -1 : 0;
    }
    s->labels = malloc((size_t)rq->n_tokens * sizeof *s->labels);
    if (s->labels == NULL) return -1;
    api__buf_put(&s->tokens, "[", 1);
    const char *t = rq->tokens;
    for (int i = 0; i < rq->n_tokens; i++, t += strlen(t) + 1) {
        if (i) api__buf_put(&s->tokens, ",", 1);
        api__buf_json_string(&s->tokens, t);
        s->labels[i] = t;
    }
    api__buf_put(&s->tokens, "]", 1);
    return s->tokens.failed ? -1 : 0;
}

/* Tensor output k as the reply gives it: no batch axis when the inputs had
 * none, no head axis for single-head requests. */
static void tensor_item(const module_state *s, api_out k, api_item *it) {
    const api_request *rq = &s->rq;
    api_map m = s->maps[k];
    if (!api__outputs[k].map) {
        api_out_tensor t;
        api__out_tensor(k, rq, &s->plan, &t);
        m = (api_map){.data = *(void *const *)((const char *)&s->out + t.slot), .B = t.B,
                      .H = t.H && rq->multi_head ? t.H : 0, .rows = t.rows, .cols = t.cols};
    }
    *it = (api_item){.name = api__outputs[k].name, .data = m.data, .indices = m.indices,
                     .kind = api__outputs[k].elem == API_ELEM_U8 ? API_ITEM_U8 : API_ITEM_F32};
    if (rq->batched) it->shape[it->rank++] = m.B;
    if (m.H) it->shape[it->rank++] = m.H;
    it->shape[it->rank++] = m.rows;
    it->shape[it->rank++] = m.cols;
}

/* "params": the state_dict used, one tensor per entry. */
static int params_item(module_state *s, api_item *it) {
    const attn_plan *p = &s->plan;
    s->state_dict = calloc((size_t)(p->param_count ? p->param_count : 1), sizeof *s->state_dict);
    if (s->state_dict == NULL) return -1;
    for (int i = 0; i < p->param_count; i++) {
        attn_param prm;
        attn_param_get(&s->rq.cfg, p, i, &prm);
        api_item *t = &s->state_dict[i];
        *t = (api_item){.kind = API_ITEM_F32, .data = s->params + prm.offset, .rank = prm.rank};
        t->name = strdup(prm.name);
        if (t->name == NULL) return -1;
        memcpy(t->shape, prm.shape, sizeof prm.shape);
    }
    *it = (api_item){.name = "params", .kind = API_ITEM_GROUP, .items = s->state_dict,
                     .n_items = p->param_count};
    return 0;
}

/* What a picture draws: attn_weights as the reply gives them. */
static void image_of(module_state *s) {
    const api_request *rq = &s->rq;
    const api_select *sel = &rq->sel;
    if (rq->multi_head && rq->average) {
        snprintf(s->title, sizeof s->title, "mean of heads");
        for (int i = 0; i < sel->n_heads; i++) {
            size_t n = strlen(s->title);
            snprintf(s->title + n, sizeof s->title - n, i ? ", %d" : " %d", sel->heads[i]);
        }
    } else {
        snprintf(s->title, sizeof s->title, "attn_weights");
    }
    s->image = (api_image){.map = s->maps[API_OUT_ATTN_WEIGHTS], .batched = rq->batched,
                           .heads = sel->n_heads ? sel->heads : NULL, .one_title = s->title,
                           .labels = s->labels, .n_labels = s->labels ? rq->n_tokens : 0,
                           .row0 = sel->has_rows ? sel->row_start : 0, .cell = sel->cell,
                           .color = sel->color};
}

static int contents(api_job *j, api_contents *c, api_err *e) {
    module_state *s = state_of(j);
    const api_request *rq = &s->rq;
    int n = 0;
    shape_json(&s->shape, &s->plan);
    s->items[n++] = (api_item){.name = "shape", .kind = API_ITEM_JSON, .data = s->shape.data};
    if (tokens_json(s) || s->shape.failed)
        return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the reply");
    for (int k = 0; k < API_OUT_COUNT; k++) {
        if (!(rq->returns & 1u << k)) continue;
        api_item *it = &s->items[n++];
        if (k == API_OUT_PARAMS) {
            if (params_item(s, it)) return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the reply");
        } else if (k == API_OUT_TOKENS) {
            *it = (api_item){.name = "tokens", .kind = API_ITEM_JSON, .data = s->tokens.data};
        } else if (k == API_OUT_TIMING) {
            *it = (api_item){.name = "timing", .kind = API_ITEM_TIMING};
        } else {
            tensor_item(s, (api_out)k, it);
        }
    }
    if (rq->returns & 1u << API_OUT_ATTN_WEIGHTS) image_of(s);
    c->module = attn_module_name(rq->cfg.module);
    c->item = s->items;
    c->n = n;
    c->image = rq->returns & 1u << API_OUT_ATTN_WEIGHTS ? &s->image : NULL;
    return 0;
}

static void release(api_job *j) {
    module_state *s = state_of(j);
    for (int i = 0; s->state_dict && i < s->plan.param_count; i++)
        free((char *)s->state_dict[i].name);
    free(s->state_dict);
    free(s->labels);
    api_buf_free(&s->shape);
    api_buf_free(&s->tokens);
    api__request_free(&s->rq);
}

API_KIND_DEFINE(api__module_kind, module_state, API_MODULE_FORMATS);
