/* hf_model.c - tokenizer.json's "model" (a BPE, as models/bpe/model.rs and
 * serialization.rs read it): the vocabulary, the merges in either form
 * ("a b" or ["a", "b"]; a merge listed twice takes its later rank, as the
 * library's map does), unk_token, fuse_unk, byte_fallback, ignore_merges. */
#include "hf.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define fail api__bpe_fail

/* The two sides of merge m: "a b" (exactly one space) or ["a", "b"]. */
static int merge_sides(json_t *m, const char **a, size_t *na, const char **b, size_t *nb) {
    if (json_is_array(m) && json_array_size(m) == 2 && json_is_string(json_array_get(m, 0)) &&
        json_is_string(json_array_get(m, 1))) {
        *a = json_string_value(json_array_get(m, 0)), *na = json_string_length(json_array_get(m, 0));
        *b = json_string_value(json_array_get(m, 1)), *nb = json_string_length(json_array_get(m, 1));
        return 0;
    }
    if (!json_is_string(m)) return -1;
    const char *s = json_string_value(m), *sp = memchr(s, ' ', json_string_length(m));
    if (!sp || memchr(sp + 1, ' ', json_string_length(m) - (size_t)(sp + 1 - s))) return -1;
    *a = s, *na = (size_t)(sp - s);
    *b = sp + 1, *nb = json_string_length(m) - *na - 1;
    return 0;
}

static int load_merges(api_bpe *t, api__hf *h, json_t *merges, char *err, size_t err_size) {
    if (!json_is_array(merges)) return fail(err, err_size, API_BPE_EFORMAT, "model: merges is not a list");
    size_t n = json_array_size(merges);
    if (n > INT32_MAX / 2) return fail(err, err_size, API_BPE_ETOOBIG, "model: too many merges");
    if (api__bpe_merges_alloc(t, n)) return API_BPE_ENOMEM;
    char *buf = NULL;
    size_t cap = 0;
    for (size_t i = 0; i < n; i++) {
        const char *a, *b;
        size_t na, nb;
        if (merge_sides(json_array_get(merges, i), &a, &na, &b, &nb) != 0) {
            free(buf);
            return fail(err, err_size, API_BPE_EFORMAT, "model: merge %zu is not \"a b\" or [\"a\", \"b\"]", i);
        }
        if (na + nb >= cap) {
            char *g = realloc(buf, cap = 2 * (na + nb) + 1);
            if (!g) return free(buf), API_BPE_ENOMEM;
            buf = g;
        }
        memcpy(buf, a, na);
        memcpy(buf + na, b, nb);
        int32_t ia = api__map_get(&h->vocab, a, na), ib = api__map_get(&h->vocab, b, nb),
                iab = api__map_get(&h->vocab, buf, na + nb);
        if (ia < 0 || ib < 0 || iab < 0) {
            free(buf);
            return fail(err, err_size, API_BPE_EFORMAT, "model: merge %zu (\"%.30s\" + \"%.30s\") names a token not in the vocabulary", i, a, b);
        }
        api__merge *s = api__bpe_merge_slot(t, api__bpe_pair(ia, ib));
        *s = (api__merge){api__bpe_pair(ia, ib), (int32_t)i, iab};
    }
    free(buf);
    return 0;
}

int api__hf_load_vocab(api__hf *h, json_t *vocab, size_t n_ids, char *err, size_t err_size) {
    if (!json_is_object(vocab)) return fail(err, err_size, API_BPE_EFORMAT, "model: vocab is not an object");
    const char *key;
    json_t *v;
    size_t bytes = 0;
    json_object_foreach(vocab, key, v) bytes += strlen(key);
    if (api__map_init(&h->vocab, json_object_size(vocab), bytes)) return API_BPE_ENOMEM;
    json_object_foreach(vocab, key, v) {
        json_int_t id = json_is_integer(v) ? json_integer_value(v) : -1;
        if (id < 0 || (size_t)id >= n_ids)
            return fail(err, err_size, API_BPE_EFORMAT, "model: token \"%.40s\" has no id in 0 .. %zu", key, n_ids - 1);
        if (h->flags[id] & API__T_EXISTS)
            return fail(err, err_size, API_BPE_EFORMAT, "model: id %lld is given to two tokens", (long long)id);
        h->flags[id] |= API__T_EXISTS;
        if (api__map_put(&h->vocab, key, strlen(key), (int32_t)id) < 0) return API_BPE_ENOMEM;
    }
    return 0;
}

/* Each byte's and each ASCII character's id, the <0xNN> tokens, unk. */
static void unit_tables(api_bpe *t, api__hf *h, json_t *model) {
    uint32_t sym[256];
    int16_t inverse[324];
    api__bpe_byte_symbols(sym, inverse);
    for (int b = 0; b < 256; b++) {
        char s[8];
        size_t k = api__utf8_put(s, sym[b]);
        t->byte_id[b] = api__map_get(&h->vocab, s, k);
        memcpy(h->sym[b], s, k);
        h->sym_len[b] = (unsigned char)k;
        snprintf(s, sizeof s, "<0x%02X>", b);
        h->fallback[b] = api__map_get(&h->vocab, s, 6);
        if (b < 128) {
            s[0] = (char)b;
            h->ascii[b] = api__map_get(&h->vocab, s, 1);
        }
    }
    json_t *unk = json_object_get(model, "unk_token");
    h->unk = json_is_string(unk) ? api__map_get(&h->vocab, json_string_value(unk), json_string_length(unk)) : -1;
}

/* A field that must be absent, null, empty or zero. */
static int unused(json_t *model, const char *key) {
    json_t *v = json_object_get(model, key);
    return !v || json_is_null(v) || (json_is_string(v) && json_string_length(v) == 0) ||
           (json_is_number(v) && json_number_value(v) == 0);
}

int api__hf_parse_model(api_bpe *t, api__hf *h, json_t *model, size_t n_ids, char *err, size_t err_size) {
    const char *type = json_string_value(json_object_get(model, "type"));
    if (!json_is_object(model)) return fail(err, err_size, API_BPE_EFORMAT, "no model");
    if (type && strcmp(type, "BPE") != 0)
        return fail(err, err_size, API_BPE_ENOTSUP, "model: %.30s (BPE and WordPiece are implemented here)", type);
    static const char *const absent[] = {"dropout", "continuing_subword_prefix", "end_of_word_suffix"};
    for (int i = 0; i < 3; i++)
        if (!unused(model, absent[i]))
            return fail(err, err_size, API_BPE_ENOTSUP, "model: %s is not implemented here", absent[i]);
    h->fuse_unk = json_is_true(json_object_get(model, "fuse_unk"));
    h->byte_fallback = json_is_true(json_object_get(model, "byte_fallback"));
    h->ignore_merges = json_is_true(json_object_get(model, "ignore_merges"));
    int rc = api__hf_load_vocab(h, json_object_get(model, "vocab"), n_ids, err, err_size);
    if (rc == 0) rc = load_merges(t, h, json_object_get(model, "merges"), err, err_size);
    if (rc == 0) unit_tables(t, h, model);
    return rc;
}
