/* analysis.c - "analysis" on POST /model: what each head does, from the
 * request's own run (core's attn_lm_outputs.analysis, ATTN_ANALYSIS_MAP):
 *
 *   "analysis": ["entropy", "sink", "previous_token", "duplicate_token",
 *                "induction", "rollout", "importance"]
 *   reply: "analysis": {"entropy": [B][n_layer][n_head], ...,
 *                       "rollout": [B][n_layer][T][T], ...}
 *
 * in the table's order, each per batch row (the batch axis left out for a
 * [T] request, as everywhere). The names come from core's table alone; an
 * unknown one is a 400 naming "analysis[i]" and listing them. What they
 * hold and cost (one block's maps, the rollout's means, importance's
 * ablated runs) is core's attn_lm_analysis_cost, counted into the plan as
 * every other output is.
 */
#include "api/inside/inside.h"

#include <stdio.h>
#include <string.h>

/* "a, b, ..." of every analysis. */
static void names(char *out, size_t size) {
    size_t n = 0;
    out[0] = '\0';
    for (int a = 0; a < ATTN_ANALYSIS_COUNT && n < size; a++)
        n += (size_t)snprintf(out + n, size - n, "%s%s", a ? ", " : "",
                              attn_analysis_get((attn_analysis)a)->name);
}

int api__inside_analysis_parse(const json_t *root, inside_ctx *ctx, api_err *e) {
    const json_t *v = api__field(root, "analysis");
    if (v == NULL) return 0;
    if (!json_is_array(v)) return api__field_wrong_type(e, "analysis", v, "an array of analysis names");
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *s = json_array_get(v, i);
        char field[48], echo[API_ECHO_MAX + 4], list[256];
        snprintf(field, sizeof field, "analysis[%zu]", i);
        if (!json_is_string(s)) return api__field_wrong_type(e, field, s, "a string");
        attn_analysis a;
        if (attn_analysis_parse(json_string_value(s), &a) != ATTN_OK) {
            names(list, sizeof list);
            return api__fail(e, API_E_INVALID_ARGUMENT, field, "%s \"%s\" is not an analysis; "
                             "choose from %s", field, api__echo(echo, sizeof echo, json_string_value(s)),
                             list);
        }
        ctx->in.analyses |= 1u << a;
    }
    const char *need = "importance compares next-token losses";
    if ((ctx->in.analyses >> ATTN_ANALYSIS_IMPORTANCE & 1u) && ctx->training)
        return api__fail(e, API_E_INVALID_ARGUMENT, "analysis", "%s of heads knocked out in eval "
                         "mode: leave \"training\" out", need);
    if ((ctx->in.analyses >> ATTN_ANALYSIS_IMPORTANCE & 1u) && ctx->T < 2)
        return api__fail(e, API_E_INVALID_ARGUMENT, "analysis", "%s: it needs at least 2 tokens, "
                         "got %d", need, ctx->T);
    return 0;
}

int api__inside_analysis_plan(const inside_rq *in, const attn_lm_plan *p, int width,
                              inside_sizes *out, api_err *e) {
    if (in->analyses == 0) return 0;
    size_t floats;
    double ops;
    attn_error ae = {0};
    if (attn_lm_analysis_cost(p, in->analyses, width, &floats, &ops, &ae) != ATTN_OK) {
        api__from_attn(e, &ae, ATTN_MODULE_COUNT);
        return -1;
    }
    for (int a = 0; a < ATTN_ANALYSIS_COUNT; a++) {
        size_t count = 0;
        if (in->analyses >> a & 1u) attn_analysis_dims(p, (attn_analysis)a, NULL, &count);
        out->need += count;
        out->reply_values += count;
    }
    out->need += floats; /* first in the plan: the other looks add to it */
    out->ops += ops;
    if (ops > p->ops) out->ops_field = "analysis";
    return 0;
}

int api__inside_analysis_outputs(const inside_rq *in, const attn_lm_plan *p, inside_out *io,
                                 api_arrays *a, attn_lm_outputs *out, api_err *e) {
    for (int k = 0; k < ATTN_ANALYSIS_COUNT; k++) {
        size_t count = 0;
        if (!(in->analyses >> k & 1u)) continue;
        attn_analysis_dims(p, (attn_analysis)k, NULL, &count);
        out->analysis[k] = io->analysis[k] = api__arrays_take(a, count, sizeof(float));
    }
    return a->failed ? api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the analyses") : 0;
}

void api__inside_analysis_group(const inside_rq *in, const attn_lm_plan *p, int batched,
                                inside_out *io, api_item *g) {
    int n = 0;
    for (int k = 0; k < ATTN_ANALYSIS_COUNT; k++) {
        if (!(in->analyses >> k & 1u)) continue;
        int dims[4], rank = attn_analysis_dims(p, (attn_analysis)k, dims, NULL);
        api_item *it = &io->analysis_items[n++];
        *it = (api_item){.name = attn_analysis_get((attn_analysis)k)->name, .kind = API_ITEM_F32,
                         .data = io->analysis[k]};
        for (int d = batched ? 0 : 1; d < rank; d++) it->shape[it->rank++] = dims[d];
    }
    *g = (api_item){.name = "analysis", .kind = API_ITEM_GROUP, .items = io->analysis_items, .n_items = n};
}
