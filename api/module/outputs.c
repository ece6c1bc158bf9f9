/* outputs.c - the output table (API_OUTPUT_MAP in api_internal.h) and the
 * shape rule of each output: the attn_outputs field core writes it to, the
 * element count the plan gives it and its axes. parse.c reads `return` with
 * the table, handle.c allocates from the rules, respond.c writes the reply in
 * the table's order and api/openapi/gen.py documents it (through tables.c). */
#include "api/module/module.h"

#include <stddef.h>
#include <string.h>

const api_output api__outputs[API_OUT_COUNT] = {
#define API_OUT_ROW(id, name, elem, map, core, slot, doc) \
    [API_OUT_##id] = {name, API_ELEM_##elem, map, core, slot, doc},
    API_OUTPUT_MAP(API_OUT_ROW)
#undef API_OUT_ROW
};

/* [B][H][rows][cols] of count elements, where the row of k says; H = 0: no head axis */
static void set(api_out_tensor *t, api_out k, size_t count, int B, int H, int rows, int cols) {
    *t = (api_out_tensor){.slot = api__outputs[k].slot, .core = api__outputs[k].core,
                          .count = count, .B = B, .H = H, .rows = rows, .cols = cols};
}

void api__out_tensor(api_out k, const api_request *rq, const attn_plan *p, api_out_tensor *t) {
    /* averaging selected heads is run.c's, from the per-head weights */
    int averaged = rq->average && rq->multi_head && !rq->sel.n_heads;
    switch (k) {
    case API_OUT_CONTEXT:
        /* sdpa: run.c turns core's [B][L][H][Dv] into PyTorch's [B][H][L][Dv] */
        if (attn_module_has(rq->cfg.module, ATTN_MOD_QKV_INPUTS)) set(t, k, p->n_context, p->B, p->H, p->L, p->Dv);
        else set(t, k, p->n_context, p->B, 0, p->L, p->out_width);
        return;
    case API_OUT_ATTN_WEIGHTS:
        set(t, k, averaged ? p->n_avg : p->n_scores, p->B, averaged ? 0 : p->H, p->L, p->S);
        if (averaged) { /* core's mean over the heads, in a field of its own */
            t->slot = offsetof(attn_outputs, weights_avg);
            t->core = ATTN_OUT_WEIGHTS_AVG;
        }
        return;
    case API_OUT_ATTN_SCORES: set(t, k, p->n_scores, p->B, p->H, p->L, p->S); return;
    case API_OUT_MASKED_SCORES: set(t, k, p->n_scores, p->B, p->H, p->L, p->S); return;
    case API_OUT_MASK: set(t, k, p->n_mask, p->B, 0, p->L, p->S); return;
    case API_OUT_DROPOUT_MASK:
        if (p->drop_site == ATTN_DROP_OUTPUT) set(t, k, p->n_dropout, p->B, 0, p->L, p->out_width);
        else set(t, k, p->n_dropout, p->B, p->H, p->L, p->S);
        return;
    case API_OUT_QUERIES: set(t, k, p->n_queries, p->B, p->H, p->L, p->Dk); return;
    case API_OUT_KEYS: set(t, k, p->n_keys, p->B, p->Hkv, p->S, p->Dk); return;
    case API_OUT_VALUES: set(t, k, p->n_values, p->B, p->Hkv, p->S, p->Dv); return;
    case API_OUT_CONTEXT_HEADS: set(t, k, p->n_context_heads, p->B, 0, p->L, p->ctx_width); return;
    case API_OUT_PARAMS: set(t, k, p->n_params, 0, 0, 0, 0); return;
    case API_OUT_TOKENS: case API_OUT_TIMING: set(t, k, 0, 0, 0, 0, 0); return;
    case API_OUT_COUNT: break;
    }
    *t = (api_out_tensor){.slot = API_NO_SLOT};
}

/* api_request.returns holds one bit per output. */
_Static_assert(API_OUT_COUNT <= 32, "api_request.returns has 32 bits");
