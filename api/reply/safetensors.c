/* safetensors.c - a reply as one safetensors file ("output_format":
 * "safetensors", or Accept: application/octet-stream):
 *
 *   8 bytes    N, the header's length, little-endian u64
 *   N bytes    JSON: {"__metadata__": {"module", "shape", "tokens", "timing"
 *              as strings}, "<output>": {"dtype", "shape", "data_offsets":
 *              [begin, end]}, ...}, padded with spaces to a multiple of 8
 *   the data   every tensor's little-endian bytes, one after the other
 *
 * Tensors are named after the outputs ("context", "attn_weights", and
 * "params.W_query.weight" for each parameter; with "top_k" a map is
 * "attn_weights.values" and "attn_weights.indices", I32). 4-byte tensors
 * come first (F32 and I32), then F16 ("dtype": "float16"), byte masks (BOOL)
 * last, so that with the 8-byte aligned header every tensor starts at a
 * multiple of its size: a browser views it with a Float32Array (Int32Array)
 * on the same buffer.
 */
#include "api/module/module.h"

#include <string.h>

typedef api_st_entry entry;
typedef api_st_kind entry_kind;
#define E_FLOAT API_ST_FLOAT
#define E_BYTES API_ST_BYTES
#define E_INT32 API_ST_INT32

#define MAX_ENTRIES API_ST_MAX_ENTRIES

static size_t item_size(const entry *t, int half) {
    return t->kind == E_BYTES ? 1 : t->kind == E_INT32 ? 4 : half ? 2 : 4;
}

static entry *add(entry *t, int *n, const char *name, const char *suffix, entry_kind kind) {
    entry *e = &t[(*n)++];
    *e = (entry){.kind = kind};
    snprintf(e->name, sizeof e->name, "%s%s", name, suffix);
    return e;
}

/* The tensors to write in the order of their element sizes (4-byte ones
 * first, so every tensor starts at a multiple of its size); params one entry
 * per parameter, top-k outputs as "<name>.indices" and "<name>.values".
 * Returns the count, or -1 when there are more parameters than MAX_ENTRIES. */
static int collect(const api_result *r, entry *t) {
    const api_request *rq = r->rq;
    int n = 0;
    for (int k = 0; k < API_OUT_COUNT; k++) {
        if (!(rq->returns & 1u << k) || api__outputs[k].elem == API_ELEM_JSON) continue;
        entry_kind kind = api__outputs[k].elem == API_ELEM_U8 ? E_BYTES : E_FLOAT;
        const char *name = api__outputs[k].name;
        const int32_t *indices = r->mapped & 1u << k ? r->maps[k].indices : NULL;
        entry *e = add(t, &n, name, indices ? ".values" : "", kind);
        e->rank = api__out_dims(r, (api_out)k, e->shape, &e->data);
        if (indices) {
            entry *x = add(t, &n, name, ".indices", E_INT32);
            x->rank = e->rank;
            memcpy(x->shape, e->shape, sizeof x->shape);
            x->data = indices;
        }
    }
    if (rq->returns & 1u << API_OUT_PARAMS) {
        for (int i = 0; i < r->plan->param_count; i++) {
            if (n == MAX_ENTRIES) return -1;
            attn_param p;
            attn_param_get(&rq->cfg, r->plan, i, &p);
            entry *e = add(t, &n, "params.", p.name, E_FLOAT);
            e->data = r->params + p.offset;
            e->rank = p.rank;
            memcpy(e->shape, p.shape, sizeof e->shape);
        }
    }
    return n;
}

/* A metadata value: JSON text written into a string. */
static void meta(api_buf *b, const char *key, const api_buf *json) {
    if (json->failed || json->data == NULL) {
        b->failed = 1; /* the value could not be written */
        return;
    }
    api__buf_put(b, ",", 1);
    api__buf_json_string(b, key);
    api__buf_put(b, ":", 1);
    api__buf_json_string(b, json->data);
}

