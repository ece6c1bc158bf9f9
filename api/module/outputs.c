/* outputs.c - the output table (API_OUTPUT_MAP in api_internal.h) and the
 * shape rule of each output: the attn_outputs field core writes it to, the
 * element count the plan gives it and its axes. parse.c reads `return` with
 * the table, handle.c allocates from the rules, respond.c writes the reply in
 * the table's order and api/openapi/gen.py documents it (through tables.c). */
#include "api/module/module.h"

#include <stddef.h>
#include <string.h>

const api_output api__outputs[API_OUT_COUNT] = {
#define API_OUT_ROW(id, name, elem, map, doc) [API_OUT_##id] = {name, API_ELEM_##elem, map, doc},
    API_OUTPUT_MAP(API_OUT_ROW)
#undef API_OUT_ROW
};

int api__out_find(const char *name) {
    for (int k = 0; k < API_OUT_COUNT; k++)
        if (strcmp(api__outputs[k].name, name) == 0) return k;
    return -1;
}

#define SLOT(field) offsetof(attn_outputs, field)

/* [B][H][rows][cols] written to field, count elements; H = 0: no head axis */
static void set(api_out_tensor *t, size_t slot, size_t count, int B, int H, int rows, int cols) {
    *t = (api_out_tensor){.slot = slot, .count = count, .B = B, .H = H, .rows = rows, .cols = cols};
}

void api__out_tensor(api_out k, const api_request *rq, const attn_plan *p, api_out_tensor *t) {
    /* averaging selected heads is maps.c's, from the per-head weights */
    int averaged = rq->average && rq->multi_head && !rq->sel.n_heads;
    switch (k) {
    case API_OUT_CONTEXT:
        /* sdpa: handle.c turns core's [B][L][H][Dv] into PyTorch's [B][H][L][Dv] */
        if (attn_module_has(rq->cfg.module, ATTN_MOD_QKV_INPUTS)) set(t, SLOT(context), p->n_context, p->B, p->H, p->L, p->Dv);
        else set(t, SLOT(context), p->n_context, p->B, 0, p->L, p->out_width);
        return;
    case API_OUT_ATTN_WEIGHTS:
        if (averaged) set(t, SLOT(weights_avg), p->n_avg, p->B, 0, p->L, p->S);
        else set(t, SLOT(weights), p->n_scores, p->B, p->H, p->L, p->S);
        return;
    case API_OUT_ATTN_SCORES: set(t, SLOT(scores), p->n_scores, p->B, p->H, p->L, p->S); return;
    case API_OUT_MASKED_SCORES:
        set(t, SLOT(masked_scores), p->n_scores, p->B, p->H, p->L, p->S);
        return;
    case API_OUT_MASK: set(t, SLOT(mask), p->n_mask, p->B, 0, p->L, p->S); return;
    case API_OUT_DROPOUT_MASK:
        if (p->drop_site == ATTN_DROP_OUTPUT)
            set(t, SLOT(dropout_mask), p->n_dropout, p->B, 0, p->L, p->out_width);
        else set(t, SLOT(dropout_mask), p->n_dropout, p->B, p->H, p->L, p->S);
        return;
    case API_OUT_QUERIES: set(t, SLOT(queries), p->n_queries, p->B, p->H, p->L, p->Dk); return;
    case API_OUT_KEYS: set(t, SLOT(keys), p->n_keys, p->B, p->Hkv, p->S, p->Dk); return;
    case API_OUT_VALUES: set(t, SLOT(values), p->n_values, p->B, p->Hkv, p->S, p->Dv); return;
    case API_OUT_CONTEXT_HEADS:
        set(t, SLOT(context_heads), p->n_context_heads, p->B, 0, p->L, p->ctx_width);
        return;
    case API_OUT_PARAMS: set(t, API_NO_SLOT, p->n_params, 0, 0, 0, 0); return;
    case API_OUT_TOKENS: case API_OUT_TIMING: case API_OUT_COUNT: break;
    }
    set(t, API_NO_SLOT, 0, 0, 0, 0, 0);
}

/* api_request.returns holds one bit per output. */
_Static_assert(API_OUT_COUNT <= 32, "api_request.returns has 32 bits");
