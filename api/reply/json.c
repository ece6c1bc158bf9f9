/* json.c - a reply as one JSON object: {"module": ..., then each item of
 * the contents as "name": value in order}, tensors nested, flat or base64
 * (emit.c), top-k maps as {"indices", "values"}, a group as an object of its
 * tensors (and JSON values). */
#include "api/reply/reply.h"

#include <string.h>

size_t api__item_count(const api_item *it) {
    size_t n = 1;
    for (int d = 0; d < it->rank; d++) n *= (size_t)it->shape[d];
    return n;
}

/* "name": after a comma, or first in the object when it is the first key. */
static void key(api_buf *b, const char *k, int first) {
    api__buf_put(b, ",\"" + first, 2 - (size_t)first);
    api__buf_puts(b, k);
    api__buf_put(b, "\":", 2);
}

/* A tensor item's values (no indices). */
static void values(api_buf *b, const api_item *it, const api_fmt *f, int *nonfinite) {
    if (it->rank > 0 && it->shape[0] == 0) { /* no layer asked for, say */
        api__buf_puts(b, "[]");
        return;
    }
    switch (it->kind) {
    case API_ITEM_F32: api__emit_floats(b, it->data, it->rank, it->shape, f, nonfinite); break;
    case API_ITEM_U8: api__emit_bytes(b, it->data, it->rank, it->shape, f); break;
    case API_ITEM_I32: api__emit_ints(b, it->data, it->rank, it->shape, f); break;
    default: break;
    }
}

static void tensor(api_buf *b, const api_item *it, const api_fmt *fmt, int *nonfinite) {
    api_fmt plain = {.format = API_FORMAT_NESTED, .precision = fmt->precision};
    const api_fmt *f = it->plain ? &plain : fmt;
    if (!it->indices) {
        values(b, it, f, nonfinite);
        return;
    }
    api_item idx = *it;
    idx.kind = API_ITEM_I32;
    idx.data = it->indices;
    api__buf_puts(b, "{\"indices\":");
    values(b, &idx, f, nonfinite);
    api__buf_puts(b, ",\"values\":");
    values(b, it, f, nonfinite);
    api__buf_put(b, "}", 1);
}

static void group(api_buf *b, const api_item *g, const api_fmt *f, int *nonfinite) {
    api__buf_put(b, "{", 1);
    for (int i = 0; i < g->n_items && !b->failed; i++) {
        if (i) api__buf_put(b, ",", 1);
        api__buf_json_string(b, g->items[i].name);
        api__buf_put(b, ":", 1);
        if (g->items[i].kind == API_ITEM_JSON) api__buf_puts(b, g->items[i].data);
        else tensor(b, &g->items[i], f, nonfinite);
    }
    api__buf_put(b, "}", 1);
}

static void timing(api_buf *b, const api_contents *c) {
    api__buf_printf(b, "{\"parse_ms\":%.3f,\"compute_ms\":%.3f,\"serialise_ms\":%.3f}", c->ms_parse,
                    c->ms_compute, api__now_ms() - c->t_serialise);
}

int api__write_json(api_buf *b, const api_contents *c, api_st_parts *parts, api_err *e) {
    (void)parts;
    int nonfinite = 0;
    api__buf_puts(b, c->module ? "{\"module\":" : "{"); /* no module: OpenAI's objects */
    if (c->module) api__buf_json_string(b, c->module);
    for (int i = 0; i < c->n && !b->failed; i++) {
        const api_item *it = &c->item[i];
        key(b, it->name, c->module == NULL && i == 0);
        switch (it->kind) {
        case API_ITEM_JSON: api__buf_puts(b, it->data); break;
        case API_ITEM_GROUP: group(b, it, &c->fmt, &nonfinite); break;
        case API_ITEM_TIMING: timing(b, c); break;
        default: tensor(b, it, &c->fmt, &nonfinite); break;
        }
    }
    api__buf_puts(b, "}\n");
    if (nonfinite == 2)
        return api__fail(e, API_E_NON_FINITE, NULL, "a value of the result is beyond float16's "
                         "range (65504): ask for float32");
    if (nonfinite)
        return api__fail(e, API_E_INTERNAL_ERROR, NULL,
                         "the result holds NaN or infinity, which JSON cannot carry");
    if (b->failed) return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the reply");
    return 0;
}

/* NaN or infinity, or (half) a value float16 cannot carry. */
static int tensor_nonfinite(const api_item *it, int half) {
    if (it->kind != API_ITEM_F32) return 0;
    size_t n = api__item_count(it);
    return api__has_nan_or_inf(it->data, n) || (half && api__beyond_half(it->data, n));
}

int api__contents_nonfinite(const api_contents *c) {
    int half = c->fmt.half && (api_format_get(c->fmt.format)->flags & API_FMT_HALF);
    for (int i = 0; i < c->n; i++) {
        const api_item *it = &c->item[i];
        if (tensor_nonfinite(it, half)) return 1;
        for (int j = 0; it->kind == API_ITEM_GROUP && j < it->n_items; j++)
            if (tensor_nonfinite(&it->items[j], half)) return 1;
    }
    return 0;
}
