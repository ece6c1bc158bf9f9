/* neuron.c - BertViz's neuron view as data, for any model:
 *
 *   "neuron_view": {"layer": 0, "head": 2, "query": 5, "batch": 0}
 *
 * gives, for that head and query position, what the scores are made of:
 *   q          [D]     the query vector the scores use: hook_rot_q (after the
 *                      rotary positions, and the q norm where the model has
 *                      one), else hook_q (the projection with its bias)
 *   k          [T][D]  each key's vector (hook_rot_k or hook_k; its key/value
 *                      head with grouped queries)
 *   q_times_k  [T][D]  their elementwise product
 *   dot        [T]     its sum: q . k
 *   scores     [T]     hook_attn_scores' row: q . k times the scale, null
 *                      where the key is masked (causal, window, padding)
 *   weights    [T]     hook_pattern's row (0 where masked)
 * with layer, head, kv_head, batch, query, scale and the two hooks' names.
 * A padded key's k and q_times_k rows are null. */
#include "api/inside/inside.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* An integer member of o in [0, limit) (absent: def, or required when def < 0). */
static int member(const json_t *o, const char *name, int limit, int def, int *out, api_err *e) {
    char field[48];
    snprintf(field, sizeof field, "neuron_view.%s", name);
    const json_t *v = api__field(o, name);
    if (v == NULL && def >= 0) {
        *out = def;
        return 0;
    }
    if (v == NULL) return api__fail(e, API_E_MISSING_FIELD, field, "%s is required", field);
    if (!json_is_integer(v)) return api__field_wrong_type(e, field, v, "an integer");
    long long x = json_integer_value(v);
    if (x < 0 || x >= limit)
        return api__fail(e, API_E_INVALID_ARGUMENT, field, "%s is %lld: from 0 to %d", field, x, limit - 1);
    *out = (int)x;
    return 0;
}

int api__inside_neuron_parse(const json_t *root, inside_ctx *ctx, api_err *e) {
    static const char *const keys[] = {"layer", "head", "query", "batch", NULL};
    const json_t *v = api__field(root, "neuron_view");
    inside_rq *in = &ctx->in;
    if (v == NULL) return 0;
    if (!json_is_object(v))
        return api__field_wrong_type(e, "neuron_view", v, "an object {\"layer\", \"head\", \"query\", \"batch\"}");
    if (api__unknown_key(v, keys))
        return api__fail(e, API_E_UNKNOWN_FIELD, "neuron_view", "neuron_view takes layer, head, query "
                         "and batch");
    if (member(v, "layer", ctx->cfg.n_layer, -1, &in->nv_layer, e) ||
        member(v, "head", ctx->cfg.n_head, -1, &in->nv_head, e) ||
        member(v, "query", ctx->T, -1, &in->nv_query, e) || member(v, "batch", ctx->B, 0, &in->nv_batch, e))
        return -1;
    if (ctx->mask && !ctx->mask[(size_t)in->nv_batch * (size_t)ctx->T + (size_t)in->nv_query])
        return api__fail(e, API_E_INVALID_ARGUMENT, "neuron_view.query", "position %d of row %d is "
                         "padding: no query there", in->nv_query, in->nv_batch);
    in->neuron = 1;
    return 0;
}

