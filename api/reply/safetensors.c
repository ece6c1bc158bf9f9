/* safetensors.c - a reply as one safetensors file ("output_format":
 * "safetensors", or Accept: application/octet-stream):
 *
 *   8 bytes    N, the header's length, little-endian u64
 *   N bytes    JSON: {"__metadata__": {"module", "shape", "tokens", "timing"
 *              as strings}, "<output>": {"dtype", "shape", "data_offsets":
 *              [begin, end]}, ...}, padded with spaces to a multiple of 8
 *   the data   every tensor's little-endian bytes, one after the other
 *
 * Tensors are the contents' tensor items ("context", "attn_weights", and
 * "params.W_query.weight" for each tensor of a group; with "top_k" a map is
 * "attn_weights.values" and "attn_weights.indices", I32); its JSON items and
 * the timing are the metadata's strings, in order. 4-byte tensors come first
 * (F32 and I32), then F16 ("dtype": "float16"), byte masks (BOOL) last, so
 * that with the 8-byte aligned header every tensor starts at a multiple of
 * its size: a browser views it with a Float32Array (Int32Array) on the same
 * buffer.
 */
#include "api/reply/reply.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { E_FLOAT, E_BYTES, E_INT32 } entry_kind;

/* One tensor of the file. */
typedef struct {
    char name[ATTN_PARAM_NAME_MAX + 32];
    const void *data;     /* float (F32, or F16 with half), uint8_t (BOOL), int32_t (I32) */
    entry_kind kind;
    int rank;
    int shape[API_ITEM_RANK];
    size_t count;
} entry;

/* A __metadata__ entry: JSON text stored as a string. */
typedef struct {
    const char *key;
    const api_buf *json;
} meta_entry;

static size_t item_size(const entry *t, int half) {
    return t->kind == E_BYTES ? 1 : t->kind == E_INT32 ? 4 : half ? 2 : 4;
}

/* Adds a tensor of item it (its values, or with data/kind given, its
 * indices) as entry *n of t; t NULL only counts. */
static void add(entry *t, int *n, const api_item *it, const char *prefix, const char *suffix,
                entry_kind kind, const void *data) {
    entry *x = t ? &t[*n] : NULL;
    (*n)++;
    if (x == NULL) return;
    *x = (entry){.data = data, .kind = kind, .rank = it->rank, .count = api__item_count(it)};
    snprintf(x->name, sizeof x->name, "%s%s%s", prefix, it->name, suffix);
    memcpy(x->shape, it->shape, sizeof x->shape);
}

static void add_item(entry *t, int *n, const api_item *it, const char *prefix) {
    entry_kind kind = it->kind == API_ITEM_U8 ? E_BYTES : it->kind == API_ITEM_I32 ? E_INT32 : E_FLOAT;
    add(t, n, it, prefix, it->indices ? ".values" : "", kind, it->data);
    if (it->indices) add(t, n, it, prefix, ".indices", E_INT32, it->indices);
}

/* The tensors of c in its order (a group's as "<group>.<name>") into t, or
 * only counted when t is NULL. Returns the count. */