int api__safetensors_write(api_buf *b, entry *t, int n, int half, const char *module,
                           const api_st_meta *metas, int n_meta, api_st_parts *parts, api_err *e) {
    for (int i = 0; i < n; i++) {
        t[i].count = 1;
        for (int d = 0; d < t[i].rank; d++) t[i].count *= (size_t)t[i].shape[d];
    }
    /* stable: larger elements first (an insertion sort of a few entries) */
    for (int i = 1; i < n; i++) {
        entry x = t[i];
        int j = i;
        for (; j > 0 && item_size(&t[j - 1], half) < item_size(&x, half); j--) t[j] = t[j - 1];
        t[j] = x;
    }

    /* the header, after 8 bytes kept for its length */
    api_buf h = {0};
    api__buf_put(&h, "{\"__metadata__\":{\"format\":\"pt\"", 30);
    api__buf_put(&h, ",\"module\":", 10);
    api__buf_json_string(&h, module);
    for (int i = 0; i < n_meta; i++) meta(&h, metas[i].key, metas[i].json);
    api__buf_put(&h, "}", 1);
    size_t offset = 0;
    for (int i = 0; i < n; i++) {
        if (t[i].kind == E_FLOAT && api__has_nan_or_inf(t[i].data, t[i].count)) {
            api_buf_free(&h);
            return api__fail(e, API_E_INTERNAL_ERROR, NULL, "%s holds NaN or infinity", t[i].name);
        }
        size_t size = t[i].count * item_size(&t[i], half);
        api__buf_put(&h, ",", 1);
        api__buf_json_string(&h, t[i].name);
        api__buf_printf(&h, ":{\"dtype\":\"%s\",\"shape\":[",
                        t[i].kind == E_BYTES ? "BOOL" : t[i].kind == E_INT32 ? "I32"
                                                 : half ? "F16" : "F32");
        for (int d = 0; d < t[i].rank; d++) api__buf_printf(&h, d ? ",%d" : "%d", t[i].shape[d]);
        api__buf_printf(&h, "],\"data_offsets\":[%zu,%zu]}", offset, offset + size);
        offset += size;
    }
    api__buf_put(&h, "}", 1);
    while (!h.failed && h.len % 8) api__buf_put(&h, " ", 1);
    if (h.failed) {
        api_buf_free(&h);
        return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the reply");
    }

    /* length, header, data (or the header only, the data left in place) */
    int in_place = parts != NULL && !half && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
    if (api__buf_reserve(b, 8 + h.len + (in_place ? 0 : offset) + 1)) {
        api_buf_free(&h);
        return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the reply");
    }
    uint8_t *o = (uint8_t *)b->data + b->len;
    for (int k = 0; k < 8; k++) o[k] = (uint8_t)((uint64_t)h.len >> (8 * k));
    memcpy(o + 8, h.data, h.len);
    o += 8 + h.len;
    if (in_place) {
        parts->n = 0;
        for (int i = 0; i < n; i++)
            if (t[i].count)
                parts->part[parts->n++] = (api_part){t[i].data, t[i].count * item_size(&t[i], 0)};
        b->len += 8 + h.len;
        b->data[b->len] = '\0';
        api_buf_free(&h);
        return 0;
    }
    for (int i = 0; i < n; i++) {
        if (t[i].kind == E_BYTES) {
            memcpy(o, t[i].data, t[i].count);
            o += t[i].count;
        } else if (t[i].kind == E_INT32) {
            const int32_t *x = t[i].data;
            for (size_t j = 0; j < t[i].count; j++)
                for (int k = 0; k < 4; k++) *o++ = (uint8_t)((uint32_t)x[j] >> (8 * k));
        } else {
            o += api__float_bytes(o, t[i].data, t[i].count, half);
        }
    }
    b->len += 8 + h.len + offset;
    b->data[b->len] = '\0';
    api_buf_free(&h);
    return 0;
}

int api__respond_safetensors(api_buf *b, const api_result *r, const api_reply *timing_so_far,
                             double t_serialise_start, api_st_parts *parts, api_err *e) {
    const api_request *rq = r->rq;
    entry t[MAX_ENTRIES];
    int n = collect(r, t);
    if (n < 0) return api__fail(e, API_E_INTERNAL_ERROR, NULL, "too many parameter tensors");
    api_buf v[3] = {{0}};
    api_st_meta m[3];
    int n_meta = 0;
    api__shape_json(&v[0], r->plan);
    m[n_meta++] = (api_st_meta){"shape", &v[0]};
    if (rq->returns & 1u << API_OUT_TOKENS) {
        api__tokens_json(&v[1], rq);
        m[n_meta++] = (api_st_meta){"tokens", &v[1]};
    }
    if (rq->returns & 1u << API_OUT_TIMING) {
        api__buf_printf(&v[2], "{\"parse_ms\":%.3f,\"compute_ms\":%.3f,\"serialise_ms\":%.3f}",
                        timing_so_far->ms_parse, timing_so_far->ms_compute,
                        api__now_ms() - t_serialise_start);
        m[n_meta++] = (api_st_meta){"timing", &v[2]};
    }
    int rc = api__safetensors_write(b, t, n, rq->fmt.half, attn_module_name(rq->cfg.module), m,
                                    n_meta, parts, e);
    for (int i = 0; i < 3; i++) api_buf_free(&v[i]);
    return rc;
}