int api__inside_neuron_run(const inside_rq *rq, const attn_lm_plan *p, const uint8_t *mask,
                           inside_out *io, api_arrays *a, api_err *e) {
    if (!rq->neuron) return 0;
    attn_hook hooks[4];
    api__inside_neuron_hooks(p, hooks);
    size_t T = (size_t)p->T, D = (size_t)p->D, b = (size_t)rq->nv_batch, i = (size_t)rq->nv_query;
    size_t h = (size_t)rq->nv_head, hk = h / (size_t)(p->H / p->Hkv);
    const float *qc = api__inside_capture(io, rq->nv_layer, hooks[0]);
    const float *kc = api__inside_capture(io, rq->nv_layer, hooks[1]);
    const float *sc = api__inside_capture(io, rq->nv_layer, hooks[2]);
    const float *pc = api__inside_capture(io, rq->nv_layer, hooks[3]);
    float *nv = io->nv = api__arrays_take(a, D + 2 * T * D + 3 * T, sizeof(float));
    if (nv == NULL || !qc || !kc || !sc || !pc)
        return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the neuron view");
    float *q = nv, *k = q + D, *qk = k + T * D, *dot = qk + T * D, *s = dot + T, *w = s + T;
    memcpy(q, qc + ((b * T + i) * (size_t)p->H + h) * D, D * sizeof *q);
    size_t row = ((b * (size_t)p->H + h) * T + i) * T;
    memcpy(s, sc + row, T * sizeof *s);
    memcpy(w, pc + row, T * sizeof *w);
    for (size_t j = 0; j < T; j++) {
        const float *kj = kc + ((b * T + j) * (size_t)p->Hkv + hk) * D;
        double sum = 0.0;
        for (size_t d = 0; d < D; d++) {
            k[j * D + d] = kj[d];
            qk[j * D + d] = q[d] * kj[d];
            sum += (double)qk[j * D + d];
        }
        dot[j] = (float)sum;
        if (mask && !mask[b * T + j]) /* a padded key: no vector to show */
            for (size_t d = 0; d < D; d++) k[j * D + d] = qk[j * D + d] = -INFINITY;
    }
    return 0;
}

/* The JSON values of the view, NUL-separated in io->nv_json: their offsets. */
static void values(const inside_rq *rq, const attn_lm_plan *p, const attn_hook hooks[2], api_buf *b,
                   size_t at[8]) {
    int v[5] = {rq->nv_layer, rq->nv_head, rq->nv_head / (p->H / p->Hkv), rq->nv_batch, rq->nv_query};
    for (int i = 0; i < 5; i++) {
        at[i] = b->len;
        api__buf_printf(b, "%d", v[i]);
        api__buf_put(b, "", 1);
    }
    at[5] = b->len;
    api__buf_printf(b, "%.9g", (double)p->attn_plan.scale);
    api__buf_put(b, "", 1);
    for (int i = 0; i < 2; i++) {
        at[6 + i] = b->len;
        api__buf_printf(b, "\"blocks.%d.%s\"", rq->nv_layer, attn_hook_get(hooks[i])->name);
        api__buf_put(b, "", 1);
    }
}

int api__inside_neuron_item(const inside_rq *rq, const attn_lm_plan *p, inside_out *io, api_item *g,
                            api_err *e) {
    static const char *const names[8] = {"layer", "head", "kv_head", "batch", "query", "scale",
                                         "q_hook", "k_hook"};
    static const char *const arrays[6] = {"q", "k", "q_times_k", "dot", "scores", "weights"};
    attn_hook hooks[4];
    api__inside_neuron_hooks(p, hooks);
    size_t at[8], T = (size_t)p->T, D = (size_t)p->D;
    values(rq, p, hooks, &io->nv_json, at);
    if (io->nv_json.failed) return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the reply");
    api_item *it = io->nv_items;
    for (int i = 0; i < 8; i++)
        it[i] = (api_item){.name = names[i], .kind = API_ITEM_JSON, .data = io->nv_json.data + at[i]};
    const size_t off[6] = {0, D, D + T * D, D + 2 * T * D, D + 2 * T * D + T, D + 2 * T * D + 2 * T};
    for (int i = 0; i < 6; i++) {
        api_item *x = &it[8 + i];
        *x = (api_item){.name = arrays[i], .kind = API_ITEM_F32, .data = io->nv + off[i], .rank = 1,
                        .shape = {i == 0 ? p->D : p->T}};
        if (i == 1 || i == 2) x->rank = 2, x->shape[1] = p->D;
    }
    *g = (api_item){.name = "neuron_view", .kind = API_ITEM_GROUP, .items = it, .n_items = 14};
    return 0;
}