static int collect(const api_contents *c, entry *t) {
    int n = 0;
    for (int i = 0; i < c->n; i++) {
        const api_item *it = &c->item[i];
        if (it->kind == API_ITEM_GROUP) {
            char prefix[64];
            snprintf(prefix, sizeof prefix, "%s.", it->name);
            for (int j = 0; j < it->n_items; j++)
                if (it->items[j].kind != API_ITEM_JSON) add_item(t, &n, &it->items[j], prefix);
        } else if (it->kind != API_ITEM_JSON && it->kind != API_ITEM_TIMING) {
            add_item(t, &n, it, "");
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

/* Stable: larger elements first (an insertion sort of a few entries). */
static void sort_by_size(entry *t, int n, int half) {
    for (int i = 1; i < n; i++) {
        entry x = t[i];
        int j = i;
        for (; j > 0 && item_size(&t[j - 1], half) < item_size(&x, half); j--) t[j] = t[j - 1];
        t[j] = x;
    }
}

/* The JSON header, padded with spaces to a multiple of 8; *data_len: the
 * bytes of the tensors after it. 0, or -1 with e filled. */
static int header(api_buf *h, const entry *t, int n, int half, const char *module,
                  const meta_entry *metas, int n_meta, size_t *data_len, api_err *e) {
    api__buf_put(h, "{\"__metadata__\":{\"format\":\"pt\"", 30);
    api__buf_put(h, ",\"module\":", 10);
    api__buf_json_string(h, module);
    for (int i = 0; i < n_meta; i++) meta(h, metas[i].key, metas[i].json);
    api__buf_put(h, "}", 1);
    size_t offset = 0;
    for (int i = 0; i < n; i++) {
        if (t[i].kind == E_FLOAT && api__has_nan_or_inf(t[i].data, t[i].count))
            return api__fail(e, API_E_INTERNAL_ERROR, NULL, "%s holds NaN or infinity", t[i].name);
        if (t[i].kind == E_FLOAT && half && api__beyond_half(t[i].data, t[i].count))
            return api__fail(e, API_E_NON_FINITE, NULL, "%s holds a value beyond float16's range "
                             "(65504): ask for float32", t[i].name);
        size_t size = t[i].count * item_size(&t[i], half);
        api__buf_put(h, ",", 1);
        api__buf_json_string(h, t[i].name);
        api__buf_printf(h, ":{\"dtype\":\"%s\",\"shape\":[",
                        t[i].kind == E_BYTES ? "BOOL" : t[i].kind == E_INT32 ? "I32"
                                                 : half ? "F16" : "F32");
        for (int d = 0; d < t[i].rank; d++) api__buf_printf(h, d ? ",%d" : "%d", t[i].shape[d]);
        api__buf_printf(h, "],\"data_offsets\":[%zu,%zu]}", offset, offset + size);
        offset += size;
    }
    api__buf_put(h, "}", 1);
    while (!h->failed && h->len % 8) api__buf_put(h, " ", 1);
    if (h->failed) return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the reply");
    *data_len = offset;
    return 0;
}

/* The tensors' little-endian bytes at o. */
static void data_bytes(uint8_t *o, const entry *t, int n, int half) {
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
}

/* length, header, data (or the header only, the data left in place: parts) */
static int write_file(api_buf *b, entry *t, int n, int half, const char *module,
                      const meta_entry *metas, int n_meta, api_st_parts *parts, api_err *e) {
    sort_by_size(t, n, half);
    api_buf h = {0};
    size_t data_len = 0;
    int in_place = parts != NULL && !half && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
    if (header(&h, t, n, half, module, metas, n_meta, &data_len, e)) {
        api_buf_free(&h);
        return -1;
    }
    if (api__buf_reserve(b, 8 + h.len + (in_place ? 0 : data_len) + 1)) {
        api_buf_free(&h);
        return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the reply");
    }
    uint8_t *o = (uint8_t *)b->data + b->len;
    for (int k = 0; k < 8; k++) o[k] = (uint8_t)((uint64_t)h.len >> (8 * k));
    memcpy(o + 8, h.data, h.len);
    if (in_place) {
        parts->n = 0;
        for (int i = 0; i < n; i++)
            if (t[i].count)
                parts->part[parts->n++] = (api_part){t[i].data, t[i].count * item_size(&t[i], 0)};
        data_len = 0;
    } else {
        data_bytes(o + 8 + h.len, t, n, half);
    }
    b->len += 8 + h.len + data_len;
    b->data[b->len] = '\0';
    api_buf_free(&h);
    return 0;
}

enum { MAX_META = 16 };

/* The metadata's strings: JSON items, the timing, and the JSON children of
 * groups ("<group>.<child>"), in order. Returns their count. */
static int metadata(const api_contents *c, api_buf *v, meta_entry *m, char (*keys)[64]) {
    int n = 0;
    for (int i = 0; i < c->n && n < MAX_META; i++) {
        const api_item *it = &c->item[i];
        if (it->kind == API_ITEM_JSON) {
            api__buf_puts(&v[n], it->data);
            m[n] = (meta_entry){it->name, &v[n]};
            n++;
        } else if (it->kind == API_ITEM_TIMING) {
            api__buf_printf(&v[n], "{\"parse_ms\":%.3f,\"compute_ms\":%.3f,\"serialise_ms\":%.3f}",
                            c->ms_parse, c->ms_compute, api__now_ms() - c->t_serialise);
            m[n] = (meta_entry){it->name, &v[n]};
            n++;
        }
        for (int j = 0; it->kind == API_ITEM_GROUP && j < it->n_items && n < MAX_META; j++) {
            if (it->items[j].kind != API_ITEM_JSON) continue;
            snprintf(keys[n], sizeof keys[n], "%s.%s", it->name, it->items[j].name);
            api__buf_puts(&v[n], it->items[j].data);
            m[n] = (meta_entry){keys[n], &v[n]};
            n++;
        }
    }
    return n;
}

int api__write_safetensors(api_buf *b, const api_contents *c, api_st_parts *parts, api_err *e) {
    int n = collect(c, NULL);
    entry *t = malloc(((size_t)n + 1) * sizeof *t);
    if (t == NULL) return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the reply");
    collect(c, t);
    if (n > API_ST_MAX_ENTRIES) parts = NULL; /* more tensors than a reply's parts: copied */
    api_buf v[MAX_META] = {{0}};
    meta_entry m[MAX_META];
    char keys[MAX_META][64];
    int n_meta = metadata(c, v, m, keys);
    int rc = write_file(b, t, n, c->fmt.half, c->module, m, n_meta, parts, e);
    for (int i = 0; i < n_meta; i++) api_buf_free(&v[i]);
    free(t);
    return rc;
}
